r"""One training step's arithmetic: the whole model forward, the loss, and the chain rule back.

Notebook 07 shows these functions one idea at a time: :func:`forward_pass` runs each layer
through :func:`mhattn.core.grad_full.module_vjp` and keeps its ``backward``;
:func:`next_token_loss` is a language model's cross-entropy; :func:`backward_pass` walks the
layers in reverse, the residual stream carrying the gradient around each layer as well as
through it; :func:`embedding_grads` sums the gradients of every position that looked a row up.
:func:`loss_and_grads` is the four in a row.
"""

import math

import numpy as np

from ..core.grad_full import module_vjp
from ..core.masks import causal_mask
from .losses import cross_entropy


def forward_pass(model, tokens, dtype=np.float32):
    """The residual stream after the last layer, the logits, and every layer's ``backward``.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> h, logits, backwards = forward_pass(model, np.array([[0, 1, 2]]))
    >>> h.shape, logits.shape, len(backwards)
    ((1, 3, 8), (1, 3, 6), 2)
    """
    seq_len = tokens.shape[1]
    embed, pos, unembed = (p.astype(dtype) for p in (model.embed, model.pos, model.unembed))
    mask = causal_mask(seq_len)  # (seq_len, seq_len)
    h = embed[tokens] + pos[:seq_len]  # (batch, seq_len, d_model)
    backwards = []
    for layer in model.layers:
        out, _, backward = module_vjp(layer, h, mask)  # the chapter's module, forward once
        backwards.append(backward)
        h = h + out  # (batch, seq_len, d_model)
    return h, h @ unembed, backwards  # (batch, seq_len, d_model), (batch, seq_len, vocab), one per layer


def next_token_loss(logits, tokens):
    """The mean cross-entropy of every next token, and its gradient (zero at the last position).

    Examples
    --------
    >>> loss, d_logits = next_token_loss(np.zeros((1, 3, 4)), np.array([[0, 1, 2]]))
    >>> round(loss, 3), d_logits.shape, bool((d_logits[0, -1] == 0).all())  # log 4; nothing follows t = 2
    (1.386, (1, 3, 4), True)
    """
    batch, seq_len = tokens.shape
    scored = np.broadcast_to(np.arange(seq_len) < seq_len - 1, (batch, seq_len))  # every t with a token t + 1
    next_tokens = np.roll(tokens, -1, axis=1)  # (batch, seq_len): token t + 1 (wraps at the end, never scored)
    loss, d_scored = cross_entropy(logits[scored], next_tokens[scored])  # (count, vocab): only the scored rows
    if not math.isfinite(loss):
        raise FloatingPointError(f"the loss overflowed {logits.dtype} (got {loss}): the weights are far too large")
    d_logits = np.zeros_like(logits)  # (batch, seq_len, vocab): positions that do not count get no gradient
    d_logits[scored] = d_scored
    return loss, d_logits


def backward_pass(model, tokens, h, d_logits, backwards):
    """Every weight's gradient, from the logits' gradient back through the layers to the embeddings.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(1, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> tokens = np.array([[0, 1, 2]])
    >>> h, logits, backwards = forward_pass(model, tokens)
    >>> grads = backward_pass(model, tokens, h, next_token_loss(logits, tokens)[1], backwards)
    >>> sorted(grads) == sorted(model.parameters())
    True
    """
    unembed = model.unembed.astype(h.dtype)  # (d_model, vocab), in the compute dtype
    grads = {"unembed": h.reshape(-1, model.d_model).T @ d_logits.reshape(-1, model.vocab)}  # (d_model, vocab)
    d_h = d_logits @ unembed.T  # (batch, seq_len, d_model)
    for i in reversed(range(len(model.layers))):
        layer_grads = backwards[i](d_h)  # {"x", "W_qkv", "W_o"}
        grads[f"layer{i}.W_qkv"], grads[f"layer{i}.W_o"] = layer_grads["W_qkv"], layer_grads["W_o"]
        d_h = d_h + layer_grads["x"]  # the residual: the gradient flows around the layer and through it
    return grads | embedding_grads(model, tokens, d_h)


def embedding_grads(model, tokens, d_h):
    """The gradients of the position and token embeddings, from the gradient ``d_h`` of their sum.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(1, vocab=4, max_len=4, d_model=2, num_heads=1, seed=0)
    >>> grads = embedding_grads(model, np.array([[1, 1]]), np.ones((1, 2, 2)))
    >>> grads["embed"][1], grads["pos"][:2].sum()  # token 1 looked up twice; two positions, once each
    (array([2., 2.]), np.float64(4.0))
    """
    seq_len = tokens.shape[1]
    pos = np.zeros_like(model.pos)  # (max_len, d_model)
    pos[:seq_len] = d_h.sum(axis=0)  # every sequence adds the same position rows
    one_hot = tokens.reshape(-1, 1) == np.arange(model.vocab)  # (tokens, vocab): embed[tokens] = one_hot @ embed
    embed = one_hot.T.astype(d_h.dtype) @ d_h.reshape(-1, model.d_model)  # (vocab, d_model): summed per token id
    return {"pos": pos, "embed": embed}


def loss_and_grads(model, tokens, n, dtype=np.float32):
    """Forward and backward through the whole model on one batch.

    Parameters
    ----------
    model : InductionModel
    tokens : ndarray of int, shape ``(batch, max_len)``
    n : ndarray of int, shape ``(batch,)``
        Repeated-block lengths (checked). The loss is a language model's: the mean
        cross-entropy of every next token, predictable or not.
    dtype : float32 or float64
        The dtype to compute in (the weights stay float64).

    Returns
    -------
    loss : float
    grads : dict
        One gradient per entry of ``model.parameters()``, same shape.
    logits : ndarray of shape ``(batch, max_len, vocab)``

    Raises
    ------
    TypeError, ValueError
        For tokens, ``n`` or ``dtype`` out of their ranges, or a parameter that is not finite.
    FloatingPointError
        If the loss overflows (weights far too large: a diverged run).

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> from mhattn.learn.task import induction_batch
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> tokens, n, _, _ = induction_batch(np.random.default_rng(0), 2, vocab=6, max_len=8)
    >>> loss, grads, logits = loss_and_grads(model, tokens, n)
    >>> sorted(grads) == sorted(model.parameters()), logits.shape
    (True, (2, 8, 6))
    >>> grads["layer0.W_qkv"].shape
    (8, 24)
    """
    h, logits, backwards = forward_pass(model, tokens, dtype)
    loss, d_logits = next_token_loss(logits, tokens)
    return loss, backward_pass(model, tokens, h, d_logits, backwards), logits
