"""Argument checks of :class:`mhattn.MultiHeadAttention`: its sizes, weights and forward's arguments.

The same rules as every door (:mod:`mhattn.checks`). The overflow check reads the module's own
projection (:meth:`mhattn.MultiHeadAttention.project`) through ``self``: this package never
imports the teaching path.
"""

import contextlib
import inspect
import math

import numpy as np

from .layers import scores_fit
from .positions import module_positions, rope_settings
from .values import compute_dtype, finite, flag, mask_array, ndim, positive_int, real_array


def _projected_scores_may_overflow(self, x, source, dtype, cached=None):
    """A cheap bound on the module's scores, with no projection computed.

    ``|q_h| <= |x_i| ||W_q||_F`` and ``|k_h| <= |s_j| ||W_k||_F``, so every score is at most
    ``max|x_i| ||W_q||_F max|s_j| ||W_k||_F / sqrt(d_k)``: one pass over the tokens. With a
    KV cache, the cached keys ``cached`` (already projected) are bounded by their own length.
    """
    if x.size == 0 or source.size == 0:
        return False
    W_qkv = np.asarray(self.W_qkv)
    if W_qkv.dtype.kind not in "fiu" or W_qkv.ndim != 2 or W_qkv.shape[0] != x.shape[-1]:  # the weight check reports it
        return False
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: an inf bound, then the exact check
        W_q, W_k, _ = np.split(W_qkv, self.qkv_columns(), axis=-1)  # the module's own column layout
        longest = [math.sqrt(float(np.einsum("...d,...d->...", a, a).max())) for a in (x, source)]
        query = longest[0] * float(np.linalg.norm(W_q))  # Python floats: no cast to float32
        key = longest[1] * float(np.linalg.norm(W_k))
        if cached is not None and cached.size:
            key = max(key, math.sqrt(float(np.einsum("...d,...d->...", cached, cached).max())))
        bound = query * key / math.sqrt(self.d_k)
    return not bound < float(np.finfo(dtype).max) / 2


