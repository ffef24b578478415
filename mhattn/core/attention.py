"""Scaled dot-product attention: every query takes a weighted average of the values."""

import numpy as np

from .softmax import softmax


def scaled_dot_product_attention(Q, K, V, mask=None):
    r"""Attend from every query to every key, for any leading (batch, head) axes.

    .. math::

        \operatorname{Attention}(Q, K, V) =
        \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

    Parameters
    ----------
    Q : ndarray of shape ``(..., seq_q, d_k)``
        Queries.
    K : ndarray of shape ``(..., seq_k, d_k)``
        Keys. ``seq_k`` may differ from ``seq_q`` (cross-attention).
    V : ndarray of shape ``(..., seq_k, d_v)``
        Values, one per key.
    mask : ndarray of bool, optional
        True where a query may attend to a key (the polarity of
        ``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention``
        uses the opposite). Shape ``(seq_q, seq_k)``, or one axis per axis of the scores,
        each of the scores' size or 1, e.g. ``(batch, 1, 1, seq_k)`` from
        :func:`mhattn.padding_mask`. See also :func:`mhattn.causal_mask`.
    Returns
    -------
    output : ndarray of shape ``(..., seq_q, d_v)``
        For each query, the weighted average of the values. In the inputs' dtype: float32,
        float64 and longdouble are computed in their own precision (``sqrt(d_k)`` too),
        float16 in float32 and returned as float16, integers in float64. ``Q`` is divided
        by ``sqrt(d_k)`` before the product, so ``Q K^T`` cannot overflow where the scores fit.
    weights : ndarray of shape ``(..., seq_q, seq_k)``
        The attention weights. Each row sums to one; a masked key gets exactly zero. A
        query whose keys are *all* masked gets a row of zeros and an output of zeros: it may
        look at nothing, so it receives nothing (``-1e9`` masking would instead spread it
        uniformly over keys it must not see, and ``-inf`` alone
        would give NaN). PyTorch's ``scaled_dot_product_attention`` (>= 2.5) also returns
        zeros there on the CPU and in CUDA's math and memory-efficient backends; its cuDNN
        backend (the CUDA default for float16/bfloat16 with a boolean mask on torch 2.11)
        returned a finite nonzero output instead.

    Examples
    --------
    >>> Q, K, V = np.random.default_rng(0).standard_normal((3, 2, 4, 8))  # (batch, seq, d_k) each
    >>> mask = np.tril(np.ones((4, 4), dtype=bool))  # causal: query i sees keys 0 to i
    >>> output, weights = scaled_dot_product_attention(Q, K, V, mask)
    >>> output.shape, weights.shape
    ((2, 4, 8), (2, 4, 4))
    >>> bool(np.allclose(weights.sum(axis=-1), 1.0)), bool((weights[:, ~mask] == 0).all())
    (True, True)
    >>> print(weights[0, 0])  # the first query may see only itself
    [1. 0. 0. 0.]
    """
    d_k = Q.dtype.type(Q.shape[-1])  # in Q's dtype: float32 stays float32, longdouble keeps its digits
    scores = (Q / np.sqrt(d_k)) @ K.swapaxes(-1, -2)  # (..., seq_q, seq_k); scaled first: Q K^T may overflow alone
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # exp(-inf) = 0: masked keys get exactly zero weight
    weights = softmax(scores, axis=-1)  # (..., seq_q, seq_k), rows sum to 1
    return weights @ V, weights  # (..., seq_q, d_v), (..., seq_q, seq_k)
