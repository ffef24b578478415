"""The arguments of the attention-pattern measures (:mod:`mhattn.learn.attention_patterns`).

Attention weights, tokens, query masks and the sizes of the sequences the scores are measured
on: an error names the argument (``weights``, ``tokens``, ``queries``, ``half_len``), never a
NumPy index deep inside the score.
"""

import numpy as np

from .learning import attention_weights, int_array, model_like, rng_value
from .positions import count
from .values import flag, index, number_array, positive_int
from .values import seed as check_seed


def previous_token_args(weights, queries):
    """Arguments of :func:`~mhattn.learn.attention_patterns.previous_token_score`."""
    weights = attention_weights(weights)
    if queries is not None:
        batch, _, seq_len, _ = weights.shape
        if isinstance(queries, np.ma.MaskedArray) or np.asarray(queries).dtype != np.bool_:
            raise TypeError(f"queries must be a boolean ndarray (True = average over this query); got "
                            f"{type(queries).__name__} of dtype {np.asarray(queries).dtype}")
        queries = np.asarray(queries)
        if queries.shape != (batch, seq_len):
            raise ValueError(f"queries must have shape (batch, seq_len) = {(batch, seq_len)}; got {queries.shape}")
        if not queries[:, 1:].any():
            raise ValueError("queries must select at least one query t >= 1 (t = 0 has no previous token)")
    return {"weights": weights, "queries": queries}, None


def segments_args(n, seq_len, offset, gap):
    """Arguments of :func:`~mhattn.learn.attention_patterns.segments`: ints, or ints ``(batch,)``, >= 0."""
    seq_len = positive_int("seq_len", seq_len)
    arrays = {}
    for name, value in (("n", n), ("offset", offset), ("gap", gap)):
        array = number_array(name, value)
        if array.dtype.kind not in "iu" or array.ndim > 1:
            raise TypeError(f"{name} must be an int or a 1-D array of ints (one per sequence); got {array.dtype} "
                            f"of shape {array.shape}")
        if array.size and array.min() < 0:
            raise ValueError(f"{name} must be >= 0; got {array.min()}")
        arrays[name] = np.atleast_1d(array)
    try:
        np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        raise ValueError(f"n, offset and gap must have one value per sequence or one for all; got shapes "
                         f"{[a.shape for a in arrays.values()]}") from None
    return arrays | {"seq_len": seq_len}, None


def prefix_matching_args(weights, tokens):
    """Arguments of :func:`~mhattn.learn.attention_patterns.prefix_matching_score`: some token must repeat."""
    weights = attention_weights(weights)
    tokens = int_array("tokens", tokens, (weights.shape[0], weights.shape[-1]))
    ordered = np.sort(tokens, axis=1)  # (batch, seq_len): a repeated token sits beside its twin
    if not (ordered[:, 1:] == ordered[:, :-1]).any():
        raise ValueError("tokens must repeat at least one token, or no query has a key to credit")
    return {"weights": weights, "tokens": tokens}, None


def repeated_tokens_args(rng, batch_size, half_len, vocab):
    """Arguments of :func:`~mhattn.learn.attention_patterns.repeated_random_tokens`: a half of distinct tokens."""
    vocab = positive_int("vocab", vocab)
    half_len = positive_int("half_len", half_len)
    if half_len > vocab:
        raise ValueError(f"half_len must be in [1, vocab = {vocab}] (the first half draws distinct tokens); "
                         f"got {half_len}")
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size),
            "half_len": half_len, "vocab": vocab}, None


def offset_repeats_args(rng, batch_size, offset, half_len, vocab):
    """Arguments of :func:`~mhattn.learn.attention_patterns.offset_repeats`: ``offset + half_len`` distinct tokens."""
    offset, half_len, vocab = count("offset", offset), positive_int("half_len", half_len), positive_int("vocab", vocab)
    if offset + half_len > vocab:
        raise ValueError(f"offset + half_len must be <= vocab = {vocab} (those first tokens are all distinct); "
                         f"got offset = {offset}, half_len = {half_len}")
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size), "offset": offset,
            "half_len": half_len, "vocab": vocab}, None


def previous_token_profile_args(model, layer, num_sequences, seed, at_start):
    """Arguments of :func:`~mhattn.learn.attention_patterns.previous_token_profile`."""
    model = model_like(model)
    return {"model": model, "layer": index("layer", layer, len(model.layers)),
            "num_sequences": positive_int("num_sequences", num_sequences), "seed": check_seed(seed),
            "at_start": flag("at_start", at_start)}, None


def prefix_matching_by_offset_args(model, layer, half_len, num_sequences, seed):
    """Arguments of :func:`~mhattn.learn.attention_patterns.prefix_matching_by_offset`: a repeat that fits."""
    model = model_like(model)
    half_len = positive_int("half_len", half_len)
    low, high = max(1, model.max_len - model.vocab), model.max_len // 2
    if not low <= half_len <= high:
        allowed = f"in [{low}, {high}]" if low <= high else "at least max_len - vocab, at most max_len // 2 (none is)"
        raise ValueError(f"half_len must be {allowed} for max_len = {model.max_len} and vocab = {model.vocab} (a "
                         f"repeat fits, and the tokens before the last offset's repeat are all distinct); got "
                         f"{half_len}")
    return {"model": model, "layer": index("layer", layer, len(model.layers)), "half_len": half_len,
            "num_sequences": positive_int("num_sequences", num_sequences), "seed": check_seed(seed)}, None
