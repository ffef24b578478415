"""What the heads of notebook 08's model learned: accuracy per slot, where each head looks, ablations.

The measures that read a trained :class:`mhattn.learn.several_heads.TwoSlotModel`, on fresh
sequences from an evaluation stream of their own; the model, its task and its training are in
:mod:`mhattn.learn.several_heads`.
"""

import copy

import numpy as np

from ..core.heads import combine_heads, split_heads
from .several_heads import (
    BATCH_SIZE,
    FIRST_SCORED,
    LEARNING_RATE,
    SEQ_LEN,
    STEPS,
    VOCAB,
    streams,
    train,
    two_slot_batch,
)


def evaluation_batch(seed, num_sequences=1024, *, vocab=VOCAB, seq_len=SEQ_LEN):
    """Fresh sequences for the model trained with ``seed``: its own evaluation stream, never trained on.

    Examples
    --------
    >>> tokens, targets = evaluation_batch(0, 4)
    >>> tokens.shape, targets.shape
    ((4, 16), (2, 4, 16))
    """
    return two_slot_batch(streams(seed)[2], num_sequences, vocab=vocab, seq_len=seq_len)


def slot_accuracy(model, tokens, targets):
    """Per slot, the fraction of positions ``t >= FIRST_SCORED`` whose argmax is the right token.

    Returns
    -------
    ndarray of shape ``(2,)``
        Accuracy on the previous token, then on the token two back. Chance is ``1 / vocab``.

    Examples
    --------
    >>> from mhattn.learn import TwoSlotModel
    >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
    >>> tokens, targets = two_slot_batch(np.random.default_rng(0), 8, vocab=6, seq_len=5)
    >>> accuracy = slot_accuracy(model, tokens, targets)
    >>> accuracy.shape, bool(((accuracy >= 0) & (accuracy <= 1)).all())
    ((2,), True)
    """
    logits, _ = model(tokens)  # (2, batch, seq_len, vocab)
    hits = logits.argmax(axis=-1) == targets  # (2, batch, seq_len)
    return hits[:, :, FIRST_SCORED:].mean(axis=(1, 2))


def offset_profile(weights, max_offset=3):
    """Per head, the mean weight that query ``t`` puts on key ``t - k``, for ``k = 0 .. max_offset``.

    Averaged over the batch and over queries ``t >= max_offset`` (where every such key
    exists). A head with most of its weight in column ``k = 1`` is a previous-token head, in
    the terms of Olsson et al. (2022); ``k = 2`` is the same for the token two back.
    ``weights`` is ``(batch, num_heads, seq_len, seq_len)``; returns ``(num_heads, max_offset + 1)``.

    Examples
    --------
    >>> previous = np.eye(5, k=-1)
    >>> previous[0, 0] = 1.0
    >>> offset_profile(previous[None, None], max_offset=2)  # one head, always one token back
    array([[0., 1., 0.]])
    """
    t = np.arange(max_offset, weights.shape[-1])  # (queries,)
    return np.stack([weights[:, :, t, t - k].mean(axis=(0, 2)) for k in range(max_offset + 1)], axis=-1)


def mean_weights(model, tokens):
    """The attention weights averaged over a batch: ``(num_heads, seq_len, seq_len)``, for heatmaps.

    Examples
    --------
    >>> from mhattn.learn import TwoSlotModel
    >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
    >>> tokens, _ = two_slot_batch(np.random.default_rng(0), 8, vocab=6, seq_len=5)
    >>> mean_weights(model, tokens).shape
    (2, 5, 5)
    """
    return model(tokens)[1].mean(axis=0)


def experiment(head_counts=(1, 2, 4), seeds=(0, 1, 2), *, num_sequences=1024, steps=STEPS, batch_size=BATCH_SIZE,
               lr=LEARNING_RATE, threads=1):
    """Train one model per head count and seed; measure both slots on fresh sequences.

    ``steps``, ``batch_size``, ``lr`` and ``threads`` go to :func:`train` for every model.

    Returns
    -------
    models : dict
        ``models[num_heads, seed]`` is the trained :class:`TwoSlotModel`.
    accuracy : dict
        ``accuracy[num_heads, seed]`` is :func:`slot_accuracy` on :func:`evaluation_batch`.

    Examples
    --------
    >>> models, accuracy = experiment((1,), (0,), num_sequences=8, steps=2, batch_size=4)
    >>> sorted(models), accuracy[1, 0].shape
    ([(1, 0)], (2,))
    """
    models, accuracy = {}, {}
    for num_heads in head_counts:
        for seed in seeds:
            model = train(num_heads, seed=seed, steps=steps, batch_size=batch_size, lr=lr, threads=threads)
            models[num_heads, seed] = model
            accuracy[num_heads, seed] = slot_accuracy(model, *evaluation_batch(seed, num_sequences))
    return models, accuracy


def logits_with_weights(model, tokens, weights):
    """Both slots' logits when the attention weights are given instead of computed by the softmax.

    For experiments on what a row of weights can express: the values, ``W_o`` and the
    readouts are the model's own; only the weights, ``(batch, num_heads, seq_len, seq_len)``,
    are replaced. ``tokens`` is ``(batch, seq_len)``; returns ``(2, batch, seq_len, vocab)``.

    Examples
    --------
    >>> from mhattn.learn import TwoSlotModel
    >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
    >>> tokens, _ = two_slot_batch(np.random.default_rng(0), 2, vocab=6, seq_len=5)
    >>> logits, weights = model(tokens)
    >>> bool(np.allclose(logits_with_weights(model, tokens, weights), logits))  # its own weights: its own logits
    True
    """
    h = model.embed[tokens] + model.pos  # (batch, seq_len, d_model)
    W_v = np.split(model.attention.W_qkv, 3, axis=-1)[2]  # (d_model, d_model): the value columns
    V = split_heads(h @ W_v, model.num_heads)  # (batch, num_heads, seq_len, d_k)
    out = combine_heads(weights @ V) @ model.attention.W_o  # (batch, seq_len, d_model)
    return out[None] @ model.readouts[:, None]  # (2, batch, seq_len, vocab)


def without_heads(model, heads):
    """A copy of ``model`` in which the given heads reach nothing: their ``d_k`` rows of ``W_o`` are zero.

    A head's output enters the layer's output only through its rows of ``W_o``, so this is
    the head masking of Michel et al. (2019) at test time; the model itself is untouched.

    Examples
    --------
    >>> from mhattn.learn import TwoSlotModel
    >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
    >>> pruned = without_heads(model, [0])
    >>> bool((pruned.attention.W_o[:4] == 0).all()), bool((model.attention.W_o[:4] == 0).any())
    (True, False)
    """
    pruned = copy.deepcopy(model)
    d_k = model.attention.d_k
    for head in heads:
        pruned.attention.W_o[head * d_k : (head + 1) * d_k] = 0.0  # (d_k, d_model) rows read head `head`
    return pruned
