"""The arguments of the learning code's measures and experiments (:mod:`mhattn.learn`).

:mod:`mhattn.learn.circuits` and :mod:`mhattn.learn.several_heads` take a trained model,
attention weights, logits and tokens from their callers. The checks here run first, so an
error names the argument (``layer``, ``head``, ``weights``, ``tokens``, ``targets``), never
``half_len`` or ``IndexError`` from inside.
"""

import numpy as np

from .positions import count
from .values import finite, flag, index, integer, number_array, positive_int, real_array
from .values import seed as check_seed


def rng_value(name, value):
    """``value`` if it is a ``numpy.random.Generator``, or ``TypeError``."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)); got {value!r}")
    return value


def real(name, value, ndim=None, layout=""):
    """``value`` as a finite float array (of ``ndim`` axes, non-empty), or a clear error."""
    array = real_array(name, value)
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D with shape {layout}; got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty; got shape {array.shape}")
    return finite(name, array)


def attention_weights(value, name="weights"):
    """Attention weights ``(batch, num_heads, seq_len, seq_len)``: finite, square, at least two positions."""
    weights = real(name, value, 4, "(batch, num_heads, seq_len, seq_len)")
    if weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (batch, num_heads, seq_len, seq_len) with seq_len >= 2 "
                         f"(a query with a previous token); got shape {weights.shape}")
    return weights


def int_array(name, value, shape, vocab=None):
    """``value`` as an int array of ``shape`` (with ids in ``[0, vocab)`` if given), or a clear error."""
    array = number_array(name, value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold ints; got dtype {array.dtype}")
    if array.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got shape {array.shape}")
    if vocab is not None and array.size and (array.min() < 0 or array.max() >= vocab):
        raise ValueError(f"{name} must lie in [0, {vocab - 1}] (no negative index counts from the end here); "
                         f"got {array.min()} to {array.max()}")
    return array


def model_like(value, kind="InductionModel"):
    """``value`` if it has a model's parts (``layers`` or ``attention``, ``embed``, ``num_heads``), or ``TypeError``."""
    needed = ("layers", "embed", "unembed", "num_heads", "vocab") if kind == "InductionModel" else (
        "attention", "embed", "pos", "readouts", "num_heads", "vocab", "seq_len")
    if not all(hasattr(value, part) for part in needed):
        raise TypeError(f"model must be an mhattn {kind}; got {value!r} of type {type(value).__name__}")
    for name, parameter in value.parameters().items():  # NaN after a diverged run would give NaN scores
        finite(f"model parameter {name}", real_array(f"model parameter {name}", parameter))
    return value


def layer_head(model, layer, head, names=("layer", "head")):
    """``(layer, head)`` as indices into ``model.layers`` and its heads; no negative index counts from the end."""
    return index(names[0], layer, len(model.layers)), index(names[1], head, model.num_heads)


def segments_args(n, seq_len, offset, gap):
    """Arguments of :func:`mhattn.learn.circuits.segments`: ints, or ints ``(batch,)``, >= 0."""
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


def counts(name, value):
    """``value`` as a non-empty tuple of distinct ints (head counts, seeds): each checked by ``integer``."""
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be an iterable of ints; got {value!r}") from None
    if not items:
        raise ValueError(f"{name} must hold at least one int; got {value!r}")
    return tuple(integer(name, item, "an int") for item in items)


# --- mhattn.learn.circuits ----------------------------------------------------------------


def previous_token_args(weights, queries):
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


def prefix_matching_args(weights, tokens):
    weights = attention_weights(weights)
    return {"weights": weights, "tokens": int_array("tokens", tokens, (weights.shape[0], weights.shape[-1]))}, None


def repeated_tokens_args(rng, batch_size, half_len, vocab):
    vocab = positive_int("vocab", vocab)
    half_len = positive_int("half_len", half_len)
    if half_len > vocab:
        raise ValueError(f"half_len must be in [1, vocab = {vocab}] (the first half draws distinct tokens); "
                         f"got {half_len}")
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size),
            "half_len": half_len, "vocab": vocab}, None


def head_args(model, layer, head):
    model = model_like(model)
    layer, head = layer_head(model, layer, head)
    return {"model": model, "layer": layer, "head": head}, None


