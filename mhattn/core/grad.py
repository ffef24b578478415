r"""The backward pass of multi-head attention, one vector-Jacobian product per forward step.

Training needs :math:`\partial L / \partial \theta` for a scalar loss :math:`L` and every
parameter :math:`\theta`. The chain rule runs backwards through the forward steps: each step
``y = f(x)`` receives ``d_y`` :math:`= \partial L / \partial y` (same shape as ``y``) and
returns ``d_x`` :math:`= \partial L / \partial x` (same shape as ``x``). That map,
``d_y -> d_x``, is the step's *vector-Jacobian product* (vjp). It never builds a Jacobian:
for the softmax of one row of length :math:`n` the Jacobian has :math:`n^2` entries, the vjp
costs :math:`O(n)`.

Read each function beside its forward twin:

================================  ========================================
forward                           backward (this module)
================================  ========================================
:func:`mhattn.softmax`            :func:`softmax_vjp`
:func:`mhattn.scaled_dot_product_attention`  :func:`attention_vjp`
:func:`mhattn.split_heads`        :func:`split_heads_vjp`
:func:`mhattn.combine_heads`      :func:`combine_heads_vjp`
``x @ W`` (``W_qkv``, ``W_o``)    :func:`linear_vjp`
:class:`mhattn.MultiHeadAttention`  :func:`multihead_vjp` (all of the above)
================================  ========================================

Every function here is checked against central finite differences and against PyTorch's
autograd; the notebook on learning to attend derives them. The backward of the later
features (rotary positions, grouped queries) is in :mod:`mhattn.core.grad_full`.
"""

import numpy as np

from .attention import scaled_dot_product_attention
from .heads import combine_heads, split_heads


def softmax_vjp(weights, d_weights):
    r"""Backward of ``weights = softmax(scores, axis=-1)``: from ``d_weights`` to ``d_scores``.

    With :math:`p = \operatorname{softmax}(s)` and :math:`g = \partial L / \partial p`, the
    Jacobian is :math:`\partial p_i / \partial s_j = p_i(\delta_{ij} - p_j)`, so

    .. math::

        \frac{\partial L}{\partial s_j} = \sum_i g_i\, p_i (\delta_{ij} - p_j)
        = p_j \Big(g_j - \sum_i g_i p_i\Big).

    Subtracting :math:`\sum_i g_i p_i` removes the part of :math:`g` that would raise every
    score equally: the softmax ignores such a shift, so its gradient has no component along it
    (each row of ``d_scores`` sums to zero). Where :math:`p_j = 0` (a masked key, or every key
    of a fully masked row) the gradient is exactly zero.

    Parameters
    ----------
    weights : ndarray of shape ``(..., n)``
        The softmax's output (each row sums to one, or is all zeros).
    d_weights : ndarray of shape ``(..., n)``
        :math:`\partial L / \partial \text{weights}`.

    Returns
    -------
    ndarray of shape ``(..., n)``
        :math:`\partial L / \partial \text{scores}`.

    Examples
    --------
    >>> weights = np.array([[0.5, 0.5, 0.0]])  # the last key was masked
    >>> d_scores = softmax_vjp(weights, d_weights=np.array([[1.0, 0.0, 5.0]]))
    >>> print(d_scores)  # sums to zero; the masked key gets exactly zero
    [[ 0.25 -0.25  0.  ]]
    """
    inner = np.vecdot(d_weights, weights)[..., None]  # (..., 1): sum_i g_i p_i, a dot product per row
    return weights * (d_weights - inner)  # (..., n): p_j (g_j - sum_i g_i p_i); 0 where p_j = 0


