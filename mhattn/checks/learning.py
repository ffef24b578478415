"""The arguments of the learning code's measures and experiments (:mod:`mhattn.learn`).

:mod:`mhattn.learn.circuits` and :mod:`mhattn.learn.several_heads` take a trained model,
attention weights, logits and tokens from their callers. The checks here run first, so an
error names the argument (``layer``, ``head``, ``weights``, ``tokens``, ``targets``), never
``half_len`` or ``IndexError`` from inside.
"""

import math

import numpy as np

from .model import parameters
from .model import tokens as check_tokens
from .positions import count
from .values import finite, flag, index, integer, learning_rate, number_array, positive_int, real_array, real_number
from .values import seed as check_seed


def rng_value(name, value):
    """``value`` if it is a ``numpy.random.Generator``, or ``TypeError``."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)); got {value!r}")
    return value


def real(name, value, ndim=None, layout=""):
    """``value`` as a finite float array (of ``ndim`` axes, non-empty), or a clear error."""
    array = real_array(name, value)
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D with shape {layout}; got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty; got shape {array.shape}")
    return finite(name, array)


def attention_weights(value, name="weights"):
    """Attention weights ``(batch, num_heads, seq_len, seq_len)``: finite, square, at least two positions."""
    weights = real(name, value, 4, "(batch, num_heads, seq_len, seq_len)")
    if weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (batch, num_heads, seq_len, seq_len) with seq_len >= 2 "
                         f"(a query with a previous token); got shape {weights.shape}")
    return weights


def int_array(name, value, shape, vocab=None):
    """``value`` as an int array of ``shape`` (with ids in ``[0, vocab)`` if given), or a clear error."""
    array = number_array(name, value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold ints; got dtype {array.dtype}")
    if array.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got shape {array.shape}")
    if vocab is not None and array.size and (array.min() < 0 or array.max() >= vocab):
        raise ValueError(f"{name} must lie in [0, {vocab - 1}] (no negative index counts from the end here); "
                         f"got {array.min()} to {array.max()}")
    return array


def model_like(value, kind="InductionModel"):
    """``value`` if it has a model's parts (``layers`` or ``attention``, ``embed``, ``num_heads``), or ``TypeError``."""
    needed = ("layers", "embed", "unembed", "num_heads", "vocab") if kind == "InductionModel" else (
        "attention", "embed", "pos", "readouts", "num_heads", "vocab", "seq_len")
    if not all(hasattr(value, part) for part in needed):
        raise TypeError(f"model must be an mhattn {kind}; got {value!r} of type {type(value).__name__}")
    for name, parameter in value.parameters().items():  # NaN after a diverged run would give NaN scores
        finite(f"model parameter {name}", real_array(f"model parameter {name}", parameter))
    return value


def counts(name, value):
    """``value`` as a non-empty tuple of distinct ints (head counts, seeds): each checked by ``integer``."""
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be an iterable of ints; got {value!r}") from None
    if not items:
        raise ValueError(f"{name} must hold at least one int; got {value!r}")
    return tuple(integer(name, item, "an int") for item in items)


# --- mhattn.learn.generate, task and train ------------------------------------------------------


def generate_args(model, prompt, num_tokens, temperature, seed, use_cache):
    model = model_like(model)
    parameters(model)
    prompt = check_tokens(prompt, model.vocab, model.max_len, "prompt")
    if prompt.ndim != 1:
        raise ValueError(f"prompt must be one sequence of token ids, shape (prompt_len,); got shape {prompt.shape}")
    num_tokens = integer("num_tokens", num_tokens, "an int >= 0")
    if num_tokens < 0 or len(prompt) + num_tokens > model.max_len + 1:
        raise ValueError(f"num_tokens must be in [0, max_len + 1 - prompt_len = {model.max_len + 1 - len(prompt)}]; "
                         f"got {num_tokens}")
    temperature = real_number("temperature", temperature, "a float >= 0")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite float >= 0; got {temperature}")
    return {"model": model, "prompt": prompt, "num_tokens": num_tokens, "temperature": temperature,
            "seed": check_seed(seed), "use_cache": flag("use_cache", use_cache)}, None


