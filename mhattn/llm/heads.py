"""What the heads of a real model do, measured with the toy model's own functions (notebook 09).

On random tokens repeated once (Olsson et al. 2022), an induction head in the second copy
looks at the token that followed the current token's first occurrence, and the model predicts
the repeat far better than chance. The scores are :mod:`mhattn.learn.attention_patterns`'s,
applied to every block; the loss is :func:`mhattn.learn.in_context.token_losses`'.

- :func:`induction_ids`: the sequences; :func:`head_scores`: previous-token and prefix-matching
  scores of every head; :func:`repeat_loss`: how well the repeat is predicted, with chosen heads
  ablated; :func:`first_token_share`: the weight every head puts on the first token (an
  *attention sink*, Xiao et al. 2023).
"""

import numpy as np

from ..learn.attention_patterns import prefix_matching_score, previous_token_score, repeated_random_tokens
from ..learn.in_context import token_losses


def induction_ids(model, *, half_len=32, num_sequences=4, seed=0):
    """``num_sequences`` rows of ``half_len`` different random tokens, each row repeated once.

    Drawn among the ordinary tokens (the ids after the tokenizer's special ones). Returns an int
    array of shape ``(num_sequences, 2 * half_len)``.

    Examples
    --------
    >>> from mhattn.llm import tiny_llama
    >>> ids = induction_ids(tiny_llama(seed=0), half_len=3, num_sequences=2)
    >>> ids.shape, bool((ids[:, :3] == ids[:, 3:]).all())
    ((2, 6), True)
    """
    first = first_ordinary(model)
    rng = np.random.default_rng(seed)
    return first + repeated_random_tokens(rng, num_sequences, half_len, model.config.vocab - first)


def first_ordinary(model):
    """The first id after the tokenizer's special tokens (0 without a tokenizer)."""
    special = getattr(model.tokenizer, "special", [])
    return max(special) + 1 if len(special) else 0


def head_scores(model, ids):
    """The previous-token and prefix-matching scores of every head, each ``(num_layers, num_heads)``.

    ``ids`` (``(batch, 2 * half_len)``, e.g. :func:`induction_ids`) repeat their first half.
    An ideal previous-token head scores 1 on the first, an ideal induction head 1 on the second.

    Examples
    --------
    >>> from mhattn.llm import tiny_llama
    >>> model = tiny_llama(seed=0)
    >>> previous, prefix = head_scores(model, induction_ids(model, half_len=8))
    >>> previous.shape, prefix.shape  # (layers, heads)
    ((2, 4), (2, 4))
    """
    weights = model.forward(ids, need_weights=True)[1]  # (batch, num_layers, num_heads, seq, seq)
    layers = range(weights.shape[1])
    previous = np.stack([previous_token_score(weights[:, i]) for i in layers])  # (num_layers, num_heads)
    prefix = np.stack([prefix_matching_score(weights[:, i], ids) for i in layers])  # (num_layers, num_heads)
    return previous, prefix


def repeat_loss(model, ids, *, ablate=()):
    """Mean loss and accuracy of the next-token predictions inside the repeat: ``(loss, accuracy)``.

    Tokens ``half_len + 1`` to ``2 half_len - 1`` of ``ids`` (``(batch, 2 * half_len)``, the
    second half repeating the first) are scored: each follows a token whose first occurrence
    shows what comes next. ``ablate`` as for :meth:`LlamaModel.forward`.

    Examples
    --------
    >>> from mhattn.llm import tiny_llama
    >>> model = tiny_llama(seed=0)
    >>> loss, accuracy = repeat_loss(model, induction_ids(model, half_len=8), ablate=[(1, 0)])
    >>> loss > 0, 0 <= accuracy <= 1
    (True, True)
    """
    logits = model.forward(ids, ablate=ablate)[0]  # (batch, seq, vocab)
    half = ids.shape[1] // 2
    losses = token_losses(logits, ids)[:, half:]  # (batch, half - 1): tokens half + 1 .. 2 half - 1
    hits = logits[:, half:-1].argmax(axis=-1) == ids[:, half + 1 :]  # (batch, half - 1)
    return float(losses.mean()), float(hits.mean())


def first_token_share(weights):
    """The mean weight each head puts on the first token, over every later query: ``(num_layers, num_heads)``.

    ``weights``: ``(batch, num_layers, num_heads, seq, seq)``, as :meth:`LlamaModel.forward`
    returns them. Query 0 can only see itself and is left out.

    Examples
    --------
    >>> from mhattn.llm import tiny_llama
    >>> _, weights = tiny_llama(seed=0)(np.array([[5, 6, 7, 8]]), need_weights=True)
    >>> first_token_share(weights).shape
    (2, 4)
    """
    return weights[..., 1:, 0].mean(axis=(0, -1))  # (num_layers, num_heads)
