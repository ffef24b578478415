"""The one door: check a public call's arguments, run the plain code, check its result.

A door is built from the plain function and the function that checks its arguments:
``door(function, check_arguments)``. Free functions get theirs where the package shows them
(``mhattn/__init__.py`` and each public subpackage's ``__init__``), so that the plain function,
in its own module, is what the package calls inside; a public class's methods carry theirs
as a decorator, ``@checked(check_arguments)``, the same door. What a door does, in order:

1. ``check_arguments(**arguments)`` checks and normalises the arguments (lists become arrays,
   integers float64, float16 float32) and says in which dtype the result goes back
   (float16 in, float16 out: computed in float32, as PyTorch does on the CPU); it may add a
   context manager that the call runs inside (a KV cache that undoes a failed step);
2. the plain function runs, with NumPy's floating-point warnings silenced, because
3. the result is checked instead: finite inputs that give a non-finite result overflowed,
   and that is a ``FloatingPointError`` saying so, never a silent NaN.

Every call through a door is checked: no door asks who is calling.
"""

import functools
import inspect

import numpy as np

from .values import overflow_error


def door(function, check_arguments, *, results_finite=True, moved=None):
    """``function`` behind a door: ``check_arguments``, then ``function``, then its result checked.

    ``check_arguments`` takes the function's arguments by name and returns
    ``(arguments, result_dtype)``: the normalised arguments, and the dtype to cast array
    results to (None to leave them as computed); or ``(arguments, result_dtype, guard)``, with
    ``guard`` a context manager the call runs inside (None for none); or ``(arguments,
    result_dtype, guard, after)``, with ``after(result)`` giving what the caller receives (a
    ``backward`` function returned behind a door of its own, say). ``results_finite=False``
    skips the overflow check, for functions that only move numbers around
    (:func:`mhattn.split_heads`). ``moved`` maps keyword arguments that the function no
    longer takes to a sentence saying where they went, raised as the ``TypeError``. The plain
    function stays reachable as ``__wrapped__`` (what :func:`mhattn.pictures.show_source` shows).
    """
    bind = _binder(function, moved or {})
    fewest, most, tail = _positional(function, check_arguments)
    name = function.__qualname__

    @functools.wraps(function)
    def checked_call(*args, **kwargs):
        if kwargs or not fewest <= len(args) <= most:
            checked = check_arguments(**bind(args, kwargs))
        elif len(args) == most:  # the common call: the check takes the arguments in the function's order
            checked = check_arguments(*args)
        else:
            checked = check_arguments(*args, *tail[len(args) - fewest:])
        if len(checked) == 4:
            arguments, result_dtype, guard, after = checked
        elif len(checked) == 2:
            (arguments, result_dtype), guard, after = checked, None, None
        else:
            (arguments, result_dtype, guard), after = checked, None
        if guard is None:
            result = _quietly(function, arguments, name, result_dtype, results_finite)
        else:
            with guard:
                result = _quietly(function, arguments, name, result_dtype, results_finite)
        return result if after is None else after(result)

    checked_call.__door__ = check_arguments  # what the door checks (the door test reads it)
    return checked_call


def checked(check_arguments, *, results_finite=True, moved=None):
    """:func:`door` as a decorator, for the methods of a public class."""
    return functools.partial(door, check_arguments=check_arguments, results_finite=results_finite, moved=moved)


def moves_numbers(check_arguments):
    """:func:`checked` for functions that only move numbers around: no overflow check on the result."""
    return checked(check_arguments, results_finite=False)


def _positional(function, check_arguments):
    """``(fewest, most, defaults)``: how many positional arguments a call may give for the fast path.

    When ``check_arguments`` names exactly the function's parameters, in the same order, and
    they are all positional-or-keyword, a call without keywords can hand its positional
    arguments to the check as they are (the missing ones from ``defaults``), without building
    a dict first. Otherwise ``(1, 0, ())``: no call takes the fast path.
    """
    never = (1, 0, ())
    try:
        parameters = list(inspect.signature(function).parameters.values())
        check_names = list(inspect.signature(check_arguments).parameters)
    except (TypeError, ValueError):
        return never
    if [p.name for p in parameters] != check_names or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in parameters):
        return never
    defaults = tuple(p.default for p in parameters if p.default is not p.empty)
    return len(parameters) - len(defaults), len(parameters), defaults


def _binder(function, moved):
    """A fast ``inspect.Signature.bind`` for ``function``: ``bind(args, kwargs)`` -> every argument by name.

    The common call (known names, nothing missing) costs a dict update instead of the ~5 us
    of ``Signature.bind``; anything else goes through ``Signature.bind`` for its exact message.
    A ``**extra`` parameter reaches the check as one dict named ``extra``; the check returns
    those arguments spread out, as the function takes them.
    """
    signature = inspect.signature(function)
    parameters = signature.parameters.values()
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
    names = set(signature.parameters)
    if any(p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in parameters):
        raise TypeError(f"a door needs named parameters only; {function.__qualname__} has {signature}")

    def bind(args, kwargs):
        arguments = dict(zip(positional, args, strict=False))  # fewer args than names: the rest by keyword
        if len(args) <= len(positional) and names.issuperset(kwargs) and arguments.keys().isdisjoint(kwargs):
            arguments = defaults | arguments | kwargs
            if len(arguments) == len(names):
                return arguments
        gone = [name for name in kwargs if name in moved and name not in names]
        if gone:
            raise TypeError(f"{function.__qualname__}() takes no {gone[0]}=: {moved[gone[0]]}")
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{function.__qualname__}(): {error}") from None
        bound.apply_defaults()
        return bound.arguments

    return bind


@np.errstate(all="ignore")  # overflow is reported by _finish, with a clear message
def _quietly(function, arguments, name, result_dtype, results_finite):
    """``function(**arguments)`` with NumPy's floating-point warnings silenced, then :func:`_finish`."""
    result = function(**arguments)
    if result_dtype is None and not results_finite:
        return result
    return _finish(name, result, result_dtype, results_finite)


@np.errstate(all="ignore")  # a cast to float16 that overflows is reported, not warned of
def finish(name, result, *, result_dtype=None):
    """The door's check of a result, for a check of arguments that hands it back as its ``after``.

    Raise if an array in ``result`` is not finite; cast arrays to ``result_dtype``.
    """
    return _finish(name, result, result_dtype, True)


def _finish(name, result, result_dtype, results_finite):
    """Raise if an array in ``result`` is not finite; cast arrays to ``result_dtype``.

    ``result`` is an array, a tuple of results, or a dict of arrays (gradients by name).
    """
    if isinstance(result, dict):
        return dict(zip(result, _finish(name, tuple(result.values()), result_dtype, results_finite), strict=True))
    single = not isinstance(result, tuple)
    items = (result,) if single else result
    if result_dtype is not None and any(isinstance(item, np.ndarray) and item.dtype != result_dtype for item in items):
        # cast first: a float32 result beyond 65504 is inf in float16
        items = tuple(item.astype(result_dtype, copy=False) if isinstance(item, np.ndarray) else item
                      for item in items)
    if results_finite:
        for item in items:
            if isinstance(item, np.ndarray) and item.dtype.kind == "f" and not np.isfinite(item).all():
                raise overflow_error(name, item.dtype)
    return items[0] if single else items
