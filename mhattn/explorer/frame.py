"""The explorer's numbers: one pure function from the explorer's state to what a frame shows.

:func:`compute_frame` takes a :class:`State` (every setting of the explorer) and returns a
:class:`Frame` (every number the picture and the readout show). It draws nothing and keeps
nothing between calls, so the notebook widget (:mod:`mhattn.explorer.controls`), the Voila
app and the book's page in the browser (``book/live_explorer.py``) all show the same numbers,
and a test can compare any of them with it. Importing this module needs NumPy only.

What a frame holds, so that it can be recomputed independently::

    # untrained: the tokens and the weights come from two independent random streams
    x = np.stack([np.random.default_rng([seed, b + 1]).standard_normal((seq_len, d_model))
                  for b in (0, 1)])                        # (2, seq_len, d_model)
    output, weights = attention_layer(d_model, num_heads, seed, positions)(x, mask)  # RoPE or none
    # shown: sequence 1 (the second of the batch): weights[1] and embedding_shift_2d(x[1], output[1])

    # trained: the model's residual stream, layer by layer, up to the layer shown
    model, tokens = load_trained(), encode_letters(text)
    h = model.embed[tokens] + model.pos[:seq_len]           # (seq_len, d_model); positions="none": no pos
    for mha in model.layers[:layer + 1]:
        output, weights = mha(h[None], causal_mask(seq_len))
        h_before, h = h, h + output[0]
    # shown: weights[0] and embedding_shift_2d(h_before, h)

Each sequence of random tokens is drawn from its own stream, one token after the other, so a
longer ``seq_len`` adds tokens at the end and leaves the others as they were. For
``mask="padding"`` the second sequence keeps its first ``padded_length(seq_len)`` tokens.
"""

from dataclasses import dataclass, field

import numpy as np

from ..checks.door import checked
from ..checks.explorer import (  # noqa: F401 (the explorer's limits and menus, shown here too)
    D_MODELS,
    DEFAULT_TOKENS,
    MASKS,
    MAX_HEADS,
    MAX_SEED,
    MAX_SEQ_LEN,
    MIN_SEQ_LEN,
    POSITIONS,
    TRAINED_LAYERS,
    check_state,
    frame_args,
    head_choices,
    parse_tokens,
    position_choices,
    rope_fits,
    state_args,
)
from ..core.masks import causal_mask, padding_mask
from ..core.multihead import MultiHeadAttention
from ..core.rotary import RotaryMultiHeadAttention
from ..learn import circuits
from ..learn.generate import generate
from ..learn.letters import decode_tokens, encode_letters
from ..learn.shipped import load_trained
from ..pictures.embedding_shift import embedding_shift_2d

SHOWN = 1  # untrained, the explorer shows sequence 1 of the batch of two (the one padding shortens)
CONTINUATION = 5  # trained: how many tokens the model writes after the typed ones


def padded_length(seq_len):
    """Real tokens in the padded sequence: the first half (rounded up); the rest is padding."""
    return seq_len - seq_len // 2


def attention_layer(d_model, num_heads, seed, positions):
    """The untrained layer: plain multi-head attention, or (``positions="rope"``) with RoPE on queries and keys."""
    if positions == "rope":
        return RotaryMultiHeadAttention(d_model, num_heads, seed, rope=True)
    return MultiHeadAttention(d_model, num_heads, seed)


def random_tokens(seed, seq_len, d_model):
    """The untrained explorer's batch of two sequences of random token vectors, ``(2, seq_len, d_model)``.

    Sequence ``b`` comes from ``np.random.default_rng([seed, b + 1])``, a stream of its own:
    independent of the other sequence and of the weights, which
    ``MultiHeadAttention(seed=seed)`` draws from ``np.random.RandomState(seed)``.
    """
    return np.stack([np.random.default_rng([seed, b + 1]).standard_normal((seq_len, d_model)) for b in (0, 1)])


