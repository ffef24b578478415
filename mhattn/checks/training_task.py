"""The arguments of the induction task (:mod:`mhattn.learn.task`): sizes, block layouts, batches of tokens.

Every count is compared as the integer it is (an unsigned ``2**64 - 1`` stays that number in
a message, never a negative one), and every check runs before a random number is drawn.
"""

import numpy as np

from .learning import real, rng_value
from .values import flag, number_array, positive_int, real_number


def block_lengths_args(max_len):
    """Arguments of :func:`mhattn.learn.task.block_lengths`: a context of at least two tokens."""
    max_len = positive_int("max_len", max_len)
    if max_len < 2:
        raise ValueError(f"max_len must be >= 2 (room for a block and its copy); got {max_len}")
    return {"max_len": max_len}, None


def induction_batch_args(rng, batch_size, vocab, max_len, at_start, edge_share):
    """Arguments of :func:`mhattn.learn.task.induction_batch`: the longest block's distinct tokens must exist."""
    vocab, max_len = positive_int("vocab", vocab), positive_int("max_len", max_len)
    if max_len < 2 or vocab < max_len // 2:
        raise ValueError(f"max_len must be >= 2 and vocab >= max_len // 2; got max_len {max_len}, vocab {vocab}")
    edge_share = real_number("edge_share", edge_share, "a float in [0, 1]")
    if not 0 <= edge_share <= 1:
        raise ValueError(f"edge_share must be a float in [0, 1]; got {edge_share}")
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size), "vocab": vocab,
            "max_len": max_len, "at_start": flag("at_start", at_start), "edge_share": edge_share}, None


def layout_args(rng, n, offset, gap, vocab, max_len):
    """Arguments of :func:`mhattn.learn.task.layout`: one ``(n, offset, gap)`` per sequence, a repeat that fits.

    Returns ``n``, ``offset`` and ``gap`` as int64 arrays ``(batch,)``, ``batch >= 1``.
    """
    vocab, max_len = positive_int("vocab", vocab), positive_int("max_len", max_len)
    arrays = {}
    for name, value in (("n", n), ("offset", offset), ("gap", gap)):
        array = number_array(name, value)
        if array.dtype.kind not in "iu" or array.ndim != 1:
            raise (TypeError if array.dtype.kind not in "iu" else ValueError)(
                f"{name} must be a 1-d int array, one per sequence; got {array.dtype} of shape {array.shape}")
        arrays[name] = array
    n, offset, gap = arrays.values()
    if not n.shape == offset.shape == gap.shape:
        raise ValueError(f"n, offset and gap must have one shape; got {n.shape}, {offset.shape}, {gap.shape}")
    if n.size == 0:
        raise ValueError("n, offset and gap must hold one value per sequence, for at least one sequence; "
                         "got shape (0,)")
    lowest = {"n": 1, "offset": 0, "gap": 0}
    for name, array in arrays.items():  # each alone first, as Python ints: no sum can wrap around
        low, high = int(array.min()), int(array.max())
        if low < lowest[name] or high > max_len:
            got = low if low == high else f"{low} to {high}"
            raise ValueError(f"{name} must be in [{lowest[name]}, max_len = {max_len}]; got {got}")
    n, offset, gap = (array.astype(np.int64) for array in (n, offset, gap))
    end = offset + 2 * n + gap  # (batch,): one past the second copy
    if end.max() > max_len:
        raise ValueError(f"need offset + 2n + gap <= seq_len = {max_len}; got a largest end of {end.max()} (n "
                         f"{n.min()}..{n.max()}, offset {offset.min()}..{offset.max()}, gap {gap.min()}..{gap.max()})")
    if vocab < n.max():
        raise ValueError(f"vocab must be >= the longest block ({n.max()}) for distinct tokens; got {vocab}")
    return {"rng": rng_value("rng", rng), "n": n, "offset": offset, "gap": gap, "vocab": vocab,
            "max_len": max_len}, None


def _copies(batch, n, offset, gap):
    """``n``, ``offset``, ``gap`` of a batch: ints >= 0, one per sequence ``(batch,)`` (offset and gap may be 0)."""
    checked = {}
    for name, value in (("n", n), ("offset", offset), ("gap", gap)):
        array = number_array(name, value)
        shapes = ((batch,),) if name == "n" else ((), (batch,))
        if array.dtype.kind not in "iu" or array.shape not in shapes:
            shape = "(batch,)" if name == "n" else "(batch,) or one int"
            raise (TypeError if array.dtype.kind not in "iu" else ValueError)(
                f"{name} must be ints of shape {shape}, batch = {batch}; got {array.dtype} of shape {array.shape}")
        if array.size and array.min() < 0:
            raise ValueError(f"{name} must be >= 0; got {array.min()}")
        checked[name] = array
    return checked


def repeated_positions_args(n, max_len, offset, gap):
    """Arguments of :func:`mhattn.learn.task.repeated_positions`."""
    n = number_array("n", n)
    return {"max_len": positive_int("max_len", max_len), **_copies(len(np.atleast_1d(n)), n, offset, gap)}, None


def scored_tokens(tokens):
    """A batch of token ids ``(batch, seq_len)``, ``seq_len >= 2``, or a clear error."""
    array = number_array("tokens", tokens)
    if array.dtype.kind not in "iu" or array.ndim != 2 or array.shape[1] < 2 or array.size == 0:
        raise (TypeError if array.dtype.kind not in "iu" else ValueError)(
            f"tokens must be ints of shape (batch, seq_len) with seq_len >= 2; got {array.dtype} "
            f"of shape {array.shape}")
    return array


def determined_positions_args(tokens, n, offset, gap):
    """Arguments of :func:`mhattn.learn.task.determined_positions`."""
    tokens = scored_tokens(tokens)
    return {"tokens": tokens, **_copies(len(tokens), n, offset, gap)}, None


def task_accuracy_args(logits, tokens, n, offset, gap):
    """Arguments of :func:`mhattn.learn.task.accuracy`: logits ``(batch, seq_len, vocab)`` beside the tokens."""
    tokens = scored_tokens(tokens)
    logits = real("logits", logits, 3, "(batch, seq_len, vocab)")
    if logits.shape[:2] != tokens.shape:
        raise ValueError(f"logits must have shape (batch, seq_len, vocab) with (batch, seq_len) = {tokens.shape} "
                         f"of tokens; got shape {logits.shape}")
    return {"logits": logits, "tokens": tokens, **_copies(len(tokens), n, offset, gap)}, None
