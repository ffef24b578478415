"""The explorer widget with the trained model: the tokens box, the layer and the positions switch.

Compared with the model's own ``forward`` and the loop-by-loop residual stream of
tests/explorer_expected.py.
"""

import html

import numpy as np
import pytest
from explorer_expected import assert_drawing_matches, drawn, png_pixels

from mhattn.explorer import explorer
from mhattn.explorer.frame import DEFAULT_TOKENS
from mhattn.learn.letters import decode_tokens, encode_letters


@pytest.fixture
def ex():
    return explorer(d_model=64, num_heads=4, seq_len=8, seed=123, mask="none")


@pytest.fixture
def trained_ex():
    return explorer(trained=True)


def test_the_weights_switch_shows_the_trained_model_and_only_the_controls_that_act(ex):
    assert ex.trained_weights.options == (("untrained", False), ("trained (induction)", True))
    assert ex._trained_controls.layout.display == "none" and ex._untrained_controls.layout.display != "none"
    picture = ex.picture
    ex.trained_weights.value = True
    assert ex._untrained_controls.layout.display == "none" and ex._trained_controls.layout.display != "none"
    assert ex.picture != picture
    assert ex.tokens.value == DEFAULT_TOKENS and ex.layer.value == 1
    assert repr(ex) == f"Explorer(trained=True, tokens={DEFAULT_TOKENS!r}, layer=1)"
    assert_drawing_matches(ex)
    ex.trained_weights.value = False  # back: the untrained settings are as they were
    assert ex.picture == picture
    assert_drawing_matches(ex)


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("text", [DEFAULT_TOKENS, "AB", "q w e r t y q w e r t y", "abcdefghijklmnopqrstuvwxyzabcdef"])
def test_trained_picture_matches_the_model_for_typed_tokens(trained_ex, layer, text):
    trained_ex.layer.value = layer
    trained_ex.tokens.value = text
    assert trained_ex.token_error is None
    assert_drawing_matches(trained_ex)
    letters = decode_tokens(encode_letters(text.lower()))
    assert f"{len(letters.split())} tokens: {letters}</code>" in trained_ex.readout.value


def test_trained_readout_gives_each_head_s_scores_and_the_model_s_guesses(trained_ex, model):
    trained_ex.tokens.value = "k d q k d q m"
    tokens = [10, 3, 16, 10, 3, 16, 12]
    for layer in (0, 1):
        trained_ex.layer.value = layer
        weights = model.forward(np.array(tokens))[1][layer]
        previous = [np.mean([weights[h, t, t - 1] for t in range(1, 7)]) for h in range(model.num_heads)]
        # queries 3, 4, 5 repeat the tokens at 0, 1, 2: their induction targets are keys 1, 2, 3
        induction = [np.mean([weights[h, 3, 1], weights[h, 4, 2], weights[h, 5, 3]]) for h in range(model.num_heads)]
        text = trained_ex.readout.value
        assert "previous-token score per head (weight on the key just before): " + " ".join(
            f"{v:.2f}" for v in previous) in text
        assert "occurrences of the query's letter): " + " ".join(f"{v:.2f}" for v in induction) in text
        guesses = html.escape(decode_tokens(model.predict(np.array(tokens))))  # ids past z read "<27>"
        assert f"the model's guess for the next letter, after each token: {guesses}</code>" in text
    trained_ex.tokens.value = "a b c"
    assert "no letter repeats yet" in trained_ex.readout.value


def test_the_induction_head_lights_up_on_the_repeat_as_the_explanation_says(trained_ex, model):
    """The explanation tells the reader to type a b c d x a b c and look at the last rows of layer 1."""
    trained_ex.tokens.value = "a b c d x a b c"
    trained_ex.layer.value = 1
    heatmaps = drawn(trained_ex)[0]
    # queries 5, 6, 7 (the repeated a b c) attend to keys 1, 2, 3 (the letters that followed them)
    on_target = np.mean([heatmaps[:, 5, 1], heatmaps[:, 6, 2], heatmaps[:, 7, 3]], axis=0)  # (num_heads,)
    assert on_target.max() >= 0.5, on_target
    assert "a b c d x a b c" in trained_ex.explanation.value


@pytest.mark.parametrize(("text", "words"), [("a b 7", "&#x27;7&#x27;"), ("ab" * 17, "got 34"), ("", "got 0"),
                                             ("a", "tokens must hold 2 to 32 letters; got 1")])
def test_tokens_that_cannot_be_drawn_leave_the_picture_and_say_why(trained_ex, text, words):
    trained_ex.tokens.value = "c a b c a"
    picture, shown = trained_ex.picture, trained_ex.frame.tokens.copy()
    trained_ex.tokens.value = text
    assert words in trained_ex.readout.value and "still showing the tokens below" in trained_ex.readout.value
    assert trained_ex.picture == picture
    np.testing.assert_array_equal(trained_ex.frame.tokens, shown)
    trained_ex.layer.value = 0  # another control still redraws, with the tokens last shown
    assert "still showing" in trained_ex.readout.value
    assert_drawing_matches(trained_ex)
    trained_ex.tokens.value = "c a b"
    assert "still showing" not in trained_ex.readout.value
    assert_drawing_matches(trained_ex)


def test_trained_picture_after_many_changes_equals_a_fresh_explorer(ex):
    ex.seq_len.value, ex.mask.value = 20, "padding"
    ex.trained_weights.value = True
    ex.tokens.value = "z y x z y x z"
    ex.layer.value = 0
    ex.tokens.value = "a a b b a a"
    ex.trained_weights.value = False
    ex.num_heads.value = 8
    ex.trained_weights.value = True
    fresh = explorer(trained=True, tokens="a a b b a a", layer=0)
    np.testing.assert_array_equal(png_pixels(ex.picture), png_pixels(fresh.picture))
    assert ex.readout.value == fresh.readout.value


def test_bad_tokens_then_the_untrained_weights_leave_every_untrained_control_drawing(ex):
    """Type tokens the model cannot read, switch to untrained: every untrained control still redraws.

    The untrained layer reads no tokens, so the box's text must not stop it from drawing.
    """
    ex.trained_weights.value = True
    ex.tokens.value = "a1"
    assert "still showing the tokens below" in ex.readout.value
    ex.trained_weights.value = False
    assert ex.token_error is None and "still showing" not in ex.readout.value
    assert_drawing_matches(ex)
    for name, value in (("seq_len", 11), ("d_model", 48), ("num_heads", 3), ("seed", 7), ("mask", "causal")):
        renders, picture = ex.renders, ex.picture
        getattr(ex, name).value = value
        assert ex.renders == renders + 1 and ex.picture != picture, name
        assert_drawing_matches(ex)
    ex.trained_weights.value = True  # back: the box still holds "a1", and the readout says so again
    assert "still showing the tokens below" in ex.readout.value
    np.testing.assert_array_equal(ex.frame.tokens, encode_letters(DEFAULT_TOKENS))
    assert_drawing_matches(ex)
