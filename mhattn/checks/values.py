"""Checks of single values and arrays, shared by every door of the package."""

import math
import numbers

import numpy as np

# --- single values ----------------------------------------------------------------------


def positive_int(name, value):
    """Return ``value`` as an ``int``, or raise if it is not a positive integer."""
    value = integer(name, value, "a positive int")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int; got {value}")
    return int(value)


def flag(name, value):
    """Return ``value`` as a ``bool``, or raise: ``need_weights="no"`` must not mean True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r} of type {type(value).__name__}")
    return bool(value)


def seed(value):
    """Return ``value`` as an ``int`` seed for ``np.random.RandomState``: 0 <= seed < 2**32."""
    value = integer("seed", value, "an int in [0, 2**32 - 1]")
    if not 0 <= value < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32 - 1]; got {value}")
    return int(value)


def integer(name, value, expected):
    """Raise ``TypeError`` unless ``value`` is an integer (a bool is not); ``expected`` says which ones."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {expected}; got {value!r} of type {type(value).__name__}")
    return int(value)


def real_number(name, value, expected):
    """``value`` as a ``float``; ``TypeError`` unless it is a real number (a bool is not). ``expected`` says which."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {expected}; got {value!r} of type {type(value).__name__}")
    return float(value)


def index(name, value, count):
    """``value`` as an index in ``[0, count)``, or raise: no negative index counts from the end here."""
    expected = f"an int in [0, {count - 1}]"
    value = integer(name, value, expected)
    if not 0 <= value < count:
        raise ValueError(f"{name} must be {expected}; got {value}")
    return value


def axis_index(value, ndim, shape):
    """Return ``value`` as an axis of an array of ``ndim`` axes, or raise."""
    value = integer("axis", value, "an int")
    if not -ndim <= value < ndim:
        raise ValueError(f"axis must be in [-{ndim}, {ndim - 1}] for x of shape {shape}; got {value}")
    return int(value)


# --- arrays -----------------------------------------------------------------------------


def number_array(name, value):
    """Return ``value`` as an ndarray of real numbers (ints or floats), as given: no cast, no copy.

    Raises ``TypeError`` for booleans, complex numbers, strings, objects, masked arrays
    (``np.asarray`` would drop the mask and use the masked entries as numbers) and tensors of
    a dtype NumPy has no equal of (a torch bfloat16 tensor), and ``ValueError`` for ragged
    nested lists.
    """
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            f"{name} must be a plain ndarray, not a masked array: its mask would be dropped and the masked "
            f"entries used as numbers. Pass {name}.filled(value) or, for attention, a boolean mask= argument"
        )
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} must be a rectangular array of numbers; got a ragged nested sequence") from None
    except TypeError as error:
        raise unheld_dtype_error(name, value, error) from None
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers; got an array of dtype {array.dtype}")
    return array


def plain_array(name, value, expected, ragged_hint=""):
    """``value`` as an ndarray, as given; a masked array or a ragged nested list is refused as not ``expected``."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} must be {expected} in a plain ndarray, not a masked array (its mask would be lost)")
    try:
        return np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} must be {expected}; got a ragged nested sequence{ragged_hint}") from None
    except TypeError as error:
        raise unheld_dtype_error(name, value, error) from None


def unheld_dtype_error(name, value, error):
    """The ``TypeError`` for ``np.asarray(value)`` failing with ``error``: by name, if ``value`` has a ``dtype``.

    A torch tensor of a dtype NumPy has no equal of (bfloat16, float8) cannot become an
    ndarray; torch's own message, "Got unsupported ScalarType BFloat16", names neither the
    argument nor the way out. Found by the tensor's ``dtype`` attribute, so torch is never imported.
    """
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return error
    return TypeError(
        f"{name} is a {dtype} {type(value).__name__}, which NumPy cannot hold; convert it to a dtype NumPy "
        f"has first, e.g. {name}.float()"
    )


def real_array(name, value):
    """Return ``value`` as a floating-point ndarray (integers become float64); see :func:`number_array`."""
    array = number_array(name, value)
    return array.astype(np.float64) if array.dtype.kind in "iu" else array


