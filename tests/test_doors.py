"""Every door of the public surface, found by the test itself and knocked on with bad arguments.

The surface is the ``__all__`` of :mod:`mhattn` and of its public subpackages. For each callable
in it (functions, classes, and the public methods of the classes), the test

1. finds a good call in the callable's own documentation: its ``Examples`` (or its class's)
   run as a doctest, with the door replaced by a recorder that keeps the arguments of the
   first call;
2. spoils one argument at a time, with bad values made from the good one by its type (an
   array gets text, NaN, inf and a masked twin; an int gets ``True``, ``1.5`` and ``"2"``; a
   flag gets ``"yes"``, ``1`` and None; ...) and with the extra attacks that the argument's
   *name* calls for (:data:`ATTACKS_BY_NAME`: a ``seed`` must lie in ``[0, 2**32)``, a
   ``num_heads`` must divide ``d_model``, ...); what the *other* arguments rule out (a ``K``
   with another depth than ``Q``) is attacked in the test file of that callable's module;
3. asserts that the door refuses each with a ``TypeError`` or ``ValueError`` whose message
   names the argument, and that the refused call changed nothing: the arguments and, for a
   method, the object are as they were.

Every example in the surface's docstrings also runs as written (:func:`test_every_example_runs_as_written`).

A surface whose doors need a library of the chapter extra (:data:`OPTIONAL`) that is not installed
is skipped on its own, with the reason; the other surfaces are attacked with NumPy alone.

A new public callable is attacked with no edit here: it needs an example in its docstring,
which a reader needs anyway.
"""

import contextlib
import doctest
import importlib
import importlib.util
import inspect

import numpy as np
import pytest

SURFACES = ("mhattn", "mhattn.engine", "mhattn.learn", "mhattn.llm", "mhattn.pictures", "mhattn.explorer")
# what their doors import when used (mhattn.llm: its tokenizer), all from the chapter extra
OPTIONAL = {"mhattn.llm": ("tokenizers",), "mhattn.pictures": ("matplotlib", "IPython"),
            "mhattn.explorer": ("ipywidgets", "matplotlib")}

# --- what is wrong for an argument of a given name, whatever the function ------------------

