"""The engine: the teaching path's numbers, faster or in less memory (notebook 12).

* :mod:`mhattn.engine.blocks` -- queries in cache-sized blocks: :func:`blockwise_attention`.
* :mod:`mhattn.engine.fast_module` -- :class:`FastMultiHeadAttention`, the chapter's module with
  those blocks (or tiles) inside, whose ``need_weights=False`` never holds all weights.
* :mod:`mhattn.engine.flash` -- keys in tiles too, with the online softmax: :func:`flash_attention`;
  :mod:`mhattn.engine.tiles` holds each tile's scratch arrays and steps.
* :mod:`mhattn.engine.kv_cache` -- the keys and values of a decoder's past tokens: :class:`KVCache`;
  :mod:`mhattn.engine.kv_rules` -- what it allows: one thread's step at a time, one owner, a failed
  step undone.

* :mod:`mhattn.engine.bounds` -- what the blocks and the tiles share: bounds on the scores and
  the one overflow check.

Every function here is tested equal to the teaching path, which never imports this package.
The engine may use the teaching path's definitions (:mod:`mhattn.core`) and the checks; it
imports nothing from the learning code, the pictures or the explorer. The functions shown
here are the modules' plain functions behind their doors (:func:`mhattn.checks.door`): each
call checks its arguments (:mod:`mhattn.checks.engine`) before the plain code runs.
"""

from ..checks import door
from ..checks import engine as engine_checks
from . import blocks, flash
from .fast_module import FastMultiHeadAttention
from .kv_cache import KVCache

blockwise_attention = door(blocks.blockwise_attention, engine_checks.blockwise_args)
flash_attention = door(flash.flash_attention, engine_checks.flash_args, results_finite=False)  # lse: -inf where masked

__all__ = ["FastMultiHeadAttention", "KVCache", "blockwise_attention", "flash_attention"]
