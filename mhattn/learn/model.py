r"""A tiny attention-only transformer, built from the chapter's own :class:`MultiHeadAttention`.

.. code-block:: text

    h = embed[tokens] + pos[:seq_len]                       # (batch, seq_len, d_model)
    for each layer: h = h + MultiHeadAttention(h, causal_mask)[0]
    logits = h @ unembed                                    # (batch, seq_len, vocab)

No MLP, no LayerNorm, no biases: everything a token learns about the others arrives through
attention. Trained on the induction task (:func:`mhattn.learn.task.induction_batch`: a block of
distinct tokens repeated at a random offset, sometimes after a gap), two layers learn the
circuit of Olsson et al. (2022): a *previous-token head* in layer 0 writes each token's
predecessor into its position, and an *induction head* in layer 1 finds the earlier
occurrence of the current token and copies the token that followed it.

:func:`load_trained` returns the shipped, trained model; :func:`load_shortcut` a model of the
same shape trained only on repeats that start at position 0 (a shortcut that does not move
with the repeat); :mod:`mhattn.learn.train` trains one; :mod:`mhattn.learn.circuits` measures
what its heads do; :func:`mhattn.learn.generate.generate` lets it continue a prompt.
"""

import copy
from importlib import resources

import numpy as np

from .. import checks
from ..core.masks import causal_mask
from ..core.multihead import MultiHeadAttention

VOCAB = 32  #: token ids 0..31; a..z are 0..25 (see encode_letters)
MAX_LEN = 32  #: longest sequence (the positional embeddings' rows)
D_MODEL = 64  #: width of the residual stream
NUM_HEADS = 4  #: heads per layer
EMBED_SCALE = 0.5  #: standard deviation of the initial token and position embeddings
CHECKPOINT = "induction.npz"  #: the shipped two-layer model, in mhattn/data/
ONE_LAYER_CHECKPOINT = "induction_1layer.npz"  #: the one-layer model trained the same way
SHORTCUT_CHECKPOINT = "induction_at_start.npz"  #: two layers trained with every first copy at position 0
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
        num_layers = checks.positive_int("num_layers", num_layers)
        self.vocab = checks.positive_int("vocab", vocab)
        self.max_len = checks.positive_int("max_len", max_len)
        rng = np.random.default_rng(checks.seed(seed))
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

        Raises
        ------
        TypeError, ValueError
            For tokens, ``ablate`` or ``use_positions`` out of their ranges, and for a parameter
            that is not a finite float array of its shape (NaN after a diverged run, say).
        FloatingPointError
            If finite parameters give non-finite logits (an overflow).
        """
        tokens = self.check_tokens(tokens)
        checks.parameters(self)
        use_positions = checks.flag("use_positions", use_positions)
        single = tokens.ndim == 1
        tokens = tokens[None] if single else tokens  # (batch, seq_len)
        seq_len = tokens.shape[1]
        layers = self.ablated_layers(ablate)
        with np.errstate(all="ignore"):  # an overflow is reported below
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
        if not np.isfinite(logits).all():
            raise FloatingPointError(
                "InductionModel.forward: the logits overflowed float64 although every parameter is finite; "
                "the weights are far too large (a diverged training run?)"
            )
        return (logits[0] if single else logits), all_weights

    __call__ = forward

    def predict(self, tokens, **kwargs):
        """The most likely next token at every position: ``argmax`` of :meth:`forward`'s logits."""
        return self.forward(tokens, **kwargs)[0].argmax(axis=-1)

    def ablated_layers(self, ablate):
        """The layers with the heads in ``ablate`` silenced (copies; the model is untouched)."""
        layers = list(self.layers)
        for layer_index, head in checks.ablate(ablate, len(layers), self.num_heads):
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
        return checks.tokens(tokens, self.vocab, self.max_len)

    def save(self, path, **extra):
        """Write the checkpoint: the weights in the chapter's layout, ``num_heads``, the history, ``extra``.

        ``.npz`` is appended to ``path`` if missing (as ``np.savez`` does), and the path
        written is returned. The file is written atomically: a temporary file in the same
        folder, then renamed over ``path``, so an interrupted save leaves the previous
        checkpoint intact. ``extra`` (numbers or text, e.g. ``seed=0``) may not reuse a
        parameter's name, ``num_heads`` or a ``history.`` name, and must be a Python identifier.
        Each layer's RoPE settings (``rope``, its pairing and ``rope_base``) are stored; a layer with any other
        setting a checkpoint cannot hold is refused. A symbolic link at ``path`` is kept (the
        file it points to is replaced), and an existing file keeps its permissions.
        """
        checks.parameters(self)
        arrays = dict(self.parameters())
        arrays["num_heads"] = np.array(self.num_heads)
        arrays.update(checks.layer_settings(self))  # each layer's RoPE settings: they change the forward
        arrays.update(checks.history(self))
        arrays.update(checks.check_extra(extra, set(arrays)))
        return checks.write_atomic(path, arrays)

    @classmethod
    def load(cls, path):
        """A model from a checkpoint written by :meth:`save` (or by ``python -m mhattn.train``).

        ``load(name)`` reads what ``save(name)`` wrote: ``name.npz`` if no file ``name`` exists.
        The file is read without pickle. Its names, shapes, dtypes (floats), finiteness and
        ``num_heads`` (a positive divisor of ``d_model``) are checked; any error names the
        file and what is wrong.
        """
        name = str(path)
        sizes, params, history = checks.checkpoint_arrays(name, checks.read_checkpoint(path))
        model = cls(
            sizes["num_layers"], vocab=sizes["vocab"], max_len=sizes["max_len"], d_model=sizes["d_model"],
            num_heads=sizes["num_heads"],
        )
        model.embed, model.pos, model.unembed = params["embed"], params["pos"], params["unembed"]
        for i, layer in enumerate(model.layers):
            layer.W_qkv, layer.W_o = params[f"layer{i}.W_qkv"], params[f"layer{i}.W_o"]
            layer.rope, layer.rope_pairing, layer.rope_base = checks.rope_settings(*sizes["rope"][i], layer.d_k)
        model.history = history
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
    shipped = {2: CHECKPOINT, 1: ONE_LAYER_CHECKPOINT}
    name = None if isinstance(num_layers, (bool, np.bool_)) else shipped.get(num_layers)  # True is not 1
    if name is None:
        raise ValueError(f"num_layers must be 1 or 2 (the shipped checkpoints); got {num_layers!r}")
    return _shipped(name)