COUNT = [True, 1.5, 0, -1, "2"]  # a positive int
COUNT_OR_ZERO = [True, 1.5, -1, "2"]  # an int >= 0
INDEX = [True, 1.5, -1, 10**6]  # an index: no negative index counts from the end here
FLAG = ["yes", 1, None]
BASE = [True, float("nan"), float("inf"), 0.0, -1.0, "x"]  # a positive, finite float
SEED = [True, -1, 2**32, 1.5]
DIVISOR = COUNT + [10**6 + 3]  # a count that must divide another: d_model by heads, heads by key/value heads
LABELS = [1, [-1], [1.5], [True], [10**6]]  # a list of heads: an int, a negative, a float, a flag, past the last
ATTACKS_BY_NAME = {
    **dict.fromkeys(("d_model", "num_layers", "batch_size", "steps", "num_sequences", "per_cell", "half_len", "vocab",
                     "max_len", "d_k", "block_size", "block_q", "block_k", "draws", "rank", "threads",
                     "eval_every", "number"), COUNT),
    **dict.fromkeys(("num_heads", "num_kv_heads", "group"), DIVISOR),
    **dict.fromkeys(("seq_len", "num_tokens"), COUNT_OR_ZERO),
    **dict.fromkeys(("head", "max_offset"), INDEX),
    # a layer's range is the model's: the focused tests attack layers beyond it where a model is given
    **dict.fromkeys(("layer", "layer0", "layer1"), INDEX[:3]),
    **dict.fromkeys(("base", "rope_base", "lr"), BASE),
    **dict.fromkeys(("need_weights", "use_cache", "is_causal", "return_lse", "batch_first", "at_start", "progress",
                     "use_positions", "background", "docstring", "trained"), FLAG),
    "seed": SEED,
    "rope": ["yes", 1, None],
    "mask": [np.ones((2, 2)), np.ones((1, 1, 1, 1, 7), bool)],  # not boolean; a shape nothing fits
    "layout": [None, "TORCH", "numpy"],
    "model": [None, {}, 3],
    "rng": [0, np.random.RandomState(0)],
    "temperature": [-1.0, "1", float("nan"), float("inf"), True],
    "dropout_p": [True, 1.0, -0.1, "0.1"],
    "axis": [True, 1.5, 10**6],
    "dtype": ["int", np.int64, "no such dtype"],
    "kind": ["k", 1, None, "QK"],
    "work": [None, 3],
    # token ids, targets and logits: an axis too many for any of them
    "tokens": [np.zeros((1, 1, 1, 2), int)],
    "targets": [np.array([-1]), np.zeros((1, 1, 1, 1, 2), int)],
    "logits": [np.zeros((1, 1, 1, 1, 2))],
    "prompt": [np.array(["a", "b"]), np.array([0.5, 1.5]), np.array([-1, 0]), np.array([10**6]),
               np.zeros((1, 1, 2), int), []],
    # where a repeat sits, and which tokens score it
    **dict.fromkeys(("offset", "gap"), [True, -1, 1.5]),
    "early": [0],  # token 0 is predicted by nothing
    "late": [0, -1],
    "lengths": [[True], [2.5]],
    "gaps": [[], [-1], [1.5], [True], 3],
    # heads and layers named in lists
    "heads": LABELS,
    "ablate": [[(0, 10**6)], [(10**6, 0)], [(0,)], [(0, -1)], 3],
    "key_through": [(0,), (-1, 0), (0, 10**6), "ab"],
    "result": [None, {}, [1]],
    # the optimiser and its schedule
    "params": [{}, [np.zeros(3)], {"a": [0.0]}],
    **dict.fromkeys(("beta1", "beta2"), [True, 1.0, -0.1, "x"]),
    "eps": [True, 0.0, -1.0, float("nan")],
    "grads": [{}, [np.ones(3)], None],
    "step": [True, 0, 1.5, "1"],
    "warmup": [True, -1, 1.5],
    "final_fraction": [True, float("nan"), -0.1, 1.5, "x"],
    # the layer's optional inputs
    "kv_cache": [[], "cache"],
    "context": [np.full((1, 2, 4), "a"), np.ma.masked_array(np.ones((1, 2, 4)))],
    # the explorer's and the exercises' settings
    "state": [{}, None],
    "text": [1, ["a"], "a1"],
    "crash_hint": ["", None, 3],
}


def attacks_made_from(good):
    """Bad values made from a good one by its type: each is wrong for any argument that ``good`` fits."""
    if isinstance(good, np.ndarray) and good.dtype.kind in "fiub":
        bad = [np.full(good.shape, "a"), np.ma.masked_array(good)]
        if good.dtype.kind == "f" and good.size:
            nan, inf = good.copy(), good.copy()
            nan.flat[0], inf.flat[-1] = np.nan, np.inf
            bad += [nan, inf]
        elif good.dtype.kind in "iu" and good.size:
            bad.append(good + 0.5)  # ids, counts and positions are whole numbers
        elif good.dtype.kind == "b":
            bad.append(good.astype(np.int64))  # a mask is boolean
        return bad
    if isinstance(good, (bool, np.bool_)):
        return ["yes", 1, None]
    if isinstance(good, (int, np.integer)):
        return [True, 1.5, "2"]
    if isinstance(good, (float, np.floating)):
        return ["x", float("nan")]
    if isinstance(good, np.random.Generator):
        return [0, np.random.RandomState(0)]
    return []


def attacks(name, good):
    """Every bad value for argument ``name`` whose good value is ``good`` (each at most once)."""
    found = []
    for bad in attacks_made_from(good) + ATTACKS_BY_NAME.get(name, []):
        if not any(_same(bad, seen) for seen in found) and not _same(bad, good):
            found.append(bad)
    return found


def _describe(value):
    """A short name for a bad value in a failure message."""
    if isinstance(value, np.ndarray):
        kind = "masked array" if isinstance(value, np.ma.MaskedArray) else "array"
        special = " with NaN" if value.dtype.kind == "f" and np.isnan(value).any() else ""
        special += " with inf" if value.dtype.kind == "f" and np.isinf(value).any() else ""
        return f"{kind} {value.shape} {value.dtype}{special}"
    return repr(value)


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and bool(np.all(a == b))
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return a is b


# --- the surface ---------------------------------------------------------------------------


def _missing(package_name):
    """The optional libraries that the doors of ``package_name`` need and this environment lacks."""
    return [library for library in OPTIONAL.get(package_name, ()) if importlib.util.find_spec(library) is None]


