"""Checks at the doors of the explorer (:mod:`mhattn.explorer`): the settings it can show.

The explorer's limits live here, beside the checks that hold a setting to them;
:mod:`mhattn.explorer.frame` shows the same names (``D_MODELS``, ``head_choices``, ...), and
the controls offer exactly these values. A :class:`~mhattn.explorer.frame.State` is checked
where it is made (:func:`state_args`: the settings alone); a frame checks it again against
the model it shows (:func:`check_state`: its layers, the letters it reads). A
:class:`~mhattn.explorer.frame.Frame` is checked where it is made too (:func:`frame_args`).
"""

import dataclasses
import math

import numpy as np

from .pictures import attention_weights, label_list, point
from .values import finite, flag, index, integer, number_array, positive_int, real_array, real_number, seed

MIN_SEQ_LEN, MAX_SEQ_LEN = 2, 32
D_MODELS = (12, 16, 32, 48, 64)
MAX_HEADS = 8  # more panels than this would be too small to read
MASKS = ("none", "causal", "padding")
MAX_SEED = 2**32 - 1  # the largest seed np.random.RandomState accepts
DEFAULT_TOKENS = "a b c d x a b c"
TRAINED_LAYERS = 2  # layers of the shipped trained model (mhattn/data/induction.npz)
LETTERS = "abcdefghijklmnopqrstuvwxyz"  # the trained model's tokens (mhattn.learn.model.LETTERS)
VOCAB = len(LETTERS)
#: What ``positions`` may be: untrained, no positions or rotary ones (RoPE); trained, the
#: model's learned position embeddings or none.
POSITIONS = {False: ("none", "rope"), True: ("learned", "none")}
STATE_FIELDS = ("trained", "seq_len", "d_model", "num_heads", "seed", "mask", "tokens", "layer", "positions")
MODEL_PARTS = ("layers", "embed", "pos", "max_len", "vocab")
FRAME_PARTS = ("state", "weights", "allowed", "inputs_2d", "outputs_2d", "explained", "real", "labels")


def head_choices(d_model):
    """The head counts the explorer offers for ``d_model``: divisors of it, at most ``MAX_HEADS``."""
    return tuple(h for h in range(1, MAX_HEADS + 1) if d_model % h == 0)


def rope_fits(d_model, num_heads):
    """Whether RoPE can act on heads of ``d_k = d_model // num_heads``: it turns pairs, so d_k must be even."""
    return (d_model // num_heads) % 2 == 0


def position_choices(trained):
    """The ``positions`` values the explorer offers for this kind of weights."""
    return POSITIONS[bool(trained)]


def parse_tokens(text, longest=MAX_SEQ_LEN, vocab=VOCAB):
    """The letters of ``text`` as token ids (a list of ints), or an error that says what to type.

    ``longest`` is the most tokens the model reads, ``vocab`` how many letters it knows (the first
    ``vocab`` of a-z).
    """
    if not isinstance(text, str):
        raise TypeError(f"tokens must be a str of letters, like {DEFAULT_TOKENS!r}; got {text!r}")
    letters = "".join(text.lower().split())
    bad = sorted({c for c in letters if c not in LETTERS})
    if bad:
        raise ValueError(f"tokens must hold only letters a-z and spaces; got {bad} in {text!r}")
    if not MIN_SEQ_LEN <= len(letters) <= longest:
        raise ValueError(f"tokens must hold {MIN_SEQ_LEN} to {longest} letters; got {len(letters)} in {text!r}")
    ids = [LETTERS.index(c) for c in letters]
    if max(ids) >= vocab:
        raise ValueError(f"tokens must be letters the model knows, the first {vocab} of a-z; got {text!r}")
    return ids


def settings(trained, seq_len, d_model, num_heads, seed_value, mask, tokens, layer, positions):
    """The explorer's settings checked one by one and against each other (no model needed); normalised."""
    trained = flag("trained", trained)
    d_model = positive_int("d_model", d_model)
    if d_model not in D_MODELS:
        raise ValueError(f"d_model must be one of {D_MODELS}; got {d_model}")
    num_heads = positive_int("num_heads", num_heads)
    if num_heads not in head_choices(d_model):
        raise ValueError(f"num_heads must divide d_model = {d_model} and be at most {MAX_HEADS}: one of "
                         f"{head_choices(d_model)}; got {num_heads}")
    seq_len = positive_int("seq_len", seq_len)
    if not MIN_SEQ_LEN <= seq_len <= MAX_SEQ_LEN:
        raise ValueError(f"seq_len must be in [{MIN_SEQ_LEN}, {MAX_SEQ_LEN}]; got {seq_len}")
    if not isinstance(mask, str) or mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}; got {mask!r}")
    layer = integer("layer", layer, "an int >= 0")
    if layer < 0:
        raise ValueError(f"layer must be an int >= 0; got {layer}")
    if not isinstance(tokens, str):
        raise TypeError(f"tokens must be a str of letters, like {DEFAULT_TOKENS!r}; got {tokens!r}")
    choices = position_choices(trained)
    if positions is not None and (not isinstance(positions, str) or positions not in choices):
        kind = "trained" if trained else "untrained"
        raise ValueError(f"positions must be one of {choices} for the {kind} weights; got {positions!r}")
    if positions == "rope" and not trained and not rope_fits(d_model, num_heads):
        raise ValueError(f"positions='rope' needs an even d_k = d_model // num_heads (RoPE turns pairs of "
                         f"coordinates); got d_k = {d_model // num_heads}")
    return {"trained": trained, "seq_len": seq_len, "d_model": d_model, "num_heads": num_heads,
            "seed": seed(seed_value), "mask": mask, "tokens": tokens, "layer": layer, "positions": positions}