def load_shortcut():
    """The two-layer model trained only on repeats whose first copy starts at position 0 (a fresh copy).

    Its training sequences (1500 steps of 64, a constant step size of 3e-3) held ``n`` random
    tokens (uniform in ``[4, 16]``, drawn with replacement) at positions ``0 .. n - 1``, the
    same tokens again right after them, and random tokens to the end. It copies well where
    its training put the repeat and poorly elsewhere: notebook 09's example of a shortcut.
    """
    return _shipped(SHORTCUT_CHECKPOINT)


def training_record(num_layers=2):
    """How a shipped checkpoint was trained: a dict of what ``python -m mhattn.train`` stored beside it.

    Keys: ``seed``, ``steps``, ``lr``, ``batch_size``, ``seconds`` (the measured wall time of
    the command), ``cpu_seconds`` (the CPU time of its process: about the wall time on an
    idle core), ``machine`` (CPU model, cores, OS) and ``load_average`` (the machine's
    1-minute load average, the larger of its values before and after training: above the
    number of cores, processes waited for one).
    """
    shipped = {2: CHECKPOINT, 1: ONE_LAYER_CHECKPOINT}
    name = None if isinstance(num_layers, (bool, np.bool_)) else shipped.get(num_layers)
    if name is None:
        raise ValueError(f"num_layers must be 1 or 2 (the shipped checkpoints); got {num_layers!r}")
    keys = ("seed", "steps", "lr", "batch_size", "seconds", "cpu_seconds", "machine", "load_average")
    with resources.as_file(resources.files("mhattn") / "data" / name) as path, np.load(path) as stored:
        return {key: stored[key].item() for key in keys}


def _shipped(name):
    with resources.as_file(resources.files("mhattn") / "data" / name) as path:
        return InductionModel.load(path)


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
