"""Argument checks of :class:`mhattn.MultiHeadAttention` and :class:`mhattn.RotaryMultiHeadAttention`.

Their sizes, their weights (read from the module at every call: training changes them in
place) and the arguments of ``forward``. The overflow check bounds the scores from the module's
own weights, without computing a projection.
"""

import math

import numpy as np

from .forward_result import emptied_rows, every_row_took_something
from .positions import module_positions, rope_pairing, rope_settings
from .values import (
    compute_dtype,
    finite,
    float_dtype,
    mask_array,
    mask_input,
    ndim,
    number_array,
    overflow_error,
    positive_int,
    real_array,
)
from .values import seed as seed_value

MOVED_ARGUMENTS = {
    "num_kv_heads": "grouped queries live in mhattn.GroupedQueryAttention(d_model, num_heads, num_kv_heads=...)",
    "rope": "rotary positions live in mhattn.RotaryMultiHeadAttention(d_model, num_heads, rope=...), or "
            "mhattn.GroupedQueryAttention(..., rope=...) with grouped queries and a KV cache",
    "rope_base": "rotary positions live in mhattn.RotaryMultiHeadAttention(d_model, num_heads, rope_base=...)",
}

FORWARD_MOVED = {
    name: f"{name}= is a feature of mhattn.GroupedQueryAttention (the production notebook's layer), "
          "which takes everything MultiHeadAttention does"
    for name in ("need_weights", "context", "kv_cache")
} | {"positions": "positions= turn queries and keys in mhattn.RotaryMultiHeadAttention (rotary positions)"}

MOVED_METHODS = {  # what the full layer has and the formula's class does not, by name
    name: f"it lives on mhattn.GroupedQueryAttention, the production notebook's layer, which takes everything "
          f"MultiHeadAttention does (GroupedQueryAttention.{name})"
    for name in ("from_torch", "from_weights", "to_torch", "project", "head_weights", "qkv_columns", "weights", "vjp")
}

MODULE_MASK_LAYOUTS = (
    "a mask is boolean (True = this query may attend to this key) with shape (seq_q, seq_k); "
    "(batch or 1, seq_q or 1, seq_k), shared by every head; or (batch or 1, num_heads or 1, seq_q or 1, seq_k). "
    "padding_mask(lengths, seq_len) gives (batch, 1, 1, seq_k)"
)