# The surfaces that cannot be attacked here, with what they miss: each is skipped on its own.
UNREACHABLE = {name: missing for name in SURFACES if (missing := _missing(name))}


def _packages():
    for name in SURFACES:
        if name not in UNREACHABLE:
            yield name, importlib.import_module(name)


def cases(names):
    """``names`` in order, then one skipped case for each surface in :data:`UNREACHABLE`, which says why."""
    skipped = [pytest.param(package, marks=pytest.mark.skip(reason=f"{package}'s doors need {', '.join(missing)} "
                                                                   "(the chapter extra)"))
               for package, missing in UNREACHABLE.items()]
    return sorted(names) + skipped


def surface():
    """``{qualified name: (owner, attribute)}`` for every public callable: ``getattr(owner, attribute)`` is it.

    Functions and classes from every ``__all__``; for each class, its own ``__init__`` and
    public methods (an inherited one is attacked on the class that defines it).
    """
    found, seen = {}, set()
    for package_name, package in _packages():
        for name in getattr(package, "__all__", ()):
            obj = getattr(package, name)
            if id(obj) in seen:  # the same class shown by two packages
                continue
            seen.add(id(obj))
            if not inspect.isclass(obj):
                found[f"{package_name}.{name}"] = (package, name)
                continue
            for attribute in vars(obj):  # its own: an inherited method is attacked where it is defined
                if (attribute == "__init__" or not attribute.startswith("_")) and callable(getattr(obj, attribute)):
                    found[f"{package_name}.{name}.{attribute}"] = (obj, attribute)
    return found


def _door_of(owner, attribute):
    """The door itself: the function that checks (unwrapping classmethods)."""
    if not inspect.isclass(owner):
        return getattr(owner, attribute)
    member = inspect.getattr_static(owner, attribute)
    return member.__func__ if isinstance(member, (classmethod, staticmethod)) else member


def _parameters(function):
    plain = inspect.unwrap(function)
    return [p for name, p in inspect.signature(plain).parameters.items() if name not in ("self", "cls")]


SURFACE = surface()
WITH_ARGUMENTS = sorted(name for name, (owner, attribute) in SURFACE.items()
                        if callable(_door_of(owner, attribute)) and _parameters(_door_of(owner, attribute)))


@pytest.mark.parametrize("name", cases(SURFACE))
def test_every_public_callable_with_arguments_is_a_door(name):
    owner, attribute = SURFACE[name]
    member = _door_of(owner, attribute)
    if inspect.isclass(member):  # a class: its __init__ is listed on its own
        return
    assert not _parameters(member) or hasattr(member, "__door__"), (
        f"{name} takes arguments but is not a door: show it as door(plain, check) in its package's __init__, "
        "or decorate the method with @checked(check)"
    )


# --- a good call, from the documentation ---------------------------------------------------


