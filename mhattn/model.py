r"""A tiny attention-only transformer, built from the chapter's own :class:`MultiHeadAttention`.

.. code-block:: text

    h = embed[tokens] + pos[:seq_len]                       # (batch, seq_len, d_model)
    for each layer: h = h + MultiHeadAttention(h, causal_mask)[0]
    logits = h @ unembed                                    # (batch, seq_len, vocab)

No MLP, no LayerNorm, no biases: everything a token learns about the others arrives through
attention. Trained on the induction task (:func:`induction_batch`), two layers learn the
circuit of Olsson et al. (2022): a *previous-token head* in layer 0 writes each token's
predecessor into its position, and an *induction head* in layer 1 finds the earlier
occurrence of the current token and copies the token that followed it.

:func:`load_trained` returns the shipped, trained model; :mod:`mhattn.train` trains one.
"""

import copy
from importlib import resources

import numpy as np

from . import _checks
from .masks import causal_mask
from .multihead import MultiHeadAttention

VOCAB = 32  #: token ids 0..31; a..z are 0..25 (see encode_letters)
MAX_LEN = 32  #: longest sequence (the positional embeddings' rows)
D_MODEL = 64  #: width of the residual stream
NUM_HEADS = 4  #: heads per layer
EMBED_SCALE = 0.5  #: standard deviation of the initial token and position embeddings
CHECKPOINT = "induction.npz"  #: the shipped two-layer model, in mhattn/data/
ONE_LAYER_CHECKPOINT = "induction_1layer.npz"  #: the one-layer model trained the same way
LETTERS = "abcdefghijklmnopqrstuvwxyz"


