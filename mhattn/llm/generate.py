r"""Let a :class:`~mhattn.llm.model.LlamaModel` continue a text, one token at a time, with a KV cache.

The prompt goes through once; then each step feeds only the newest token. Every block keeps
the keys and values of the tokens before it in its own :class:`mhattn.KVCache` (notebook 11),
and RoPE turns the new token's query and key by its position, ``len(cache)``.

.. code-block:: text

    h = embed[new_ids]                                     # (1, new, d_model)
    for each block i: h = block_i(h, kv_cache=cache_i)     # attends to every cached key
    logits = unembed(h[:, -1])                             # (1, vocab): scores for the next token
"""

import numpy as np

from ..core.softmax import softmax
from ..engine.kv_cache import KVCache
from .unembed import unembed


def generate(model, ids, num_tokens, *, temperature=0.0, seed=0, use_cache=True):
    """The ``num_tokens`` ids that ``model`` writes after ``ids`` (see :meth:`LlamaModel.generate`)."""
    rng = np.random.default_rng(seed)
    step = _cached_step(model) if use_cache else _full_step(model)
    logits = step(ids)  # (vocab,): the prompt, all at once
    written = []
    for i in range(num_tokens):
        token = choose(logits, temperature, rng)
        written.append(token)
        if i + 1 < num_tokens:
            logits = step(np.array([token]))  # the new token only
    return np.array(written, dtype=np.int64)


def choose(logits, temperature, rng):
    """Greedy (``temperature == 0``) or a draw from ``softmax(logits / temperature)``.

    The logits are shifted to a maximum of 0 before the division, so that no temperature,
    however small, overflows: a gap divided by a tiny temperature is at worst ``-inf``.
    """
    if temperature == 0:
        return int(np.argmax(logits))
    with np.errstate(over="ignore"):  # a gap over a tiny temperature: -inf, probability 0
        probabilities = softmax((logits - logits.max()).astype(np.float64) / temperature)  # (vocab,)
    return int(min(np.searchsorted(np.cumsum(probabilities), rng.random() * probabilities.sum()), len(logits) - 1))


def _cached_step(model):
    """``step(new_ids)``: the next token's logits after ``new_ids``, every block reading its own cache."""
    caches = [KVCache() for _ in model.blocks]

    def step(new_ids):
        h = model.embed[new_ids][None]  # (1, new, d_model)
        for block, cache in zip(model.blocks, caches, strict=True):
            h, _ = block(h, kv_cache=cache)  # (1, new, d_model): the cache builds the causal mask
        return unembed(h[0, -1], model.output_norm, model.embed, model.config.rms_eps)  # (vocab,)

    return step


def _full_step(model):
    """The same ``step`` without a cache: the whole text so far through :meth:`LlamaModel.forward` each time."""
    text = []

    def step(new_ids):
        text.extend(int(i) for i in new_ids)
        return model.forward(np.array(text))[0][-1]  # (vocab,): the last position's scores

    return step
