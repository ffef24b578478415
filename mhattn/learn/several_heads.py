r"""Why several heads: a task that one head learns poorly and two heads learn easily, with the same parameters.

At every position ``t`` a one-layer model reports two tokens, through two separate linear
readouts: the previous token ``tokens[t - 1]`` and the token two back ``tokens[t - 2]``.

.. code-block:: text

    h = embed[tokens] + pos                               # (batch, seq_len, d_model)
    out, weights = MultiHeadAttention(h, causal_mask)     # (batch, seq_len, d_model)
    logits[0] = out @ readouts[0]                         # the previous token: (batch, seq_len, vocab)
    logits[1] = out @ readouts[1]                         # the token two back

Positions are learned embeddings added to the tokens' (as in :class:`mhattn.learn.model.InductionModel`).
There is no residual connection: the readouts see only what attention brings. One head gives
every query one softmax row, one convex combination of the values; several heads give several,
with the same shapes of ``W_qkv`` and ``W_o``, so the same parameter count (Vaswani et al. 2017,
section 3.2.2: "with a single attention head, averaging inhibits this").

Everything is seeded: one ``seed`` spawns independent streams for the initial weights, the
training batches and the evaluation sequences (:func:`streams`), so accuracy is measured on
sequences the model never saw, and every ``num_heads`` starts from the same numbers.
"""


import numpy as np

from ..checks import checked, training_heads
from ..checks.optional import require
from ..core.grad import multihead_vjp
from ..core.masks import causal_mask
from ..core.multihead import MultiHeadAttention
from .losses import cross_entropy
from .optim import Adam

VOCAB = 16  #: token ids 0..15
SEQ_LEN = 16  #: tokens per sequence
D_MODEL = 32  #: width of the embeddings and of the attention layer
STEPS = 300  #: training steps
BATCH_SIZE = 32  #: sequences per training step
LEARNING_RATE = 1e-2  #: Adam's step size
EMBED_SCALE = 0.5  #: standard deviation of the initial token and position embeddings
OFFSETS = (1, 2)  #: the two slots: the token 1 back and the token 2 back
FIRST_SCORED = max(OFFSETS)  #: positions t >= 2 have both tokens to report


def two_slot_batch(rng, batch_size, *, vocab=VOCAB, seq_len=SEQ_LEN):
    """Random sequences and, at every position, the two tokens to report.

    Returns
    -------
    tokens : ndarray of int, shape ``(batch_size, seq_len)``
        Uniform in ``[0, vocab)``, independent, drawn from ``rng``.
    targets : ndarray of int, shape ``(2, batch_size, seq_len)``
        ``targets[0, :, t] = tokens[:, t - 1]`` and ``targets[1, :, t] = tokens[:, t - 2]``;
        only positions ``t >= FIRST_SCORED`` count (before that they wrap around).

    Examples
    --------
    >>> tokens, targets = two_slot_batch(np.random.default_rng(0), 1, vocab=6, seq_len=5)
    >>> tokens
    array([[5, 3, 3, 1, 1]])
    >>> targets[:, 0]  # the token 1 back, the token 2 back (first two positions unscored)
    array([[1, 5, 3, 3, 1],
           [1, 1, 5, 3, 3]])
    """
    tokens = rng.integers(0, vocab, size=(batch_size, seq_len))  # (batch, seq_len)
    targets = np.stack([np.roll(tokens, k, axis=1) for k in OFFSETS])  # (2, batch, seq_len): token t - k at t
    return tokens, targets


