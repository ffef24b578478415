"""A numerically stable softmax."""

import numpy as np


def softmax(x, axis=-1):
    r"""Turn scores into probabilities along ``axis``.

    .. math::

        \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},
        \qquad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically (the factor :math:`e^{-m}`
    cancels) but keeps every exponent :math:`\le 0`, so ``exp`` cannot overflow, however
    large the scores.

    Parameters
    ----------
    x : array_like of float, at least 1-D
        Scores. ``-inf`` is allowed and means "probability exactly zero".
    axis : int, default -1
        The axis that sums to one.

    Returns
    -------
    ndarray, same shape and dtype as ``x``
        Non-negative, summing to one along ``axis``. Integers become float64; float16 is
        computed in float32 and returned as float16. A slice that is entirely ``-inf``
        (nothing may receive anything) comes back as zeros, not NaN: the choice this
        package makes for a fully masked attention row. PyTorch's
        ``scaled_dot_product_attention`` (>= 2.5) makes it too on the CPU and in CUDA's
        math and memory-efficient backends, but not in every backend: on CUDA with
        float16/bfloat16 and a boolean mask, its default (cuDNN) backend returned a finite,
        nonzero output for such a row on torch 2.11.

    Examples
    --------
    >>> weights = softmax(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, -np.inf]]))
    >>> print(np.round(weights, 3))  # a -inf score gets probability exactly zero
    [[0.09  0.245 0.665]
     [0.5   0.5   0.   ]]
    >>> print(weights.sum(axis=-1))  # every row sums to one
    [1. 1.]
    """
    x_max = x.max(axis=axis, keepdims=True, initial=-np.inf)  # (..., 1, ...); an empty slice gives -inf
    x_max = np.where(np.isneginf(x_max), 0.0, x_max)  # an all -inf slice: subtract 0, exp gives 0, not NaN
    exps = np.exp(x - x_max)  # every exponent <= 0: no overflow
    total = exps.sum(axis=axis, keepdims=True)  # >= 1, or 0 for an all -inf slice
    return exps / np.where(total > 0, total, 1.0)  # an all -inf slice: 0 / 1 = 0
