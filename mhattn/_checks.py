"""Argument checks for the whole package, kept out of the teaching code.

Every public function of the teaching path carries one decorator line,
``@checked(some_args)``. The decorator validates the arguments *once*, at the package's
boundary, so that a beginner's mistake ends in a ``ValueError`` or ``TypeError`` naming the
argument, what was expected and what arrived, never in NumPy's broadcasting message deep
inside a matmul. What it does, in order:

1. ``some_args(**arguments)`` checks and normalises the arguments (lists become arrays,
   integers become float64, float16 becomes float32) and says in which dtype the result
   goes back (float16 in, float16 out: computed in float32, as PyTorch does on the CPU);
2. the function runs, with NumPy's floating-point warnings silenced, because
3. the result is checked instead: finite inputs that give a non-finite result overflowed
   (scores beyond float32's 3.4e38, say), and that is a ``FloatingPointError`` saying so,
   never a silent NaN.

A layer of the chapter calling another (``softmax`` inside attention, ``split_heads``
inside the module, the engine's tiles) skips all three steps: its arguments were made by a
layer that was itself checked. Everything else is checked, because its arguments come from
a caller: user code, and the package's public objects built on the layers (the model, the
trainer, the explorer), whose inputs (tokens, a checkpoint's weights) arrive from outside.
Those objects also check at their own door, so their errors name their own arguments. The
rule reads the calling module's name, never state, so threads and user code that runs
inside a call (a subclass's hook, a cache) cannot see or change it. One more duty: if a
call that extended a KV cache fails (an overflow, a KeyboardInterrupt), the cache is put
back as it was, so a retry does not cache twice.
"""

import functools
import inspect
import math
import numbers
import sys

import numpy as np

_PACKAGE = __name__.split(".")[0]  # "mhattn"
_LAYERS = frozenset(  # the chapter's layers: their calls to each other are trusted
    f"{_PACKAGE}.{name}" for name in ("softmax", "attention", "heads", "masks", "multihead", "grad", "positions")
)
_ENGINE = f"{_PACKAGE}.engine."  # the fast layers: trusted too


def _trusted(module_name):
    """Is a call from the module ``module_name`` one layer calling another (no checks needed)?"""
    return module_name in _LAYERS or module_name.startswith(_ENGINE)


def checked(check_arguments, *, results_finite=True):
    """Decorator: validate with ``check_arguments``, run, then check the result for overflow.

    ``check_arguments`` takes the function's arguments by name and returns
    ``(arguments, result_dtype)``: the normalised arguments, and the dtype to cast array
    results to (None to leave them as computed). ``results_finite=False`` skips the overflow
    check, for functions that only move numbers around (:func:`mhattn.split_heads`).
    """

    def decorate(function):
        bind = _binder(function)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if _trusted(sys._getframe(1).f_globals.get("__name__", "")):  # one layer calling another
                return function(*args, **kwargs)
            arguments, result_dtype = check_arguments(**bind(args, kwargs))
            cache = arguments.get("kv_cache")
            cached = None if cache is None else len(cache)
            try:
                with np.errstate(all="ignore"):  # overflow is reported below, with a clear message
                    return _finish(function.__qualname__, function(**arguments), result_dtype, results_finite)
            except BaseException:
                if cache is not None:
                    cache.truncate(cached)  # forget this failed step's keys and values
                raise

        return wrapper

    return decorate


def _binder(function):
    """A fast ``inspect.Signature.bind`` for ``function``: ``bind(args, kwargs)`` -> every argument by name.

    The common call (known names, nothing missing) costs a dict update instead of the ~5 us
    of ``Signature.bind``; anything else goes through ``Signature.bind`` for its exact message.
    """
    signature = inspect.signature(function)
    parameters = signature.parameters.values()
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
    names = set(signature.parameters)

    def bind(args, kwargs):
        arguments = dict(zip(positional, args, strict=False))  # fewer args than names: the rest by keyword
        if len(args) <= len(positional) and names.issuperset(kwargs) and arguments.keys().isdisjoint(kwargs):
            arguments = defaults | arguments | kwargs
            if len(arguments) == len(names):
                return arguments
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{function.__qualname__}(): {error}") from None
        bound.apply_defaults()
        return bound.arguments

    return bind


