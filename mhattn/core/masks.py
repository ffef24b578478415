"""Boolean attention masks: True means "this query may attend to this key"."""

import numpy as np


def causal_mask(seq_len):
    """Let each position attend only to itself and the positions before it.

    Parameters
    ----------
    seq_len : int

    Returns
    -------
    ndarray of bool, shape ``(seq_len, seq_len)``
        ``mask[i, j]`` is True when ``j <= i``. Broadcasts against
        ``(batch, num_heads, seq_len, seq_len)``.

    Examples
    --------
    >>> causal_mask(3)  # row i: the keys query i may attend to
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    """
    positions = np.arange(seq_len)
    return positions[None, :] <= positions[:, None]  # (seq_len, seq_len): key j <= query i


def padding_mask(lengths, seq_len):
    """Hide the padding keys of sequences shorter than ``seq_len``.

    Parameters
    ----------
    lengths : array_like of int, shape ``(batch,)``
        The number of real tokens in each sequence, ``0 <= lengths[b] <= seq_len``.
    seq_len : int
        The padded length.

    Returns
    -------
    ndarray of bool, shape ``(batch, 1, 1, seq_len)``
        ``mask[b, 0, 0, j]`` is True when key ``j`` is a real token of sequence ``b``.
        The two axes of length one broadcast over heads and queries.

    Examples
    --------
    >>> mask = padding_mask(np.array([3, 1]), seq_len=4)  # two sequences, of 3 and 1 real tokens
    >>> mask.shape
    (2, 1, 1, 4)
    >>> mask[:, 0, 0]
    array([[ True,  True,  True, False],
           [ True, False, False, False]])
    """
    keys = np.arange(seq_len)
    return (keys < lengths[:, None])[:, None, None, :]  # (batch, 1, 1, seq_len)
