"""The induction task: sequences whose block of tokens repeats, and the positions a copy can predict.

The distribution of :func:`induction_batch`, per sequence and independently:

.. code-block:: text

    n      in [max_len // 8, max_len // 2],              the block's length (4..16 for max_len 32),
             P(n) proportional to 1 / (n - 1)            so every length offers as many copyable tokens
    room   = max_len - 2 n                              tokens outside the two copies
    gap    = 0 with probability 1 - GAP_PROBABILITY,
             else uniform on [1, room]                  random tokens between the copies
    offset ~ uniform on [0, room - gap]                 random tokens before the first copy
    block  = n distinct tokens, in random order         (a uniform ordered n-subset of the vocabulary)
    layout = offset random tokens | block | gap random tokens | block | random tokens to max_len

Every random token outside the copies is uniform over the whole vocabulary, independent of
everything else. Because the offset, the gap and ``n`` all vary, no fixed position or fixed
distance finds the earlier copy: only the token itself does.

A block of ``n`` tokens has ``n - 1`` tokens that a copy predicts, so with ``n`` uniform a short
block would carry a fifth of the training signal of a long one; weighting ``n`` by ``1 / (n - 1)``
gives every length the same expected number of copyable tokens.

``at_start=True`` draws the narrower task that a model can solve by position alone: ``n`` uniform,
the first copy at position 0 and no gap (the layout of notebook 09's shortcut model).
"""

import numpy as np

from .. import checks
from ..checks import learning
from .model import MAX_LEN, VOCAB

GAP_PROBABILITY = 0.5  #: the share of sequences with random tokens between the two copies


def induction_batch(rng, batch_size, *, vocab=VOCAB, max_len=MAX_LEN, at_start=False):
    """Sequences that hold a block of distinct tokens twice, at a random offset, sometimes with a gap.

    The distribution is in the module's docstring.

    Parameters
    ----------
    rng : numpy.random.Generator
    batch_size : int
    vocab, max_len : int, keyword only
        ``vocab >= max_len // 2``, so that a block of distinct tokens exists.
    at_start : bool, keyword only, default False
        True puts the first copy at position 0 and the second right after it (offset and gap 0).

    Returns
    -------
    tokens : ndarray of int, shape ``(batch_size, max_len)``
    n, offset, gap : ndarray of int, shape ``(batch_size,)``
        Each sequence's block length, the position of its first copy, and the number of
        random tokens between the copies (the second copy starts at ``offset + n + gap``).
    """
    rng = learning.rng_value("rng", rng)
    batch_size = checks.positive_int("batch_size", batch_size)
    vocab = checks.positive_int("vocab", vocab)
    max_len = checks.positive_int("max_len", max_len)
    at_start = checks.flag("at_start", at_start)
    if max_len < 2 or vocab < max_len // 2:
        raise ValueError(f"max_len must be >= 2 and vocab >= max_len // 2; got max_len {max_len}, vocab {vocab}")
    lengths = block_lengths(max_len)
    if at_start:
        n = rng.integers(lengths[0], lengths[-1] + 1, size=batch_size)  # (batch,): uniform
    else:
        n = rng.choice(lengths, size=batch_size, p=length_probabilities(max_len))  # (batch,)
    room = max_len - 2 * n  # (batch,): tokens outside the copies
    if at_start:
        gap = offset = np.zeros(batch_size, dtype=np.int64)
    else:
        has_gap = (rng.random(batch_size) < GAP_PROBABILITY) & (room > 0)
        gap = np.where(has_gap, 1 + (rng.random(batch_size) * np.maximum(room, 1)).astype(np.int64), 0)
        offset = (rng.random(batch_size) * (room - gap + 1)).astype(np.int64)  # uniform on [0, room - gap]
    return layout(rng, n, offset, gap, vocab=vocab, max_len=max_len), n, offset, gap