def attention_vjp(Q, K, V, weights, d_output):
    r"""Backward of ``output, weights = scaled_dot_product_attention(Q, K, V, mask)``.

    The forward, with :math:`c = 1/\sqrt{d_k}`, is :math:`S = c\,QK^\top`,
    :math:`P = \operatorname{softmax}(S)` (masked entries of :math:`S` are :math:`-\infty`),
    :math:`O = PV`. Backwards, one line each (each is the vjp of a matrix product
    :math:`C = AB`: :math:`dA = dC\,B^\top`, :math:`dB = A^\top dC`):

    .. math::

        dP = dO\,V^\top, \quad dV = P^\top dO, \quad
        dS = \operatorname{softmax\_vjp}(P, dP), \quad
        dQ = c\, dS\, K, \quad dK = c\, dS^\top Q.

    The mask needs no code: a masked key has :math:`P_{ij} = 0`, so :math:`dS_{ij} = 0`,
    and it neither sends gradient to that key nor receives any from it. A key that every
    query masks (padding) gets :math:`dK_j = dV_j = 0` exactly; a query that may see no key
    (a fully masked row, all :math:`P_{ij} = 0`) gets :math:`dQ_i = 0` exactly.

    Parameters
    ----------
    Q : ndarray of shape ``(..., seq_q, d_k)``
    K : ndarray of shape ``(..., seq_k, d_k)``
    V : ndarray of shape ``(..., seq_k, d_v)``
        The forward's inputs, with the same leading axes.
    weights : ndarray of shape ``(..., seq_q, seq_k)``
        The forward's attention weights :math:`P`.
    d_output : ndarray of shape ``(..., seq_q, d_v)``
        :math:`\partial L / \partial O`.

    Returns
    -------
    dQ, dK, dV : ndarrays shaped like ``Q``, ``K``, ``V``

    Examples
    --------
    >>> Q, K, V = np.random.default_rng(0).standard_normal((3, 2, 4, 8))
    >>> output, weights = scaled_dot_product_attention(Q, K, V)
    >>> dQ, dK, dV = attention_vjp(Q, K, V, weights, d_output=np.ones_like(output))  # the loss: output.sum()
    >>> dQ.shape, dK.shape, dV.shape
    ((2, 4, 8), (2, 4, 8), (2, 4, 8))
    >>> nudged = Q.copy()
    >>> nudged[0, 0, 0] += 1e-6
    >>> slope = (scaled_dot_product_attention(nudged, K, V)[0].sum() - output.sum()) / 1e-6
    >>> bool(np.isclose(slope, dQ[0, 0, 0], atol=1e-4))  # what a finite difference measures
    True
    """
    scale = 1 / np.sqrt(Q.dtype.type(Q.shape[-1]))  # in Q's dtype: float32 stays float32, longdouble keeps its digits
    d_weights = d_output @ V.swapaxes(-1, -2)  # (..., seq_q, seq_k): dP = dO V^T
    dV = weights.swapaxes(-1, -2) @ d_output  # (..., seq_k, d_v): dV = P^T dO
    d_scores = softmax_vjp(weights, d_weights)  # (..., seq_q, seq_k): exactly 0 where P = 0
    dQ = (d_scores @ K) * scale  # (..., seq_q, d_k): dQ = c dS K
    dK = (d_scores.swapaxes(-1, -2) @ Q) * scale  # (..., seq_k, d_k): dK = c dS^T Q
    return dQ, dK, dV


def split_heads_vjp(d_heads):
    r"""Backward of ``heads = split_heads(x, num_heads)``: a reshape moves numbers, so its vjp moves them back.

    Parameters
    ----------
    d_heads : ndarray of shape ``(batch, num_heads, seq_len, d_k)``

    Returns
    -------
    ndarray of shape ``(batch, seq_len, num_heads * d_k)``
        :math:`\partial L / \partial x`: :func:`mhattn.combine_heads` of ``d_heads``.

    Examples
    --------
    >>> d_heads = np.arange(24.0).reshape(1, 3, 2, 4)  # (batch, num_heads, seq_len, d_k)
    >>> d_x = split_heads_vjp(d_heads)
    >>> d_x.shape
    (1, 2, 12)
    >>> bool(np.array_equal(d_x, combine_heads(d_heads)))
    True
    """
    return combine_heads(d_heads)  # (batch, seq_len, d_model): every number back in its column


def combine_heads_vjp(d_x, num_heads):
    r"""Backward of ``x = combine_heads(heads)``: split ``d_x`` the way the forward joined the heads.

    Parameters
    ----------
    d_x : ndarray of shape ``(batch, seq_len, num_heads * d_k)``
    num_heads : int

    Returns
    -------
    ndarray of shape ``(batch, num_heads, seq_len, d_k)``
        :math:`\partial L / \partial \text{heads}`: :func:`mhattn.split_heads` of ``d_x``.

    Examples
    --------
    >>> d_x = np.arange(12.0).reshape(1, 2, 6)  # (batch, seq_len, d_model)
    >>> d_heads = combine_heads_vjp(d_x, num_heads=3)
    >>> d_heads.shape
    (1, 3, 2, 2)
    >>> d_heads[0, 1]  # head 1's gradient: columns 2 and 3 of every token
    array([[2., 3.],
           [8., 9.]])
    """
    return split_heads(d_x, num_heads)  # (batch, num_heads, seq_len, d_k)


