"""The arguments of the teaching path's functions: softmax, attention, the head split."""

import functools
import math

import numpy as np

from .door import finish
from .values import (
    axis_index,
    compute_dtype,
    finite,
    mask_array,
    ndim,
    number_array,
    overflow_error,
    positive_int,
    real_array,
    real_number,
)

# --- the teaching functions' arguments ------------------------------------------------------


FLOAT64, FLOAT32, BOOL = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.bool_)  # NumPy's own instances
HALF_MAX = {FLOAT64: float(np.finfo(np.float64).max) / 2, FLOAT32: float(np.finfo(np.float32).max) / 2}


def softmax_args(x, axis):
    """Arguments of :func:`mhattn.softmax`.

    Its result needs no check after: with no NaN and no ``+inf`` in ``x``, every weight lies
    in [0, 1]. The common call (a float64 or float32 array, an axis in range) is recognised
    from its type and shape, and its values are read in one pass: the maximum is NaN if any
    entry is, and ``+inf`` if any entry is.
    """
    if (type(x) is np.ndarray and (x.dtype is FLOAT64 or x.dtype is FLOAT32) and x.size and type(axis) is int
            and -x.ndim <= axis < x.ndim and x.max() < math.inf):
        return {"x": x, "axis": axis}, None
    x = real_array("x", x)
    if x.ndim == 0:
        raise ValueError(f"x must have at least one axis (the scores to normalise); got a scalar {x}. Try [x]")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("x must not contain NaN or +inf; -inf is allowed (it means probability 0)")
    dtype, result_dtype = compute_dtype(x)
    return {"x": x.astype(dtype, copy=False), "axis": axis_index(axis, x.ndim, x.shape)}, result_dtype


def attention_args(Q, K, V, mask, *, caller="scaled_dot_product_attention"):
    """Arguments of :func:`mhattn.scaled_dot_product_attention` (or of ``caller``, named in an overflow error)."""
    Q, K, V = (real_array(name, a) for name, a in (("Q", Q), ("K", K), ("V", V)))
    for name, array in (("Q", Q), ("K", K), ("V", V)):
        if array.ndim < 2:
            raise ValueError(f"{name} must have shape (..., seq_len, depth); got shape {array.shape}")
        finite(name, array)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must have the same depth d_k (last axis); got Q {Q.shape} and K {K.shape}")
    if Q.shape[-1] == 0:
        raise ValueError(f"Q and K must have depth d_k >= 1 (last axis), to divide by sqrt(d_k); got Q {Q.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same length seq_k (axis -2); got K {K.shape} and V {V.shape}")
    try:
        leading = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) axes of Q, K and V must broadcast; got Q {Q.shape}, K {K.shape}, V {V.shape}"
        ) from None
    dtype, result_dtype = compute_dtype(Q, K, V)
    mask = mask_array(mask, leading + (Q.shape[-2], K.shape[-2]))
    arrays = {name: a.astype(dtype, copy=False) for name, a in (("Q", Q), ("K", K), ("V", V))}
    scores_fit(caller, arrays["Q"], arrays["K"], mask)
    return arrays | {"mask": mask}, result_dtype


def attention_door_args(Q, K, V, mask):
    """Arguments of :func:`mhattn.scaled_dot_product_attention`, and how its result is checked.

    The common call (``Q``, ``K``, ``V`` float64 or float32 arrays of one dtype with the same
    leading axes, no mask or a boolean ``(seq_q, seq_k)`` one) is recognised from types and
    shapes, and its values are read in three passes, one sum of squares each. Finite sums say
    every entry is finite, and they bound what the body computes: no score can exceed
    ``|Q| |K|`` (Cauchy-Schwarz, with ``|.|`` the square root of the sum of squares), and no
    output can exceed ``|V|`` (each is a weighted mean of values). When both bounds lie below
    half the dtype's largest number, nothing can overflow, and the result needs no check.
    Any other call gets every check of :func:`attention_args`, and its result is checked after.
    """
    if type(Q) is np.ndarray and type(K) is np.ndarray and type(V) is np.ndarray:
        dtype, q_shape, k_shape = Q.dtype, Q.shape, K.shape
        if (
            (dtype is FLOAT64 or dtype is FLOAT32) and K.dtype is dtype and V.dtype is dtype
            and len(q_shape) >= 2 and Q.size and K.size and len(k_shape) == len(q_shape) == V.ndim
            and k_shape[:-2] == q_shape[:-2] == V.shape[:-2] and k_shape[-1] == q_shape[-1]
            and V.shape[-2] == k_shape[-2]
            and (mask is None or type(mask) is np.ndarray and mask.dtype is BOOL and mask.shape == (q_shape[-2],
                                                                                                     k_shape[-2]))
        ):
            limit = HALF_MAX[dtype]
            q_norm, k_norm, v_norm = (math.sqrt(float(np.vdot(a, a))) for a in (Q, K, V))  # NaN or inf: not below
            if q_norm * k_norm < limit and v_norm < limit:
                return {"Q": Q, "K": K, "V": V, "mask": mask}, None, None, None
    arguments, result_dtype = attention_args(Q, K, V, mask)
    return arguments, None, None, functools.partial(finish, "scaled_dot_product_attention", result_dtype=result_dtype)