@dataclass(frozen=True)
class State:
    """Every setting of the explorer, checked as it is made (a clear error names any it cannot show).

    ``trained`` chooses the weights; ``seq_len``, ``d_model``, ``num_heads``, ``seed`` and
    ``mask`` act on the untrained layer, ``tokens`` and ``layer`` on the trained model, and
    ``positions`` on both (see ``POSITIONS``; None means the first choice: "none" untrained,
    "learned" trained). Whether the model has that layer and knows those letters is checked
    where a frame shows it (:func:`check_state`).

    Examples
    --------
    >>> state = State(seq_len=4, d_model=12, num_heads=2, mask="causal")
    >>> state.seq_len, state.d_model // state.num_heads, state.position_mode  # d_k = 6
    (4, 6, 'none')
    """

    trained: bool = False
    seq_len: int = 8
    d_model: int = 64
    num_heads: int = 4
    seed: int = 123
    mask: str = "none"
    tokens: str = DEFAULT_TOKENS
    layer: int = 1
    positions: str | None = None

    @property
    def position_mode(self):
        return POSITIONS[self.trained][0] if self.positions is None else self.positions


State.__init__ = checked(state_args)(State.__init__)  # the door of every State (dataclasses write __init__)


@dataclass(frozen=True)
class Frame:
    """The numbers of one frame (see the module docstring for the recipe).

    Attributes
    ----------
    state : State
    weights : ndarray ``(num_heads, seq_len, seq_len)``
        The shown sequence's attention weights, one matrix per head.
    allowed : ndarray of bool ``(seq_len, seq_len)``
        The cells a query may see (the others are masked: weight exactly 0).
    x, output : ndarray ``(batch, seq_len, d_model)``
        The layer's input and output (untrained: the batch of 2; trained: 1 sequence, the
        residual stream before and after the layer shown).
    inputs_2d, outputs_2d : ndarray ``(seq_len, 2)``; explained : ndarray ``(2,)``
        The shown sequence's input and output in one PCA plane, and the variance it keeps.
    real : ndarray of bool ``(seq_len,)``
        False for padding tokens.
    labels : list of str
        One per position: its number, or (trained) its letter.
    tokens, predictions : ndarray of int ``(seq_len,)`` or None
        Trained: the token ids, and the model's guess of the token after each.
    scores : dict of str -> ndarray ``(num_heads,)`` or None
        Trained: each head's ``previous_token`` and ``prefix_matching`` scores on these tokens
        (:mod:`mhattn.learn.circuits`; None where no token repeats).
    continuation : ndarray of int ``(k,)`` or None
        Trained, with learned positions: the next ``k = min(CONTINUATION, max_len + 1 -
        seq_len)`` tokens the model writes after the typed ones, greedily, one at a time
        through one KV cache per layer (:func:`mhattn.learn.generate.generate`).
    num_layers : int or None
        Trained: how many layers the model has (``state.layer`` is one of them).

    Examples
    --------
    A frame is what :func:`compute_frame` returns; its fields are checked as it is made.

    >>> frame = compute_frame(State(trained=True, tokens="a b a b", layer=1))
    >>> frame.labels, frame.weights.shape  # (num_heads, seq_len, seq_len)
    (['a', 'b', 'a', 'b'], (4, 4, 4))
    >>> frame.num_layers, frame.x.shape  # the residual stream before layer 1: (1, seq_len, d_model)
    (2, (1, 4, 64))
    """

    state: State
    weights: np.ndarray
    allowed: np.ndarray
    x: np.ndarray
    output: np.ndarray
    inputs_2d: np.ndarray
    outputs_2d: np.ndarray
    explained: np.ndarray
    real: np.ndarray
    labels: list
    tokens: np.ndarray | None = None
    predictions: np.ndarray | None = None
    scores: dict = field(default_factory=dict)
    continuation: np.ndarray | None = None  # the trained model's next tokens (see the docstring)
    num_layers: int | None = None  # trained: how many layers the model has

    @property
    def num_heads(self):
        return self.weights.shape[0]

    @property
    def seq_len(self):
        return self.weights.shape[-1]