def layout_args(rng, n, offset, gap, vocab, max_len):
    """:func:`mhattn.learn.task.layout`'s generator, sizes and plain arrays (its own check reads their shapes)."""
    arrays = {name: number_array(name, value) for name, value in (("n", n), ("offset", offset), ("gap", gap))}
    return {"rng": rng_value("rng", rng), **arrays, "vocab": positive_int("vocab", vocab),
            "max_len": positive_int("max_len", max_len)}, None


def _copies(batch, n, offset, gap):
    """``n``, ``offset``, ``gap`` of a batch: ints >= 0, one per sequence ``(batch,)`` (offset and gap may be 0)."""
    checked = {}
    for name, value in (("n", n), ("offset", offset), ("gap", gap)):
        array = number_array(name, value)
        shapes = ((batch,),) if name == "n" else ((), (batch,))
        if array.dtype.kind not in "iu" or array.shape not in shapes:
            shape = "(batch,)" if name == "n" else "(batch,) or one int"
            raise (TypeError if array.dtype.kind not in "iu" else ValueError)(
                f"{name} must be ints of shape {shape}, batch = {batch}; got {array.dtype} of shape {array.shape}")
        if array.size and array.min() < 0:
            raise ValueError(f"{name} must be >= 0; got {array.min()}")
        checked[name] = array
    return checked


def repeated_positions_args(n, max_len, offset, gap):
    """Arguments of :func:`mhattn.learn.task.repeated_positions`."""
    n = number_array("n", n)
    return {"max_len": positive_int("max_len", max_len), **_copies(len(np.atleast_1d(n)), n, offset, gap)}, None


def scored_tokens(tokens):
    """A batch of token ids ``(batch, seq_len)``, ``seq_len >= 2``, or a clear error."""
    array = number_array("tokens", tokens)
    if array.dtype.kind not in "iu" or array.ndim != 2 or array.shape[1] < 2 or array.size == 0:
        raise (TypeError if array.dtype.kind not in "iu" else ValueError)(
            f"tokens must be ints of shape (batch, seq_len) with seq_len >= 2; got {array.dtype} "
            f"of shape {array.shape}")
    return array


def determined_positions_args(tokens, n, offset, gap):
    """Arguments of :func:`mhattn.learn.task.determined_positions`."""
    tokens = scored_tokens(tokens)
    return {"tokens": tokens, **_copies(len(tokens), n, offset, gap)}, None


def task_accuracy_args(logits, tokens, n, offset, gap):
    """Arguments of :func:`mhattn.learn.task.accuracy`: logits ``(batch, seq_len, vocab)`` beside the tokens."""
    tokens = scored_tokens(tokens)
    logits = real("logits", logits, 3, "(batch, seq_len, vocab)")
    if logits.shape[:2] != tokens.shape:
        raise ValueError(f"logits must have shape (batch, seq_len, vocab) with (batch, seq_len) = {tokens.shape} "
                         f"of tokens; got shape {logits.shape}")
    return {"logits": logits, "tokens": tokens, **_copies(len(tokens), n, offset, gap)}, None


def block_lengths_args(max_len):
    """Arguments of :func:`mhattn.learn.task.block_lengths`: a context of at least two tokens."""
    max_len = positive_int("max_len", max_len)
    if max_len < 2:
        raise ValueError(f"max_len must be >= 2 (room for a block and its copy); got {max_len}")
    return {"max_len": max_len}, None


