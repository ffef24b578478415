"""The arguments of the positions functions (:mod:`mhattn.core.positions`) and of the module's RoPE options."""

import numbers

import numpy as np

from .values import compute_dtype, finite, flag, number_array, positive_int, real_array


def angles_args(positions, d_k, base):
    positions = position_array(positions, None)
    return {"positions": positions, "d_k": positive_int("d_k", d_k), "base": rope_base_value(base)}, None


def sinusoidal_args(seq_len, d_model, base):
    seq_len = count("seq_len", seq_len)
    return {"seq_len": seq_len, "d_model": positive_int("d_model", d_model), "base": rope_base_value(base)}, None


def rope_args(x, positions, base):
    x = real_array("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., seq_len, d_k); got shape {x.shape}")
    d_k = x.shape[-1]
    if d_k % 2 or d_k == 0:
        raise ValueError(
            f"d_k (the last axis of x) must be even and positive: RoPE turns pairs of coordinates; got x of shape "
            f"{x.shape}, d_k = {d_k}"
        )
    finite("x", x)
    positions = position_array(positions, x.shape[-2])
    dtype, result_dtype = compute_dtype(x)
    return {"x": x.astype(dtype, copy=False), "positions": positions, "base": rope_base_value(base)}, result_dtype


def order_args(d_k):
    d_k = positive_int("d_k", d_k)
    if d_k % 2:
        raise ValueError(f"d_k must be even: RoPE turns pairs of coordinates; got d_k = {d_k}")
    return {"d_k": d_k}, None



LARGEST_POSITION = 2**53  #: the largest |position|: every int up to it is exact in float64, so angles differ


def position_array(positions, seq_len):
    """``positions`` as a 1-D int64 array in ``[-2**53, 2**53]`` of length ``seq_len`` (any if None), or an error."""
    array = number_array("positions", positions)  # a masked array is refused
    if array.dtype.kind not in "iu" or array.dtype == np.uint64:
        raise TypeError(
            f"positions must be an array of ints (one per row of x, e.g. np.arange(seq_len)); got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise ValueError(f"positions must be 1-D, one int per row; got shape {array.shape}")
    if seq_len is not None and array.shape != (seq_len,):
        raise ValueError(f"positions must have shape (seq_len,) = ({seq_len},); got shape {array.shape}")
    array = array.astype(np.int64, copy=False)
    if array.size and not (-LARGEST_POSITION <= int(array.min()) and int(array.max()) <= LARGEST_POSITION):
        raise ValueError(
            f"positions must lie in [-2**53, 2**53], where every int is exact as a float (beyond it two "
            f"positions would turn by the same angle); got {array.min()} to {array.max()}"
        )
    return array


def rope_settings(rope, rope_base, d_k):
    """Check :class:`mhattn.MultiHeadAttention`'s ``rope`` and ``rope_base``; return them as ``(bool, float)``."""
    rope = flag("rope", rope)
    rope_base = rope_base_value(rope_base, "rope_base")
    if rope and d_k % 2:
        raise ValueError(
            f"rope=True needs an even d_k = d_model // num_heads (RoPE turns pairs of coordinates); got d_k = {d_k}"
        )
    return rope, rope_base


def rope_base_value(value, name="base"):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = type(value).__name__
        raise TypeError(f"{name} must be a positive float (10000.0 is usual); got {value!r} of type {kind}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive, finite float (10000.0 is usual); got {value}")
    return float(value)


def count(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 0; got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0; got {value}")
    return int(value)