@checks.checked(learning.block_lengths_args, results_finite=False)
def block_lengths(max_len=MAX_LEN):
    """The block lengths :func:`induction_batch` draws: ``max(1, max_len // 8) .. max_len // 2``, an int array."""
    return np.arange(max(1, max_len // 8), max_len // 2 + 1)


@checks.checked(learning.block_lengths_args, results_finite=False)
def length_probabilities(max_len=MAX_LEN):
    """``P(n)`` for each of :func:`block_lengths`: proportional to ``1 / (n - 1)`` (``n = 1`` counts as 1)."""
    weights = 1.0 / np.maximum(block_lengths(max_len) - 1, 1)
    return weights / weights.sum()


@checks.checked(learning.layout_args)
def layout(rng, n, offset, gap, *, vocab=VOCAB, max_len=MAX_LEN):
    """Tokens for a chosen ``(n, offset, gap)`` per sequence: random | block | random | block | random.

    The block is ``n`` distinct tokens in random order; every other token is uniform over the
    vocabulary. Returns ``(batch, max_len)`` ints.
    """
    n, offset, gap = _check_layout(n, offset, gap, max_len)
    if vocab < n.max():
        raise ValueError(f"vocab must be >= the longest block ({n.max()}) for distinct tokens; got {vocab}")
    batch = len(n)
    blocks = rng.permuted(np.tile(np.arange(vocab), (batch, 1)), axis=1)  # (batch, vocab): block = first n
    filler = rng.integers(0, vocab, size=(batch, max_len))  # (batch, max_len)
    t = np.arange(max_len)[None, :]  # (1, max_len)
    n_, first, second = n[:, None], offset[:, None], (offset + n + gap)[:, None]  # (batch, 1) each
    in_first, in_second = (t >= first) & (t < first + n_), (t >= second) & (t < second + n_)
    index = np.where(in_first, t - first, np.where(in_second, t - second, 0))  # (batch, max_len)
    block_tokens = np.take_along_axis(blocks, index, axis=1)  # (batch, max_len)
    return np.where(in_first | in_second, block_tokens, filler)


def _check_layout(n, offset, gap, seq_len):
    arrays = []
    for name, value in (("n", n), ("offset", offset), ("gap", gap)):
        value = np.asarray(value)
        if value.dtype.kind not in "iu" or value.ndim != 1:
            raise ValueError(f"{name} must be a 1-d int array, one per sequence; got {value.dtype} {value.shape}")
        arrays.append(value.astype(np.int64))
    n, offset, gap = arrays
    if not n.shape == offset.shape == gap.shape:
        raise ValueError(f"n, offset and gap must have one shape; got {n.shape}, {offset.shape}, {gap.shape}")
    if len(n) and (n.min() < 1 or offset.min() < 0 or gap.min() < 0 or (offset + 2 * n + gap).max() > seq_len):
        raise ValueError(f"need n >= 1, offset >= 0, gap >= 0 and offset + 2n + gap <= seq_len = {seq_len}; "
                         f"got n {n.min()}..{n.max()}, offset {offset.min()}..{offset.max()}, "
                         f"gap {gap.min()}..{gap.max()}, largest end {(offset + 2 * n + gap).max()}")
    return n, offset, gap


@checks.checked(learning.repeated_positions_args, results_finite=False)
def repeated_positions(n, max_len=MAX_LEN, offset=0, gap=0):
    """The second copy's positions whose next token is in the block: ``(batch, max_len)`` bool.

    The second copy starts at ``s = offset + n + gap``; positions ``s .. s + n - 2`` predict
    the block's tokens ``1 .. n - 1``. With ``offset = gap = 0`` these are ``n .. 2n - 2``.
    """
    n = np.asarray(n)
    start = n + np.asarray(offset) + np.asarray(gap)  # (batch,): the second copy's first position
    start = np.broadcast_to(start, n.shape)
    t = np.arange(max_len)
    return (t >= start[:, None]) & (t <= start[:, None] + n[:, None] - 2)


@checks.checked(learning.determined_positions_args, results_finite=False)
def determined_positions(tokens, n, offset=0, gap=0):
    """The positions of the second copy whose next token the sequence so far determines.

    Position ``t`` of :func:`repeated_positions` counts when every earlier occurrence of token
    ``t`` was followed by the same token (which is then token ``t + 1``). Where a random token
    before it equals the block's token with a different successor, copying "what followed it"
    is ambiguous, and the position does not count.

    Parameters
    ----------
    tokens : ndarray of int, shape ``(batch, seq_len)``
    n : ndarray of int, shape ``(batch,)``
    offset, gap : ndarray of int, shape ``(batch,)``, or 0 (the first copy at position 0, no gap)

    Returns
    -------
    ndarray of bool, shape ``(batch, seq_len)``
    """
    seq_len = tokens.shape[1]
    successor = np.zeros_like(tokens)  # (batch, seq_len): the token after each position
    successor[:, :-1] = tokens[:, 1:]
    same = tokens[:, :, None] == tokens[:, None, :]  # (batch, query t, earlier s): the same token
    same &= np.tri(seq_len, k=-1, dtype=bool)  # s < t
    other_successor = same & (successor[:, None, :] != successor[:, :, None])  # (batch, t, s)
    return repeated_positions(n, seq_len, offset, gap) & ~other_successor.any(axis=-1)


@checks.checked(learning.task_accuracy_args, results_finite=False)
def accuracy(logits, tokens, n, offset=0, gap=0):
    """Next-token accuracy on the determined positions (:func:`determined_positions`), each predicting ``t + 1``.

    Parameters
    ----------
    logits : ndarray of shape ``(batch, seq_len, vocab)``
    tokens : ndarray of int, shape ``(batch, seq_len)``
    n, offset, gap : ndarray of int, shape ``(batch,)`` (``offset`` and ``gap`` may be 0)

    Returns
    -------
    float
    """
    hits = logits[:, :-1].argmax(axis=-1) == tokens[:, 1:]  # (batch, seq_len - 1)
    scored = determined_positions(tokens, n, offset, gap)[:, :-1]  # (batch, seq_len - 1)
    return float(hits[scored].mean())