def _finish(name, result, result_dtype, results_finite):
    """Raise if an array in ``result`` is not finite; cast arrays to ``result_dtype``."""
    items = result if isinstance(result, tuple) else (result,)
    if result_dtype is not None:  # cast first: a float32 result beyond 65504 is inf in float16
        items = tuple(item.astype(result_dtype) if isinstance(item, np.ndarray) else item for item in items)
    for item in items:
        if results_finite and isinstance(item, np.ndarray) and item.dtype.kind == "f" and not np.isfinite(item).all():
            info = np.finfo(item.dtype)
            raise FloatingPointError(
                f"{name} overflowed {item.dtype}: the inputs are finite, but an intermediate value (a score "
                f"q.k/sqrt(d_k) or a product) went beyond {float(info.max):.3g}. Scale the inputs down"
                f"{wider_dtype_hint(item.dtype)}."
            )
    return items if isinstance(result, tuple) else items[0]


def wider_dtype_hint(dtype):
    """``" or compute in float64"``, naming a wider dtype where one exists (none beyond float64's range)."""
    wider = {2: "float32", 4: "float64"}.get(np.dtype(dtype).itemsize)
    return "" if wider is None else f" or compute in {wider}"


# --- single values ----------------------------------------------------------------------


def positive_int(name, value):
    """Return ``value`` as an ``int``, or raise if it is not a positive integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int; got {value!r} of type {type(value).__name__}")
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
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"seed must be an int in [0, 2**32 - 1]; got {value!r} of type {type(value).__name__}")
    if not 0 <= value < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32 - 1]; got {value}")
    return int(value)


def axis_index(value, ndim, shape):
    """Return ``value`` as an axis of an array of ``ndim`` axes, or raise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"axis must be an int; got {value!r} of type {type(value).__name__}")
    if not -ndim <= value < ndim:
        raise ValueError(f"axis must be in [-{ndim}, {ndim - 1}] for x of shape {shape}; got {value}")
    return int(value)


# --- arrays -----------------------------------------------------------------------------


def real_array(name, value):
    """Return ``value`` as a floating-point ndarray (integers become float64).

    Raises ``TypeError`` for booleans, complex numbers, strings and objects, and
    ``ValueError`` for ragged nested lists.
    """
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} must be a rectangular array of numbers; got a ragged nested sequence") from None
    if array.dtype.kind in "iu":
        return array.astype(np.float64)
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must hold real numbers; got an array of dtype {array.dtype}")
    return array


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
    array = np.asarray(value)
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


# --- the teaching functions' arguments ------------------------------------------------------


def softmax_args(x, axis):
    """Arguments of :func:`mhattn.softmax`."""
    x = real_array("x", x)
    if x.ndim == 0:
        raise ValueError(f"x must have at least one axis (the scores to normalise); got a scalar {x}. Try [x]")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("x must not contain NaN or +inf; -inf is allowed (it means probability 0)")
    dtype, result_dtype = compute_dtype(x)
    return {"x": x.astype(dtype, copy=False), "axis": axis_index(axis, x.ndim, x.shape)}, result_dtype


