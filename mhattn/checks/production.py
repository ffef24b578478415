"""Argument checks of :class:`mhattn.GroupedQueryAttention`: the full layer's sizes, forward, weights and bridges."""

import contextlib
import inspect

import numpy as np

from .grad import backward_behind_a_door
from .module import head_counts, module_mask, module_weights, rope_attributes, tokens
from .optional import require
from .positions import module_positions, rope_settings
from .scores import scores_bounded
from .values import compute_dtype, finite, flag, index, integer, real_array
from .values import seed as seed_value


def full_init_args(self, d_model, num_heads, seed, num_kv_heads, rope, rope_base):
    """Arguments of ``GroupedQueryAttention(...)``; ``rope`` comes back as None, ``"half"`` or ``"interleaved"``."""
    d_model, num_heads, num_kv_heads = head_counts(d_model, num_heads, num_kv_heads)
    on, pairing, rope_base = rope_settings(rope, rope_base, d_model // num_heads)
    arguments = {"self": self, "d_model": d_model, "num_heads": num_heads, "seed": seed_value(seed)}
    return arguments | {"num_kv_heads": num_kv_heads, "rope": pairing if on else None, "rope_base": rope_base}, None


def full_forward_args(self, x, mask, need_weights, context, kv_cache, positions):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.forward`."""
    rope_attributes(self)
    x = tokens("x", x, self.d_model)
    need_weights = flag("need_weights", need_weights)
    if context is not None:
        if kv_cache is not None:
            raise ValueError(
                "kv_cache and context cannot be combined: a KV cache holds the growing keys and values of a "
                "decoder's own tokens; cross-attention's keys and values come from a fixed context -- "
                "project the context once and reuse it instead"
            )
        if self.rope:
            raise ValueError(
                "context cannot be used with rope: RoPE rotates queries and keys by their positions in one "
                "sequence, and cross-attention's queries (from x) and keys (from context) come from two. Use a "
                "GroupedQueryAttention without rope for cross-attention"
            )
        context = tokens("context", context, self.d_model)
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
    positions = module_positions(positions, self.rope, x.shape[0], x.shape[1])
    x = x.astype(dtype, copy=False)
    context = None if context is None else context.astype(dtype, copy=False)
    module_weights(self, dtype)
    cached = None if kv_cache is None else getattr(kv_cache, "keys", None)  # (batch, kv_heads, len, d_k) or None
    start = 0 if cached is None else cached.shape[2]
    scores_bounded(self, x, self.W_qkv.astype(dtype, copy=False), mask, context, cached, positions,
                   project=lambda: self._project(x, context, start, positions))
    arguments = {"self": self, "x": x, "mask": mask, "need_weights": need_weights, "positions": positions}
    guard = contextlib.nullcontext() if kv_cache is None else kv_cache.undo_on_error()  # a failed step is undone
    return arguments | {"context": context, "kv_cache": kv_cache}, result_dtype, guard


def project_args(self, x, context, start, positions):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.project`."""
    rope_attributes(self)
    x = tokens("x", x, self.d_model)
    if context is not None:
        if self.rope:
            raise ValueError("context cannot be used with rope: queries and keys would come from two sequences")
        context = tokens("context", context, self.d_model)
        if context.shape[0] != x.shape[0]:
            raise ValueError(
                f"context must have the batch size of x, {x.shape[0]}; got context of shape {context.shape}"
            )
    start = integer("start", start, "an int >= 0")
    if start < 0:
        raise ValueError(f"start must be an int >= 0 (the position of x's first token); got {start}")
    positions = module_positions(positions, self.rope, x.shape[0], x.shape[1])
    dtype, result_dtype = compute_dtype(x, *(() if context is None else (context,)))
    module_weights(self, dtype)
    x = x.astype(dtype, copy=False)
    context = None if context is None else context.astype(dtype, copy=False)
    return {"self": self, "x": x, "context": context, "start": start, "positions": positions}, result_dtype


def head_args(self, head):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.head_weights`."""
    module_weights(self, np.result_type(self.W_qkv, self.W_o))
    return {"self": self, "head": index("head", head, self.num_heads)}, None


def columns_args(self):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.qkv_columns`: none."""
    return {"self": self}, None


def vjp_args(self, x, mask, positions):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.vjp`: those of its forward, without a cache or context."""
    arguments, result_dtype, _ = full_forward_args(self, x, mask, True, None, None, positions)
    arguments = {name: arguments[name] for name in ("self", "x", "mask", "positions")}
    x = arguments["x"]
    dtypes = {"x": x.dtype if result_dtype is None else result_dtype, "W_qkv": real_array("W_qkv", self.W_qkv).dtype,
              "W_o": real_array("W_o", self.W_o).dtype}
    return arguments, result_dtype, contextlib.nullcontext(), backward_behind_a_door(x.dtype, dtypes)


def from_weights_args(cls, W_q, W_k, W_v, W_o, num_heads, layout, num_kv_heads, rope, rope_base):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.from_weights`: the weights as copies in ``x @ W`` layout."""
    if layout not in ("torch", "mhattn"):
        raise ValueError(
            "layout must be 'torch' (weights of shape (out, in), y = x @ W.T, as nn.Linear) or 'mhattn' "
            f"(shape (in, out), y = x @ W); got {layout!r}. It has no default: a square weight has the same "
            "shape either way, so a wrong guess would give wrong numbers without an error"
        )
    W_q = real_array("W_q", W_q)
    if W_q.ndim != 2 or W_q.shape[0] != W_q.shape[1]:
        raise ValueError(
            f"W_q must be a square (d_model, d_model) matrix (num_heads * d_k = d_model query columns); got shape "
            f"{W_q.shape}"
        )
    d_model, num_heads, num_kv_heads = head_counts(W_q.shape[0], num_heads, num_kv_heads)
    on, pairing, rope_base = rope_settings(rope, rope_base, d_model // num_heads)
    kv_width = num_kv_heads * (d_model // num_heads)
    shapes = {"W_q": (d_model, d_model), "W_k": (d_model, kv_width), "W_v": (d_model, kv_width),
              "W_o": (d_model, d_model)}  # y = x @ W; torch's are the transposes
    weights = {}
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
        weights[name] = np.array(array if layout == "mhattn" else array.T)  # a copy: never read again from the caller
    settings = {"num_heads": num_heads, "layout": "mhattn", "num_kv_heads": num_kv_heads,
                "rope": pairing if on else None, "rope_base": rope_base}
    return {"cls": cls} | weights | settings, None


def torch_args(cls, module):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.from_torch`: a module this chapter's layer can equal."""
    torch = require("torch", "torch")
    if not isinstance(module, torch.nn.MultiheadAttention):
        raise TypeError(f"module must be a torch.nn.MultiheadAttention; got {type(module).__name__}")
    if module.in_proj_bias is not None or module.out_proj.bias is not None or module.bias_k is not None:
        raise ValueError(
            "module must have no biases (build it with bias=False, add_bias_kv=False): this chapter's attention "
            "has no biases, so it cannot give a biased module's outputs"
        )
    if module.add_zero_attn:
        raise ValueError(
            "module must have add_zero_attn=False: torch then appends a key and a value of zeros to every "
            "sequence, which this chapter's attention does not do, so the outputs would differ"
        )
    if module.kdim != module.embed_dim or module.vdim != module.embed_dim:
        raise ValueError(
            f"module must take keys and values of embed_dim = {module.embed_dim} features; got kdim = "
            f"{module.kdim}, vdim = {module.vdim} (W_qkv reads one d_model for queries, keys and values)"
        )
    if module.in_proj_weight is None:
        raise ValueError("module must hold one in_proj_weight (torch builds it when kdim == vdim == embed_dim)")
    for name, weight in (("in_proj_weight", module.in_proj_weight), ("out_proj.weight", module.out_proj.weight)):
        if not weight.dtype.is_floating_point:
            raise TypeError(
                f"module's weights must be of a real floating-point dtype (float32, float64, float16 or bfloat16, "
                f"say); got module.{name} of dtype {weight.dtype}. This chapter's attention is real: its softmax "
                "compares real scores, which complex weights do not give"
            )
    return {"cls": cls, "module": module}, None


def to_torch_args(self, batch_first):
    """Arguments of :meth:`mhattn.GroupedQueryAttention.to_torch` (checked before torch is imported)."""
    batch_first = flag("batch_first", batch_first)
    if self.num_kv_heads != self.num_heads or self.rope:
        raise ValueError(
            "to_torch needs plain multi-head attention: torch.nn.MultiheadAttention has no grouped key/value "
            f"heads and no RoPE; this module has num_kv_heads={self.num_kv_heads}, num_heads={self.num_heads}, "
            f"rope={self.rope}"
        )
    module_weights(self, np.result_type(self.W_qkv, self.W_o))
    require("torch", "torch")  # last: a wrong argument is refused as such, with or without torch
    return {"self": self, "batch_first": batch_first}, None


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