def linear_vjp(x, W, d_y):
    r"""Backward of ``y = x @ W`` for a weight matrix ``W`` shared by every token.

    .. math::

        \frac{\partial L}{\partial x} = \frac{\partial L}{\partial y} W^\top, \qquad
        \frac{\partial L}{\partial W} = \sum_{\text{tokens } t} x_t^\top \frac{\partial L}{\partial y_t}

    The sum over tokens (every batch row and position) is one matrix product once the
    leading axes are flattened into rows.

    Parameters
    ----------
    x : ndarray of shape ``(..., d_in)``
    W : ndarray of shape ``(d_in, d_out)``
    d_y : ndarray of shape ``(..., d_out)``

    Returns
    -------
    d_x : ndarray of shape ``(..., d_in)``
    d_W : ndarray of shape ``(d_in, d_out)``

    Examples
    --------
    >>> x = np.array([[[1.0, 2.0]]])  # one token, d_in = 2
    >>> W = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]])  # (d_in, d_out)
    >>> d_x, d_W = linear_vjp(x, W, d_y=np.array([[[1.0, 1.0, 1.0]]]))
    >>> d_x  # d_y @ W.T
    array([[[3., 4.]]])
    >>> d_W  # x.T @ d_y
    array([[1., 1., 1.],
           [2., 2., 2.]])
    """
    rows_x = x.reshape(-1, x.shape[-1])  # (tokens, d_in): every batch row and position is one token
    rows_d_y = d_y.reshape(-1, d_y.shape[-1])  # (tokens, d_out)
    d_x = (rows_d_y @ W.T).reshape(x.shape)  # (..., d_in)
    d_W = rows_x.T @ rows_d_y  # (d_in, d_out): summed over every token
    return d_x, d_W


def multihead_vjp(x, W_qkv, W_o, num_heads, mask=None):
    r"""Multi-head attention's forward, and a ``backward`` that returns every gradient.

    The forward is :meth:`mhattn.MultiHeadAttention.forward`'s, step for step. The backward
    walks the same steps in reverse, each through its vjp above:

    ======================================  ==========================================
    forward                                 backward
    ======================================  ==========================================
    ``qkv = x @ W_qkv``                     ``linear_vjp`` -> ``d_x``, ``d_W_qkv``
    ``Q, K, V = split(qkv)``, split heads   concatenate, ``split_heads_vjp``
    ``heads, P = attention(Q, K, V)``       ``attention_vjp`` -> ``dQ``, ``dK``, ``dV``
    ``concat = combine_heads(heads)``       ``combine_heads_vjp``
    ``output = concat @ W_o``               ``linear_vjp`` -> ``d_concat``, ``d_W_o``
    ======================================  ==========================================

    Parameters
    ----------
    x : ndarray of shape ``(batch, seq_len, d_model)``
    W_qkv : ndarray of shape ``(d_model, 3 * d_model)``
    W_o : ndarray of shape ``(d_model, d_model)``
        The backward reads private copies of ``x``, ``W_qkv``, ``W_o`` and of the attention
        weights, so changing any of them in place between forward and backward (an optimizer
        step, a residual ``h += output``) changes no gradient.
    num_heads : int
    mask : ndarray of bool, optional
        True where a query may attend to a key, as for the forward.

    Returns
    -------
    output : ndarray of shape ``(batch, seq_len, d_model)``
    weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
    backward : function
        ``backward(d_output)`` returns the dict ``{"x": d_x, "W_qkv": d_W_qkv, "W_o": d_W_o}``.
        It only reads what the forward kept: call it any number of times, from any thread.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((2, 5, 8))  # (batch, seq_len, d_model)
    >>> W_qkv, W_o = rng.standard_normal((8, 24)) / 4, rng.standard_normal((8, 8)) / 4
    >>> output, weights, backward = multihead_vjp(x, W_qkv, W_o, num_heads=2)
    >>> output.shape, weights.shape
    ((2, 5, 8), (2, 2, 5, 5))
    >>> grads = backward(np.ones_like(output))  # the loss: output.sum()
    >>> {name: grad.shape for name, grad in grads.items()}  # shaped like the inputs
    {'x': (2, 5, 8), 'W_qkv': (8, 24), 'W_o': (8, 8)}
    """
    x, W_qkv, W_o = x.copy(), W_qkv.copy(), W_o.copy()  # the backward's own: in-place updates cannot reach it
    Q, K, V = (split_heads(t, num_heads) for t in np.split(x @ W_qkv, 3, axis=-1))  # (batch, heads, seq, d_k)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # (batch, heads, seq, d_k), (..., seq, seq)
    concat = combine_heads(heads)  # (batch, seq, d_model)
    output = concat @ W_o  # (batch, seq, d_model)

    def backward(d_output):
        d_concat, d_W_o = linear_vjp(concat, W_o, d_output)  # (batch, seq, d_model), (d_model, d_model)
        d_heads = combine_heads_vjp(d_concat, num_heads)  # (batch, num_heads, seq, d_k)
        dQ, dK, dV = attention_vjp(Q, K, V, weights, d_heads)  # each (batch, num_heads, seq, d_k)
        d_qkv = split_heads_vjp(np.concatenate([dQ, dK, dV], axis=1))  # (batch, seq, 3 d_model): Q, K, V side by side
        d_x, d_W_qkv = linear_vjp(x, W_qkv, d_qkv)  # (batch, seq, d_model), (d_model, 3 d_model)
        return {"x": d_x, "W_qkv": d_W_qkv, "W_o": d_W_o}

    return output, weights.copy(), backward  # the caller's weights: the backward keeps its own
