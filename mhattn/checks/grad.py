"""The arguments of the backward helpers (:mod:`mhattn.core.grad`): each vjp checks its door like its forward.

A vjp receives the forward's arrays and a gradient shaped like the forward's output. Each
check below refuses what would otherwise reach NumPy: a gradient of another shape (NumPy's
broadcasting message, or a silent broadcast), a non-finite gradient, a head count that does
not divide the width. Arrays become float arrays as at every door (:func:`~.values.real_array`).
"""

import contextlib

from .door import door
from .module import head_counts, module_mask, tokens
from .positions import position_array, rope_base_value, rope_input
from .values import compute_dtype, finite, ndim, positive_int, real_array


def _real(name, value, at_least=1):
    """``value`` as a finite float array of at least ``at_least`` axes."""
    array = real_array(name, value)
    if array.ndim < at_least:
        raise ValueError(f"{name} must have at least {at_least} axes; got shape {array.shape}")
    return finite(name, array)


def _same_shape(name, array, other_name, expected):
    if array.shape != tuple(expected):
        raise ValueError(f"{name} must have the shape of {other_name}, {tuple(expected)}; got shape {array.shape}")


def _cast(arrays):
    """The arrays in their common compute dtype (float16 computed in float32), and the result dtype."""
    dtype, result_dtype = compute_dtype(*arrays.values())
    return {name: a.astype(dtype, copy=False) for name, a in arrays.items()}, result_dtype


def softmax_vjp_args(weights, d_weights):
    """Arguments of :func:`mhattn.core.grad.softmax_vjp`: two arrays of one shape, ``(..., n)``."""
    weights, d_weights = _real("weights", weights), _real("d_weights", d_weights)
    _same_shape("d_weights", d_weights, "weights", weights.shape)
    return _cast({"weights": weights, "d_weights": d_weights})


def attention_vjp_args(Q, K, V, weights, d_output):
    """Arguments of :func:`mhattn.core.grad.attention_vjp`: the forward's shapes, and ``d_output`` like its output."""
    Q, K, V = (_real(name, a, 2) for name, a in (("Q", Q), ("K", K), ("V", V)))
    weights, d_output = _real("weights", weights, 2), _real("d_output", d_output, 2)
    if Q.shape[-1] != K.shape[-1] or Q.shape[-1] == 0:
        raise ValueError(f"Q and K must have the same depth d_k >= 1 (last axis); got Q {Q.shape} and K {K.shape}")
    if K.shape[:-1] != V.shape[:-1]:
        raise ValueError(f"K and V must have the same leading axes and length seq_k; got K {K.shape} and V {V.shape}")
    if Q.shape[:-2] != K.shape[:-2]:
        raise ValueError(f"Q and K must have the same leading (batch, head) axes; got Q {Q.shape} and K {K.shape}")
    _same_shape("weights", weights, "the scores (..., seq_q, seq_k)", Q.shape[:-1] + K.shape[-2:-1])
    _same_shape("d_output", d_output, "the output (..., seq_q, d_v)", Q.shape[:-1] + V.shape[-1:])
    return _cast({"Q": Q, "K": K, "V": V, "weights": weights, "d_output": d_output})


def split_heads_vjp_args(d_heads):
    """Arguments of :func:`mhattn.core.grad.split_heads_vjp`: a 4-D gradient of the heads."""
    d_heads = _real("d_heads", d_heads)
    ndim("d_heads", d_heads, 4, "(batch, num_heads, seq_len, d_k)")
    return {"d_heads": d_heads}, None


def combine_heads_vjp_args(d_x, num_heads):
    """Arguments of :func:`mhattn.core.grad.combine_heads_vjp`: a 3-D gradient and a head count that divides it."""
    num_heads = positive_int("num_heads", num_heads)
    d_x = _real("d_x", d_x)
    ndim("d_x", d_x, 3, "(batch, seq_len, num_heads * d_k)")
    if d_x.shape[-1] % num_heads:
        raise ValueError(f"num_heads must divide the last axis of d_x, {d_x.shape[-1]}; got num_heads = {num_heads}")
    return {"d_x": d_x, "num_heads": num_heads}, None


