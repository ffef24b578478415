"""The induction task: sequences whose block of tokens repeats, and the positions a copy can predict."""

import numpy as np

from .model import MAX_LEN, VOCAB


def induction_batch(rng, batch_size, *, vocab=VOCAB, max_len=MAX_LEN):
    """Sequences whose first ``n`` random tokens repeat once, ``n`` drawn per sequence.

    Each sequence: ``n`` uniform in ``[max_len // 8, max_len // 2]``; tokens ``0..n-1``
    uniform over the vocabulary (with replacement, so a token may occur twice in the first
    copy); tokens ``n..2n-1`` repeat them; tokens from ``2n`` on uniform and independent of
    everything before. Because ``n`` varies, no fixed offset finds the earlier copy.

    Parameters
    ----------
    rng : numpy.random.Generator
    batch_size : int
    vocab, max_len : int, keyword only

    Returns
    -------
    tokens : ndarray of int, shape ``(batch_size, max_len)``
    n : ndarray of int, shape ``(batch_size,)``
        The length of each sequence's repeated block.
    """
    n = rng.integers(max_len // 8, max_len // 2 + 1, size=batch_size)  # (batch,)
    tokens = rng.integers(0, vocab, size=(batch_size, max_len))  # (batch, max_len)
    t = np.arange(max_len)  # (max_len,)
    repeated = (t >= n[:, None]) & (t < 2 * n[:, None])  # (batch, max_len): the second copy
    source = np.where(repeated, t - n[:, None], t)  # (batch, max_len): where each token comes from
    return np.take_along_axis(tokens, source, axis=1), n


def repeated_positions(n, max_len=MAX_LEN):
    """The positions ``t`` in ``[n, 2n - 2]``, whose next token repeats the first copy: ``(batch, max_len)`` bool."""
    t = np.arange(max_len)
    return (t >= n[:, None]) & (t <= 2 * n[:, None] - 2)


def determined_positions(tokens, n):
    """The positions of the second copy whose next token the sequence so far determines.

    Position ``t`` in ``[n, 2n - 2]`` counts when every earlier occurrence of token ``t`` was
    followed by the same token (which is then token ``t + 1``). Where the first copy holds
    a token twice with two different successors, copying "what followed it" is ambiguous,
    and the position does not count.

    Parameters
    ----------
    tokens : ndarray of int, shape ``(batch, seq_len)``
    n : ndarray of int, shape ``(batch,)``

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
    return repeated_positions(n, seq_len) & ~other_successor.any(axis=-1)


def accuracy(logits, tokens, n):
    """Next-token accuracy on the determined positions (:func:`determined_positions`), each predicting ``t + 1``.

    Parameters
    ----------
    logits : ndarray of shape ``(batch, seq_len, vocab)``
    tokens : ndarray of int, shape ``(batch, seq_len)``
    n : ndarray of int, shape ``(batch,)``

    Returns
    -------
    float
    """
    hits = logits[:, :-1].argmax(axis=-1) == tokens[:, 1:]  # (batch, seq_len - 1)
    scored = determined_positions(tokens, n)[:, :-1]  # (batch, seq_len - 1)
    return float(hits[scored].mean())
