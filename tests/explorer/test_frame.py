"""The explorer's frame function: state -> numbers, checked against independent computations.

mhattn.explorer.frame feeds the notebook widget, the Voila app and the book's page; here its
numbers are rebuilt from the documented recipe with the loop-by-loop oracle (tests/oracle.py),
RoPE written out as one 2x2 rotation per pair of coordinates, and the trained model's own
``forward``. Importing it must not need matplotlib, ipywidgets or scikit-learn.
"""

import math
import subprocess
import sys

import numpy as np
import oracle
import pytest

from mhattn.core.multihead import MultiHeadAttention
from mhattn.explorer.frame import (
    MAX_SEQ_LEN,
    POSITIONS,
    State,
    check_state,
    compute_frame,
    padded_length,
    random_tokens,
)
from mhattn.learn.letters import encode_letters
from mhattn.pictures.embedding_shift import embedding_shift_2d


def rotated(vectors, d_k, base=10000.0):
    """RoPE by hand: at position p, coordinates (i, i + d_k/2) turn by p * base ** (-2i / d_k)."""
    out = vectors.copy()
    half = d_k // 2
    for p in range(len(vectors)):
        for i in range(half):
            angle = p * base ** (-2 * i / d_k)
            a, b, cos, sin = vectors[p, i], vectors[p, i + half], math.cos(angle), math.sin(angle)
            out[p, i], out[p, i + half] = a * cos - b * sin, a * sin + b * cos
    return out


def rope_oracle(x, W_qkv, W_o, num_heads, allowed):
    """One sequence through multi-head attention with RoPE on queries and keys, loop by loop."""
    seq_len, d_model = x.shape
    d_k = d_model // num_heads
    heads, weights = np.zeros((seq_len, d_model)), np.zeros((num_heads, seq_len, seq_len))
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        q = rotated(x @ W_qkv[:, :d_model][:, cols], d_k)
        k = rotated(x @ W_qkv[:, d_model:2 * d_model][:, cols], d_k)
        v = x @ W_qkv[:, 2 * d_model:][:, cols]
        for i in range(seq_len):
            heads[i, cols], weights[h, i] = oracle.attention_row(q[i], k, v, allowed[i])
    return heads @ W_o, weights