class TwoSlotModel:
    """Embeddings, one causal :class:`~mhattn.MultiHeadAttention`, two linear readouts.

    Parameters
    ----------
    num_heads : int
        Must divide ``d_model``.
    vocab, seq_len, d_model : int, keyword only
        Defaults 16, 16, 32.
    seed : int, keyword only, default 0
        Seeds the initial weights: embeddings ``N(0, EMBED_SCALE**2)``, readouts
        ``N(0, 1 / d_model)``, the attention layer's own initialisation; the same numbers
        for every ``num_heads``.

    Attributes
    ----------
    embed, pos : ndarrays of shapes ``(vocab, d_model)``, ``(seq_len, d_model)``
    attention : MultiHeadAttention
    readouts : ndarray of shape ``(2, d_model, vocab)``
        ``readouts[0]`` reads the previous token, ``readouts[1]`` the token two back.
    seed : int or None
        Set by :func:`train`: the seed whose streams trained the model.

    Examples
    --------
    >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
    >>> model
    TwoSlotModel(num_heads=2, vocab=6, seq_len=5, d_model=8, parameters=440)
    """

    FIRST_SCORED = FIRST_SCORED  #: positions t >= 2 are scored, so seq_len must exceed it

    @checked(training_heads.two_slot_model_args)
    def __init__(self, num_heads, *, vocab=VOCAB, seq_len=SEQ_LEN, d_model=D_MODEL, seed=0):
        self.vocab, self.seq_len = vocab, seq_len
        rng = np.random.default_rng(seed)
        self.attention = MultiHeadAttention(d_model, num_heads, seed=int(rng.integers(2**32)))
        self.d_model, self.num_heads = self.attention.d_model, self.attention.num_heads
        self.embed = rng.standard_normal((self.vocab, self.d_model)) * EMBED_SCALE  # (vocab, d_model)
        self.pos = rng.standard_normal((self.seq_len, self.d_model)) * EMBED_SCALE  # (seq_len, d_model)
        self.readouts = rng.standard_normal((2, self.d_model, self.vocab)) / np.sqrt(self.d_model)
        self.seed = None  # set by train()

    @checked(training_heads.slot_model_args, results_finite=False)
    def parameters(self):
        """Every trainable array by name (the live arrays: an optimiser updates them in place)."""
        return {"embed": self.embed, "pos": self.pos, "W_qkv": self.attention.W_qkv,
                "W_o": self.attention.W_o, "readouts": self.readouts}

    @checked(training_heads.slot_model_args, results_finite=False)
    def parameter_count(self):
        """How many numbers training adjusts: the same for every ``num_heads``."""
        return sum(p.size for p in self.parameters().values())

    @checked(training_heads.slot_forward_args)
    def forward(self, tokens):
        """Both slots' logits and the attention weights.

        Parameters
        ----------
        tokens : array_like of int, shape ``(batch, seq_len)``

        Returns
        -------
        logits : ndarray of shape ``(2, batch, seq_len, vocab)``
        weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``

        Examples
        --------
        >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
        >>> logits, weights = model.forward(np.array([[0, 1, 2, 3, 4]]))
        >>> logits.shape, weights.shape
        ((2, 1, 5, 6), (1, 2, 5, 5))
        """
        h = self.embed[tokens] + self.pos  # (batch, seq_len, d_model)
        out, weights = self.attention(h, causal_mask(self.seq_len))  # (batch, seq_len, d_model), (b, H, s, s)
        return out[None] @ self.readouts[:, None], weights  # (2, batch, seq_len, vocab)

    __call__ = forward

    def __repr__(self):
        return (f"TwoSlotModel(num_heads={self.num_heads}, vocab={self.vocab}, seq_len={self.seq_len}, "
                f"d_model={self.d_model}, parameters={self.parameter_count()})")