def state_args(self, trained, seq_len, d_model, num_heads, seed, mask, tokens, layer, positions):
    """``State(...)``: every setting the explorer could show, the layer any index (the model decides)."""
    return {"self": self} | settings(trained, seq_len, d_model, num_heads, seed, mask, tokens, layer, positions), None


def shown_model(value):
    """``value`` if it is a trained model the explorer can show (None: the shipped one), else an error."""
    if value is not None and not all(hasattr(value, part) for part in MODEL_PARTS):
        raise TypeError(f"model must be an mhattn InductionModel or None; got {value!r} of type "
                        f"{type(value).__name__}")
    if value is not None and value.max_len < MIN_SEQ_LEN:
        raise ValueError(f"model must read at least {MIN_SEQ_LEN} tokens for the explorer to show attention "
                         f"between them; got a model with max_len = {value.max_len}")
    return value


def check_state(state, model=None, *, unused=True):
    """``state``, checked against the model it will show (None: the shipped one, two layers).

    ``layer`` must be one of the model's layers and ``tokens`` letters it reads. ``unused=False``
    leaves out the tokens when the weights are untrained (they never read them): a frame needs
    only what it shows, the widget all it may switch to.
    """
    if isinstance(state, type) or not dataclasses.is_dataclass(state) or not all(
            hasattr(state, name) for name in STATE_FIELDS):
        raise TypeError(f"state must be an mhattn.explorer.State; got {state!r} of type {type(state).__name__}")
    model = shown_model(model)
    fields = settings(*(getattr(state, name) for name in STATE_FIELDS))
    fields["layer"] = index("layer", fields["layer"], TRAINED_LAYERS if model is None else len(model.layers))
    if fields["trained"] or unused:
        longest = MAX_SEQ_LEN if model is None else min(model.max_len, MAX_SEQ_LEN)
        parse_tokens(fields["tokens"], longest, VOCAB if model is None else model.vocab)
    return dataclasses.replace(state, **fields)


def compute_frame_args(state, model):
    """``compute_frame(state, model)``: a State the model can show."""
    return {"state": check_state(state, model, unused=False), "model": model}, None


def explorer_args(d_model, num_heads, seq_len, seed, mask, trained, tokens, layer, positions):
    """``explorer(...)``: starting values the controls can show, the tokens included (the widget may switch)."""
    fields = settings(trained, seq_len, d_model, num_heads, seed, mask, tokens, layer, positions)
    fields["layer"] = index("layer", fields["layer"], TRAINED_LAYERS)
    parse_tokens(fields["tokens"])
    return fields, None


def explorer_init_args(self, state, background):
    """``Explorer(state, background)``: a State the shipped model can show; ``background`` None or a flag."""
    return {"self": self, "state": check_state(state),
            "background": None if background is None else flag("background", background)}, None


def widget_args(self):
    """Arguments of the explorer widget's methods that take none."""
    return {"self": self}, None


def latest_wins_args(self, work, background):
    """``LatestWins(work, background)``: a function of one item, and a flag."""
    if not callable(work):
        raise TypeError(f"work must be a function of one item; got {work!r} of type {type(work).__name__}")
    return {"self": self, "work": work, "background": flag("background", background)}, None


