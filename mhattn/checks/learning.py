"""The arguments of the learning code's measures and experiments (:mod:`mhattn.learn`).

:mod:`mhattn.learn.circuits` and :mod:`mhattn.learn.several_heads` take a trained model,
attention weights, logits and tokens from their callers. The checks here run first, so an
error names the argument (``layer``, ``head``, ``weights``, ``tokens``, ``targets``), never
``half_len`` or ``IndexError`` from inside.
"""

import numpy as np

from .values import finite, index, integer, number_array, real_array


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




def head_indices(heads, num_heads):
    """``heads`` as a list of head indices in ``[0, num_heads)``, or a clear error naming ``heads``."""
    try:
        items = list(heads)
    except TypeError:
        raise TypeError(f"heads must be an iterable of head indices, e.g. [0]; got {heads!r}") from None
    return [index("heads", head, num_heads) for head in items]