def loss_and_grads(model, tokens, targets):
    """Forward and backward on one batch: the two slots' mean cross-entropies, added.

    ``tokens`` is ``(batch, seq_len)`` and ``targets`` ``(2, batch, seq_len)``; only positions
    ``t >= FIRST_SCORED`` count. The backward is notebook 07's:
    :func:`mhattn.core.grad.multihead_vjp` for the layer, :func:`mhattn.learn.losses.cross_entropy`
    for the loss. Returns the loss (float) and a dict with one gradient per entry of
    ``model.parameters()``, same shape.

    Examples
    --------
    >>> model = TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)
    >>> tokens, targets = two_slot_batch(np.random.default_rng(0), 4, vocab=6, seq_len=5)
    >>> from mhattn.learn import slot_loss_and_grads  # this function, as mhattn.learn names it
    >>> loss, grads = slot_loss_and_grads(model, tokens, targets)
    >>> sorted(grads)
    ['W_o', 'W_qkv', 'embed', 'pos', 'readouts']
    >>> grads["readouts"].shape
    (2, 8, 6)
    """
    h = model.embed[tokens] + model.pos  # (batch, seq_len, d_model)
    mha = model.attention
    out, _, backward = multihead_vjp(h, mha.W_qkv, mha.W_o, mha.num_heads, causal_mask(model.seq_len))  # (b, s, d)
    scored = out[:, FIRST_SCORED:].reshape(-1, model.d_model)  # (count, d_model)
    loss, d_scored = 0.0, np.zeros_like(scored)
    d_readouts = np.zeros_like(model.readouts)  # (2, d_model, vocab)
    for slot in range(len(OFFSETS)):
        logits = scored @ model.readouts[slot]  # (count, vocab)
        slot_loss, d_logits = cross_entropy(logits, targets[slot, :, FIRST_SCORED:].reshape(-1))
        loss += slot_loss
        d_readouts[slot] = scored.T @ d_logits  # (d_model, vocab)
        d_scored += d_logits @ model.readouts[slot].T  # (count, d_model)
    d_out = np.zeros_like(out)  # (batch, seq_len, d_model): unscored positions get no gradient
    d_out[:, FIRST_SCORED:] = d_scored.reshape(len(tokens), -1, model.d_model)
    layer = backward(d_out)  # {"x", "W_qkv", "W_o"}
    d_embed = np.zeros_like(model.embed)  # (vocab, d_model)
    np.add.at(d_embed, tokens.reshape(-1), layer["x"].reshape(-1, model.d_model))  # summed per token id
    grads = {"embed": d_embed, "pos": layer["x"].sum(axis=0), "W_qkv": layer["W_qkv"], "W_o": layer["W_o"],
             "readouts": d_readouts}
    return loss, grads


def streams(seed):
    """The three independent generators one seed gives: weights' seed, training batches, evaluation.

    Examples
    --------
    >>> weights_seed, training, evaluation = streams(0)
    >>> type(weights_seed).__name__, type(training).__name__
    ('int', 'Generator')
    >>> streams(0)[0] == weights_seed  # the same seed, the same streams
    True
    """
    weights, training, evaluation = np.random.SeedSequence(seed).spawn(3)
    return int(weights.generate_state(1)[0]), np.random.default_rng(training), np.random.default_rng(evaluation)


def train(num_heads, *, seed=0, steps=STEPS, batch_size=BATCH_SIZE, lr=LEARNING_RATE, threads=1):
    """Train a fresh :class:`TwoSlotModel` with Adam (:class:`mhattn.learn.optim.Adam`), in float64.

    ``seed`` spawns the weights' and the batches' streams (:func:`streams`); ``steps`` batches
    of ``batch_size`` sequences, step size ``lr``; ``threads`` BLAS threads (one is fastest for
    matrices this small). The model comes back with ``model.seed`` set, so that
    :func:`evaluation_batch` can give it fresh sequences.

    Examples
    --------
    >>> from mhattn.learn import train_heads  # this function, as mhattn.learn names it
    >>> model = train_heads(2, steps=2, batch_size=4)
    >>> model.num_heads, model.seed
    (2, 0)
    """
    weights_seed, training, _ = streams(seed)
    model = TwoSlotModel(num_heads, seed=weights_seed)
    model.seed = seed
    optimizer = Adam(model.parameters(), lr=lr)
    with require("threadpoolctl").threadpool_limits(limits=threads, user_api="blas"):
        for _ in range(steps):
            tokens, targets = two_slot_batch(training, batch_size, vocab=model.vocab, seq_len=model.seq_len)
            _, grads = loss_and_grads(model, tokens, targets)
            optimizer.step(grads)
    return model
