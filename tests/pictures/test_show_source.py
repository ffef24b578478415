"""show_source: a listing shows the plain code a notebook teaches, never the door around it."""

import importlib.util
import sys
import textwrap

import pytest

import mhattn
from mhattn.checks.door import door
from mhattn.pictures import show_source
from mhattn.pictures.source import without_door_decorators

pytest.importorskip("IPython")

MODULE = '''
from mhattn.checks.door import checked, moves_numbers


def plain_args(x):
    return {"x": x}, None


def twice(x):
    """Two of x."""
    return 2 * x


class Scaler:
    """Scales."""

    @checked(plain_args)
    def scale(self, x):
        """x, scaled."""
        return 3 * x

    @moves_numbers(
        plain_args,
    )  # a decorator over three lines
    def move(self, x):
        return x

    @staticmethod
    def kept(x):
        return x
'''


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """A small module with a plain function and a class whose methods carry doors."""
    path = tmp_path_factory.mktemp("shown") / "shown_module.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("shown_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["shown_module"] = module  # where inspect finds a class's file
    spec.loader.exec_module(module)
    yield module
    del sys.modules["shown_module"]


def test_show_source_renders_the_packages_own_code_as_a_python_block():
    shown = show_source(mhattn.softmax).data
    assert shown.startswith("```python\ndef softmax(x, axis=-1):")
    assert shown.endswith("```")
    assert "def softmax_args" not in shown  # only the function asked for, not its checks
    assert "exps = np.exp(x - x_max)" in shown


def test_a_door_shows_the_plain_function_behind_it(shown):
    listing = show_source(door(shown.twice, shown.plain_args)).data
    assert listing == "```python\ndef twice(x):\n    return 2 * x\n```"
    assert "checked_call" not in listing


def test_a_method_is_shown_without_its_checked_decorator(shown):
    # a method keeps its indentation, as the class shows it
    assert show_source(shown.Scaler.scale).data == "```python\n    def scale(self, x):\n        return 3 * x\n```"
    assert show_source(shown.Scaler.move).data == "```python\n    def move(self, x):\n        return x\n```"


def test_a_class_is_shown_without_the_door_decorators_of_its_methods_but_with_the_others(shown):
    listing = show_source(shown.Scaler).data
    assert "@checked" not in listing and "@moves_numbers" not in listing and "plain_args" not in listing
    assert "    @staticmethod\n    def kept(x):" in listing
    assert "    def scale(self, x):\n        return 3 * x" in listing


def test_docstrings_come_back_when_asked_for(shown):
    assert '"""x, scaled."""' in show_source(shown.Scaler.scale, docstring=True).data


def test_without_door_decorators_leaves_other_code_alone():
    source = textwrap.dedent('''
        @functools.cache
        @checks.checked(a)
        def f(x):
            return checked(x)
    ''')
    assert without_door_decorators(source) == source.replace("@checks.checked(a)\n", "")


@pytest.mark.parametrize(("arguments", "error", "words"), [
    ({"obj": 3}, TypeError, "obj must be a function, class or method with Python source"),
    ({"obj": len}, TypeError, "obj must be a function"),
    ({"obj": mhattn.softmax, "docstring": "yes"}, TypeError, "docstring must be True or False"),
])
def test_show_source_names_a_bad_argument(arguments, error, words):
    with pytest.raises(error, match=words):
        show_source(**arguments)