@contextlib.contextmanager
def _replaced(owner, attribute, value):
    saved = inspect.getattr_static(owner, attribute) if inspect.isclass(owner) else getattr(owner, attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        setattr(owner, attribute, saved)


def _needs(name):
    """Skip unless what ``name`` needs is installed: the PyTorch bridges need torch."""
    if name.endswith(("from_torch", "to_torch")):
        pytest.importorskip("torch", reason=f"{name} needs torch")


def _globals(door):
    """The names an example sees: ``mhattn``'s, then its module's own (which win), and ``np``."""
    module = inspect.getmodule(door if inspect.isclass(door) else inspect.unwrap(door))
    return {**vars(importlib.import_module("mhattn")), **vars(module), "np": np}


DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def good_call(name):
    """``(door, arguments)``: the arguments, by name, of the first call that the callable's examples make."""
    owner, attribute = SURFACE[name]
    door = _door_of(owner, attribute)
    calls = []

    def recorder(*args, **kwargs):
        calls.append((args, kwargs))
        return door(*args, **kwargs)

    member = inspect.getattr_static(owner, attribute) if inspect.isclass(owner) else door
    stand_in = classmethod(recorder) if isinstance(member, classmethod) else recorder
    documented = [door] + ([owner] if inspect.isclass(owner) else [])
    globs = _globals(door)
    if not inspect.isclass(owner):
        globs[attribute] = recorder
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
    with _replaced(owner, attribute, stand_in):
        for obj in documented:
            for test in doctest.DocTestFinder(recurse=False).find(obj, name, globs=dict(globs)):
                runner.run(test, out=lambda text: None)
                if calls:
                    args, kwargs = calls[0]
                    arguments = inspect.signature(inspect.unwrap(door)).bind(*args, **kwargs)
                    arguments.apply_defaults()
                    return door, dict(arguments.arguments)
    return door, None


def _snapshot(value, depth=0):
    """What a refused call must leave unchanged: arrays by value, objects by their attributes."""
    if isinstance(value, np.ndarray):
        return ("array", value.copy())
    if isinstance(value, dict):
        return ("dict", {key: _snapshot(item, depth + 1) for key, item in value.items()})
    if isinstance(value, (list, tuple)) and depth < 2:
        return (type(value).__name__, [_snapshot(item, depth + 1) for item in value])
    if depth == 0 and hasattr(value, "__dict__") and not inspect.isclass(value) and not callable(value):
        return ("object", {key: _snapshot(item, depth + 1) for key, item in vars(value).items()})
    return ("same", value)


def _unchanged(before, after):
    kind, content = before
    if kind != after[0]:
        return False
    if kind == "array":
        other = after[1]
        return content.shape == other.shape and content.dtype == other.dtype and np.array_equal(content, other,
                                                                                                  equal_nan=True)
    if kind in ("dict", "object"):
        return content.keys() == after[1].keys() and all(_unchanged(content[k], after[1][k]) for k in content)
    if kind in ("list", "tuple"):
        return len(content) == len(after[1]) and all(_unchanged(a, b) for a, b in zip(content, after[1], strict=True))
    return content is after[1]


# Where a door names the argument otherwise: ``explorer``'s text box is its ``tokens`` setting.
NAMED_AS = {("text", "mhattn.explorer.parse_tokens"): "tokens"}


@pytest.mark.parametrize("name", cases(WITH_ARGUMENTS))
def test_every_bad_argument_is_refused_by_name_and_changes_nothing(name):
    _needs(name)
    door, good = good_call(name)
    assert good is not None, f"{name}: its docstring (or its class's) needs an Examples section that calls it"
    problems = []
    for parameter in _parameters(door):
        argument = parameter.name
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        for bad in attacks(argument, good[argument]):
            before = _snapshot(good)
            try:
                door(**(good | {argument: bad}))
            except (TypeError, ValueError) as error:
                if NAMED_AS.get((argument, name), argument) not in str(error):
                    problems.append(f"{argument}={_describe(bad)}: the message does not name {argument}: {error}")
            except Exception as error:  # noqa: BLE001  (any other exception is the bug being looked for)
                problems.append(f"{argument}={_describe(bad)}: {type(error).__name__}: {error}")
            else:
                problems.append(f"{argument}={_describe(bad)} was accepted")
            if not _unchanged(before, _snapshot(good)):
                problems.append(f"{argument}={_describe(bad)}: the refused call changed its arguments or its object")
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


def documented():
    """``{qualified name: (object, door)}``: every callable of the surface and every class, for its docstring."""
    found = {}
    for name, (owner, attribute) in SURFACE.items():
        door = _door_of(owner, attribute)
        found[name] = (door, door)
        if inspect.isclass(owner):  # the class's own docstring, once
            found.setdefault(name.rsplit(".", 1)[0], (owner, door))
    shown = {id(obj) for obj, _ in found.values()}
    for package_name, package in _packages():  # classes without methods of their own
        for name in package.__all__:
            obj = getattr(package, name)
            if inspect.isclass(obj) and id(obj) not in shown:
                shown.add(id(obj))
                found[f"{package_name}.{name}"] = (obj, obj)
    return found


DOCUMENTED = documented()


@pytest.mark.parametrize("name", cases(DOCUMENTED))
def test_every_example_runs_as_written(name):
    """The examples in each docstring of the surface (functions, classes, methods) print what they say."""
    _needs(name)
    obj, door = DOCUMENTED[name]
    runner, report = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS), []
    for test in doctest.DocTestFinder(recurse=False).find(obj, name, globs=_globals(door)):
        runner.run(test, out=report.append)
    assert not runner.failures, f"{name}: {runner.failures} example(s) failed:\n" + "".join(report)
