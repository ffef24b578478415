"""Scaled dot-product attention: every query takes a weighted average of the values."""

import math

import numpy as np

from . import _checks, blockwise
from .softmax import softmax_


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
    mask : ndarray of bool, broadcastable to ``(..., seq_q, seq_k)``, optional
        True where a query may attend to a key (the polarity of
        ``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention``
        uses the opposite). See :func:`mhattn.causal_mask` and :func:`mhattn.padding_mask`.

    Returns
    -------
    output : ndarray of shape ``(..., seq_q, d_v)``
        For each query, the weighted average of the values.
    weights : ndarray of shape ``(..., seq_q, seq_k)``
        The attention weights. Each row sums to one; a masked key gets exactly zero.
        A query whose keys are *all* masked gets a row of zeros and an output of zeros:
        it may look at nothing, so it receives nothing (``-1e9`` masking would instead
        spread it uniformly over keys it must not see, and ``-inf`` would give NaN).

    Raises
    ------
    TypeError
        If an input is not real-valued, or ``mask`` is not boolean.
    ValueError
        If the shapes disagree (``d_k`` of Q and K, ``seq_k`` of K and V, leading axes,
        the mask's shape) or an input holds NaN or inf.
    """
    Q, K, V = (_checks.real_array(name, a) for name, a in (("Q", Q), ("K", K), ("V", V)))
    for name, array in (("Q", Q), ("K", K), ("V", V)):
        if array.ndim < 2:
            raise ValueError(f"{name} must have shape (..., seq_len, depth); got shape {array.shape}")
        _checks.finite(name, array)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must have the same depth d_k (last axis); got Q {Q.shape} and K {K.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same length seq_k (axis -2); got K {K.shape} and V {V.shape}")
    try:
        leading = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) axes of Q, K and V must broadcast; got Q {Q.shape}, K {K.shape}, V {V.shape}"
        ) from None
    scores_shape = leading + (Q.shape[-2], K.shape[-2])
    mask = _checks.broadcast_mask(mask, scores_shape, "(..., seq_q, seq_k)")
    return attend(Q, K, V, mask)


def attend(Q, K, V, mask=None):
    """Scaled dot-product attention without argument checks.

    The same computation as :func:`scaled_dot_product_attention`, for callers that have
    already validated their arrays (:class:`mhattn.MultiHeadAttention`).
    Returns ``(output, weights)``.
    """
    if math.prod(Q.shape[:-1]) * K.shape[-2] >= blockwise.PARALLEL_MIN_SCORES:
        # Many scores: the same computation, a cache-sized block of queries at a time on every core.
        return blockwise.attention_in_blocks(Q, K, V, mask)
    scale = 1.0 / math.sqrt(Q.shape[-1])  # a Python float: float32 stays float32
    scores = (Q * scale) @ K.swapaxes(-1, -2)  # (..., seq_q, seq_k); scaling Q is cheaper than scaling scores
    if mask is not None:
        np.copyto(scores, -np.inf, where=~mask)  # exp(-inf) = 0: masked keys get exactly zero weight
    weights = softmax_(scores, axis=-1)  # (..., seq_q, seq_k), in place
    return weights @ V, weights  # (..., seq_q, d_v), (..., seq_q, seq_k)