class InductionModel:
    """An attention-only transformer: embeddings, ``num_layers`` residual attention layers, unembedding.

    Parameters
    ----------
    num_layers : int, default 2
    vocab, max_len, d_model, num_heads : int, keyword only
        Defaults 32, 32, 64, 4.
    seed : int, keyword only, default 0
        Seeds the initial weights: embeddings ``N(0, EMBED_SCALE**2)``, unembedding
        ``N(0, 1 / d_model)``, and each layer's :class:`MultiHeadAttention` initialisation.

    Attributes
    ----------
    embed : ndarray of shape ``(vocab, d_model)``
    pos : ndarray of shape ``(max_len, d_model)``
    unembed : ndarray of shape ``(d_model, vocab)``
    layers : list of MultiHeadAttention
    vocab, max_len, d_model, num_heads : int
    history : dict of ndarray
        The training curve, ``{"step", "loss", "accuracy"}`` (empty before training).
    """

    def __init__(self, num_layers=2, *, vocab=VOCAB, max_len=MAX_LEN, d_model=D_MODEL, num_heads=NUM_HEADS, seed=0):
        num_layers = _checks.positive_int("num_layers", num_layers)
        self.vocab = _checks.positive_int("vocab", vocab)
        self.max_len = _checks.positive_int("max_len", max_len)
        rng = np.random.default_rng(_checks.seed(seed))
        self.layers = [
            MultiHeadAttention(d_model, num_heads, seed=int(rng.integers(2**32))) for _ in range(num_layers)
        ]
        self.d_model, self.num_heads = self.layers[0].d_model, self.layers[0].num_heads
        self.embed = rng.standard_normal((self.vocab, self.d_model)) * EMBED_SCALE  # (vocab, d_model)
        self.pos = rng.standard_normal((self.max_len, self.d_model)) * EMBED_SCALE  # (max_len, d_model)
        self.unembed = rng.standard_normal((self.d_model, self.vocab)) / np.sqrt(self.d_model)  # (d_model, vocab)
        self.history = {}

    def parameters(self):
        """Every trainable array by its checkpoint name (the live arrays: update them in place)."""
        params = {"embed": self.embed, "pos": self.pos, "unembed": self.unembed}
        for i, layer in enumerate(self.layers):
            params[f"layer{i}.W_qkv"] = layer.W_qkv
            params[f"layer{i}.W_o"] = layer.W_o
        return params

    def forward(self, tokens, *, ablate=(), use_positions=True):
        """Next-token logits and every layer's attention weights.

        Parameters
        ----------
        tokens : array_like of int, shape ``(seq_len,)`` or ``(batch, seq_len)``
            Ids in ``[0, vocab)``, ``1 <= seq_len <= max_len``.
        ablate : iterable of ``(layer, head)``, keyword only
            Heads whose output is zeroed (``head=None``: every head of that layer). A head
            reaches the residual stream only through its ``d_k`` rows of ``W_o``, so zeroing
            those rows removes it; its attention weights are still returned.
        use_positions : bool, keyword only, default True
            False leaves out the positional embeddings.

        Returns
        -------
        logits : ndarray of shape ``(seq_len, vocab)`` or ``(batch, seq_len, vocab)``
            ``logits[..., t, :]`` scores the candidates for token ``t + 1``.
        weights : list of ndarray, one per layer
            Each ``(num_heads, seq_len, seq_len)``, or ``(batch, num_heads, seq_len, seq_len)``.
        """
        tokens = self.check_tokens(tokens)
        single = tokens.ndim == 1
        tokens = tokens[None] if single else tokens  # (batch, seq_len)
        seq_len = tokens.shape[1]
        layers = self.ablated_layers(ablate)
        h = self.embed[tokens]  # (batch, seq_len, d_model)
        if use_positions:
            h = h + self.pos[:seq_len]  # (batch, seq_len, d_model)
        mask = causal_mask(seq_len)  # (seq_len, seq_len)
        all_weights = []
        for layer in layers:
            out, weights = layer(h, mask)  # (batch, seq_len, d_model), (batch, num_heads, seq_len, seq_len)
            h = h + out  # the residual stream: each layer adds to it
            all_weights.append(weights[0] if single else weights)
        logits = h @ self.unembed  # (batch, seq_len, vocab)
        return (logits[0] if single else logits), all_weights

    __call__ = forward

    def predict(self, tokens, **kwargs):
        """The most likely next token at every position: ``argmax`` of :meth:`forward`'s logits."""
        return self.forward(tokens, **kwargs)[0].argmax(axis=-1)

    def ablated_layers(self, ablate):
        """The layers with the heads in ``ablate`` silenced (copies; the model is untouched)."""
        layers = list(self.layers)
        for layer_index, head in ablate:
            if not 0 <= layer_index < len(layers):
                raise ValueError(f"ablate: layer must be in [0, {len(layers) - 1}]; got {layer_index}")
            if head is not None and not 0 <= head < self.num_heads:
                raise ValueError(f"ablate: head must be None or in [0, {self.num_heads - 1}]; got {head}")
            layer = copy.copy(layers[layer_index])  # shares W_qkv; W_o is replaced below
            W_o = np.array(layer.W_o, copy=True)  # (d_model, d_model)
            d_k = layer.d_k
            rows = slice(None) if head is None else slice(head * d_k, (head + 1) * d_k)
            W_o[rows] = 0.0  # head h's output enters the residual stream only through these rows
            layer.W_o = W_o
            layers[layer_index] = layer
        return layers

    def check_tokens(self, tokens):
        """``tokens`` as an int array of shape ``(seq_len,)`` or ``(batch, seq_len)``, or a clear error."""
        tokens = np.asarray(tokens)
        if tokens.dtype.kind not in "iu":
            raise TypeError(f"tokens must be integer ids in [0, {self.vocab}); got dtype {tokens.dtype}")
        if tokens.ndim not in (1, 2) or not 1 <= tokens.shape[-1] <= self.max_len:
            raise ValueError(
                f"tokens must have shape (seq_len,) or (batch, seq_len) with 1 <= seq_len <= max_len = "
                f"{self.max_len}; got shape {tokens.shape}"
            )
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.vocab):
            raise ValueError(f"tokens must be ids in [0, {self.vocab}); got values {tokens.min()} to {tokens.max()}")
        return tokens

    def save(self, path, **extra):
        """Write the checkpoint: the weights in the chapter's layout, ``num_heads``, the history, ``extra``."""
        arrays = dict(self.parameters())
        arrays["num_heads"] = np.array(self.num_heads)
        for name, values in self.history.items():
            arrays[f"history.{name}"] = np.asarray(values)
        arrays.update({name: np.asarray(value) for name, value in extra.items()})
        np.savez(path, **arrays)

    @classmethod
    def load(cls, path):
        """A model from a checkpoint written by :meth:`save` (or by ``python -m mhattn.train``)."""
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
        num_layers = sum(name.endswith(".W_qkv") for name in arrays)
        vocab, d_model = arrays["embed"].shape
        model = cls(
            num_layers, vocab=vocab, max_len=arrays["pos"].shape[0], d_model=d_model, num_heads=int(arrays["num_heads"])
        )
        for name, array in model.parameters().items():
            if arrays[name].shape != array.shape:
                raise ValueError(f"checkpoint {path}: {name} has shape {arrays[name].shape}, expected {array.shape}")
        model.embed, model.pos, model.unembed = arrays["embed"], arrays["pos"], arrays["unembed"]
        for i, layer in enumerate(model.layers):
            layer.W_qkv, layer.W_o = arrays[f"layer{i}.W_qkv"], arrays[f"layer{i}.W_o"]
        model.history = {name[8:]: array for name, array in arrays.items() if name.startswith("history.")}
        return model

    def __repr__(self):
        return (
            f"InductionModel(num_layers={len(self.layers)}, vocab={self.vocab}, max_len={self.max_len}, "
            f"d_model={self.d_model}, num_heads={self.num_heads})"
        )