def test_importing_the_frame_function_needs_numpy_only():
    code = ("import sys, mhattn.explorer, mhattn.explorer.frame; "
            "print(sorted(m for m in ('matplotlib', 'ipywidgets', 'sklearn', 'PIL') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
@pytest.mark.parametrize(("d_model", "num_heads", "seq_len"), [(12, 3, 2), (16, 8, 9), (64, 4, MAX_SEQ_LEN)])
def test_untrained_frame_follows_the_recipe(mask, d_model, num_heads, seq_len):
    frame = compute_frame(State(seq_len=seq_len, d_model=d_model, num_heads=num_heads, seed=7, mask=mask))
    x = np.stack([np.random.default_rng([7, b + 1]).standard_normal((seq_len, d_model)) for b in (0, 1)])
    keys = np.arange(seq_len)
    real = (seq_len + 1) // 2 if mask == "padding" else seq_len
    allowed = {"none": np.ones((seq_len, seq_len), bool), "causal": keys[None, :] <= keys[:, None],
               "padding": np.broadcast_to(keys < real, (seq_len, seq_len))}[mask]
    mha = MultiHeadAttention(d_model, num_heads, seed=7)
    output, weights = oracle.multi_head_attention(x[1:], mha.W_qkv, mha.W_o, num_heads, allowed)
    np.testing.assert_array_equal(frame.x, x)
    np.testing.assert_array_equal(frame.allowed, allowed)
    np.testing.assert_allclose(frame.weights, weights[0], atol=1e-12)
    inputs_2d, outputs_2d, explained = embedding_shift_2d(x[1], output[0])
    scale = np.abs(inputs_2d).max()
    np.testing.assert_allclose(frame.inputs_2d, inputs_2d, atol=1e-9 * scale)
    np.testing.assert_allclose(frame.outputs_2d, outputs_2d, atol=1e-9 * scale)
    np.testing.assert_allclose(frame.explained, explained, atol=1e-12)
    np.testing.assert_array_equal(frame.real, keys < real)
    assert frame.labels == [str(i) for i in range(seq_len)] and frame.tokens is None


@pytest.mark.parametrize(("d_model", "num_heads", "mask"), [(16, 2, "none"), (12, 6, "causal"), (64, 8, "padding")])
def test_rope_frame_rotates_queries_and_keys_by_position(d_model, num_heads, mask):
    seq_len = 11
    frame = compute_frame(State(seq_len=seq_len, d_model=d_model, num_heads=num_heads, seed=3, mask=mask,
                                positions="rope"))
    mha = MultiHeadAttention(d_model, num_heads, seed=3)
    _, weights = rope_oracle(frame.x[1], mha.W_qkv, mha.W_o, num_heads, frame.allowed)
    np.testing.assert_allclose(frame.weights, weights, atol=1e-12)
    plain = compute_frame(State(seq_len=seq_len, d_model=d_model, num_heads=num_heads, seed=3, mask=mask))
    assert np.abs(plain.weights - frame.weights).max() > 1e-3  # RoPE really changes the picture


@pytest.mark.parametrize("positions", ["learned", "none"])
@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("text", ["a b c d x a b c", "zz", "q w e r t y q w e r t y"])
def test_trained_frame_is_the_model_s_own_forward_pass(model, positions, layer, text):
    frame = compute_frame(State(trained=True, tokens=text, layer=layer, positions=positions), model)
    tokens = encode_letters(text)
    use = positions == "learned"
    logits, weights = model.forward(tokens, use_positions=use)
    np.testing.assert_allclose(frame.weights, weights[layer], atol=1e-12)
    np.testing.assert_array_equal(frame.predictions, logits.argmax(axis=-1))
    seq_len = len(tokens)
    stream = model.embed[tokens] + (model.pos[:seq_len] if use else 0)  # (seq_len, d_model)
    causal = np.tril(np.ones((seq_len, seq_len), dtype=bool))
    for mha in model.layers[:layer + 1]:
        before, stream = stream, stream + oracle.multi_head_attention(stream[None], mha.W_qkv, mha.W_o,
                                                                      mha.num_heads, causal)[0][0]
    inputs_2d, outputs_2d, _ = embedding_shift_2d(before, stream)
    scale = np.abs(inputs_2d).max()
    np.testing.assert_allclose(frame.inputs_2d, inputs_2d, atol=1e-9 * scale)
    np.testing.assert_allclose(frame.outputs_2d, outputs_2d, atol=1e-9 * scale)
    assert frame.labels == list(text.replace(" ", ""))


def test_positions_off_changes_the_trained_model_s_layer_0(model):
    on, off = (compute_frame(State(trained=True, layer=0, positions=p), model) for p in ("learned", "none"))
    assert np.abs(on.weights - off.weights).max() > 0.1


def test_trained_scores_match_hand_counts(model):
    frame = compute_frame(State(trained=True, tokens="k d q k d q m", layer=1), model)
    w = frame.weights
    previous = [np.mean([w[h, t, t - 1] for t in range(1, 7)]) for h in range(4)]
    # queries 3, 4, 5 repeat the tokens at 0, 1, 2: the keys after those are 1, 2, 3
    matching = [np.mean([w[h, 3, 1], w[h, 4, 2], w[h, 5, 3]]) for h in range(4)]
    np.testing.assert_allclose(frame.scores["previous_token"], previous, atol=1e-12)
    np.testing.assert_allclose(frame.scores["prefix_matching"], matching, atol=1e-12)
    assert compute_frame(State(trained=True, tokens="abc"), model).scores["prefix_matching"] is None


def test_a_longer_sequence_keeps_the_earlier_tokens():
    short, long = random_tokens(5, 8, 16), random_tokens(5, 20, 16)
    np.testing.assert_array_equal(long[:, :8], short)
    assert padded_length(7) == 4 and padded_length(8) == 4


@pytest.mark.parametrize(("changes", "error", "words"), [
    (dict(d_model=100), ValueError, "d_model must be one of"),
    (dict(num_heads=8, d_model=12), ValueError, "num_heads must divide d_model = 12"),
    (dict(seq_len=33), ValueError, "seq_len must be in [2, 32]; got 33"),
    (dict(mask="future"), ValueError, "mask must be one of"),
    (dict(layer=2), ValueError, "layer must be an int in [0, 1]; got 2"),
    (dict(tokens="a"), ValueError, "tokens must hold 2 to 32 letters; got 1"),
    (dict(positions="rope", trained=True), ValueError, "positions must be one of ('learned', 'none')"),
    (dict(positions="learned"), ValueError, "positions must be one of"),
    (dict(seed=-1), ValueError, "seed must be an int in [0, 2**32 - 1]; got -1"),
])
def test_states_the_explorer_cannot_show_are_refused(changes, error, words):
    with pytest.raises(error) as info:
        check_state(State(**changes))
    assert words in str(info.value)


def test_rope_needs_an_even_d_k():
    assert "rope" in POSITIONS[False]
    with pytest.raises(ValueError, match="even d_k"):
        check_state(State(d_model=12, num_heads=4, positions="rope"))  # d_k = 3
