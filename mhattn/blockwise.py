"""Attention in blocks of queries: the same output without the full weight matrix.

The weights of all heads at once take ``batch * num_heads * seq_q * seq_k`` numbers: at
``seq_len = 4096`` with 4 heads that is 256 MiB in float32. Each query's output depends on
its own row of weights only, so we can process a block of queries at a time and keep only
that block's rows in memory.
"""

import numpy as np

from .attention import attend

DEFAULT_BLOCK_SIZE = 128


def blockwise_attention(Q, K, V, mask=None, block_size=DEFAULT_BLOCK_SIZE):
    """Scaled dot-product attention output, computed ``block_size`` queries at a time.

    Takes already validated arrays, like :func:`mhattn.attention.attend`.

    Parameters
    ----------
    Q : ndarray of shape ``(..., seq_q, d_k)``
    K : ndarray of shape ``(..., seq_k, d_k)``
    V : ndarray of shape ``(..., seq_k, d_v)``
    mask : ndarray of bool, broadcastable to ``(..., seq_q, seq_k)``, optional
        True = may attend.
    block_size : int
        Queries per block. The largest temporary array holds
        ``prod(...) * block_size * seq_k`` scores.

    Returns
    -------
    ndarray of shape ``(..., seq_q, d_v)``
        Equal to ``attend(Q, K, V, mask)[0]`` up to rounding.
    """
    seq_q = Q.shape[-2]
    if mask is not None and mask.ndim < 2:
        mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)  # (..., 1 or seq_q, seq_k)
    leading = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dtype = np.result_type(Q, K, V)
    output = np.empty(leading + (seq_q, V.shape[-1]), dtype=dtype)  # (..., seq_q, d_v)
    for start in range(0, seq_q, block_size):
        stop = start + block_size
        output[..., start:stop, :], _ = attend(Q[..., start:stop, :], K, V, _rows(mask, start, stop))
    return output


def _rows(mask, start, stop):
    """The mask rows for queries ``start:stop`` (a mask with one row serves every query)."""
    if mask is None or mask.shape[-2] == 1:
        return mask
    return mask[..., start:stop, :]