def load_trained(num_layers=2):
    """The trained model shipped with the package (a fresh copy each call).

    ``num_layers=2`` (the default) is the induction model; ``num_layers=1`` is a one-layer
    model trained the same way, which cannot learn the task.
    """
    name = {2: CHECKPOINT, 1: ONE_LAYER_CHECKPOINT}.get(num_layers)
    if name is None:
        raise ValueError(f"num_layers must be 1 or 2 (the shipped checkpoints); got {num_layers!r}")
    with resources.as_file(resources.files("mhattn") / "data" / name) as path:
        return InductionModel.load(path)


# --- the task ------------------------------------------------------------------------------


def induction_batch(rng, batch_size, *, vocab=VOCAB, max_len=MAX_LEN):
    """Sequences whose first ``n`` random tokens repeat once, ``n`` drawn per sequence.

    Each sequence: ``n`` uniform in ``[max_len // 4, max_len // 2]``; tokens ``0..n-1``
    uniform over the vocabulary; tokens ``n..2n-1`` repeat them; the rest uniform again.
    Because ``n`` varies, no head can find the earlier occurrence by position alone.

    Parameters
    ----------
    rng : numpy.random.Generator
    batch_size : int

    Returns
    -------
    tokens : ndarray of int, shape ``(batch_size, max_len)``
    n : ndarray of int, shape ``(batch_size,)``
        The length of each sequence's repeated block.
    """
    n = rng.integers(max_len // 4, max_len // 2 + 1, size=batch_size)  # (batch,)
    tokens = rng.integers(0, vocab, size=(batch_size, max_len))  # (batch, max_len)
    t = np.arange(max_len)  # (max_len,)
    repeated = (t >= n[:, None]) & (t < 2 * n[:, None])  # (batch, max_len): the second copy
    source = np.where(repeated, t - n[:, None], t)  # (batch, max_len): where each token comes from
    return np.take_along_axis(tokens, source, axis=1), n


def repeated_positions(n, max_len=MAX_LEN):
    """The positions ``t`` in ``[n, 2n - 2]`` whose next token is predictable: ``(batch, max_len)`` bool."""
    t = np.arange(max_len)
    return (t >= n[:, None]) & (t <= 2 * n[:, None] - 2)


def accuracy(logits, tokens, n):
    """Next-token accuracy on the repeated half: positions ``t`` in ``[n, 2n - 2]`` predicting ``t + 1``."""
    hits = logits[:, :-1].argmax(axis=-1) == tokens[:, 1:]  # (batch, max_len - 1)
    scored = repeated_positions(n, tokens.shape[1])[:, :-1]  # (batch, max_len - 1)
    return float(hits[scored].mean())


def previous_token_scores(weights, n):
    """Per head, the average weight on key ``t - 1`` over first-half queries ``t`` in ``[1, n - 1]``.

    Parameters
    ----------
    weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
    n : ndarray of int, shape ``(batch,)``

    Returns
    -------
    ndarray of shape ``(num_heads,)``
    """
    t = np.arange(1, weights.shape[-1])  # (seq_len - 1,): queries with a previous token
    on_previous = weights[:, :, t, t - 1]  # (batch, num_heads, seq_len - 1)
    scored = t[None, :] <= n[:, None] - 1  # (batch, seq_len - 1): t in [1, n - 1]
    return on_previous.transpose(1, 0, 2)[:, scored].mean(axis=-1)  # (num_heads,)


def induction_scores(weights, n):
    """Per head, the average weight on key ``t - n + 1`` (after the earlier occurrence), ``t`` in ``[n, 2n - 2]``."""
    seq_len = weights.shape[-1]
    t = np.arange(seq_len)  # (seq_len,)
    key = np.clip(t[None, :] - n[:, None] + 1, 0, seq_len - 1)  # (batch, seq_len)
    index = np.broadcast_to(key[:, None, :, None], weights.shape[:3] + (1,))  # (batch, num_heads, seq_len, 1)
    on_target = np.take_along_axis(weights, index, axis=-1)[..., 0]  # (batch, num_heads, seq_len)
    scored = repeated_positions(n, seq_len)  # (batch, seq_len)
    return on_target.transpose(1, 0, 2)[:, scored].mean(axis=-1)  # (num_heads,)


def duplicate_token_scores(weights, n):
    """Per head, the average weight on key ``t - n`` (the earlier copy of the token), ``t`` in ``[n, 2n - 1]``."""
    seq_len = weights.shape[-1]
    t = np.arange(seq_len)
    key = np.clip(t[None, :] - n[:, None], 0, seq_len - 1)  # (batch, seq_len)
    index = np.broadcast_to(key[:, None, :, None], weights.shape[:3] + (1,))
    on_copy = np.take_along_axis(weights, index, axis=-1)[..., 0]  # (batch, num_heads, seq_len)
    scored = (t[None, :] >= n[:, None]) & (t[None, :] <= 2 * n[:, None] - 1)  # (batch, seq_len)
    return on_copy.transpose(1, 0, 2)[:, scored].mean(axis=-1)


def measure(model, *, num_sequences=512, seed=2024):
    """Every number the issue's targets name, on fresh random sequences.

    Returns
    -------
    dict
        ``accuracy``; per layer and head ``previous_token``, ``induction``, ``duplicate_token``
        (lists of arrays); ``induction_heads`` (layer-1 heads with induction score >= 0.3);
        ``accuracy_without_layer0``, ``accuracy_without_induction_heads``, and
        ``accuracy_without_head`` (per layer-1 head).
    """
    tokens, n = induction_batch(np.random.default_rng(seed), num_sequences, vocab=model.vocab, max_len=model.max_len)
    logits, weights = model.forward(tokens)
    result = {
        "accuracy": accuracy(logits, tokens, n),
        "previous_token": [previous_token_scores(w, n) for w in weights],
        "induction": [induction_scores(w, n) for w in weights],
        "duplicate_token": [duplicate_token_scores(w, n) for w in weights],
    }
    last = len(model.layers) - 1
    if last >= 1:
        result["accuracy_without_layer0"] = accuracy(model.forward(tokens, ablate=[(0, None)])[0], tokens, n)
    heads = [int(h) for h in np.flatnonzero(result["induction"][last] >= 0.3)]
    result["induction_heads"] = heads
    ablate = [(last, h) for h in heads]
    result["accuracy_without_induction_heads"] = accuracy(model.forward(tokens, ablate=ablate)[0], tokens, n)
    result["accuracy_without_head"] = [
        accuracy(model.forward(tokens, ablate=[(last, h)])[0], tokens, n) for h in range(model.num_heads)
    ]
    return result


def targets(result):
    """The issue's targets, pass or fail, from :func:`measure`'s result: ``{name: bool}``."""
    acc = result["accuracy"]
    return {
        "accuracy >= 0.9": acc >= 0.9,
        "a layer-0 previous-token head (>= 0.6)": bool(result["previous_token"][0].max() >= 0.6),
        "zeroing layer 0 costs >= 0.4": acc - result.get("accuracy_without_layer0", acc) >= 0.4,
        "a layer-1 induction head (>= 0.5)": bool(result["induction"][-1].max() >= 0.5),
        "zeroing the induction heads costs >= 0.4": acc - result["accuracy_without_induction_heads"] >= 0.4,
    }


# --- letters for people --------------------------------------------------------------------


def encode_letters(text):
    """Token ids for a string of letters: ``"a b c d x a b c"`` -> ``[0, 1, 2, 3, 23, 0, 1, 2]``.

    Spaces are optional (``"abcdxabc"`` gives the same); upper case counts as lower case.
    Anything else raises ``ValueError`` naming it.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string of letters a-z; got {text!r} of type {type(text).__name__}")
    letters = "".join(text.lower().split())
    bad = sorted({c for c in letters if c not in LETTERS})
    if bad:
        raise ValueError(f"text must hold only letters a-z and spaces; got {bad} in {text!r}")
    return np.array([LETTERS.index(c) for c in letters], dtype=np.int64)


def decode_tokens(tokens):
    """Letters for token ids, space separated: ``[0, 1, 27]`` -> ``"a b <27>"`` (ids >= 26 have no letter)."""
    return " ".join(LETTERS[t] if 0 <= t < len(LETTERS) else f"<{t}>" for t in np.asarray(tokens).tolist())
