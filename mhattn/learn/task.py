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

``edge_share`` moves a share of the sequences to the two ends of the offset range, which the
uniform offset above reaches least often: half of them put the first copy at position 0 (the gap
drawn as above), the other half put it as late as it fits, with no gap, so that the second copy
ends the context. The trainer draws 10 % of every batch this way (:mod:`.train`).

``at_start=True`` draws the narrower task that a model can solve by position alone: ``n`` uniform,
the first copy at position 0 and no gap (the layout of notebook 09's shortcut model).
"""

import numpy as np

from .model import MAX_LEN, VOCAB

GAP_PROBABILITY = 0.5  #: the share of sequences with random tokens between the two copies


def induction_batch(rng, batch_size, *, vocab=VOCAB, max_len=MAX_LEN, at_start=False, edge_share=0.0):
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
    edge_share : float in [0, 1], keyword only, default 0
        The share of sequences moved to the ends of the offset range: half with the first copy
        at position 0, half with the second copy at the end of the context and no gap. With 0
        the batch is drawn exactly as without it (no extra random numbers).

    Returns
    -------
    tokens : ndarray of int, shape ``(batch_size, max_len)``
    n, offset, gap : ndarray of int, shape ``(batch_size,)``
        Each sequence's block length, the position of its first copy, and the number of
        random tokens between the copies (the second copy starts at ``offset + n + gap``).

    Examples
    --------
    >>> tokens, n, offset, gap = induction_batch(np.random.default_rng(0), 2, vocab=8, max_len=16)
    >>> tokens.shape
    (2, 16)
    >>> n, offset, gap
    (array([4, 2]), array([1, 1]), array([ 7, 11]))
    >>> first = tokens[0, offset[0]:offset[0] + n[0]]
    >>> second = tokens[0, offset[0] + n[0] + gap[0]:][:n[0]]
    >>> bool((first == second).all())
    True
    """
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
        if edge_share:
            edge = rng.random(batch_size)  # (batch,): below edge_share / 2 at the end, below edge_share at 0
            at_end = edge < edge_share / 2
            offset = np.where(at_end, room, np.where(edge < edge_share, 0, offset))
            gap = np.where(at_end, 0, gap)
    return layout(rng, n, offset, gap, vocab=vocab, max_len=max_len), n, offset, gap


def block_lengths(max_len=MAX_LEN):
    """The block lengths :func:`induction_batch` draws: ``max(1, max_len // 8) .. max_len // 2``, an int array.

    Examples
    --------
    >>> block_lengths(16)
    array([2, 3, 4, 5, 6, 7, 8])
    """
    return np.arange(max(1, max_len // 8), max_len // 2 + 1)


def length_probabilities(max_len=MAX_LEN):
    """``P(n)`` for each of :func:`block_lengths`: proportional to ``1 / (n - 1)`` (``n = 1`` counts as 1).

    Examples
    --------
    >>> length_probabilities(16).round(2)
    array([0.39, 0.19, 0.13, 0.1 , 0.08, 0.06, 0.06])
    """
    weights = 1.0 / np.maximum(block_lengths(max_len) - 1, 1)
    return weights / weights.sum()


def layout(rng, n, offset, gap, *, vocab=VOCAB, max_len=MAX_LEN):
    """Tokens for a chosen ``(n, offset, gap)`` per sequence: random | block | random | block | random.

    The block is ``n`` distinct tokens in random order (see :func:`_distinct_tokens`); every other
    token is uniform over the vocabulary. ``n``, ``offset``, ``gap`` are int arrays ``(batch,)``.
    Returns ``(batch, max_len)`` ints; memory ``O(batch * max_len)``, whatever the vocabulary.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> layout(rng, np.array([3]), np.array([1]), np.array([2]), vocab=8, max_len=10)
    array([[1, 2, 4, 3, 4, 4, 2, 4, 3, 4]])
    """
    batch = len(n)
    blocks = _distinct_tokens(rng, batch, n.max(), vocab, max_len)  # (batch, longest): block = first n
    filler = rng.integers(0, vocab, size=(batch, max_len))  # (batch, max_len)
    t = np.arange(max_len)[None, :]  # (1, max_len)
    n_, first, second = n[:, None], offset[:, None], (offset + n + gap)[:, None]  # (batch, 1) each
    in_first, in_second = (t >= first) & (t < first + n_), (t >= second) & (t < second + n_)
    index = np.where(in_first, t - first, np.where(in_second, t - second, 0))  # (batch, max_len)
    block_tokens = np.take_along_axis(blocks, index, axis=1)  # (batch, max_len)
    return np.where(in_first | in_second, block_tokens, filler)


def _distinct_tokens(rng, batch, size, vocab, max_len=MAX_LEN):
    """``(batch, size)`` ints: each row ``size`` distinct tokens of ``[0, vocab)``, a uniform ordered sample.

    A vocabulary no larger than the context is shuffled whole, one row per sequence (the
    draws the shipped models were trained on). A larger one draws token ``k`` as the ``r``-th
    token not yet taken, ``r`` uniform on ``[0, vocab - k)``: the same distribution, in
    ``O(batch * size)`` memory instead of ``O(batch * vocab)``.
    """
    if vocab <= max_len:
        return rng.permuted(np.tile(np.arange(vocab), (batch, 1)), axis=1)[:, :size]  # (batch, size)
    blocks = np.empty((batch, size), dtype=np.int64)
    for k in range(size):
        token = rng.integers(0, vocab - k, size=batch)  # (batch,): a rank among the vocab - k tokens left
        for taken in np.sort(blocks[:, :k], axis=1).T:  # (batch,) each, ascending: step over every
            token += token >= taken  # token taken at or below it, so the rank counts untaken ones only
        blocks[:, k] = token
    return blocks


def repeated_positions(n, max_len=MAX_LEN, offset=0, gap=0):
    """The second copy's positions whose next token is in the block: ``(batch, max_len)`` bool.

    The second copy starts at ``s = offset + n + gap``; positions ``s .. s + n - 2`` predict
    the block's tokens ``1 .. n - 1``. With ``offset = gap = 0`` these are ``n .. 2n - 2``.

    Examples
    --------
    >>> repeated_positions(np.array([3]), 8)
    array([[False, False, False,  True,  True, False, False, False]])
    """
    n = np.asarray(n)
    start = n + np.asarray(offset) + np.asarray(gap)  # (batch,): the second copy's first position
    start = np.broadcast_to(start, n.shape)
    t = np.arange(max_len)
    return (t >= start[:, None]) & (t <= start[:, None] + n[:, None] - 2)


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

    Examples
    --------
    >>> tokens = np.array([[0, 1, 2, 0, 1, 2]])
    >>> determined_positions(tokens, np.array([3]))
    array([[False, False, False,  True,  True, False]])
    """
    seq_len = tokens.shape[1]
    successor = np.zeros_like(tokens)  # (batch, seq_len): the token after each position
    successor[:, :-1] = tokens[:, 1:]
    same = tokens[:, :, None] == tokens[:, None, :]  # (batch, query t, earlier s): the same token
    same &= np.tri(seq_len, k=-1, dtype=bool)  # s < t
    other_successor = same & (successor[:, None, :] != successor[:, :, None])  # (batch, t, s)
    return repeated_positions(n, seq_len, offset, gap) & ~other_successor.any(axis=-1)


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

    Examples
    --------
    >>> tokens = np.array([[0, 1, 2, 0, 1, 2]])
    >>> logits = np.eye(3)[np.roll(tokens, -1)]  # (1, 6, 3): every next token right
    >>> accuracy(logits, tokens, np.array([3]))
    1.0
    """
    hits = logits[:, :-1].argmax(axis=-1) == tokens[:, 1:]  # (batch, seq_len - 1)
    scored = determined_positions(tokens, n, offset, gap)[:, :-1]  # (batch, seq_len - 1)
    return float(hits[scored].mean())
