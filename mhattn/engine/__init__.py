"""The engine: the teaching path's numbers, faster or in less memory (notebook 06).

* :mod:`mhattn.engine.blocks` -- queries in cache-sized blocks: :func:`blockwise_attention`,
  and :class:`FastMultiHeadAttention`, whose ``need_weights=False`` never holds all weights.
* :mod:`mhattn.engine.flash` -- keys in tiles too, with the online softmax: :func:`flash_attention`.
* :mod:`mhattn.engine.kv_cache` -- the keys and values of a decoder's past tokens: :class:`KVCache`.

Every function here is tested equal to the teaching path, which never imports this package.
"""

from .blocks import FastMultiHeadAttention, blockwise_attention
from .flash import flash_attention
from .kv_cache import KVCache

__all__ = ["FastMultiHeadAttention", "KVCache", "blockwise_attention", "flash_attention"]
