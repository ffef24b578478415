r"""The backward pass of the later features: grouped queries and rotary positions, and of the full layer.

Read beside :mod:`mhattn.core.grad` (the plain module's backward): each forward step of
:class:`mhattn.GroupedQueryAttention` that the plain module lacks has its vector-Jacobian
product here, and :func:`layer_vjp` runs the whole layer backwards.

================================  ========================================
forward                           backward (this module)
================================  ========================================
``np.repeat(K, group, axis=1)``   :func:`repeat_kv_vjp`
:func:`mhattn.apply_rope`         :func:`rope_vjp`
:func:`mhattn.apply_rope_interleaved`  :func:`rope_interleaved_vjp`
:class:`mhattn.GroupedQueryAttention`  :func:`layer_vjp`, :func:`module_vjp`
================================  ========================================
"""

import numpy as np

from .attention import scaled_dot_product_attention
from .grad import attention_vjp, combine_heads_vjp, linear_vjp, split_heads_vjp
from .heads import combine_heads
from .positions import apply_rope, apply_rope_interleaved
from .projection import project_qkv, repeat_kv


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

    Examples
    --------
    >>> d_repeated = np.arange(4.0).reshape(1, 4, 1, 1)  # four query heads, two per key/value head
    >>> repeat_kv_vjp(d_repeated, group=2).ravel()  # head 0 collects 0 + 1, head 1 collects 2 + 3
    array([1., 5.])
    """
    batch, num_heads, seq_len, d_k = d_repeated.shape
    d_repeated = d_repeated.reshape(batch, num_heads // group, group, seq_len, d_k)  # (batch, kv_heads, group, ...)
    return d_repeated.sum(axis=2)  # (batch, num_kv_heads, seq_len, d_k): one sum per shared head


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

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((4, 8))  # (seq_len, d_k)
    >>> positions = np.arange(4)
    >>> d_x = rope_vjp(apply_rope(x, positions), positions)
    >>> bool(np.allclose(d_x, x))  # a rotation's transpose is its inverse
    True
    """
    return apply_rope(d_rotated, -positions, base)  # (..., seq_len, d_k): R(p)^T = R(-p)


def rope_interleaved_vjp(d_rotated, positions, base=10000.0):
    r"""Backward of ``rotated = apply_rope_interleaved(x, positions, base)``: RoPE at ``-positions``.

    The same argument as :func:`rope_vjp`, for the pairs ``(2i, 2i + 1)``. ``positions``:
    ``(seq_len,)`` or ``(batch, seq_len)``, as for the forward.

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((4, 8))  # (seq_len, d_k)
    >>> positions = np.arange(4)
    >>> d_x = rope_interleaved_vjp(apply_rope_interleaved(x, positions), positions)
    >>> bool(np.allclose(d_x, x))  # a rotation's transpose is its inverse
    True
    """
    return apply_rope_interleaved(d_rotated, -positions, base)  # (..., seq_len, d_k): R(p)^T = R(-p)


def layer_vjp(x, W_qkv, W_o, num_heads, num_kv_heads, mask=None, rope_base=None, *, positions=None,
              rope_pairing="half"):
    r"""Multi-head attention's forward, and a ``backward`` that returns every gradient.

    The forward is :meth:`mhattn.GroupedQueryAttention.forward`'s (without a cache or a
    context), step for step. The backward walks the same steps in reverse, each through its
    vjp above:

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
        In the dtype of ``x``; used as given, without checks
        (:meth:`mhattn.GroupedQueryAttention.vjp` checks them). The backward reads private
        copies of ``x``, ``W_qkv``, ``W_o`` and of the attention weights, so changing any of
        them in place between forward and backward (an optimizer step, a residual
        ``h += output``, ``weights *= 0.5``) changes no gradient.
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
    """:func:`layer_vjp` for a module's own weights and settings: ``output, weights, backward``.

    ``mha`` is a :class:`mhattn.MultiHeadAttention` or one of its extensions (RoPE read from
    ``mha.rope``, grouped queries from ``mha.num_kv_heads``). ``x`` in the compute dtype; the
    weights are cast to it. ``backward(d_output)`` returns the gradients of ``x``, ``W_qkv`` and
    ``W_o``.
    """
    num_kv_heads = getattr(mha, "num_kv_heads", mha.num_heads)
    rope_base = mha.rope_base if getattr(mha, "rope", False) else None
    W_qkv, W_o = mha.W_qkv.astype(x.dtype, copy=False), mha.W_o.astype(x.dtype, copy=False)
    return layer_vjp(x, W_qkv, W_o, mha.num_heads, num_kv_heads, mask, rope_base, positions=positions,
                     rope_pairing=getattr(mha, "rope_pairing", None) or "half")
