"""Checks at the doors of the pictures (:mod:`mhattn.pictures`): plots, the PCA view, shown code.

Each ``*_args`` function takes a public function's arguments by name and returns them
normalised (arrays of floats, labels as lists of str), with None for the result's dtype.
"""

import inspect
import os

import numpy as np

from .values import finite, flag, ndim, positive_int, real_array, real_number


def label_list(name, value, count):
    """``value`` as a list of ``count`` strings, one per position; None stays None (``0, 1, ...``)."""
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"{name} must be a sequence of {count} labels, not a single string {value!r}")
    value = [str(label) for label in value]
    if len(value) != count:
        raise ValueError(f"{name} must hold {count} labels, one per position; got {len(value)}")
    return value


def attention_weights(name, value, expected_ndim, layout):
    """``value`` as finite, non-negative float weights of ``expected_ndim`` axes (``layout`` names them)."""
    weights = finite(name, real_array(name, value))
    hint = f" (a batch of one? pass {name}[0])" if weights.ndim == expected_ndim + 1 and weights.shape[0] == 1 else ""
    if weights.ndim != expected_ndim:
        raise ValueError(f"{name} must be {expected_ndim}-D with shape {layout}; got shape {weights.shape}{hint}")
    if (weights < 0).any():
        raise ValueError(f"{name} must be attention weights (non-negative); found minimum {weights.min():.3g}")
    return weights


def vmax_value(value):
    """None (the largest weight shown), or a positive number: the weight drawn darkest."""
    if value is None:
        return None
    value = real_number("vmax", value, "None or a positive number")
    if not 0 < value < np.inf:
        raise ValueError(f"vmax must be None or a positive number; got {value}")
    return value