def wait_args(self, timeout):
    """``LatestWins.wait(timeout)``: None or a number of seconds >= 0."""
    if timeout is not None:
        timeout = real_number("timeout", timeout, "None or a number of seconds >= 0")
        if math.isnan(timeout) or timeout < 0:
            raise ValueError(f"timeout must be None or a number of seconds >= 0; got {timeout}")
    return {"self": self, "timeout": timeout}, None


def frame_args(self, state, weights, allowed, x, output, inputs_2d, outputs_2d, explained, real, labels, tokens,
               predictions, scores, continuation, num_layers):
    """``Frame(...)``: the numbers of one frame, each of the shape that the weights' heads and ``seq_len`` say."""
    if isinstance(state, type) or not dataclasses.is_dataclass(state) or not all(
            hasattr(state, name) for name in STATE_FIELDS):
        raise TypeError(f"state must be an mhattn.explorer.State; got {state!r} of type {type(state).__name__}")
    weights = attention_weights("weights", weights, 3, "(num_heads, seq_len, seq_len)")
    num_heads, seq_len = weights.shape[0], weights.shape[-1]
    if weights.shape[1] != seq_len:
        raise ValueError(f"weights must have shape (num_heads, seq_len, seq_len); got shape {weights.shape}")
    x, output = (finite(name, real_array(name, value)) for name, value in (("x", x), ("output", output)))
    if x.ndim != 3 or x.shape[1] != seq_len:
        raise ValueError(f"x must have shape (batch, seq_len = {seq_len}, d_model); got shape {x.shape}")
    if output.shape != x.shape:
        raise ValueError(f"output must have the shape of x {x.shape}; got shape {output.shape}")
    if labels is None:
        raise TypeError(f"labels must be a sequence of {seq_len} labels, one per position; got None")
    planes = (("inputs_2d", inputs_2d, (seq_len, 2)), ("outputs_2d", outputs_2d, (seq_len, 2)),
              ("explained", explained, (2,)))
    shown = {name: _required(name, value, shape) for name, value, shape in planes}
    return {"self": self, "state": state, "weights": weights, "x": x, "output": output, **shown,
            "allowed": _bool_array("allowed", allowed, (seq_len, seq_len)),
            "real": _bool_array("real", real, (seq_len,)), "labels": label_list("labels", labels, seq_len),
            "tokens": _token_ids("tokens", tokens, seq_len), "scores": _head_scores(scores, num_heads),
            "predictions": _token_ids("predictions", predictions, seq_len),
            "continuation": _token_ids("continuation", continuation, None),
            "num_layers": None if num_layers is None else positive_int("num_layers", num_layers)}, None


def _required(name, value, shape):
    if value is None:
        raise TypeError(f"{name} must be a float array of shape {shape}; got None")
    return point(name, value, shape)


def _bool_array(name, value, shape):
    array = number_array(name, value) if isinstance(value, np.ma.MaskedArray) else np.asarray(value)  # masked: refused
    if array.dtype != bool or array.shape != shape:
        raise TypeError(f"{name} must be a boolean array of shape {shape}; got {array.dtype} of shape {array.shape}")
    return array


def _token_ids(name, value, length):
    """None, or token ids: ``length`` ints (any number if ``length`` is None), each >= 0."""
    if value is None:
        return None
    ids = number_array(name, value)
    if ids.dtype.kind not in "iu" or ids.ndim != 1 or length not in (None, len(ids)):
        raise TypeError(f"{name} must be None or an int array of shape ({length or 'k'},); got {ids.dtype} of "
                        f"shape {ids.shape}")
    if (ids < 0).any():
        raise ValueError(f"{name} must hold token ids >= 0; got {ids}")
    return ids


def _head_scores(scores, num_heads):
    """A dict of each measure's score per head (None where a measure does not apply)."""
    if scores is dataclasses._HAS_DEFAULT_FACTORY:  # not given: what a dataclass's __init__ sees then (-> {})
        return {}
    if not isinstance(scores, dict):
        raise TypeError(f"scores must be a dict of str -> None or an array of {num_heads} scores; got {scores!r}")
    return {str(measure): None if value is None else point(f"scores[{measure!r}]", value, (num_heads,))
            for measure, value in scores.items()}


def draw_args(self, frame):
    """``FrameDrawing.draw(frame)``: a Frame, as :func:`compute_frame` makes them."""
    if isinstance(frame, type) or not dataclasses.is_dataclass(frame) or not all(
            hasattr(frame, name) for name in FRAME_PARTS):
        raise TypeError(f"frame must be an mhattn.explorer.Frame (from compute_frame); got {frame!r} of type "
                        f"{type(frame).__name__}")
    return {"self": self, "frame": frame}, None
