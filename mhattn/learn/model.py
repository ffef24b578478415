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

:func:`mhattn.learn.load_trained` returns the shipped, trained model (:mod:`.shipped`);
:func:`mhattn.learn.load_shortcut` a model of the same shape trained only on repeats that start at position 0
(a shortcut that does not move with the repeat); :func:`mhattn.learn.train` trains one; the measures of
:mod:`mhattn.learn` say what its heads do; :func:`mhattn.learn.generate` lets it continue a prompt.
"""

import copy

import numpy as np

from ..checks import checked
from ..checks.checkpoint import load_args
from ..checks.checkpoint_read import read_checkpoint
from ..checks.checkpoint_write import save_args, stored_arrays, write_atomic
from ..checks.model import ablated_layers_args, check_tokens_args, model_forward_args, model_init_args, model_no_args
from ..core.masks import causal_mask
from ..core.multihead import MultiHeadAttention
from ..core.rotary import RotaryMultiHeadAttention

VOCAB = 32  #: token ids 0..31; a..z are 0..25 (see encode_letters)
MAX_LEN = 32  #: longest sequence (the positional embeddings' rows)
D_MODEL = 64  #: width of the residual stream
NUM_HEADS = 4  #: heads per layer
EMBED_SCALE = 0.5  #: standard deviation of the initial token and position embeddings
CHECKPOINT = "induction.npz"  #: the shipped two-layer model, in mhattn/data/
ONE_LAYER_CHECKPOINT = "induction_1layer.npz"  #: the one-layer model trained the same way
SHORTCUT_CHECKPOINT = "induction_at_start.npz"  #: two layers trained with every first copy at position 0
#: What :func:`_layer` builds: the only layers a checkpoint holds.
LAYER_CLASSES = (MultiHeadAttention, RotaryMultiHeadAttention)


def _layer(d_model, num_heads, seed, rope=False, rope_base=10000.0):
    """A fresh attention layer of these sizes and RoPE settings (``rope``: False, ``"half"`` or ``"interleaved"``).

    Every layer of an :class:`InductionModel`, new or loaded, is built here, as one of :data:`LAYER_CLASSES`.
    """
    if not rope:
        return MultiHeadAttention(d_model, num_heads, seed=seed)
    return RotaryMultiHeadAttention(d_model, num_heads, seed=seed, rope=rope, rope_base=rope_base)


class InductionModel:
    """An attention-only transformer: embeddings, ``num_layers`` residual attention layers, unembedding.

    Parameters
    ----------
    num_layers : int, default 2
    vocab, max_len, d_model, num_heads : int, keyword only
        Defaults 32, 32, 64, 4. ``num_heads`` must divide ``d_model``; the weights may take at
        most 1 GiB (what a checkpoint holds).
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
        The training curve, ``{"step", "loss", "accuracy", "probe_step", ...}`` (empty before training).
    layer_classes : tuple of classes, read-only
        The classes a checkpoint rebuilds its layers as; :meth:`save` refuses any other layer.

    Examples
    --------
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> model
    InductionModel(num_layers=2, vocab=6, max_len=8, d_model=8, num_heads=2)
    """

    @property
    def layer_classes(self):
        """:data:`LAYER_CLASSES`, read-only: the classes :meth:`load` rebuilds a checkpoint's layers as."""
        return LAYER_CLASSES

    @checked(model_init_args)
    def __init__(self, num_layers=2, *, vocab=VOCAB, max_len=MAX_LEN, d_model=D_MODEL, num_heads=NUM_HEADS, seed=0):
        rng = np.random.default_rng(seed)
        self.layers = [_layer(d_model, num_heads, int(rng.integers(2**32))) for _ in range(num_layers)]
        self.vocab, self.max_len, self.d_model, self.num_heads = vocab, max_len, d_model, num_heads
        self.embed = rng.standard_normal((vocab, d_model)) * EMBED_SCALE  # (vocab, d_model)
        self.pos = rng.standard_normal((max_len, d_model)) * EMBED_SCALE  # (max_len, d_model)
        self.unembed = rng.standard_normal((d_model, vocab)) / np.sqrt(d_model)  # (d_model, vocab)
        self.history = {}

    @checked(model_no_args, results_finite=False)  # a model whose weights overflowed can still be read
    def parameters(self):
        """Every trainable array by its checkpoint name (the live arrays: update them in place)."""
        params = {"embed": self.embed, "pos": self.pos, "unembed": self.unembed}
        for i, layer in enumerate(self.layers):
            params |= {f"layer{i}.W_qkv": layer.W_qkv, f"layer{i}.W_o": layer.W_o}
        return params

    @checked(model_forward_args)
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

        Examples
        --------
        >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
        >>> logits, weights = model.forward(np.array([0, 1, 2, 3]))
        >>> logits.shape, [w.shape for w in weights]
        ((4, 6), [(2, 4, 4), (2, 4, 4)])
        """
        single = tokens.ndim == 1
        tokens = tokens[None] if single else tokens  # (batch, seq_len)
        seq_len = tokens.shape[1]
        h = self.embed[tokens]  # (batch, seq_len, d_model)
        if use_positions:
            h = h + self.pos[:seq_len]  # (batch, seq_len, d_model)
        mask = causal_mask(seq_len)  # (seq_len, seq_len)
        all_weights = []
        for layer in _silenced(self.layers, ablate):
            out, weights = layer(h, mask)  # (batch, seq_len, d_model), (batch, num_heads, seq_len, seq_len)
            h = h + out  # the residual stream: each layer adds to it
            all_weights.append(weights[0] if single else weights)
        logits = h @ self.unembed  # (batch, seq_len, vocab)
        return (logits[0] if single else logits), all_weights

    __call__ = forward

    @checked(model_forward_args)
    def predict(self, tokens, *, ablate=(), use_positions=True):
        """The most likely next token at every position: ``argmax`` of :meth:`forward`'s logits.

        Examples
        --------
        >>> from mhattn.learn import decode_tokens, encode_letters, load_trained
        >>> model = load_trained()
        >>> decode_tokens(model.predict(encode_letters("p q r s t p q"))[-1:])  # after the second q: r
        'r'
        """
        return self.forward(tokens, ablate=ablate, use_positions=use_positions)[0].argmax(axis=-1)

    @checked(ablated_layers_args)
    def ablated_layers(self, ablate):
        """The layers with the heads in ``ablate`` silenced (copies; the model is untouched).

        Examples
        --------
        >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
        >>> layers = model.ablated_layers([(1, 0)])  # silence head 0 of layer 1
        >>> bool((layers[1].W_o[:4] == 0).all()), bool((model.layers[1].W_o[:4] == 0).any())
        (True, False)
        """
        return _silenced(self.layers, ablate)

    @checked(check_tokens_args)
    def check_tokens(self, tokens):
        """``tokens`` as an int array of shape ``(seq_len,)`` or ``(batch, seq_len)``, or a clear error.

        Examples
        --------
        >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
        >>> model.check_tokens(np.array([0, 1, 2]))
        array([0, 1, 2])
        """
        return tokens

    @checked(save_args)
    def save(self, path, **extra):
        """Write the checkpoint: the weights in the chapter's layout, ``num_heads``, the history, ``extra``.

        The file is ``path`` if it ends in ``.npz``, else ``path + ".npz"`` (as ``np.savez``
        names it), whatever stands at ``path`` itself: :meth:`load` reads by the same rule. The
        path written is returned. The file is written atomically: a temporary file in the same
        folder, then renamed over the old one, so an interrupted save leaves the previous
        checkpoint intact; it keeps the old file's permissions.

        ``extra`` (numbers or text, e.g. ``seed=0``) may not reuse a parameter's name,
        ``num_heads`` or a ``history.`` name, and must be a Python identifier. Each layer's
        RoPE settings (``rope``, its pairing and ``rope_base``) are stored; a layer of another
        class than :attr:`layer_classes`, or with any other setting, is refused: the loaded
        model would compute something else.

        A symbolic link, at ``path`` or among its folders, is followed only if it belongs to
        you or to root (the file it points to is replaced, the link kept); a link another user
        planted is refused. A read-only file (no write bit for you in its mode, even for root)
        is refused. A refused save raises and writes nothing.

        Examples
        --------
        >>> import os, tempfile
        >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = model.save(os.path.join(folder, "tiny"), seed=0)
        ...     print(os.path.basename(path))
        tiny.npz
        """
        return write_atomic(path, stored_arrays(self, extra))

    @classmethod
    @checked(load_args)
    def load(cls, path):
        """A model from a checkpoint written by :meth:`save` (or by ``python -m mhattn.train``).

        The file is ``path`` if it ends in ``.npz``, else ``path + ".npz"``, whatever stands
        at ``path`` itself: ``load(name)`` reads what ``save(name)`` wrote. The file is read
        member by member, without pickle, and only what the model uses is read (the weights,
        ``num_heads``, each layer's RoPE settings, the history): every member's header and zip
        sizes are checked before any data is decompressed, so a false size or a compression
        bomb is refused, not read. Names, shapes, dtypes (floats), finiteness, ``num_heads``
        (a positive divisor of ``d_model``) and the RoPE settings are checked; the weights may
        take at most 1 GiB as float64. Any error names the file and what is wrong. Symbolic
        links are followed as :meth:`save` follows them: only yours or root's.

        Examples
        --------
        >>> import os, tempfile
        >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     loaded = InductionModel.load(model.save(os.path.join(folder, "tiny")))
        >>> loaded
        InductionModel(num_layers=2, vocab=6, max_len=8, d_model=8, num_heads=2)
        >>> bool(np.array_equal(loaded.embed, model.embed))
        True
        """
        sizes, params, history = read_checkpoint(path)
        model = cls(sizes["num_layers"], vocab=sizes["vocab"], max_len=sizes["max_len"], d_model=sizes["d_model"],
                    num_heads=sizes["num_heads"])
        model.embed, model.pos, model.unembed = params["embed"], params["pos"], params["unembed"]
        model.layers = [_layer(model.d_model, model.num_heads, 0, rope, base) for rope, base in sizes["rope"]]
        for i, layer in enumerate(model.layers):
            layer.W_qkv, layer.W_o = params[f"layer{i}.W_qkv"], params[f"layer{i}.W_o"]
        model.history = _with_probe_steps(history)
        return model

    def __repr__(self):
        return (f"InductionModel(num_layers={len(self.layers)}, vocab={self.vocab}, max_len={self.max_len}, "
                f"d_model={self.d_model}, num_heads={self.num_heads})")


def _with_probe_steps(history):
    """``history`` with ``probe_step``: probes without steps of their own were recorded at every ``step``."""
    missing = "token_loss" in history and "step" in history and "probe_step" not in history
    return history | {"probe_step": history["step"]} if missing else history


def _silenced(layers, ablate):
    """``layers`` with the heads in ``ablate`` (checked ``(layer, head or None)`` pairs) silenced, as copies."""
    layers = list(layers)
    for layer_index, head in ablate:
        layer = copy.copy(layers[layer_index])  # shares W_qkv; W_o is replaced below
        W_o = np.array(layer.W_o, copy=True)  # (d_model, d_model)
        d_k = layer.d_k
        rows = slice(None) if head is None else slice(head * d_k, (head + 1) * d_k)
        W_o[rows] = 0.0  # head h's output enters the residual stream only through these rows
        layer.W_o = W_o
        layers[layer_index] = layer
    return layers


def __getattr__(name):  # the shipped models' loaders live in mhattn.learn: an ImportError that says so
    if name in ("load_trained", "load_shortcut", "training_record"):
        raise ImportError(f"{name} lives in mhattn.learn (from mhattn.learn import {name}), not in mhattn.learn.model")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
