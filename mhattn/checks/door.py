"""The one decorator, :func:`checked`: validate a public function's arguments, run it, check its result.

Trust follows the folder: a call from a module inside the teaching path (``mhattn.core``) or
the engine (``mhattn.engine``) skips the checks, because its arguments were made by a layer
that was itself checked. Every other caller (user code, and the package's own learning code,
pictures and explorer, whose inputs arrive from outside) is checked.
"""

import contextlib
import functools
import inspect
import sys

import numpy as np

from .values import overflow_error

_PACKAGE = __name__.split(".")[0]  # "mhattn"
TRUSTED_LAYERS = (f"{_PACKAGE}.core", f"{_PACKAGE}.engine")  #: packages whose calls to each other skip the checks


def trusted(module_name):
    """Is a call from the module ``module_name`` one layer calling another (no checks needed)?

    True for every module inside :data:`TRUSTED_LAYERS` (the package itself or any module under
    it), whatever its file is called: a module moved within a layer keeps its trust.
    """
    return any(module_name == layer or module_name.startswith(layer + ".") for layer in TRUSTED_LAYERS)


def checked(check_arguments, *, results_finite=True):
    """Decorator: validate with ``check_arguments``, run, then check the result for overflow.

    ``check_arguments`` takes the function's arguments by name and returns
    ``(arguments, result_dtype)``: the normalised arguments, and the dtype to cast array
    results to (None to leave them as computed); or ``(arguments, result_dtype, guard)``,
    with ``guard`` a context manager the call runs inside (a KV cache's
    :meth:`~mhattn.KVCache.undo_on_error`). ``results_finite=False`` skips the overflow
    check, for functions that only move numbers around (:func:`mhattn.split_heads`).
    """

    def decorate(function):
        bind = _binder(function)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if trusted(sys._getframe(1).f_globals.get("__name__", "")):  # one layer calling another
                return function(*args, **kwargs)
            arguments, result_dtype, *guard = check_arguments(**bind(args, kwargs))
            with guard[0] if guard else contextlib.nullcontext():  # e.g. a KV cache that undoes a failed step
                with np.errstate(all="ignore"):  # overflow is reported below, with a clear message
                    return _finish(function.__qualname__, function(**arguments), result_dtype, results_finite)

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
            raise overflow_error(name, item.dtype)
    return items if isinstance(result, tuple) else items[0]


def moves_numbers(check_arguments):
    """:func:`checked` for functions that only move numbers around: no overflow check on the result."""
    return checked(check_arguments, results_finite=False)