def attention_args(Q, K, V, mask, dropout_p, rng):
    """Arguments of :func:`mhattn.scaled_dot_product_attention`."""
    Q, K, V = (real_array(name, a) for name, a in (("Q", Q), ("K", K), ("V", V)))
    for name, array in (("Q", Q), ("K", K), ("V", V)):
        if array.ndim < 2:
            raise ValueError(f"{name} must have shape (..., seq_len, depth); got shape {array.shape}")
        finite(name, array)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must have the same depth d_k (last axis); got Q {Q.shape} and K {K.shape}")
    if Q.shape[-1] == 0:
        raise ValueError(f"Q and K must have depth d_k >= 1 (last axis), to divide by sqrt(d_k); got Q {Q.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same length seq_k (axis -2); got K {K.shape} and V {V.shape}")
    try:
        leading = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) axes of Q, K and V must broadcast; got Q {Q.shape}, K {K.shape}, V {V.shape}"
        ) from None
    dtype, result_dtype = compute_dtype(Q, K, V)
    mask = mask_array(mask, leading + (Q.shape[-2], K.shape[-2]))
    dropout_p, rng = dropout(dropout_p, rng)
    arrays = {name: a.astype(dtype, copy=False) for name, a in (("Q", Q), ("K", K), ("V", V))}
    scores_fit("scaled_dot_product_attention", arrays["Q"], arrays["K"], mask)
    return arrays | {"mask": mask, "dropout_p": dropout_p, "rng": rng}, result_dtype


def _may_overflow(Q, K):
    """Could some ``q . k / sqrt(d_k)`` overflow? Cauchy-Schwarz: ``|q . k| <= d_k max|q| max|k|``."""
    if Q.size == 0 or K.size == 0:
        return False
    bound = math.sqrt(Q.shape[-1]) * float(np.abs(Q).max()) * float(np.abs(K).max())
    return not bound < float(np.finfo(Q.dtype).max) / 2


def scores_fit(name, Q, K, mask):
    """Raise ``FloatingPointError`` if a score a query may attend to overflows ``Q``'s dtype.

    A score that overflows to ``+inf`` shows up as NaN in the result, which the decorator
    reports; one that overflows to ``-inf`` would not: a row whose every allowed score is
    ``-inf`` looks fully masked, and would silently get zeros. So when the bound says it
    could happen (inputs beyond about 1e19 in float32), the scores are computed here first.
    """
    if not _may_overflow(Q, K):
        return
    with np.errstate(all="ignore"):
        scores = (Q / np.sqrt(Q.dtype.type(Q.shape[-1]))) @ K.swapaxes(-1, -2)  # as the teaching path computes them
    overflowed = ~np.isfinite(scores) if mask is None else ~np.isfinite(scores) & mask
    if overflowed.any():
        raise FloatingPointError(
            f"{name} overflowed {Q.dtype}: the inputs are finite, but a score q.k/sqrt(d_k) went beyond "
            f"{float(np.finfo(Q.dtype).max):.3g}. Scale the inputs down{wider_dtype_hint(Q.dtype)}."
        )


def dropout(dropout_p, rng):
    """Check ``dropout_p`` in [0, 1) and ``rng``; return ``(dropout_p, rng)``."""
    if isinstance(dropout_p, (bool, np.bool_)) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(f"dropout_p must be a float in [0, 1); got {dropout_p!r} of type {type(dropout_p).__name__}")
    if not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must be a float in [0, 1); got {dropout_p}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)) or None; got {rng!r}")
    if dropout_p > 0 and rng is None:
        rng = np.random.default_rng()
    return float(dropout_p), rng


def moves_numbers(check_arguments):
    """:func:`checked` for functions that only move numbers around: no overflow check on the result."""
    return checked(check_arguments, results_finite=False)


def split_heads_args(x, num_heads):
    """Arguments of :func:`mhattn.split_heads`."""
    num_heads = positive_int("num_heads", num_heads)
    x = np.asarray(x)
    ndim("x", x, 3, "(batch, seq_len, d_model)")
    if x.shape[-1] % num_heads:
        raise ValueError(f"num_heads must divide d_model = {x.shape[-1]}; got num_heads = {num_heads}")
    return {"x": x, "num_heads": num_heads}, None


def combine_heads_args(x):
    """Arguments of :func:`mhattn.combine_heads`."""
    x = np.asarray(x)
    ndim("x", x, 4, "(batch, num_heads, seq_len, d_k)")
    return {"x": x}, None


# The module's checks live in their own file; every name stays reachable as _checks.<name>.
from ._checks_module import forward_args, head_counts, weight  # noqa: E402, F401