def attention_with_dropout_args(Q, K, V, mask, dropout_p, rng):
    """Arguments of :func:`mhattn.attention_with_dropout`."""
    arguments, result_dtype = attention_args(Q, K, V, mask, caller="attention_with_dropout")
    dropout_p, rng = dropout(dropout_p, rng)
    return arguments | {"dropout_p": dropout_p, "rng": rng}, result_dtype


ATTENTION_MOVED = {
    "dropout_p": "attention dropout lives in mhattn.attention_with_dropout(Q, K, V, mask, dropout_p=..., rng=...)",
    "rng": "attention dropout lives in mhattn.attention_with_dropout(Q, K, V, mask, dropout_p=..., rng=...)",
}


def _may_overflow(Q, K):
    """Could some ``q . k / sqrt(d_k)`` overflow? Cauchy-Schwarz: ``|q . k| <= d_k max|q| max|k|``."""
    if Q.size == 0 or K.size == 0:
        return False
    bound = math.sqrt(Q.shape[-1]) * float(np.abs(Q).max()) * float(np.abs(K).max())
    return not bound < float(np.finfo(Q.dtype).max) / 2


def scores_fit(name, Q, K, mask):
    """Raise ``FloatingPointError`` if a score a query may attend to overflows ``Q``'s dtype.

    A score that overflows to ``+inf`` shows up as NaN in the result, which the decorator
    reports; one that overflows to ``-inf`` would not: a row whose every allowed score is
    ``-inf`` looks fully masked, and would silently get zeros. So when the bound says it
    could happen (inputs beyond about 1e19 in float32), the scores are computed here first.
    """
    if not _may_overflow(Q, K):
        return
    with np.errstate(all="ignore"):
        scores = (Q / np.sqrt(Q.dtype.type(Q.shape[-1]))) @ K.swapaxes(-1, -2)  # as the teaching path computes them
    overflowed = ~np.isfinite(scores) if mask is None else ~np.isfinite(scores) & mask
    if overflowed.any():
        raise overflow_error(name, Q.dtype, "a score q.k/sqrt(d_k)")


def dropout(dropout_p, rng):
    """Check ``dropout_p`` in [0, 1) and ``rng``; return ``(dropout_p, rng)``."""
    dropout_p = real_number("dropout_p", dropout_p, "a float in [0, 1)")
    if not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must be a float in [0, 1); got {dropout_p}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)) or None; got {rng!r}")
    if dropout_p > 0 and rng is None:
        rng = np.random.default_rng()
    return float(dropout_p), rng


def causal_mask_args(seq_len):
    """Arguments of :func:`mhattn.causal_mask`."""
    return {"seq_len": positive_int("seq_len", seq_len)}, None


def padding_mask_args(lengths, seq_len):
    """Arguments of :func:`mhattn.padding_mask`."""
    seq_len = positive_int("seq_len", seq_len)
    lengths = number_array("lengths", lengths)  # a masked array is refused: its mask would be dropped
    if lengths.dtype.kind not in "iu":
        raise TypeError(f"lengths must be integers; got dtype {lengths.dtype}")
    if lengths.ndim != 1:
        raise ValueError(f"lengths must be 1-D with shape (batch,); got shape {lengths.shape}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > seq_len):
        raise ValueError(f"lengths must lie in [0, seq_len = {seq_len}]; got {lengths.tolist()}")
    return {"lengths": lengths, "seq_len": seq_len}, None


def split_heads_args(x, num_heads):
    """Arguments of :func:`mhattn.split_heads`: finite numbers, as for every array the teaching path takes."""
    num_heads = positive_int("num_heads", num_heads)
    x = finite("x", number_array("x", x))
    ndim("x", x, 3, "(batch, seq_len, d_model)")
    if x.shape[-1] % num_heads:
        raise ValueError(f"num_heads must divide d_model = {x.shape[-1]}; got num_heads = {num_heads}")
    return {"x": x, "num_heads": num_heads}, None


def combine_heads_args(x):
    """Arguments of :func:`mhattn.combine_heads`: finite numbers, as for every array the teaching path takes."""
    x = finite("x", number_array("x", x))
    ndim("x", x, 4, "(batch, num_heads, seq_len, d_k)")
    return {"x": x}, None


