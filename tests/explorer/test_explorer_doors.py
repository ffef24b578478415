"""The explorer's doors: its surface checks every call, a State checks itself, and each error names the setting.

``mhattn.explorer`` shows ``door(plain, check)`` for each free function; the modules keep the
plain code. The checks hold a state against the model that a frame shows (its layers, its
letters, how many tokens it reads).
"""

import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.explorer
from mhattn.explorer import State, compute_frame, frame
from mhattn.explorer.background import LatestWins
from mhattn.learn.model import InductionModel


def _small_model(num_layers=1, vocab=4, max_len=8):
    return InductionModel(num_layers, vocab=vocab, max_len=max_len, d_model=16, num_heads=4)


def test_a_layer_the_model_does_not_have_is_refused():
    with pytest.raises(ValueError, match="layer"):
        compute_frame(State(trained=True, layer=1, tokens="a b a b"), _small_model(1))


def test_tokens_outside_the_models_vocabulary_are_refused_by_name():
    with pytest.raises(ValueError, match="tokens"):
        compute_frame(State(trained=True, layer=0, tokens="a b x"), _small_model(1, vocab=4))
    with pytest.raises(ValueError, match="tokens"):
        compute_frame(State(trained=True, layer=0, tokens="a b e"), _small_model(1, vocab=4))  # e is id 4


def test_a_token_error_names_tokens_not_text():
    with pytest.raises(ValueError, match="^tokens"):
        compute_frame(State(trained=True, tokens="a 1 b"))


@pytest.mark.parametrize(("state", "model", "name"), [({"trained": True}, None, "state"),
                                                      (State(trained=True), object(), "model")])
def test_a_dict_or_an_unrelated_object_is_refused_by_name(state, model, name):
    with pytest.raises(TypeError, match=name):
        compute_frame(state, model)


def test_the_untrained_frame_ignores_the_tokens_it_never_uses():
    frame = compute_frame(State(trained=False, tokens="1 2 3"))
    assert frame.tokens is None


def test_a_model_that_reads_one_token_is_refused_as_a_model_not_as_2_to_1_letters():
    with pytest.raises(ValueError) as error:
        compute_frame(State(trained=True, layer=0, tokens="a b"), _small_model(1, max_len=1))
    message = str(error.value)
    assert message.startswith("model") and "max_len = 1" in message, message
    assert "2 to 1" not in message


def test_a_model_that_reads_two_tokens_shows_two():
    shown = compute_frame(State(trained=True, layer=0, tokens="a b"), _small_model(1, max_len=2))
    assert shown.seq_len == 2
    with pytest.raises(ValueError, match="tokens must hold 2 to 2 letters; got 3"):
        compute_frame(State(trained=True, layer=0, tokens="a b c"), _small_model(1, max_len=2))


@pytest.mark.parametrize(("changes", "error", "words"), [
    (dict(d_model=100), ValueError, "d_model must be one of"),
    (dict(d_model="64"), TypeError, "d_model must be a positive int"),
    (dict(num_heads=5), ValueError, "num_heads must divide d_model = 64"),
    (dict(seq_len=1), ValueError, "seq_len must be in [2, 32]; got 1"),
    (dict(seed=2**32), ValueError, "seed must be an int in [0, 2**32 - 1]"),
    (dict(mask=None), ValueError, "mask must be one of"),
    (dict(trained="yes"), TypeError, "trained must be True or False"),
    (dict(tokens=3), TypeError, "tokens must be a str"),
    (dict(layer=-1), ValueError, "layer must be an int >= 0; got -1"),
    (dict(layer=1.0), TypeError, "layer must be an int >= 0"),
    (dict(positions="rope", d_model=12, num_heads=4), ValueError, "even d_k"),
])
def test_a_state_is_checked_as_it_is_made(changes, error, words):
    with pytest.raises(error) as info:
        State(**changes)
    assert words in str(info.value)


def test_a_state_keeps_its_settings_normalised():
    state = State(seq_len=np.int64(5), trained=np.bool_(False), layer=np.int32(0))
    assert type(state.seq_len) is int and type(state.trained) is bool and type(state.layer) is int
    assert state == State(seq_len=5, layer=0)


def test_the_surface_shows_the_plain_functions_behind_doors():
    assert compute_frame.__wrapped__ is frame.compute_frame
    assert compute_frame.__door__.__module__ == "mhattn.checks.explorer"
    for name in mhattn.explorer.__all__:
        assert hasattr(mhattn.explorer, name), name


def test_the_plain_frame_function_does_not_check():
    """Inside the package, code calls the plain function; the check is the surface's."""
    with pytest.raises(AttributeError):  # a dict has no .trained: nothing checked it first
        frame.compute_frame({"trained": True})


def test_the_surface_imports_without_the_widget_and_builds_a_checked_explorer_on_demand():
    code = ("import sys, mhattn.explorer as e; "
            "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules)); "
            "print(e.explorer.__door__.__name__, e.explorer.__wrapped__.__module__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[:2] == ["[]", "explorer_args mhattn.explorer.launch"]


def test_latest_wins_checks_its_work_and_its_timeout():
    with pytest.raises(TypeError, match="work must be a function"):
        LatestWins(3)
    with pytest.raises(TypeError, match="background must be True or False"):
        LatestWins(print, background="yes")
    with pytest.raises(ValueError, match="timeout must be None or a number of seconds >= 0; got -1.0"):
        LatestWins(print).wait(-1.0)
    for bad in (True, "1", float("nan")):
        with pytest.raises((TypeError, ValueError), match="timeout"):
            LatestWins(print).wait(bad)
    assert LatestWins(print).wait(0.0) is True


@pytest.mark.parametrize("tokens", ["a", "a 1"])  # one letter is no sequence; a digit is no letter
def test_the_trained_frame_refuses_tokens_it_cannot_read_and_names_them(tokens):
    with pytest.raises(ValueError, match="tokens"):
        compute_frame(State(trained=True, tokens=tokens))


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.explorer.compute_frame,
        dict(state=mhattn.explorer.State()),
        model=[object()]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
