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


def _module_scores_fit(self, x, source, dtype, mask, cached):
    """:func:`scores_fit` on the module's heads: every score a query may attend to, the cached keys included.

    The queries and keys come from the module's own projection (``self.project``), the one the
    forward runs, RoPE and the cache's positions included.
    """
    W_qkv = self.weights(dtype)[0]
    start = 0 if cached is None else cached.shape[2]
    Q, K, _ = self.project(x, W_qkv, context=None if source is x else source, start=start)
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


def forward_args(self, x, mask, need_weights, context, kv_cache):
    """Arguments of :meth:`mhattn.MultiHeadAttention.forward`."""
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
    mask = mask_array(mask, (x.shape[0], self.num_heads, x.shape[1], seq_k))
    if context is not None:
        context = context.astype(dtype, copy=False)
    x = x.astype(dtype, copy=False)
    source = x if context is None else context
    cached = None if kv_cache is None else getattr(kv_cache, "keys", None)  # (batch, kv_heads, len, d_k) or None
    if _projected_scores_may_overflow(self, x, source, dtype, cached):  # rare: then check exactly
        _module_scores_fit(self, x, source, dtype, mask, cached)
    arguments = {"self": self, "x": x, "mask": mask, "need_weights": need_weights}
    guard = contextlib.nullcontext() if kv_cache is None else kv_cache.undo_on_error()  # a failed step is undone
    return arguments | {"context": context, "kv_cache": kv_cache}, result_dtype, guard


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