def text(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str; got {value!r} of type {type(value).__name__}")
    return value


def axes(name, value):
    if value is not None and not hasattr(value, "imshow"):
        raise TypeError(f"{name} must be a matplotlib Axes or None; got {value!r} of type {type(value).__name__}")
    return value


def point(name, value, shape):
    """``value`` as a finite float array of ``shape``; None stays None."""
    if value is None:
        return None
    array = finite(name, real_array(name, value))
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got shape {array.shape}")
    return array


def embedding_shift_args(inputs, outputs):
    """``embedding_shift_2d``: two finite ``(seq_len, d_model)`` arrays of one shape, spanning a plane."""
    inputs, outputs = (finite(n, real_array(n, a)) for n, a in (("inputs", inputs), ("outputs", outputs)))
    ndim("inputs", inputs, 2, "(seq_len, d_model)")
    if outputs.shape != inputs.shape:
        raise ValueError(f"outputs must have the shape of inputs {inputs.shape}; got shape {outputs.shape}")
    if inputs.shape[0] < 2:
        raise ValueError(f"inputs must hold at least 2 tokens for a 2-D PCA; got shape {inputs.shape}")
    if (inputs == inputs[0]).all() and (outputs == inputs[0]).all():
        raise ValueError("inputs and outputs must not all be the same vector: they span no plane to project on")
    return {"inputs": inputs, "outputs": outputs}, None


def plot_attention_args(weights, tokens, ax, title, vmax, annotate):
    """``plot_attention``: one ``(seq_q, seq_k)`` matrix of weights; labels only for a square one."""
    weights = attention_weights("weights", weights, 2, "(seq_q, seq_k)")
    seq_q, seq_k = weights.shape
    if tokens is not None and seq_q != seq_k:
        raise ValueError(f"tokens label square weights only; got weights of shape {weights.shape}")
    return {"weights": weights, "tokens": label_list("tokens", tokens, seq_q), "ax": axes("ax", ax),
            "title": text("title", title), "vmax": vmax_value(vmax), "annotate": flag("annotate", annotate)}, None


def plot_heads_args(weights, tokens, title, vmax, annotate, figsize):
    """``plot_heads``: ``(num_heads, seq_q, seq_k)`` weights; labels only for square ones."""
    weights = attention_weights("weights", weights, 3, "(num_heads, seq_q, seq_k)")
    _, seq_q, seq_k = weights.shape
    if tokens is not None and seq_q != seq_k:
        raise ValueError(f"tokens label square weights only; got weights of shape {weights.shape}, each head's "
                         f"({seq_q}, {seq_k})")
    if figsize is not None:
        size = point("figsize", figsize, (2,))
        if (size <= 0).any():
            raise ValueError(f"figsize must be None or (width, height) in inches, both > 0; got {figsize!r}")
        figsize = tuple(float(s) for s in size)
    return {"weights": weights, "tokens": label_list("tokens", tokens, seq_q),
            "title": None if title is None else text("title", title), "vmax": vmax_value(vmax),
            "annotate": flag("annotate", annotate), "figsize": figsize}, None


def plot_embedding_shift_args(inputs_2d, outputs_2d, explained, labels, ax, title, input_label, output_label, label_at,
                              centre, centre_label):
    """``plot_embedding_shift``: two finite ``(seq_len, 2)`` arrays of one shape, and what labels them."""
    points = []
    for name, array in (("inputs_2d", inputs_2d), ("outputs_2d", outputs_2d)):
        array = finite(name, real_array(name, array))
        ndim(name, array, 2, "(seq_len, 2)")
        if array.shape[1] != 2:
            raise ValueError(f"{name} must have shape (seq_len, 2); got shape {array.shape}")
        points.append(array)
    if points[1].shape != points[0].shape:
        raise ValueError(f"outputs_2d must have the shape of inputs_2d {points[0].shape}; got {points[1].shape}")
    if explained is not None:  # two shares of the variance, shown as percentages
        explained = finite("explained", real_array("explained", explained))
        if explained.shape != (2,):
            raise ValueError(f"explained must have shape (2,); got shape {explained.shape}")
        if not ((explained >= 0) & (explained <= 1)).all():
            raise ValueError(f"explained must hold shares of the variance, in [0, 1]; got {explained}")
    if label_at not in ("inputs", "outputs"):
        raise ValueError(f'label_at must be "inputs" or "outputs"; got {label_at!r}')
    return {"inputs_2d": points[0], "outputs_2d": points[1], "explained": explained,
            "labels": label_list("labels", labels, len(points[0])), "ax": axes("ax", ax),
            "title": text("title", title), "input_label": text("input_label", input_label),
            "output_label": text("output_label", output_label), "label_at": label_at,
            "centre": point("centre", centre, (2,)), "centre_label": text("centre_label", centre_label)}, None


def save_figure_args(fig, path, bbox_inches):
    """``save_figure``: a matplotlib Figure, a path, and None or "tight"."""
    if not hasattr(fig, "savefig"):
        raise TypeError(f"fig must be a matplotlib Figure; got {fig!r} of type {type(fig).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a pathlib.Path; got {path!r} of type {type(path).__name__}")
    if bbox_inches not in (None, "tight"):
        raise ValueError(f'bbox_inches must be None or "tight"; got {bbox_inches!r}')
    return {"fig": fig, "path": path, "bbox_inches": bbox_inches}, None


def show_source_args(obj, docstring):
    """``show_source``: a function, class or method with Python source; ``docstring`` a flag."""
    try:
        inspect.getsource(inspect.unwrap(obj))
    except TypeError:
        raise TypeError(f"obj must be a function, class or method with Python source; got {obj!r}") from None
    return {"obj": obj, "docstring": flag("docstring", docstring)}, None


def exercise_args(number, crash_hint):
    """``exercise``: the exercise's number, and the hint for an answer that crashes."""
    if not isinstance(crash_hint, str) or not crash_hint:
        raise TypeError(f"crash_hint must be a non-empty str; got {crash_hint!r}")
    return {"number": positive_int("number", number), "crash_hint": crash_hint}, None


def any_value_args(value):
    """A function of any value (``not_yet``): nothing to check."""
    return {"value": value}, None
