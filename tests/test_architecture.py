"""The package's shape: folders are layers, dependencies point one way, every call through the surface is checked.

Every rule reads the source tree itself (``mhattn/**/*.py``), so a module added, moved or
renamed is checked without editing this file, and a layer that disappeared fails instead of
passing on nothing.
"""

import ast
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import mhattn
from mhattn import softmax, split_heads

PACKAGE = Path(mhattn.__file__).parent
LAYERS = ("checks", "core", "engine", "learn", "llm", "pictures", "explorer")
#: what each layer may import from the package (itself always); the top level may import anything
MAY_IMPORT = {
    "checks": set(),
    "core": {"checks"},
    "engine": {"checks", "core"},
    "learn": {"checks", "core", "engine"},
    "llm": {"checks", "core", "engine", "learn"},  # the toy model's measures, applied to a real model's heads
    "pictures": {"checks", "core", "engine"},
    "explorer": {"checks", "core", "engine", "learn", "pictures"},
}


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(name):
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "top"


def imports(name, path):
    """``[(imported module, line, inside a function?, function name)]`` for every import of the package."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target.split(".")[0] == "mhattn":
                    for alias in child.names:  # `from . import grad`: the module mhattn.core.grad

                        full = f"{target}.{alias.name}"
                        module = full if full in MODULES else target
                        found.append((module, child.lineno, function is not None, function))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "mhattn":
                        found.append((alias.name, child.lineno, function is not None, function))
            visit(child, inner)

    visit(tree, None)
    return found


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def test_every_layer_folder_exists_and_holds_modules():
    for layer in LAYERS:
        inside = [name for name in MODULES if layer_of(name) == layer]
        assert len(inside) >= 2, f"mhattn/{layer}/ should hold an __init__ and at least one module; found {inside}"
    top = sorted(name for name in MODULES if layer_of(name) == "top")
    assert top == ["mhattn", "mhattn.train"], f"modules outside every layer folder: {top}"


def test_each_layer_imports_only_the_layers_below_it():
    wrong = []
    for name, found in GRAPH.items():
        layer = layer_of(name)
        if layer == "top":
            continue
        for target, line, _, _ in found:
            other = layer_of(target)
            if other != layer and other not in MAY_IMPORT[layer]:
                wrong.append(f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} ({layer}) imports {target} ({other})")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_no_import_hides_inside_a_function():
    # A module-level __getattr__ (PEP 562) may import a submodule whose import needs an optional
    # dependency; any other import inside a function is how a cycle hides.
    hidden = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} in {function}()"
              for name, found in GRAPH.items() for _, line, inside, function in found
              if inside and function != "__getattr__"]
    assert not hidden, "imports inside functions:\n" + "\n".join(hidden)


def test_there_is_no_import_cycle():
    edges = {name: {target for target, *_ in found if target in MODULES and target != name}
             for name, found in GRAPH.items()}
    state, stack = {}, []

    def walk(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = "done"

    for name in sorted(edges):
        if name not in state:
            walk(name)
    assert len(state) == len(MODULES) > 30  # the walk saw the whole package


def call_from(module, source, **names):
    """Run ``source`` as if written in the module named ``module``; return its ``result``."""
    scope = {"__name__": module} | names
    exec(compile(source, f"<{module}>", "exec"), scope)  # noqa: S102 - a fixed test snippet
    return scope["result"]


SURFACES = ("mhattn", "mhattn.engine", "mhattn.learn", "mhattn.llm", "mhattn.pictures", "mhattn.explorer")


ELSEWHERE = ["mhattn.core.moved_here", "mhattn.engine.moved_here", "user_code"]


@pytest.mark.parametrize("module", sorted(MODULES) + ELSEWHERE)
def test_every_caller_is_checked_wherever_the_call_is_written(module):
    """No door asks who is calling: a list becomes an array for the package's own modules too."""
    result = call_from(module, "result = split_heads([[[1.0, 2.0]]], 2)", split_heads=split_heads)
    np.testing.assert_array_equal(result, [[[[1.0]], [[2.0]]]])


def test_no_module_reads_the_call_stack():
    pattern = re.compile(r"_getframe|inspect\.stack|f_back|currentframe|inspect\.trace|extract_stack")
    readers = [f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
               for path in MODULES.values()
               for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not readers, "the call stack is read:\n" + "\n".join(readers)


def public_methods(cls):
    """``(name, function)`` of every public method of ``cls`` and of its own bases in mhattn, ``__init__`` included."""
    found = []
    for name, _ in inspect.getmembers(cls):
        if name.startswith("_") and name != "__init__":
            continue
        owner = next((base for base in cls.__mro__ if name in vars(base)), None)
        if owner is None or not owner.__module__.startswith("mhattn"):
            continue
        raw = vars(owner)[name]
        function = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
        if callable(function) and not isinstance(function, type):
            found.append((f"{owner.__name__}.{name}", function))
    return found


@pytest.mark.parametrize("surface", SURFACES)
def test_every_name_in_a_surface_is_a_door_or_a_class_whose_public_methods_are(surface):
    package = importlib.import_module(surface)
    assert package.__all__, f"{surface} shows nothing"
    plain = []
    for name in package.__all__:
        value = getattr(package, name)
        if isinstance(value, type):
            plain += [f"{surface}.{name}: {method}" for method, function in public_methods(value)
                      if not hasattr(function, "__door__")]
        elif callable(value) and not hasattr(value, "__door__"):
            plain.append(f"{surface}.{name}")
    assert not plain, "shown without a door:\n" + "\n".join(plain)


def test_the_package_imports_plain_functions_never_a_surface_init():
    wrong = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} imports {target}"
             for name, found in GRAPH.items() if name not in SURFACES
             for target, line, _, _ in found if target in SURFACES]
    assert not wrong, "imports from a surface __init__ (a door) inside the package:\n" + "\n".join(wrong)


def load_as(path, name):
    """Import the file ``path`` under another module name (a copy of it moved elsewhere)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_a_module_moved_within_its_layer_computes_the_same():
    moved = load_as(MODULES["mhattn.core.attention"], "mhattn.core.attention_moved")
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((2, 3, 6, 4)), rng.standard_normal((2, 3, 6, 2))
    mask = rng.random((5, 6)) < 0.7
    expected = mhattn.scaled_dot_product_attention(Q, K, V, mask)
    for got, want in zip(moved.scaled_dot_product_attention(Q, K, V, mask), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="x must not contain NaN"):  # the door still checks a caller
        softmax([np.nan])


def test_the_w_qkv_layout_is_read_through_one_accessor():
    """Only core/projection.py slices or splits W_qkv; everything else asks the module."""
    offenders = []
    for name, path in MODULES.items():
        if name == "mhattn.core.projection":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            target = node.value if isinstance(node, ast.Subscript) else None
            label = getattr(target, "attr", getattr(target, "id", None))
            if label == "W_qkv":
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, "W_qkv sliced by hand:\n" + "\n".join(offenders)