def schedule_args(step, steps, lr, warmup, final_fraction):
    """Arguments of :func:`mhattn.learn.train.learning_rate_at`: a step in ``[1, steps]``, a step size, a shape."""
    steps = positive_int("steps", steps)
    expected = f"an int in [1, steps = {steps}]"
    step = integer("step", step, expected)
    if not 1 <= step <= steps:
        raise ValueError(f"step must be {expected} (counted from 1); got {step}")
    final_fraction = real_number("final_fraction", final_fraction, "a float in [0, 1]")
    if not 0 <= final_fraction <= 1:
        raise ValueError(f"final_fraction must be a float in [0, 1]; got {final_fraction}")
    return {"step": step, "steps": steps, "lr": learning_rate(lr), "warmup": count("warmup", warmup),
            "final_fraction": final_fraction}, None


# --- mhattn.learn.several_heads and mhattn.learn.losses ----------------------------------------


def cross_entropy_args(logits, targets):
    logits = real("logits", logits, 2, "(count, vocab)")
    return {"logits": logits, "targets": int_array("targets", targets, logits.shape[:1], logits.shape[1])}, None


def slot_tokens(model, tokens):
    """A :class:`~mhattn.learn.several_heads.TwoSlotModel`'s tokens: ints ``(batch, seq_len)`` in ``[0, vocab)``."""
    array = check_tokens(tokens, model.vocab, model.seq_len)
    if array.ndim != 2 or array.shape[1] != model.seq_len:
        raise ValueError(f"tokens must be ints of shape (batch, seq_len = {model.seq_len}); got shape {array.shape}")
    return array


def slot_targets(model, tokens, targets):
    """The two slots' targets: ints ``(2, batch, seq_len)`` in ``[0, vocab)``."""
    return int_array("targets", targets, (2,) + tokens.shape, model.vocab)


def slot_batch_args(model, tokens, targets):
    model = model_like(model, "TwoSlotModel")
    tokens = slot_tokens(model, tokens)
    return {"model": model, "tokens": tokens, "targets": slot_targets(model, tokens, targets)}, None


def two_slot_batch_args(rng, batch_size, vocab, seq_len):
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size),
            "vocab": positive_int("vocab", vocab), "seq_len": positive_int("seq_len", seq_len)}, None


def offset_profile_args(weights, max_offset):
    weights = attention_weights(weights)
    return {"weights": weights, "max_offset": index("max_offset", max_offset, weights.shape[-1])}, None


def model_tokens_args(model, tokens):
    model = model_like(model, "TwoSlotModel")
    return {"model": model, "tokens": slot_tokens(model, tokens)}, None


def logits_with_weights_args(model, tokens, weights):
    arguments, _ = model_tokens_args(model, tokens)
    model, tokens = arguments["model"], arguments["tokens"]
    weights = real("weights", weights, 4, "(batch, num_heads, seq_len, seq_len)")
    expected = (len(tokens), model.num_heads, model.seq_len, model.seq_len)
    if weights.shape != expected:
        raise ValueError(f"weights must have shape (batch, num_heads, seq_len, seq_len) = {expected}; "
                         f"got {weights.shape}")
    return arguments | {"weights": weights}, None


def without_heads_args(model, heads):
    model = model_like(model, "TwoSlotModel")
    return {"model": model, "heads": head_indices(heads, model.num_heads)}, None


def head_indices(heads, num_heads):
    """``heads`` as a list of head indices in ``[0, num_heads)``, or a clear error naming ``heads``."""
    try:
        items = list(heads)
    except TypeError:
        raise TypeError(f"heads must be an iterable of head indices, e.g. [0]; got {heads!r}") from None
    return [index("heads", head, num_heads) for head in items]


def experiment_args(head_counts, seeds, num_sequences):
    """``(head_counts, seeds, num_sequences)`` of :func:`mhattn.learn.several_heads.experiment`, checked."""
    seeds = counts("seeds", seeds)
    if not all(0 <= s < 2**32 for s in seeds):
        raise ValueError(f"seeds must be ints in [0, 2**32 - 1]; got {seeds}")
    return (tuple(positive_int("head_counts", h) for h in counts("head_counts", head_counts)), seeds,
            positive_int("num_sequences", num_sequences))