def linear_vjp_args(x, W, d_y):
    """Arguments of :func:`mhattn.core.grad.linear_vjp`: ``x (..., d_in)``, ``W (d_in, d_out)``, ``d_y``."""
    x, W, d_y = _real("x", x), _real("W", W), _real("d_y", d_y)
    ndim("W", W, 2, "(d_in, d_out)")
    if x.shape[-1] != W.shape[0]:
        raise ValueError(f"x must have d_in = W.shape[0] = {W.shape[0]} on its last axis; got x of shape {x.shape}")
    _same_shape("d_y", d_y, "x @ W", x.shape[:-1] + W.shape[1:])
    return _cast({"x": x, "W": W, "d_y": d_y})


def repeat_kv_vjp_args(d_repeated, group):
    """Arguments of :func:`mhattn.core.grad.repeat_kv_vjp`: a 4-D gradient whose head axis ``group`` divides."""
    group = positive_int("group", group)
    d_repeated = _real("d_repeated", d_repeated)
    ndim("d_repeated", d_repeated, 4, "(batch, num_kv_heads * group, seq_len, d_k)")
    if d_repeated.shape[1] % group:
        raise ValueError(f"group must divide the head axis of d_repeated, {d_repeated.shape[1]}; got group = {group}")
    return {"d_repeated": d_repeated, "group": group}, None


def rope_vjp_args(d_rotated, positions, base):
    """Arguments of :func:`mhattn.core.grad.rope_vjp`: :func:`~.positions.rope_args`'s rules, before negating."""
    d_rotated = _real("d_rotated", d_rotated, 2)
    d_k = d_rotated.shape[-1]
    if d_k % 2 or d_k == 0:
        raise ValueError(f"d_k (the last axis of d_rotated) must be even and positive: RoPE turns pairs of "
                         f"coordinates; got d_rotated of shape {d_rotated.shape}")
    positions = position_array(positions, d_rotated.shape[-2])  # int64 in [-2**53, 2**53]: -positions is exact
    dtype, result_dtype = compute_dtype(d_rotated)
    return {"d_rotated": d_rotated.astype(dtype, copy=False), "positions": positions,
            "base": rope_base_value(base)}, result_dtype



def rope_interleaved_vjp_args(d_rotated, positions, base):
    """Arguments of :func:`mhattn.core.grad.rope_interleaved_vjp`: the forward's rules, checked before negating."""
    arguments, result_dtype = rope_input("d_rotated", d_rotated, positions, base)  # int64 in [-2**53, 2**53]
    return {"d_rotated": arguments.pop("x")} | arguments, result_dtype


def multihead_vjp_args(x, W_qkv, W_o, num_heads, mask):
    """Arguments of :func:`mhattn.multihead_vjp`: the plain module's input, weights and mask."""
    num_heads = positive_int("num_heads", num_heads)
    W_o = _real("W_o", W_o, 2)
    d_model, num_heads, _ = head_counts(W_o.shape[0], num_heads)
    x = tokens("x", x, d_model)
    W_qkv = _real("W_qkv", W_qkv, 2)
    for name, array, shape in (("W_qkv", W_qkv, (d_model, 3 * d_model)), ("W_o", W_o, (d_model, d_model))):
        if array.shape != shape:
            raise ValueError(f"{name} must have shape {shape} (d_model = {d_model} from W_o); got shape {array.shape}")
    mask = module_mask(mask, (x.shape[0], num_heads, x.shape[1], x.shape[1]))
    arrays, result_dtype = _cast({"x": x, "W_qkv": W_qkv, "W_o": W_o})
    arguments = arrays | {"num_heads": num_heads, "mask": mask}
    dtypes = {"x": x.dtype if result_dtype is None else result_dtype, "W_qkv": W_qkv.dtype, "W_o": W_o.dtype}
    return arguments, result_dtype, contextlib.nullcontext(), backward_behind_a_door(arrays["x"].dtype, dtypes)


def backward_behind_a_door(compute_dtype, dtypes):
    """What a vjp's door hands back: ``(output, weights, backward)``, with ``backward`` behind a door of its own.

    That door takes a finite ``d_output`` of the output's shape (computed in ``compute_dtype``)
    and returns each gradient in the dtype of what it differentiates (``dtypes``, by name).
    """

    def after(result):
        output, weights, backward = result

        def d_output_args(d_output):
            d_output = _real("d_output", d_output)
            _same_shape("d_output", d_output, "output", output.shape)
            in_dtypes = lambda grads: {name: grad.astype(dtypes[name], copy=False) for name, grad in grads.items()}  # noqa: E731
            return {"d_output": d_output.astype(compute_dtype, copy=False)}, None, contextlib.nullcontext(), in_dtypes

        return output, weights, door(backward, d_output_args)

    return after
