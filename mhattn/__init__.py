"""mhattn: multi-head attention from scratch in NumPy, the code of an interactive chapter.

Two layers. The *teaching path* reads like the chapter that shows it, in this order:

1. :mod:`mhattn.softmax` -- a numerically stable softmax.
2. :mod:`mhattn.attention` -- scaled dot-product attention, with masks.
3. :mod:`mhattn.masks` -- causal and padding masks (True = may attend).
4. :mod:`mhattn.heads` -- splitting ``d_model`` into heads and back.
5. :mod:`mhattn.multihead` -- the full module with a fused ``W_qkv`` projection.
6. :mod:`mhattn.grad` -- its backward pass, derived by hand.

The *engine*, :mod:`mhattn.engine`, computes the same numbers faster or in less memory
(query blocks, online softmax over key tiles, a KV cache); it is tested equal to the
teaching path, which never imports it. Argument checks live in :mod:`mhattn._checks`.

The library needs NumPy only. The pictures (:mod:`mhattn.plots`), the PCA view
(:mod:`mhattn.embedding_shift`) and the explorer's widget need matplotlib, scikit-learn and
ipywidgets, which ``pip install "mhattn[chapter]"`` installs; without them, those modules
raise an ``ImportError`` that says so.
"""

from .core.attention import scaled_dot_product_attention
from .core.heads import combine_heads, split_heads
from .core.masks import causal_mask, padding_mask
from .core.multihead import MultiHeadAttention
from .core.positions import apply_rope, apply_rope_interleaved, interleaved_to_half_split
from .core.softmax import softmax
from .engine import FastMultiHeadAttention, KVCache, blockwise_attention, flash_attention

__all__ = [
    "FastMultiHeadAttention",
    "KVCache",
    "MultiHeadAttention",
    "apply_rope",
    "apply_rope_interleaved",
    "blockwise_attention",
    "causal_mask",
    "combine_heads",
    "flash_attention",
    "interleaved_to_half_split",
    "padding_mask",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]


def _installed_version():
    """The version in the installed metadata (pyproject.toml is its one source), or ``0+unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mhattn")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


__version__ = _installed_version()