def qk_args(model, layer, head, key_through):
    arguments, _ = head_args(model, layer, head)
    if key_through is not None:
        if isinstance(key_through, (str, bytes)) or not hasattr(key_through, "__len__") or len(key_through) != 2:
            raise TypeError(f"key_through must be None or a (layer, head) pair; got {key_through!r}")
        key_through = layer_head(model, *key_through, names=("key_through's layer", "key_through's head"))
    return arguments | {"key_through": key_through}, None


def copying_args(ov):
    ov = real("ov", ov, 2, "(vocab, vocab)")
    if ov.shape[0] != ov.shape[1]:
        raise ValueError(f"ov must be a square matrix (vocab, vocab); got shape {ov.shape}")
    return {"ov": ov}, None


def composition_args(left, right):
    left, right = real("left", left, 2, "(d, d)"), real("right", right, 2, "(d, d)")
    if left.shape[1] != right.shape[0]:
        raise ValueError(f"left @ right needs left.shape[1] == right.shape[0]; got left {left.shape} and "
                         f"right {right.shape}")
    for name, matrix in (("left", left), ("right", right)):
        if not np.abs(matrix).max() > 0:
            raise ValueError(f"{name} must not be zero: a head that writes (or reads) nothing composes with "
                             "nothing, and its score would be 0 / 0")
    return {"left": left, "right": right}, None


def k_composition_args(model, layer0, layer1):
    model = model_like(model)
    layer0 = index("layer0", layer0, len(model.layers))
    layer1 = index("layer1", layer1, len(model.layers))
    if layer0 >= layer1:
        raise ValueError(f"layer0 must come before layer1 (an earlier head writes, a later one reads); got "
                         f"layer0 = {layer0}, layer1 = {layer1} in a model of {len(model.layers)} layers")
    return {"model": model, "layer0": layer0, "layer1": layer1}, None


def token_loss_args(logits, tokens):
    logits = real("logits", logits, 3, "(batch, seq_len, vocab)")
    if logits.shape[1] < 2:
        raise ValueError(f"logits must hold at least two positions (a token to predict); got shape {logits.shape}")
    return {"logits": logits, "tokens": int_array("tokens", tokens, logits.shape[:2], logits.shape[2])}, None


def icl_args(logits, tokens, early, late):
    arguments, _ = token_loss_args(logits, tokens)
    seq_len = arguments["logits"].shape[1]
    early, late = (_token_index(name, value, seq_len) for name, value in (("early", early), ("late", late)))
    return arguments | {"early": early, "late": late}, None


def _token_index(name, value, seq_len):
    """A token index in ``[1, seq_len)``: token 0 is predicted by nothing."""
    expected = f"an int in [1, {seq_len - 1}] (token 0 is predicted by nothing)"
    value = integer(name, value, expected)
    if not 1 <= value < seq_len:
        raise ValueError(f"{name} must be {expected}; got {value}")
    return value


def icl_tokens_args(max_len):
    max_len = positive_int("max_len", max_len)
    if max_len < 3:
        raise ValueError(f"max_len must be >= 3, for two different tokens 1 <= early < late < max_len; got {max_len}")
    return {"max_len": max_len}, None


def measure_args(model, num_sequences, seed):
    model = model_like(model)
    if model.max_len < 4:
        raise ValueError(f"model must have max_len >= 4 to be measured on repeated sequences; got max_len = "
                         f"{model.max_len}")
    return {"model": model, "num_sequences": positive_int("num_sequences", num_sequences),
            "seed": check_seed(seed)}, None


def claims_args(result):
    needed = ("accuracy", "prefix_matching", "copying", "induction_heads", "previous_token_heads")
    if not isinstance(result, dict) or not all(key in result for key in needed):
        raise TypeError(f"result must be the dict that measure(model) returns (with {', '.join(needed)}); "
                        f"got {type(result).__name__}")
    return {"result": result}, None


def induction_loss_args(logits, tokens):
    arguments, _ = token_loss_args(logits, tokens)
    seq_len = arguments["tokens"].shape[1]
    if seq_len % 2 or seq_len < 4:
        raise ValueError(f"tokens must be two halves of h >= 2 tokens each (repeated_random_tokens), shape "
                         f"(batch, 2h); got shape {arguments['tokens'].shape}")
    return arguments, None


def _lengths(name, value):
    """Block lengths: a non-empty iterable of ints >= 1."""
    return tuple(positive_int(name, n) for n in counts(name, value))


