"""The package's shape: folders are layers, dependencies point one way, trust follows the folder.

Every rule reads the source tree itself (``mhattn/**/*.py``), so a module added, moved or
renamed is checked without editing this file, and a layer that disappeared fails instead of
passing on nothing.
"""

import ast
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import mhattn
from mhattn import checks, softmax, split_heads

PACKAGE = Path(mhattn.__file__).parent
LAYERS = ("checks", "core", "engine", "learn", "pictures", "explorer")
#: what each layer may import from the package (itself always); the top level may import anything
MAY_IMPORT = {
    "checks": set(),
    "core": {"checks"},
    "engine": {"checks", "core"},
    "learn": {"checks", "core", "engine"},
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


TRUSTED = sorted({name for name in MODULES if layer_of(name) in ("core", "engine")})
CHECKED = sorted({name for name in MODULES if layer_of(name) not in ("core", "engine")})


@pytest.mark.parametrize("module", TRUSTED + [f"mhattn.{layer}.moved_here" for layer in ("core", "engine")])
def test_calls_from_the_teaching_path_and_the_engine_are_trusted_wherever_the_file_sits(module):
    assert checks.trusted(module)
    with pytest.raises(AttributeError):  # no check turned the list into an array: the call was trusted
        call_from(module, "result = split_heads([[[1.0, 2.0]]], 2)", split_heads=split_heads)


@pytest.mark.parametrize("module", CHECKED + ["mhattn.corelike", "mhattn.engineer.x", "user_code", "mhattn"])
def test_every_other_caller_is_checked(module):
    assert not checks.trusted(module)
    result = call_from(module, "result = split_heads([[[1.0, 2.0]]], 2)", split_heads=split_heads)
    np.testing.assert_array_equal(result, [[[[1.0]], [[2.0]]]])


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
    assert checks.trusted(moved.__name__)
    with pytest.raises(ValueError, match="x must not contain NaN"):  # its own door still checks a caller
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
