"""Splitting the model dimension into heads, and putting it back together."""

import numpy as np

from . import _checks


def split_heads(x, num_heads):
    """Cut the last axis into ``num_heads`` slices of width ``d_k`` and move heads forward.

    Head ``h`` receives columns ``h * d_k`` to ``(h + 1) * d_k - 1`` of every token.

    Parameters
    ----------
    x : ndarray of shape ``(batch, seq_len, d_model)``
    num_heads : int
        Must divide ``d_model``.

    Returns
    -------
    ndarray of shape ``(batch, num_heads, seq_len, d_k)``
        A view of ``x`` (no copy), with ``d_k = d_model // num_heads``.
    """
    num_heads = _checks.positive_int("num_heads", num_heads)
    x = np.asarray(x)
    _checks.ndim("x", x, 3, "(batch, seq_len, d_model)")
    batch, seq_len, d_model = x.shape
    if d_model % num_heads:
        raise ValueError(f"num_heads must divide d_model = {d_model}; got num_heads = {num_heads}")
    x = x.reshape(batch, seq_len, num_heads, d_model // num_heads)  # (batch, seq_len, num_heads, d_k)
    return x.transpose(0, 2, 1, 3)  # (batch, num_heads, seq_len, d_k)


def combine_heads(x):
    """Inverse of :func:`split_heads`: put the heads side by side again.

    Parameters
    ----------
    x : ndarray of shape ``(batch, num_heads, seq_len, d_k)``

    Returns
    -------
    ndarray of shape ``(batch, seq_len, num_heads * d_k)``
    """
    x = np.asarray(x)
    _checks.ndim("x", x, 4, "(batch, num_heads, seq_len, d_k)")
    batch, num_heads, seq_len, d_k = x.shape
    x = x.transpose(0, 2, 1, 3)  # (batch, seq_len, num_heads, d_k)
    return x.reshape(batch, seq_len, num_heads * d_k)  # (batch, seq_len, d_model)
