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
:func:`mhattn.core.positions.apply_rope`  :func:`rope_vjp`
:func:`mhattn.apply_rope_interleaved`  :func:`rope_interleaved_vjp`
:class:`mhattn.MultiHeadAttention`  :func:`multihead_vjp` (all of the above)
================================  ========================================

Every function here is checked against central finite differences and against PyTorch's
autograd in ``tests/test_grad.py``; notebook 09 derives them.
"""

import numpy as np

from .. import checks
from ..checks import checked, moves_numbers
from ..checks.grad import (
    attention_vjp_args,
    combine_heads_vjp_args,
    linear_vjp_args,
    repeat_kv_vjp_args,
    rope_interleaved_vjp_args,
    rope_vjp_args,
    softmax_vjp_args,
    split_heads_vjp_args,
)
from .attention import scaled_dot_product_attention
from .heads import combine_heads, split_heads
from .positions import apply_rope, apply_rope_interleaved
from .projection import project_qkv, repeat_kv


@checked(softmax_vjp_args)
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
    """
    inner = np.vecdot(d_weights, weights)[..., None]  # (..., 1): sum_i g_i p_i, a dot product per row
    return weights * (d_weights - inner)  # (..., n): p_j (g_j - sum_i g_i p_i); 0 where p_j = 0


@checked(attention_vjp_args)
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
    """
    scale = 1 / np.sqrt(Q.dtype.type(Q.shape[-1]))  # in Q's dtype: float32 stays float32, longdouble keeps its digits
    d_weights = d_output @ V.swapaxes(-1, -2)  # (..., seq_q, seq_k): dP = dO V^T
    dV = weights.swapaxes(-1, -2) @ d_output  # (..., seq_k, d_v): dV = P^T dO
    d_scores = softmax_vjp(weights, d_weights)  # (..., seq_q, seq_k): exactly 0 where P = 0
    dQ = (d_scores @ K) * scale  # (..., seq_q, d_k): dQ = c dS K
    dK = (d_scores.swapaxes(-1, -2) @ Q) * scale  # (..., seq_k, d_k): dK = c dS^T Q
    return dQ, dK, dV


@moves_numbers(split_heads_vjp_args)
def split_heads_vjp(d_heads):
    r"""Backward of ``heads = split_heads(x, num_heads)``: a reshape moves numbers, so its vjp moves them back.

    Parameters
    ----------
    d_heads : ndarray of shape ``(batch, num_heads, seq_len, d_k)``

    Returns
    -------
    ndarray of shape ``(batch, seq_len, num_heads * d_k)``
        :math:`\partial L / \partial x`: :func:`mhattn.combine_heads` of ``d_heads``.
    """
    return combine_heads(d_heads)  # (batch, seq_len, d_model): every number back in its column


@moves_numbers(combine_heads_vjp_args)
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
    """
    return split_heads(d_x, num_heads)  # (batch, num_heads, seq_len, d_k)