def compute_dtype(*arrays):
    """The dtype to compute in, and the dtype to return (None: the same).

    float16 is computed in float32 and returned as float16: its largest value, 65504, is
    exceeded by ``exp(11.1)``, and its 11-bit mantissa loses a sum of many weights.
    """
    dtype = np.result_type(*arrays)
    if dtype == np.float16:
        return np.dtype(np.float32), np.dtype(np.float16)
    return dtype, None


def finite(name, array):
    """Raise ``ValueError`` if ``array`` holds NaN or +-inf; return it unchanged."""
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(f"{name} must be finite; found {array[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    return array


def ndim(name, array, expected, layout):
    """Raise ``ValueError`` unless ``array.ndim == expected``; ``layout`` names the axes."""
    if array.ndim != expected:
        raise ValueError(f"{name} must be {expected}-D with shape {layout}; got shape {array.shape}")


MASK_LAYOUTS = (
    "a mask is boolean (True = this query may attend to this key) with shape (seq_q, seq_k), or "
    "(batch or 1, num_heads or 1, seq_q or 1, seq_k); padding_mask(lengths, seq_len) gives (batch, 1, 1, seq_k)"
)


def mask_input(value):
    """``value`` as an ndarray; a masked array is refused (``np.asarray`` would drop its mask)."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            "mask must be a plain boolean ndarray, not a masked array: its mask would be dropped and the hidden "
            "entries used as they are. Pass mask.filled(False) to forbid the hidden entries"
        )
    return np.asarray(value)


def mask_array(value, scores_shape):
    """Check a boolean attention mask against the scores' shape; return it as an array (or None).

    Only two layouts are accepted: 2-D ``(seq_q, seq_k)``, or one axis per axis of the
    scores, each of the same size or 1 (the key axis must match). Anything else is refused,
    because NumPy would broadcast it against the wrong axes whenever sizes happen to
    coincide: a ``(batch, 1, seq_k)`` mask (the Annotated Transformer's layout) would put
    batch where the heads are.
    """
    if value is None:
        return None
    array = mask_input(value)
    if array.dtype != np.bool_:
        raise TypeError(
            f"mask must be a boolean array (True = this query may attend to this key); got dtype {array.dtype}. "
            f"Build it with a comparison, e.g. `positions[None, :] < lengths[:, None]`"
        )
    scores_shape = tuple(scores_shape)
    if array.ndim == 2 and len(scores_shape) >= 2:
        expected = scores_shape[-2:]
    elif array.ndim == len(scores_shape):
        expected = scores_shape
    else:
        expected = None
    fits = expected is not None and all(
        size in (1, want) if position < len(expected) - 1 else size == want
        for position, (size, want) in enumerate(zip(array.shape, expected, strict=True))
    )
    if not fits:
        raise ValueError(f"mask of shape {array.shape} does not fit scores of shape {scores_shape}: {MASK_LAYOUTS}")
    return array


def wider_dtype_hint(dtype):
    """``" or compute in float64"``, naming a wider dtype where one exists (none beyond float64's range)."""
    wider = {2: "float32", 4: "float64"}.get(np.dtype(dtype).itemsize)
    return "" if wider is None else f" or compute in {wider}"


def overflow_error(name, dtype, what="an intermediate value (a score q.k/sqrt(d_k) or a product)"):
    """The one overflow message: ``FloatingPointError`` naming the function, the dtype and the way out."""
    dtype = np.dtype(dtype)
    return FloatingPointError(
        f"{name} overflowed {dtype}: the inputs are finite, but {what} went beyond "
        f"{float(np.finfo(dtype).max):.3g}. Scale the inputs down{wider_dtype_hint(dtype)}."
    )


def learning_rate(lr):
    """``lr`` as a float, or raise unless it is a finite number > 0 (a negative step climbs the loss)."""
    lr = real_number("lr", lr, "a finite float > 0")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite float > 0; got {lr}")
    return lr


def float_dtype(dtype):
    """``dtype`` as float32 or float64, or raise."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64; got {dtype!r}") from None
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64; got {dtype}")
    return dtype