def _longest_block(model, longest):
    """Raise unless ``model.vocab`` holds ``longest`` distinct tokens, the longest block drawn."""
    if longest > model.vocab:
        raise ValueError(f"lengths must not exceed the model's vocab = {model.vocab} where they fit the context "
                         f"(a block holds distinct tokens); got a block of {longest}")


def offset_accuracy_args(model, lengths, per_cell, seed, gap):
    model = model_like(model)
    lengths, gap = _lengths("lengths", lengths), count("gap", gap)
    if 2 * min(lengths) + gap > model.max_len:
        raise ValueError(f"lengths and gap must leave room for a repeat: 2 * min(lengths) + gap <= max_len = "
                         f"{model.max_len}; got min(lengths) = {min(lengths)}, gap = {gap}")
    _longest_block(model, max(n for n in lengths if 2 * n + gap <= model.max_len))
    return {"model": model, "lengths": lengths, "per_cell": positive_int("per_cell", per_cell),
            "seed": check_seed(seed), "gap": gap}, None


def gap_accuracy_args(model, gaps, lengths, num_sequences, seed):
    model = model_like(model)
    gaps, lengths = tuple(count("gaps", g) for g in counts("gaps", gaps)), _lengths("lengths", lengths)
    if max(gaps) > model.max_len - 2:
        raise ValueError(f"gaps must be in [0, max_len - 2 = {model.max_len - 2}] (room for a block of one token "
                         f"and its repeat); got {max(gaps)}")
    _longest_block(model, min(max(lengths), (model.max_len - min(gaps)) // 2))
    return {"model": model, "gaps": gaps, "lengths": lengths,
            "num_sequences": positive_int("num_sequences", num_sequences), "seed": check_seed(seed)}, None


def previous_token_profile_args(model, layer, num_sequences, seed, at_start):
    model = model_like(model)
    return {"model": model, "layer": index("layer", layer, len(model.layers)),
            "num_sequences": positive_int("num_sequences", num_sequences), "seed": check_seed(seed),
            "at_start": flag("at_start", at_start)}, None


def offset_repeats_args(rng, batch_size, offset, half_len, vocab):
    offset, half_len, vocab = count("offset", offset), positive_int("half_len", half_len), positive_int("vocab", vocab)
    if offset + half_len > vocab:
        raise ValueError(f"offset + half_len must be <= vocab = {vocab} (those first tokens are all distinct); "
                         f"got offset = {offset}, half_len = {half_len}")
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size), "offset": offset,
            "half_len": half_len, "vocab": vocab}, None


def prefix_matching_by_offset_args(model, layer, half_len, num_sequences, seed):
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


def composition_scores_args(model, kind, layer0, layer1):
    if not isinstance(kind, str) or kind not in ("Q", "K", "V"):
        error = ValueError if isinstance(kind, str) else TypeError
        raise error(f"kind must be 'Q', 'K' or 'V'; got {kind!r}")
    arguments, _ = k_composition_args(model, layer0, layer1)
    return arguments | {"kind": kind}, None


def composition_baseline_args(d_model, rank, draws, seed):
    return {"d_model": positive_int("d_model", d_model), "rank": positive_int("rank", rank),
            "draws": positive_int("draws", draws), "seed": check_seed(seed)}, None


def key_path_args(model, tokens, heads):
    model = model_like(model)
    if len(model.layers) != 2:
        raise ValueError(f"model must have two layers; got {len(model.layers)}")
    tokens = model.check_tokens(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be a batch of shape (batch, seq_len); got shape {tokens.shape}")
    return {"model": model, "tokens": tokens, "heads": head_indices(heads, model.num_heads)}, None


def loss_report_args(model, num_sequences, seed):
    model = model_like(model)
    if model.max_len % 2 or model.max_len < 4 or model.max_len // 2 > model.vocab:
        raise ValueError(f"model must have an even max_len >= 4 and max_len // 2 <= vocab (repeated random tokens "
                         f"fill its context with two halves of distinct tokens); got max_len = {model.max_len}, "
                         f"vocab = {model.vocab}")
    return {"model": model, "num_sequences": positive_int("num_sequences", num_sequences),
            "seed": check_seed(seed)}, None


def head_indices(heads, num_heads):
    """``heads`` as a list of head indices in ``[0, num_heads)``, or a clear error naming ``heads``."""
    try:
        items = list(heads)
    except TypeError:
        raise TypeError(f"heads must be an iterable of head indices, e.g. [0]; got {heads!r}") from None
    return [index("heads", head, num_heads) for head in items]