Frame.__init__ = checked(frame_args)(Frame.__init__)  # the door of every Frame, as of every State


def compute_frame(state, model=None):
    """The numbers the explorer shows for ``state``.

    Parameters
    ----------
    state : State
        A state the model can show (:func:`check_state`).
    model : mhattn.learn.model.InductionModel, optional
        The trained model; default :func:`mhattn.learn.load_trained` (read on each call:
        pass it to draw many frames).

    Returns
    -------
    Frame

    Examples
    --------
    >>> frame = compute_frame(State(seq_len=4, d_model=12, num_heads=2, mask="causal"))
    >>> frame.weights.shape, frame.inputs_2d.shape  # (num_heads, seq_len, seq_len), (seq_len, 2)
    ((2, 4, 4), (4, 2))
    >>> print(frame.weights[0].round(2)[0])  # causal: the first token sees only itself
    [1. 0. 0. 0.]
    """
    if state.trained:
        return _trained_frame(state, model)
    return _untrained_frame(state)


def _untrained_frame(state):
    seq_len, d_model, num_heads, seed = state.seq_len, state.d_model, state.num_heads, state.seed
    x = random_tokens(seed, seq_len, d_model)  # (2, seq_len, d_model)
    mask = {
        "none": None,
        "causal": causal_mask(seq_len),  # (seq_len, seq_len)
        "padding": padding_mask(np.array([seq_len, padded_length(seq_len)]), seq_len),  # (2, 1, 1, seq_len)
    }[state.mask]
    output, weights = attention_layer(d_model, num_heads, seed, state.position_mode)(x, mask)
    allowed = np.ones((2, 1, seq_len, seq_len), dtype=bool)
    if mask is not None:
        allowed = allowed & mask  # (2, 1, seq_len, seq_len)
    inputs_2d, outputs_2d, explained = embedding_shift_2d(x[SHOWN], output[SHOWN])
    real = np.arange(seq_len) < (padded_length(seq_len) if state.mask == "padding" else seq_len)
    return Frame(state, weights[SHOWN], allowed[SHOWN, 0], x, output, inputs_2d, outputs_2d, explained, real,
                 [str(i) for i in range(seq_len)])


def _trained_frame(state, model):
    model = load_trained() if model is None else model
    tokens = encode_letters(state.tokens)  # (seq_len,)
    seq_len, use_positions = len(tokens), state.position_mode == "learned"
    mask = causal_mask(seq_len)  # (seq_len, seq_len): the mask the model was trained with
    h = model.embed[tokens]  # (seq_len, d_model): the residual stream
    if use_positions:
        h = h + model.pos[:seq_len]
    for mha in model.layers[: state.layer + 1]:
        output, weights = mha(h[None], mask)  # (1, seq_len, d_model), (1, num_heads, seq_len, seq_len)
        h_before, h = h, h + output[0]
    inputs_2d, outputs_2d, explained = embedding_shift_2d(h_before, h)
    predictions = model.predict(tokens, use_positions=use_positions)  # (seq_len,)
    scores = {"previous_token": circuits.previous_token_score(weights), "prefix_matching": None}
    if any(tokens[t] in tokens[:t] for t in range(seq_len)):  # some query has an earlier occurrence
        scores["prefix_matching"] = circuits.prefix_matching_score(weights, tokens[None])
    continuation = None  # --- the continuation: the model writes on after the typed tokens
    if use_positions:
        continuation = generate(model, tokens, min(CONTINUATION, model.max_len + 1 - seq_len))
    return Frame(state, weights[0], mask, h_before[None], h[None], inputs_2d, outputs_2d, explained,
                 np.ones(seq_len, dtype=bool), decode_tokens(tokens).split(), tokens, predictions, scores,
                 continuation, len(model.layers))
