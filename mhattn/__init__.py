"""mhattn: multi-head attention from scratch in NumPy, the code of an interactive chapter.

The folders are the layers, each with a docstring that says what it holds and may import:

- :mod:`mhattn.core` -- the *teaching path*, the code the notebooks show: softmax, attention,
  masks, heads, the fused projection, the module, positions (RoPE) and the backward pass;
- :mod:`mhattn.checks` -- every argument check, kept out of the teaching code by one
  decorator line per public function;
- :mod:`mhattn.engine` -- the same numbers, faster or in less memory (query blocks, online
  softmax over key tiles, a KV cache), tested equal to the teaching path, which never
  imports it;
- :mod:`mhattn.learn` -- models that train with the chapter's own backward pass: the
  experiments of notebooks 08 and 09, the trainer (``python -m mhattn.train``) and the
  circuit measures;
- :mod:`mhattn.pictures` and :mod:`mhattn.explorer` -- the chapter's figures and its live
  explorer.

The library needs NumPy only, the PCA view of where tokens move included. The pictures and
the explorer's widget need matplotlib and ipywidgets, which ``pip install "mhattn[chapter]"``
installs; without them, those functions raise an ``ImportError`` that says so.
"""

from .checks import door
from .checks import grad as _grad_checks
from .checks import layers as _layer_checks
from .checks import positions as _position_checks
from .core import attention as _attention
from .core import dropout as _dropout
from .core import grad as _grad
from .core import grad_full as _grad_full
from .core import heads as _heads
from .core import masks as _masks
from .core import positions as _positions
from .core import softmax as _softmax
from .core.multihead import MultiHeadAttention
from .core.production import GroupedQueryAttention
from .core.rotary import RotaryMultiHeadAttention
from .engine import FastMultiHeadAttention, KVCache, blockwise_attention, flash_attention

# The doors of the teaching path's functions: each checks its arguments, then runs the plain
# function of the same name in mhattn.core (what the notebooks show).
softmax = door(_softmax.softmax, _layer_checks.softmax_args, results_finite=False)  # weights in [0, 1]
scaled_dot_product_attention = door(_attention.scaled_dot_product_attention, _layer_checks.attention_door_args,
                                    results_finite=False, moved=_layer_checks.ATTENTION_MOVED)  # checked as it says
causal_mask = door(_masks.causal_mask, _layer_checks.causal_mask_args, results_finite=False)
padding_mask = door(_masks.padding_mask, _layer_checks.padding_mask_args, results_finite=False)
split_heads = door(_heads.split_heads, _layer_checks.split_heads_args, results_finite=False)
combine_heads = door(_heads.combine_heads, _layer_checks.combine_heads_args, results_finite=False)
rope_angles = door(_positions.rope_angles, _position_checks.angles_args)
sinusoidal_encoding = door(_positions.sinusoidal_encoding, _position_checks.sinusoidal_args)
apply_rope = door(_positions.apply_rope, _position_checks.rope_args)
apply_rope_interleaved = door(_positions.apply_rope_interleaved, _position_checks.rope_args)
interleaved_to_half_split = door(_positions.interleaved_to_half_split, _position_checks.order_args,
                                 results_finite=False)
attention_with_dropout = door(_dropout.attention_with_dropout, _layer_checks.attention_with_dropout_args)
softmax_vjp = door(_grad.softmax_vjp, _grad_checks.softmax_vjp_args)
attention_vjp = door(_grad.attention_vjp, _grad_checks.attention_vjp_args)
split_heads_vjp = door(_grad.split_heads_vjp, _grad_checks.split_heads_vjp_args, results_finite=False)
combine_heads_vjp = door(_grad.combine_heads_vjp, _grad_checks.combine_heads_vjp_args, results_finite=False)
linear_vjp = door(_grad.linear_vjp, _grad_checks.linear_vjp_args)
multihead_vjp = door(_grad.multihead_vjp, _grad_checks.multihead_vjp_args, results_finite=False)
repeat_kv_vjp = door(_grad_full.repeat_kv_vjp, _grad_checks.repeat_kv_vjp_args)
rope_vjp = door(_grad_full.rope_vjp, _grad_checks.rope_vjp_args)
rope_interleaved_vjp = door(_grad_full.rope_interleaved_vjp, _grad_checks.rope_interleaved_vjp_args)

__all__ = [
    "FastMultiHeadAttention",
    "GroupedQueryAttention",
    "KVCache",
    "MultiHeadAttention",
    "RotaryMultiHeadAttention",
    "apply_rope",
    "apply_rope_interleaved",
    "attention_vjp",
    "attention_with_dropout",
    "blockwise_attention",
    "causal_mask",
    "combine_heads",
    "combine_heads_vjp",
    "flash_attention",
    "interleaved_to_half_split",
    "linear_vjp",
    "multihead_vjp",
    "padding_mask",
    "repeat_kv_vjp",
    "rope_angles",
    "rope_interleaved_vjp",
    "rope_vjp",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
    "softmax",
    "softmax_vjp",
    "split_heads",
    "split_heads_vjp",
]


def _installed_version():
    """The version in the installed metadata (pyproject.toml is its one source), or ``0+unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mhattn")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


__version__ = _installed_version()
