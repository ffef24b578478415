"""The explorer's frame checks its state against the model it shows, and names the setting."""

import pytest

from mhattn.explorer.frame import State, compute_frame
from mhattn.learn.model import InductionModel


def _small_model(num_layers=1, vocab=4):
    return InductionModel(num_layers, vocab=vocab, max_len=8, d_model=16, num_heads=4)


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
