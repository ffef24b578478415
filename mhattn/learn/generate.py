r"""Let a trained :class:`~mhattn.learn.model.InductionModel` continue a prompt, one token at a time.

Each step feeds only the newest token: every layer keeps the keys and values of the tokens
before it in its own :class:`mhattn.KVCache` (notebook 11), so a step costs one query
against the cached keys instead of a forward pass over the whole prefix.

.. code-block:: text

    h = embed[token] + pos[t]                               # (1, 1, d_model): the new token only
    for each layer i: h = h + layer_i(h, kv_cache=cache_i)  # attends to cache_i's t + 1 keys
    logits = h @ unembed                                    # (1, 1, vocab): scores for token t + 1
"""

import numpy as np

from ..core.production import as_grouped_query_attention
from ..core.softmax import softmax
from ..engine.kv_cache import KVCache


def generate(model, prompt, num_tokens, *, temperature=0.0, seed=0, use_cache=True):
    """The ``num_tokens`` tokens the model writes after ``prompt``.

    Parameters
    ----------
    model : InductionModel
    prompt : array_like of int, shape ``(prompt_len,)``
        Token ids in ``[0, vocab)``, at least one (:func:`mhattn.learn.letters.encode_letters`
        turns ``"a b c d e a b"`` into ids).
    num_tokens : int
        How many tokens to write; ``prompt_len + num_tokens`` may reach ``max_len + 1`` (the
        last token written is predicted at position ``max_len - 1``).
    temperature : float >= 0, keyword only, default 0
        0 takes the most likely token at each step (greedy); above 0 samples from
        ``softmax(logits / temperature)``.
    seed : int, keyword only, default 0
        Seeds the sampling (unused when greedy).
    use_cache : bool, keyword only, default True
        False recomputes the whole prefix at every step with :meth:`InductionModel.forward`
        instead: the same tokens, at ``O(t)`` cost per step instead of ``O(1)`` projections.

    Returns
    -------
    ndarray of int, shape ``(num_tokens,)``

    Examples
    --------
    >>> from mhattn.learn import decode_tokens, encode_letters, load_trained
    >>> written = generate(load_trained(), encode_letters("p q r s t p q"), 3)
    >>> decode_tokens(written)
    'r s t'
    """
    rng = np.random.default_rng(seed)
    step = _cached_steps(model) if use_cache else _full_steps(model)
    next(step)  # start the generator
    written = []
    logits = None
    for token in prompt:
        logits = step.send(int(token))
    for i in range(num_tokens):
        token = _choose(logits, temperature, rng)
        written.append(token)
        if i + 1 < num_tokens:
            logits = step.send(token)
    return np.array(written, dtype=np.int64)


def _choose(logits, temperature, rng):
    """Greedy (``temperature == 0``) or a draw from ``softmax(logits / temperature)``.

    The logits are shifted to a maximum of 0 before the division, so that however small the
    temperature, nothing overflows: a gap to the maximum divided by a tiny temperature is at
    worst ``-inf``, probability 0, and the largest logits (0 / temperature = 0) share the rest,
    which is the limit of ``softmax(logits / temperature)`` as the temperature goes to 0.
    """
    if temperature == 0:
        return int(np.argmax(logits))
    with np.errstate(over="ignore"):  # a gap over a tiny temperature: -inf, as intended
        probabilities = softmax((logits - logits.max()) / temperature)  # (vocab,)
    return int(min(np.searchsorted(np.cumsum(probabilities), rng.random() * probabilities.sum()), len(logits) - 1))


def _cached_steps(model):
    """A coroutine: send it each token in turn; it answers the logits for the next one, through one cache per layer."""
    layers = [as_grouped_query_attention(layer) for layer in model.layers]  # the layer that takes a KV cache
    caches = [KVCache() for _ in layers]
    t = 0
    logits = None
    while True:
        token = yield logits
        h = (model.embed[token] + model.pos[t])[None, None]  # (1, 1, d_model): the new token only
        for layer, cache in zip(layers, caches, strict=True):
            h = h + layer(h, kv_cache=cache, need_weights=False)[0]  # attends to every cached key
        logits = (h @ model.unembed)[0, 0]  # (vocab,)
        t += 1


def _full_steps(model):
    """The same coroutine without a cache: the whole prefix through :meth:`InductionModel.forward` each step."""
    prefix = []
    logits = None
    while True:
        prefix.append((yield logits))
        logits = model.forward(np.array(prefix))[0][-1]  # (vocab,): the last position's scores
