"""The arguments of the positions functions (:mod:`mhattn.core.positions`) and of the module's RoPE options."""


import numpy as np

from .values import compute_dtype, finite, integer, number_array, positive_int, real_array, real_number


def angles_args(positions, d_k, base):
    positions = position_array(positions, None)
    return {"positions": positions, "d_k": positive_int("d_k", d_k), "base": rope_base_value(base)}, None


def sinusoidal_args(seq_len, d_model, base):
    seq_len = count("seq_len", seq_len)
    return {"seq_len": seq_len, "d_model": positive_int("d_model", d_model), "base": rope_base_value(base)}, None


def rope_args(x, positions, base):
    return rope_input("x", x, positions, base)


def rope_input(name, x, positions, base):
    """The arguments of a RoPE rotation of the array ``x`` (called ``name`` in the messages)."""
    x = real_array(name, x)
    if x.ndim < 2:
        raise ValueError(f"{name} must have shape (..., seq_len, d_k); got shape {x.shape}")
    d_k = x.shape[-1]
    if d_k % 2 or d_k == 0:
        raise ValueError(
            f"d_k (the last axis of {name}) must be even and positive: RoPE turns pairs of coordinates; got {name} of "
            f"shape {x.shape}, d_k = {d_k}"
        )
    finite(name, x)
    if np.ndim(positions) == 2:  # one row of positions per sequence of the batch
        if x.ndim != 4:
            raise ValueError(
                f"positions must be 1-D (seq_len,), or (batch, seq_len) for {name} of shape (batch, heads, seq_len, "
                f"d_k); got positions of shape {np.shape(positions)} for {name} of shape {x.shape}"
            )
        positions = batch_positions(positions, x.shape[0], x.shape[-2])
    else:
        positions = position_array(positions, x.shape[-2])
    dtype, result_dtype = compute_dtype(x)
    return {"x": x.astype(dtype, copy=False), "positions": positions, "base": rope_base_value(base)}, result_dtype


def order_args(d_k):
    d_k = positive_int("d_k", d_k)
    if d_k % 2:
        raise ValueError(f"d_k must be even: RoPE turns pairs of coordinates; got d_k = {d_k}")
    return {"d_k": d_k}, None



LARGEST_POSITION = 2**53  #: the largest |position|: every int up to it is exact in float64, so angles differ


def _int_array(positions, shapes, expected):
    """``positions`` as int64 of one of ``shapes`` in ``[-2**53, 2**53]``, or a clear error naming ``positions``.

    Not bools, not uint64 (which int64 cannot hold), not a masked array; beyond 2**53 two
    positions would turn by the same angle.
    """
    array = number_array("positions", positions)  # a masked array is refused
    if array.dtype.kind not in "iu" or array.dtype == np.uint64:
        raise TypeError(
            f"positions must be an array of ints (one per row of x, e.g. np.arange(seq_len)); got dtype {array.dtype}"
        )
    if not any(len(shape) == array.ndim and all(w is None or w == n for w, n in zip(shape, array.shape, strict=True))
               for shape in shapes):
        raise ValueError(f"positions must have shape {expected}; got shape {array.shape}")
    array = array.astype(np.int64, copy=False)
    if array.size and not (-LARGEST_POSITION <= int(array.min()) and int(array.max()) <= LARGEST_POSITION):
        raise ValueError(
            f"positions must lie in [-2**53, 2**53], where every int is exact as a float (beyond it two "
            f"positions would turn by the same angle); got {array.min()} to {array.max()}"
        )
    return array


def position_array(positions, seq_len):
    """``positions`` as a 1-D int64 array of length ``seq_len`` (any length if None), or a clear error."""
    expected = "(seq_len,), one int per row" if seq_len is None else f"(seq_len,) = ({seq_len},)"
    return _int_array(positions, [(seq_len,)], expected)


def batch_positions(positions, batch, seq_len):
    """``positions`` as int64 of shape ``(seq_len,)`` or ``(batch, seq_len)``, or a clear error."""
    expected = f"(seq_len,) = ({seq_len},) or (batch, seq_len) = ({batch}, {seq_len})"
    return _int_array(positions, [(seq_len,), (batch, seq_len)], expected)


def module_positions(positions, rope, batch, seq_len):
    """The token positions of :meth:`mhattn.MultiHeadAttention.forward`: None, or ints >= 0 of a fitting shape."""
    if positions is None:
        return None
    if not rope:
        raise ValueError(
            "positions are only used by rotary embeddings: build the module with rope=True (or "
            "rope='interleaved') to pass them, or leave positions=None"
        )
    array = batch_positions(positions, batch, seq_len)
    if array.size and array.min() < 0:
        bad = tuple(int(i) for i in np.argwhere(array < 0)[0])
        raise ValueError(
            f"positions must be >= 0 (each token's place in its sequence); got {array[bad]} at index {bad}"
        )
    return array.copy()  # the module's own: a caller's later change cannot reach it


def rope_pairing(rope):
    """``rope`` as ``(on, pairing)``: ``(False, None)``, ``(True, "half")`` or ``(True, "interleaved")``."""
    if isinstance(rope, (bool, np.bool_)):
        return (True, "half") if rope else (False, None)
    if isinstance(rope, str) and rope in ("half", "interleaved"):
        return True, rope
    error = ValueError if isinstance(rope, str) else TypeError
    raise error(
        f"rope must be True or False, 'half' (the same as True: pairs i and i + d_k / 2, as GPT-NeoX and Hugging "
        f"Face's Llama) or 'interleaved' (pairs 2i and 2i + 1, as RoFormer and Meta's Llama); got {rope!r} of type "
        f"{type(rope).__name__}"
    )


def rope_settings(rope, rope_base, d_k):
    """Check :class:`mhattn.MultiHeadAttention`'s ``rope`` and ``rope_base``; return ``(on, pairing, base)``.

    ``on`` is a bool, ``pairing`` ``"half"``, ``"interleaved"`` or None (no RoPE), ``base`` a float.
    """
    on, pairing = rope_pairing(rope)
    rope_base = rope_base_value(rope_base, "rope_base")
    if on and d_k % 2:
        raise ValueError(
            f"rope={rope!r} needs an even d_k = d_model // num_heads (RoPE turns pairs of coordinates); got d_k = {d_k}"
        )
    return on, pairing, rope_base


def rope_base_value(value, name="base"):
    value = real_number(name, value, "a positive float (10000.0 is usual)")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive, finite float (10000.0 is usual); got {value}")
    return float(value)


def count(name, value):
    """``value`` as an int >= 0, or a clear error."""
    value = integer(name, value, "an int >= 0")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0; got {value}")
    return int(value)