def head_counts(d_model, num_heads, num_kv_heads=None):
    """Check the sizes of an attention module; return ``(d_model, num_heads, num_kv_heads)`` as ints."""
    d_model, num_heads = positive_int("d_model", d_model), positive_int("num_heads", num_heads)
    if d_model % num_heads:
        working = [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]  # O(1), even for huge d_model
        raise ValueError(
            f"num_heads must divide d_model = {d_model}; got num_heads = {num_heads}. "
            f"Head counts up to 64 that work: {working}"
        )
    num_kv_heads = num_heads if num_kv_heads is None else positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads must divide num_heads = {num_heads} (each key/value head serves a group of query "
            f"heads); got num_kv_heads = {num_kv_heads}"
        )
    width = d_model + 2 * num_kv_heads * (d_model // num_heads)
    nbytes = 8 * d_model * (width + d_model)
    if nbytes > 2**31 * 8:  # 16 GiB of float64 weights: far beyond any chapter example
        raise ValueError(
            f"d_model = {d_model} needs {nbytes / 2**30:.3g} GiB of float64 weights (W_qkv {d_model} x {width} "
            f"and W_o {d_model} x {d_model}); this package keeps d_model below about 23000"
        )
    return d_model, num_heads, num_kv_heads


def init_args(self, d_model, num_heads, seed):
    """Arguments of ``MultiHeadAttention(d_model, num_heads, seed)``."""
    d_model, num_heads, _ = head_counts(d_model, num_heads)
    return {"self": self, "d_model": d_model, "num_heads": num_heads, "seed": seed_value(seed)}, None


def rotary_init_args(self, d_model, num_heads, seed, rope, rope_base):
    """Arguments of ``RotaryMultiHeadAttention(d_model, num_heads, seed, rope=..., rope_base=...)``."""
    d_model, num_heads, _ = head_counts(d_model, num_heads)
    on, pairing = rope_pairing(rope)
    if not on:
        raise ValueError("rope must be True, 'half' or 'interleaved' here; for no RoPE use mhattn.MultiHeadAttention")
    _, pairing, rope_base = rope_settings(rope, rope_base, d_model // num_heads)  # errors name rope as given
    arguments = {"self": self, "d_model": d_model, "num_heads": num_heads, "seed": seed_value(seed)}
    return arguments | {"rope": pairing, "rope_base": rope_base}, None


def module_weights(self, dtype):
    """The largest ``|entry|`` of ``W_qkv`` and ``W_o``: NumPy arrays of the module's shapes, finite in ``dtype``.

    The common case costs two reductions per weight (no copy); anything else goes through
    :func:`weight` for its exact message.
    """
    width = _qkv_width(self)
    largest = 0.0
    limit = float(np.finfo(dtype).max)
    shapes = {"W_qkv": (self.d_model, width), "W_o": (self.d_model, self.d_model)}
    for name, value, shape in (("W_qkv", self.W_qkv, shapes["W_qkv"]), ("W_o", self.W_o, shapes["W_o"])):
        fast = type(value) is np.ndarray and value.dtype.kind == "f" and value.shape == shape and value.size
        entry = max(float(value.max()), -float(value.min())) if fast else math.nan
        if not entry <= limit:  # NaN, inf, beyond dtype, or not a plain float array: the exact message
            weight(name, value, shape, dtype)
            entry = float(np.abs(np.asarray(value, dtype=np.float64)).max(initial=0.0))
        largest = max(largest, entry)
    return largest


def weight(name, value, shape, dtype):
    """Check a module's weight: a real ndarray of ``shape``, finite *after* the cast to ``dtype``; return it cast.

    A weight of 1e39 is finite in float64 but ``inf`` in float32: checking before the cast
    would let it through, and every output would be NaN.
    """
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array of shape {shape}; got {type(value).__name__}")
    array = real_array(name, value)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got shape {array.shape}")
    with np.errstate(over="ignore"):  # an overflow in the cast is reported just below
        cast = array.astype(dtype, copy=False)
    if not np.isfinite(cast).all():
        if np.isfinite(array).all():
            raise ValueError(f"{name} overflows {dtype}: its largest entry {np.abs(array).max():.3g} is finite in "
                             f"{array.dtype} but not in {dtype}; pass a float64 x, or smaller weights")
        finite(name, array)
    return cast


def weights_args(self, dtype):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.weights`."""
    dtype = float_dtype(dtype)
    module_weights(self, dtype)
    return {"self": self, "dtype": dtype}, None


def tokens(name, value, d_model, values_later=False):
    """``value`` as a finite float array of shape ``(batch, seq_len, d_model)``.

    ``values_later=True``: a float array of that shape is returned without reading its values
    (the caller checks them if the result is not finite).
    """
    if type(value) is np.ndarray and value.dtype.kind == "f" and value.ndim == 3 and value.shape[-1] == d_model:
        if values_later or np.isfinite(value).all():  # the common case: at most one pass
            return value
    array = real_array(name, value)
    if array.ndim != 3:
        ndim(name, array, 3, f"(batch, seq_len, d_model={d_model})")
    if array.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (batch, seq_len, d_model={d_model}); got shape {array.shape} "
            f"(last axis {array.shape[-1]} != d_model {d_model})"
        )
    return finite(name, array)


def module_mask(value, scores_shape):
    """The module's mask: :func:`mask_array`'s layouts, and ``(batch, seq_q, seq_k)`` given a head axis of 1."""
    if value is None:
        return None
    array = mask_input(value)
    try:
        if array.ndim == 3:  # one mask per sequence, the same in every head
            return mask_array(array[:, None], scores_shape)  # (batch or 1, 1, seq_q or 1, seq_k)
        return mask_array(array, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {array.shape} does not fit scores of shape {tuple(scores_shape)}: {MODULE_MASK_LAYOUTS}"
        ) from None


def forward_args(self, x, mask):
    """Arguments of :meth:`mhattn.MultiHeadAttention.forward`: shapes and dtypes, no pass over any value.

    The values of ``x`` and of the weights are read only if the results are not as they should
    be (:func:`after_the_forward`), to say which one was not finite or that the computation
    overflowed. So a chapter-size call costs little more than its body: the common call (a
    float32 or float64 ``x`` of the module's width, weights of their shapes in ``x``'s dtype,
    no mask or a boolean ``(seq_len, seq_len)`` one) is recognised in one test, and needs no
    cast of the results (the body computes in the wider of the dtypes of ``x`` and the weights).
    """
    W_qkv, W_o, d_model = self.W_qkv, self.W_o, self.d_model
    if type(x) is np.ndarray and type(W_qkv) is np.ndarray and type(W_o) is np.ndarray:
        dtype, shape = x.dtype, x.shape
        if (
            (dtype is FLOAT64 or dtype is FLOAT32) and W_qkv.dtype is dtype and W_o.dtype is dtype
            and len(shape) == 3 and shape[2] == d_model and W_o.shape == (d_model, d_model)
            and W_qkv.shape == (d_model, d_model + 2 * vars(self).get("num_kv_heads", self.num_heads) * self.d_k)
            and (mask is None or type(mask) is np.ndarray and mask.dtype is BOOL and mask.shape == (shape[1], shape[1]))
        ):
            return {"self": self, "x": x, "mask": mask}, None, None, after_the_forward(self, x, mask)
    x = tokens("x", x, d_model, values_later=True)
    dtype, result_dtype = compute_dtype(x)
    x = x.astype(dtype, copy=False)
    weight_shapes(self)
    mask = module_mask(mask, (x.shape[0], self.num_heads, x.shape[1], x.shape[1]))
    return {"self": self, "x": x, "mask": mask}, result_dtype or dtype, None, after_the_forward(self, x, mask)


FLOAT64, FLOAT32, BOOL = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.bool_)  # NumPy's own instances


def _qkv_width(self):
    """The columns of ``W_qkv``: ``d_model`` for the queries, then the keys' and the values' heads."""
    return self.d_model + 2 * vars(self).get("num_kv_heads", self.num_heads) * self.d_k


def weight_shapes(self):
    """Raise unless ``W_qkv`` and ``W_o`` are float arrays of the module's shapes (their values are not read)."""
    width = _qkv_width(self)
    for name, value, shape in (("W_qkv", self.W_qkv, (self.d_model, width)), ("W_o", self.W_o, (self.d_model,
                                                                                                 self.d_model))):
        if not (type(value) is np.ndarray and value.dtype.kind == "f" and value.shape == shape):
            weight(name, value, shape, np.float64)  # the exact message (a list, ints, another shape)
            if not (isinstance(value, np.ndarray) and value.dtype.kind == "f"):
                raise TypeError(f"{name} must be a float ndarray of shape {shape}; got dtype "
                                f"{np.asarray(value).dtype}")


def after_the_forward(module, x, mask):
    """What a forward's door checks after the body (:mod:`.forward_result`): ``check(result)`` -> result.

    A non-finite output means a non-finite ``x`` or weight (named here) or an overflow (the
    one message). A row of zeros where the mask allows a key is the overflow that leaves no
    NaN: every allowed score of the row overflowed to ``-inf``.
    """

    def check(result):
        output, weights = result
        if math.isfinite(np.vdot(output, output)) and every_row_took_something(weights):  # finite_at_a_glance
            return result
        name = f"{type(module).__name__}.forward"
        if not np.isfinite(output).all():
            tokens("x", x, module.d_model)  # a ValueError naming x, if it is not finite
            module_weights(module, x.dtype)  # or naming the weight
            raise overflow_error(name, output.dtype)
        if emptied_rows(weights, mask):
            raise overflow_error(name, output.dtype, "a score q.k/sqrt(d_k)")
        return result

    return check


def rotary_forward_args(self, x, mask, positions):
    """Arguments of :meth:`mhattn.RotaryMultiHeadAttention.forward`."""
    rope_attributes(self)
    arguments, result_dtype, *after = forward_args(self, x, mask)
    x = arguments["x"]
    positions = module_positions(positions, True, x.shape[0], x.shape[1])
    # the rotation's tables may be wider than x: the result goes back in x's dtype whatever they are
    return arguments | {"positions": positions}, result_dtype or x.dtype, *after


def split_heads_method_args(self, x):
    """Arguments of :meth:`mhattn.MultiHeadAttention.split_heads`: ``(batch, seq_len, d_model)``, finite."""
    x = finite("x", number_array("x", x))
    if x.ndim != 3 or x.shape[-1] != self.d_model:
        raise ValueError(f"x must have shape (batch, seq_len, d_model={self.d_model}); got shape {x.shape}")
    return {"self": self, "x": x}, None


def heads_method_args(self, x):
    """Arguments of :meth:`mhattn.MultiHeadAttention.combine_heads`: ``(batch, num_heads, seq_len, d_k)``, finite."""
    x = finite("x", number_array("x", x))
    if x.ndim != 4 or x.shape[1] != self.num_heads or x.shape[3] != self.d_k:
        raise ValueError(
            f"x must have shape (batch, num_heads={self.num_heads}, seq_len, d_k={self.d_k}); got shape {x.shape}"
        )
    return {"self": self, "x": x}, None


def rope_attributes(self):
    """Check the module's RoPE attributes again: they can be set after construction (``mha.rope_base = 0``)."""
    rope, pairing, base = self.rope, getattr(self, "rope_pairing", None), self.rope_base
    try:
        rope_settings(pairing or rope, base, self.d_k)
        if pairing not in (None, "half", "interleaved"):
            raise ValueError(f"rope_pairing must be 'half' or 'interleaved'; got {pairing!r}")
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"this module's RoPE attributes (rope={rope!r}, rope_pairing={pairing!r}, rope_base={base!r}, "
            f"d_k={self.d_k}) cannot run: {error}. Build a new module with rope=... and rope_base=... "
            "instead of changing them"
        ) from None
