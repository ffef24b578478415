"""Splitting the model dimension into heads, and putting it back together."""


def split_heads(x, num_heads):
    """Cut the last axis into ``num_heads`` slices of width ``d_k`` and move heads forward.

    Head ``h`` receives columns ``h * d_k`` to ``(h + 1) * d_k - 1`` of every token. In
    the module, ``x`` is a projection (queries, keys or values), never the raw input: each
    head's slice of the *projection* has been computed from the whole token.

    Parameters
    ----------
    x : ndarray of shape ``(batch, seq_len, num_heads * d_k)``
    num_heads : int
        Must divide the last axis.

    Returns
    -------
    ndarray of shape ``(batch, num_heads, seq_len, d_k)``
        A view of ``x`` (no copy).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(12.0).reshape(1, 2, 6)  # one sequence of two tokens, d_model = 6
    >>> heads = split_heads(x, num_heads=3)
    >>> heads.shape
    (1, 3, 2, 2)
    >>> heads[0, 1]  # head 1 holds columns 2 and 3 of every token
    array([[2., 3.],
           [8., 9.]])
    """
    batch, seq_len, width = x.shape
    x = x.reshape(batch, seq_len, num_heads, width // num_heads)  # (batch, seq_len, num_heads, d_k)
    return x.transpose(0, 2, 1, 3)  # (batch, num_heads, seq_len, d_k)


def combine_heads(x):
    """Inverse of :func:`split_heads`: put the heads side by side again.

    Parameters
    ----------
    x : ndarray of shape ``(batch, num_heads, seq_len, d_k)``

    Returns
    -------
    ndarray of shape ``(batch, seq_len, num_heads * d_k)``

    Examples
    --------
    >>> import numpy as np
    >>> heads = np.arange(12.0).reshape(1, 3, 2, 2)  # (batch, num_heads, seq_len, d_k)
    >>> x = combine_heads(heads)
    >>> x.shape
    (1, 2, 6)
    >>> bool(np.array_equal(split_heads(x, 3), heads))  # the round trip gives the heads back
    True
    """
    batch, num_heads, seq_len, d_k = x.shape
    x = x.transpose(0, 2, 1, 3)  # (batch, seq_len, num_heads, d_k)
    return x.reshape(batch, seq_len, num_heads * d_k)  # (batch, seq_len, num_heads * d_k)
