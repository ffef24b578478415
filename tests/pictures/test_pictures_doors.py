"""The pictures' surface: every public function is its module's plain function behind a door."""

import subprocess
import sys

import numpy as np
import pytest

import mhattn.pictures
from mhattn.pictures import embedding_shift, exercise, exercises, figures, not_yet, save_figure, source


def test_each_public_function_is_the_plain_one_behind_a_door():
    plain = {"embedding_shift_2d": embedding_shift, "exercise": exercises, "not_yet": exercises,
             "save_figure": figures, "show_source": source}
    for name, module in plain.items():
        shown = getattr(mhattn.pictures, name)
        assert shown.__wrapped__ is getattr(module, name), name
        assert shown.__door__.__module__ == "mhattn.checks.pictures", name


def test_importing_the_pictures_loads_no_optional_dependency_until_a_plot_is_asked_for():
    code = ("import sys, mhattn.pictures as p; "
            "print(sorted(m for m in ('matplotlib', 'IPython', 'sklearn') if m in sys.modules)); "
            "plot = p.plot_heads; print('matplotlib' in sys.modules, plot.__door__.__name__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[:2] == ["[]", "True plot_heads_args"]


def test_every_name_of_the_surface_is_there():
    for name in mhattn.pictures.__all__:
        assert hasattr(mhattn.pictures, name), name


@pytest.mark.parametrize(("arguments", "error", "words"), [
    ({"inputs": [[1.0, np.nan], [0.0, 1.0]]}, ValueError, "inputs must be finite"),
    ({"inputs": np.zeros((3, 2)), "outputs": np.zeros((3, 2))}, ValueError, "must not all be the same vector"),
    ({"inputs": [["a", "b"], ["c", "d"]]}, TypeError, "inputs must hold real numbers"),
])
def test_embedding_shift_names_a_bad_argument(arguments, error, words):
    arguments = {"inputs": np.eye(2), "outputs": np.ones((2, 2))} | arguments
    with pytest.raises(error, match=words):
        mhattn.pictures.embedding_shift_2d(**arguments)


@pytest.mark.parametrize(("arguments", "error", "words"), [
    ({"number": 0}, ValueError, "number must be a positive int"),
    ({"crash_hint": ""}, TypeError, "crash_hint must be a non-empty str"),
])
def test_exercise_names_a_bad_argument(arguments, error, words):
    with pytest.raises(error, match=words):
        exercise(**({"number": 1, "crash_hint": "a hint"} | arguments))


def test_not_yet_passes_any_answer_but_the_placeholder():
    answer = np.array([np.nan, 1.0])  # an answer may hold NaN: not_yet does not judge it
    assert not_yet(answer) is answer
    with pytest.raises(exercises.NotYet):
        not_yet(...)


def test_save_figure_names_a_bad_argument(tmp_path):
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        save_figure(None, tmp_path / "a.png")
    with pytest.raises(TypeError, match="path must be a str or a pathlib.Path"):
        save_figure(type("Fig", (), {"savefig": None})(), 3)
    with pytest.raises(ValueError, match='bbox_inches must be None or "tight"'):
        save_figure(type("Fig", (), {"savefig": None})(), tmp_path / "a.png", bbox_inches="loose")
