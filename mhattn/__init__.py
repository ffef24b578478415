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
  experiments of notebooks 07 and 09, the trainer (``python -m mhattn.train``) and the
  circuit measures;
- :mod:`mhattn.pictures` and :mod:`mhattn.explorer` -- the chapter's figures and its live
  explorer.

The library needs NumPy only, the PCA view of where tokens move included. The pictures and
the explorer's widget need matplotlib and ipywidgets, which ``pip install "mhattn[chapter]"``
installs; without them, those functions raise an ``ImportError`` that says so.
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
