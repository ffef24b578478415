"""A numerically stable softmax."""

import numbers

import numpy as np

from . import _checks


def softmax(x, axis=-1):
    r"""Turn scores into probabilities along ``axis``.

    .. math::

        \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},
        \qquad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically (the factor :math:`e^{-m}`
    cancels) but keeps every exponent :math:`\le 0`, so ``exp`` can never overflow,
    however large the logits.

    Parameters
    ----------
    x : array_like of float, any shape
        Logits. ``-inf`` is allowed and means "probability exactly zero".
    axis : int, default -1
        The axis that sums to one.

    Returns
    -------
    ndarray, same shape and float dtype as ``x``
        Probabilities: non-negative, summing to one along ``axis``. float32 stays
        float32; integers become float64.

        A slice that is entirely ``-inf`` (nothing may receive any probability) comes
        back as all zeros, not NaN: the same choice this package makes for a fully
        masked attention row, and the one ``torch.nn.functional.scaled_dot_product_attention``
        makes.

    Raises
    ------
    ValueError
        If ``x`` holds NaN or ``+inf`` (there is no sensible probability for them), or
        ``axis`` is out of range.
    TypeError
        If ``x`` is not real-valued or ``axis`` is not an int.
    """
    x = _checks.real_array("x", x)
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("x must not contain NaN or +inf; -inf is allowed (it means probability 0)")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an int; got {axis!r} of type {type(axis).__name__}")
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise ValueError(f"axis must be in [-{x.ndim}, {x.ndim - 1}] for x of shape {x.shape}; got {axis}")
    return softmax_(np.array(x, copy=True), axis=axis)


def softmax_(scores, axis=-1):
    """Softmax of a float array computed in place, without checks; returns ``scores``.

    The attention functions call this on a scores array they have just created, which
    saves one allocation of the largest array in the computation. ``scores`` must not
    contain NaN or ``+inf``; an all ``-inf`` slice becomes zeros.
    """
    finfo = np.finfo(scores.dtype)
    row_max = np.maximum.reduce(scores, axis=axis, keepdims=True)  # scores.max(...), minus a little call overhead
    np.maximum(row_max, finfo.min, out=row_max)  # an all -inf slice subtracts a finite number: exp gives 0, not NaN
    np.subtract(scores, row_max, out=scores)
    np.exp(scores, out=scores)  # every exponent <= 0: no overflow
    total = np.add.reduce(scores, axis=axis, keepdims=True)  # >= 1 (the max gives exp(0) = 1); 0 if all -inf
    np.maximum(total, finfo.tiny, out=total)  # so an all -inf slice gives 0 / tiny = 0
    np.divide(scores, total, out=scores)
    return scores