@checked(linear_vjp_args)
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
    """
    rows_x = x.reshape(-1, x.shape[-1])  # (tokens, d_in): every batch row and position is one token
    rows_d_y = d_y.reshape(-1, d_y.shape[-1])  # (tokens, d_out)
    d_x = (rows_d_y @ W.T).reshape(x.shape)  # (..., d_in)
    d_W = rows_x.T @ rows_d_y  # (d_in, d_out): summed over every token
    return d_x, d_W


@checked(repeat_kv_vjp_args)
def repeat_kv_vjp(d_repeated, group):
    r"""Backward of ``np.repeat(K, group, axis=1)``, grouped-query attention's key/value sharing.

    Key/value head :math:`g` is read by the ``group`` query heads :math:`g \cdot group` to
    :math:`g \cdot group + group - 1`; a value used several times collects the sum of the
    gradients of its uses.

    Parameters
    ----------
    d_repeated : ndarray of shape ``(batch, num_kv_heads * group, seq_len, d_k)``
    group : int

    Returns
    -------
    ndarray of shape ``(batch, num_kv_heads, seq_len, d_k)``
    """
    batch, num_heads, seq_len, d_k = d_repeated.shape
    d_repeated = d_repeated.reshape(batch, num_heads // group, group, seq_len, d_k)  # (batch, kv_heads, group, ...)
    return d_repeated.sum(axis=2)  # (batch, num_kv_heads, seq_len, d_k): one sum per shared head


@checked(rope_vjp_args)
def rope_vjp(d_rotated, positions, base=10000.0):
    r"""Backward of ``rotated = apply_rope(x, positions, base)``: the same rotations, turned back.

    Each pair of coordinates is multiplied by a rotation matrix :math:`R(p\theta_i)`, so its
    vjp multiplies by :math:`R(p\theta_i)^\top = R(-p\theta_i)`: RoPE at ``-positions``.

    Parameters
    ----------
    d_rotated : ndarray of shape ``(..., seq_len, d_k)``
    positions : ndarray of int, shape ``(seq_len,)``
        In ``[-2**53, 2**53]``, as for :func:`~mhattn.core.positions.apply_rope`; checked
        before they are negated, so no integer wraps around.
    base : float > 0

    Returns
    -------
    ndarray of shape ``(..., seq_len, d_k)``
    """
    return apply_rope(d_rotated, -positions, base)  # (..., seq_len, d_k): R(p)^T = R(-p)


@checked(rope_interleaved_vjp_args)
def rope_interleaved_vjp(d_rotated, positions, base=10000.0):
    r"""Backward of ``rotated = apply_rope_interleaved(x, positions, base)``: RoPE at ``-positions``.

    The same argument as :func:`rope_vjp`, for the pairs ``(2i, 2i + 1)``. ``positions``:
    ``(seq_len,)`` or ``(batch, seq_len)``, as for the forward.
    """
    return apply_rope_interleaved(d_rotated, -positions, base)  # (..., seq_len, d_k): R(p)^T = R(-p)


def multihead_vjp(x, W_qkv, W_o, num_heads, num_kv_heads, mask=None, rope_base=None, *, positions=None,
                  rope_pairing="half"):
    r"""Multi-head attention's forward, and a ``backward`` that returns every gradient.

    The forward is :meth:`mhattn.MultiHeadAttention.forward`'s, step for step. The backward
    walks the same steps in reverse, each through its vjp above:

    ======================================  ==========================================
    forward                                 backward
    ======================================  ==========================================
    ``qkv = x @ W_qkv``                     ``linear_vjp`` -> ``d_x``, ``d_W_qkv``
    ``Q, K, V = split(qkv)``, split heads   concatenate, ``split_heads_vjp``
    rotate Q and K (RoPE, optional)         ``rope_vjp`` (``rope_interleaved_vjp``)
    repeat K, V for grouped queries         ``repeat_kv_vjp``
    ``heads, P = attention(Q, K, V)``       ``attention_vjp`` -> ``dQ``, ``dK``, ``dV``
    ``concat = combine_heads(heads)``       ``combine_heads_vjp``
    ``output = concat @ W_o``               ``linear_vjp`` -> ``d_concat``, ``d_W_o``
    ======================================  ==========================================

    Parameters
    ----------
    x : ndarray of shape ``(batch, seq_len, d_model)``
    W_qkv : ndarray of shape ``(d_model, d_model + 2 * num_kv_heads * d_k)``
    W_o : ndarray of shape ``(d_model, d_model)``
        In the dtype of ``x``; used as given, without checks (:meth:`mhattn.MultiHeadAttention.vjp`
        checks them). The backward reads private copies of ``x``, ``W_qkv``, ``W_o`` and of the
        attention weights, so changing any of them in place between forward and backward (an
        optimizer step, a residual ``h += output``, ``weights *= 0.5``) changes no gradient.
    num_heads, num_kv_heads : int
    mask : ndarray of bool, optional
        True where a query may attend to a key, as for the forward.
    rope_base : float, optional
        None (the default): no rotary embeddings. A float: queries and keys rotated by their
        positions with this base, as ``MultiHeadAttention(rope=True)``.
    positions : ndarray of int, keyword only, optional
        RoPE's positions, ``(seq_len,)`` or ``(batch, seq_len)``; default ``0, ..., seq_len - 1``.
    rope_pairing : ``"half"`` or ``"interleaved"``, keyword only, default ``"half"``
        Which coordinates RoPE turns together (:class:`mhattn.MultiHeadAttention`'s ``rope``).

    Returns
    -------
    output : ndarray of shape ``(batch, seq_len, d_model)``
    weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
    backward : function
        ``backward(d_output)``, ``d_output`` shaped like ``output``, returns the dict
        ``{"x": d_x, "W_qkv": d_W_qkv, "W_o": d_W_o}`` of
        :math:`\partial L / \partial x`, :math:`\partial L / \partial W_{qkv}`,
        :math:`\partial L / \partial W_o`. It only reads what the forward kept, so it may be
        called any number of times, from any thread.
    """
    x, W_qkv, W_o = x.copy(), W_qkv.copy(), W_o.copy()  # the backward's own: in-place updates cannot reach it
    group = num_heads // num_kv_heads  # query heads per key/value head
    if rope_base is None:
        positions = None
    elif positions is None:
        positions = np.arange(x.shape[1])  # (seq,): RoPE's default positions
    Q, K, V = project_qkv(x, W_qkv, num_heads, num_kv_heads, positions=positions, rope_base=rope_base,
                          rope_pairing=rope_pairing)
    K, V = repeat_kv(K, V, group)  # (batch, num_heads, seq, d_k) each
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # (batch, heads, seq, d_k), (..., seq, seq)
    concat = combine_heads(heads)  # (batch, seq, d_model)
    output = concat @ W_o  # (batch, seq, d_model)

    def backward(d_output):
        d_concat, d_W_o = linear_vjp(concat, W_o, d_output)  # (batch, seq, d_model), (d_model, d_model)
        d_heads = combine_heads_vjp(d_concat, num_heads)  # (batch, num_heads, seq, d_k)
        dQ, dK, dV = attention_vjp(Q, K, V, weights, d_heads)  # each (batch, num_heads, seq, d_k)
        if group > 1:
            dK, dV = repeat_kv_vjp(dK, group), repeat_kv_vjp(dV, group)  # (batch, num_kv_heads, seq, d_k)
        if rope_base is not None:  # back through the rotations
            unrotate = rope_interleaved_vjp if rope_pairing == "interleaved" else rope_vjp
            dQ, dK = unrotate(dQ, positions, rope_base), unrotate(dK, positions, rope_base)  # same shapes
        # Q, K and V are num_heads + 2 * num_kv_heads heads side by side in x @ W_qkv: join them, then undo the split
        d_qkv = split_heads_vjp(np.concatenate([dQ, dK, dV], axis=1))  # (batch, seq, width)
        d_x, d_W_qkv = linear_vjp(x, W_qkv, d_qkv)  # (batch, seq, d_model), (d_model, width)
        return {"x": d_x, "W_qkv": d_W_qkv, "W_o": d_W_o}

    return output, weights.copy(), backward  # the caller's weights: the backward keeps its own


def module_vjp(mha, x, mask=None, *, positions=None):
    """:meth:`mhattn.MultiHeadAttention.vjp`: the module's argument checks around :func:`multihead_vjp`.

    ``x``, ``mask`` and ``positions`` are checked as :meth:`~mhattn.MultiHeadAttention.forward` checks them;
    float16 is computed in float32. The output and weights come back in ``x``'s dtype, like
    the forward's, and an overflow raises ``FloatingPointError`` instead of returning inf.
    ``backward`` checks ``d_output`` and returns the gradient of ``x`` in ``x``'s dtype and
    those of ``W_qkv`` and ``W_o`` in the weights' own dtypes.
    """
    arguments, result_dtype, _ = checks.forward_args(mha, x, mask, True, None, None, positions)  # no cache: no guard
    x, mask, positions = arguments["x"], arguments["mask"], arguments["positions"]  # float16 x became float32
    W_qkv, W_o = mha.weights(x.dtype)  # checked, in the compute dtype
    with np.errstate(all="ignore"):  # overflow is reported by _finite, with a clear message
        rope_base = mha.rope_base if mha.rope else None
        output, weights, backward = multihead_vjp(x, W_qkv, W_o, mha.num_heads, mha.num_kv_heads, mask, rope_base,
                                                  positions=positions, rope_pairing=mha.rope_pairing)
    out_dtype = x.dtype if result_dtype is None else result_dtype
    output, weights = (_finite("MultiHeadAttention.vjp", a.astype(out_dtype, copy=False)) for a in (output, weights))
    dtypes = {
        "x": out_dtype,
        "W_qkv": checks.real_array("W_qkv", mha.W_qkv).dtype,
        "W_o": checks.real_array("W_o", mha.W_o).dtype,
    }

    def checked_backward(d_output):
        d_output = checks.real_array("d_output", d_output)
        if d_output.shape != output.shape:
            raise ValueError(f"d_output must have the output's shape {output.shape}; got shape {d_output.shape}")
        checks.finite("d_output", d_output)
        with np.errstate(all="ignore"):
            grads = backward(d_output.astype(x.dtype, copy=False))
        grads = {name: grad.astype(dtypes[name], copy=False) for name, grad in grads.items()}
        return {name: _finite(f"the gradient of {name}", grad) for name, grad in grads.items()}

    return output, weights, checked_backward


def _finite(name, array):
    """``array``, or ``FloatingPointError`` if a finite computation overflowed into inf or NaN."""
    if not np.isfinite(array).all():
        raise checks.overflow_error(name, array.dtype)
    return array