def _module_scores_fit(self, x, source, dtype, mask, cached, positions=None):
    """:func:`scores_fit` on the module's heads: every score a query may attend to, the cached keys included.

    The queries and keys come from the module's own projection (``self.project``), the one the
    forward runs, RoPE and the cache's positions included.
    """
    W_qkv = self.weights(dtype)[0]
    start = 0 if cached is None else cached.shape[2]
    Q, K, _ = self.project(x, W_qkv, context=None if source is x else source, start=start, positions=positions)
    if cached is not None and cached.shape[0::3] == K.shape[0::3] and cached.shape[1] == K.shape[1]:
        K = np.concatenate([cached.astype(dtype, copy=False), K], axis=2)  # (batch, kv_heads, len + seq_q, d_k)
        mask = np.arange(K.shape[2])[None, :] <= (cached.shape[2] + np.arange(x.shape[1]))[:, None]  # causal
    scores_fit("MultiHeadAttention.forward", Q, K.repeat(self.num_heads // self.num_kv_heads, axis=1), mask)


def head_counts(d_model, num_heads, num_kv_heads):
    """Check the sizes of a :class:`mhattn.MultiHeadAttention`; return them as ints."""
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


def weight(name, value, shape, dtype):
    """``value`` as an array of ``shape`` cast to ``dtype``, checked finite *after* the cast.

    A weight of 1e39 is finite in float64 but ``inf`` in float32: checking before the cast
    would let it through, and every output would be NaN.
    """
    array = real_array(name, value)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got shape {array.shape}")
    if array.dtype.itemsize > np.dtype(dtype).itemsize:
        with np.errstate(over="ignore"):  # an overflow in the cast is reported just below
            cast = array.astype(dtype)
    else:
        cast = array.astype(dtype, copy=False)
    if not np.isfinite(cast).all():
        if np.isfinite(array).all():
            raise ValueError(f"{name} overflows {dtype}: its largest entry {np.abs(array).max():.3g} is finite in "
                             f"{array.dtype} but not in {dtype}; pass a float64 x, or smaller weights")
        finite(name, array)
    return cast


def separate_weights(W_q, W_k, W_v, W_o, num_heads, num_kv_heads, layout):
    """The four weights of :meth:`mhattn.MultiHeadAttention.from_weights`, checked, in ``x @ W`` layout (copies).

    ``d_model`` is read from ``W_q``, which is square in either layout; every other shape
    follows from it and the head counts, and an error names the weight, the shape expected in
    ``layout`` and the one given.
    """
    W_q = real_array("W_q", W_q)
    if W_q.ndim != 2 or W_q.shape[0] != W_q.shape[1]:
        raise ValueError(
            f"W_q must be a square (d_model, d_model) matrix (num_heads * d_k = d_model query columns); got shape "
            f"{W_q.shape}"
        )
    d_model, num_heads, num_kv_heads = head_counts(W_q.shape[0], num_heads, num_kv_heads)
    kv_width = num_kv_heads * (d_model // num_heads)
    shapes = {"W_q": (d_model, d_model), "W_k": (d_model, kv_width), "W_v": (d_model, kv_width),
              "W_o": (d_model, d_model)}  # y = x @ W; torch's are the transposes
    weights = []
    for name, value in zip(shapes, (W_q, W_k, W_v, W_o), strict=True):
        array = real_array(name, value)
        expected = shapes[name] if layout == "mhattn" else shapes[name][::-1]
        if array.shape != expected:
            hint = ""
            if array.shape == expected[::-1]:
                other = "mhattn" if layout == "torch" else "torch"
                hint = f" (that is the shape in layout={other!r}: are the weights transposed?)"
            raise ValueError(
                f"{name} must have shape {expected} in layout={layout!r} (d_model={d_model}, num_heads={num_heads}, "
                f"num_kv_heads={num_kv_heads}); got shape {array.shape}{hint}"
            )
        finite(name, array)
        weights.append(array if layout == "mhattn" else array.T)
    return [np.array(W) for W in weights]  # copies: the caller's arrays are never read again


def torch_attention(torch, module):
    """``(W_qkv, W_o, num_heads)`` of a bias-free ``torch.nn.MultiheadAttention``, as NumPy copies."""
    if not isinstance(module, torch.nn.MultiheadAttention):
        raise TypeError(f"module must be a torch.nn.MultiheadAttention; got {type(module).__name__}")
    if module.in_proj_bias is not None or module.out_proj.bias is not None or module.bias_k is not None:
        raise ValueError(
            "module must have no biases (build it with bias=False, add_bias_kv=False): mhattn.MultiHeadAttention "
            "has no biases, so it cannot give a biased module's outputs"
        )
    if module.kdim != module.embed_dim or module.vdim != module.embed_dim:
        raise ValueError(
            f"module must take keys and values of embed_dim = {module.embed_dim} features; got kdim = "
            f"{module.kdim}, vdim = {module.vdim} (mhattn's W_qkv reads one d_model for queries, keys and values)"
        )
    as_numpy = lambda t: t.detach().cpu().numpy().copy()  # noqa: E731  a copy: torch's storage is never shared
    W_qkv = as_numpy(module.in_proj_weight).T  # (d_model, 3 d_model): torch's rows [W_q; W_k; W_v], transposed
    W_o = as_numpy(module.out_proj.weight).T  # (d_model, d_model)
    for name, array in (("in_proj_weight", W_qkv), ("out_proj.weight", W_o)):
        finite(f"module.{name}", array)
    return np.ascontiguousarray(W_qkv), np.ascontiguousarray(W_o), module.num_heads


MODULE_MASK_LAYOUTS = (
    "a mask is boolean (True = this query may attend to this key) with shape (seq_q, seq_k); "
    "(batch or 1, seq_q or 1, seq_k), shared by every head; or (batch or 1, num_heads or 1, seq_q or 1, seq_k). "
    "padding_mask(lengths, seq_len) gives (batch, 1, 1, seq_k)"
)


def module_mask(value, scores_shape):
    """The module's mask: :func:`mask_array`'s layouts, and ``(batch, seq_q, seq_k)`` given a head axis of 1."""
    if value is None:
        return None
    array = np.asarray(value)
    try:
        if array.ndim == 3:  # one mask per sequence, the same in every head
            return mask_array(array[:, None], scores_shape)  # (batch or 1, 1, seq_q or 1, seq_k)
        return mask_array(array, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {array.shape} does not fit scores of shape {tuple(scores_shape)}: {MODULE_MASK_LAYOUTS}"
        ) from None


def forward_args(self, x, mask, need_weights, context, kv_cache, positions=None):
    """Arguments of :meth:`mhattn.MultiHeadAttention.forward`."""
    _rope_attributes(self)
    x = _tokens("x", x, self.d_model)
    need_weights = flag("need_weights", need_weights)
    if context is not None:
        if kv_cache is not None:
            raise ValueError(
                "kv_cache and context cannot be combined: a KV cache holds the growing keys and values of a "
                "decoder's own tokens; cross-attention's keys and values come from a fixed context -- "
                "project the context once and reuse it instead"
            )
        if getattr(self, "rope", False):
            raise ValueError(
                "context cannot be used with rope=True: RoPE rotates queries and keys by their positions in one "
                "sequence, and cross-attention's queries (from x) and keys (from context) come from two. Use a "
                "MultiHeadAttention without rope for cross-attention"
            )
        context = _tokens("context", context, self.d_model)
        if context.shape[0] != x.shape[0]:
            raise ValueError(
                f"context must have the batch size of x, {x.shape[0]}; got context of shape {context.shape}"
            )
    if kv_cache is not None:
        if mask is not None:
            raise ValueError(
                "mask must be None with kv_cache: decoding with a cache is causal by construction (each new "
                "token sees every cached token and the new ones before it), and the cache builds that mask"
            )
        if not _is_kv_cache(kv_cache):
            raise TypeError(f"kv_cache must be an mhattn.KVCache(); got {kv_cache!r} of type {type(kv_cache).__name__}")
    dtype, result_dtype = compute_dtype(x, *(() if context is None else (context,)))
    seq_k = x.shape[1] if context is None else context.shape[1]
    mask = module_mask(mask, (x.shape[0], self.num_heads, x.shape[1], seq_k))
    positions = module_positions(positions, getattr(self, "rope", False), x.shape[0], x.shape[1])
    if context is not None:
        context = context.astype(dtype, copy=False)
    x = x.astype(dtype, copy=False)
    source = x if context is None else context
    cached = None if kv_cache is None else getattr(kv_cache, "keys", None)  # (batch, kv_heads, len, d_k) or None
    if _projected_scores_may_overflow(self, x, source, dtype, cached):  # rare: then check exactly
        _module_scores_fit(self, x, source, dtype, mask, cached, positions)
    arguments = {"self": self, "x": x, "mask": mask, "need_weights": need_weights, "positions": positions}
    guard = contextlib.nullcontext() if kv_cache is None else kv_cache.undo_on_error()  # a failed step is undone
    return arguments | {"context": context, "kv_cache": kv_cache}, result_dtype, guard


def _rope_attributes(self):
    """Check the module's RoPE attributes again: they can be set after construction (``mha.rope = True``)."""
    rope, pairing, base = self.rope, getattr(self, "rope_pairing", None), self.rope_base
    try:
        rope_settings(pairing or rope, base, self.d_k)
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"this module's RoPE attributes (rope={rope!r}, rope_pairing={pairing!r}, rope_base={base!r}, "
            f"d_k={self.d_k}) cannot run: {error}. Build a new MultiHeadAttention(..., rope=..., rope_base=...) "
            "instead of changing them"
        ) from None


def _is_kv_cache(value):
    """Does ``value`` follow :class:`mhattn.KVCache`'s protocol: ``extend(K_new, V_new, *, owner)``, ``undo_on_error``?

    Checked by shape of the method, not by class, so the teaching path need not import the
    engine (a list has an ``extend`` too, but not this one).
    """
    extend = getattr(value, "extend", None)
    try:
        has_extend = callable(extend) and "owner" in inspect.signature(extend).parameters
        return has_extend and callable(getattr(value, "undo_on_error", None)) and hasattr(value, "__len__")
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _tokens(name, value, d_model):
    """``value`` as a finite float array of shape ``(batch, seq_len, d_model)``."""
    array = real_array(name, value)
    if array.ndim != 3:
        ndim(name, array, 3, f"(batch, seq_len, d_model={d_model})")
    if array.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (batch, seq_len, d_model={d_model}); got shape {array.shape} "
            f"(last axis {array.shape[-1]} != d_model {d_model})"
        )
    if array.dtype != np.float16 and array.dtype.itemsize < 4:  # pragma: no cover - no such NumPy float
        array = array.astype(np.float64)
    return finite(name, array)
