"""Argument checks shared by the package.

Every public function validates its input here, so a beginner's mistake ends in a
``ValueError`` or ``TypeError`` that names the argument and says what was expected and
what arrived, instead of NumPy's broadcasting message deep inside a matmul.
"""

import numbers

import numpy as np


def positive_int(name, value):
    """Return ``value`` as an ``int``, or raise if it is not a positive integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int; got {value!r} of type {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int; got {value}")
    return int(value)


def real_array(name, value):
    """Return ``value`` as a floating-point ndarray (integers become float64).

    Raises ``TypeError`` for booleans, complex numbers, strings and objects.
    """
    array = np.asarray(value)
    if array.dtype.kind in "iu":
        return array.astype(np.float64)
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must hold real numbers; got an array of dtype {array.dtype}")
    return array


def finite(name, array):
    """Raise ``ValueError`` if ``array`` holds NaN or +-inf; return it unchanged."""
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(
            f"{name} must be finite; found {array[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )
    return array


def ndim(name, array, expected, layout):
    """Raise ``ValueError`` unless ``array.ndim == expected``; ``layout`` names the axes."""
    if array.ndim != expected:
        raise ValueError(f"{name} must be {expected}-D with shape {layout}; got shape {array.shape}")


def broadcast_mask(mask, target_shape, layout):
    """Check a boolean attention mask against the scores' shape.

    Parameters
    ----------
    mask : array_like of bool or None
        True where a query may attend to a key.
    target_shape : tuple of int
        Shape of the attention scores, e.g. ``(batch, num_heads, seq_q, seq_k)``.
    layout : str
        Names of the axes of ``target_shape``, used in the error message.

    Returns
    -------
    ndarray of bool or None
        ``mask`` as an array, not yet broadcast (broadcasting happens where it is used).
    """
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(
            f"mask must be a boolean array (True = this query may attend to this key); "
            f"got dtype {mask.dtype}. Build it with a comparison, e.g. `lengths[:, None] > positions`"
        )
    target_shape = tuple(target_shape)
    try:
        ok = np.broadcast_shapes(mask.shape, target_shape) == target_shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"mask must broadcast to the scores' shape {layout} = {target_shape}; got shape {mask.shape}"
        )
    return mask
