"""The engine: the teaching path's numbers, faster or in less memory (notebook 06).

* :mod:`mhattn.engine.blocks` -- queries in cache-sized blocks: :func:`blockwise_attention`.
* :mod:`mhattn.engine.fast_module` -- :class:`FastMultiHeadAttention`, the chapter's module with
  those blocks (or tiles) inside, whose ``need_weights=False`` never holds all weights.
* :mod:`mhattn.engine.flash` -- keys in tiles too, with the online softmax: :func:`flash_attention`.
* :mod:`mhattn.engine.kv_cache` -- the keys and values of a decoder's past tokens: :class:`KVCache`.

* :mod:`mhattn.engine.bounds` -- what the blocks and the tiles share: bounds on the scores and
  the one overflow check.

Every function here is tested equal to the teaching path, which never imports this package.
The engine may use the teaching path's definitions (:mod:`mhattn.core`) and the checks; it
imports nothing from the learning code, the pictures or the explorer.
"""

from .blocks import blockwise_attention
from .fast_module import FastMultiHeadAttention
from .flash import flash_attention
from .kv_cache import KVCache

__all__ = ["FastMultiHeadAttention", "KVCache", "blockwise_attention", "flash_attention"]
