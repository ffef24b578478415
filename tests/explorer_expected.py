"""Shared by the explorer's widget tests: what the explorer should draw, computed independently.

Untrained: ``MultiHeadAttention`` on tokens drawn here from ``default_rng([seed, b + 1])``,
masks built here with plain NumPy, ``embedding_shift_2d`` of the second sequence. Trained: the
model's own ``forward`` for the weights, and the residual stream rebuilt with the loop-by-loop
oracle of tests/oracle.py.
"""

import io
from pathlib import Path

import numpy as np
import oracle
from PIL import Image

from mhattn import MultiHeadAttention
from mhattn.learn.letters import encode_letters
from mhattn.pictures.embedding_shift import embedding_shift_2d

ROOT = Path(__file__).resolve().parents[1]
EXPLORER_NOTEBOOKS = ["explore.ipynb", "04_multi_head_attention.ipynb", "05_embedding_shift.ipynb"]


def tokens_from_the_recipe(seed, seq_len, d_model):
    """The documented token recipe: each sequence from its own stream, one token after another."""
    return np.stack([np.random.default_rng([seed, b + 1]).standard_normal((seq_len, d_model)) for b in (0, 1)])


def expected_drawing(d_model, num_heads, seq_len, seed, mask):
    """What the explorer should show, computed from scratch: weights, allowed cells, PCA points."""
    x = tokens_from_the_recipe(seed, seq_len, d_model)
    keys = np.arange(seq_len)
    if mask == "none":
        allowed = np.ones((seq_len, seq_len), dtype=bool)
    elif mask == "causal":
        allowed = keys[None, :] <= keys[:, None]  # key j visible from query i when j <= i
    else:  # the second sequence keeps its first ceil(seq_len / 2) tokens
        real = (seq_len + 1) // 2
        allowed = np.broadcast_to(keys < real, (seq_len, seq_len))
    full_mask = None if mask == "none" else np.broadcast_to(allowed, (2, num_heads, seq_len, seq_len)).copy()
    if mask == "padding":
        full_mask[0] = True  # the first sequence is not padded
    output, weights = MultiHeadAttention(d_model, num_heads, seed=seed)(x, full_mask)
    inputs_2d, outputs_2d, _ = embedding_shift_2d(x[1], output[1])
    return weights[1], allowed, inputs_2d, outputs_2d


def drawn(ex):
    """The heatmap arrays (masked cells as NaN) and PCA points the explorer's artists hold."""
    heatmaps = np.stack([image.get_array().filled(np.nan) for image in ex.drawing.head_images])
    return heatmaps, ex.drawing.pca_inputs.get_offsets(), ex.drawing.pca_outputs.get_offsets()


def assert_drawing_matches(ex):
    if ex.trained_weights.value:
        return assert_trained_drawing_matches(ex)
    settings = dict(d_model=ex.d_model.value, num_heads=ex.num_heads.value, seq_len=ex.seq_len.value,
                    seed=ex.seed.value, mask=ex.mask.value)
    weights, allowed, inputs_2d, outputs_2d = expected_drawing(**settings)
    heatmaps, inputs_drawn, outputs_drawn = drawn(ex)
    assert heatmaps.shape == weights.shape, settings
    np.testing.assert_array_equal(np.isnan(heatmaps), np.broadcast_to(~allowed, weights.shape))
    np.testing.assert_allclose(np.where(allowed, heatmaps, 0.0), weights, atol=1e-12)
    np.testing.assert_allclose(inputs_drawn, inputs_2d, atol=1e-9)
    np.testing.assert_allclose(outputs_drawn, outputs_2d, atol=1e-9)
    assert len(ex.drawing.head_axes) == ex.num_heads.value
    assert [ax.get_title() for ax in ex.drawing.head_axes] == [f"head {h}" for h in range(ex.num_heads.value)]


def readout_row_sums(text):
    """The readout's row sums, one per query: "1.000×3 0.500" -> [1.0, 1.0, 1.0, 0.5]."""
    listed = text.split("):")[-1].split("(")[0].split()
    return [float(value) for entry in listed for value, _, count in [entry.partition("×")]
            for _ in range(int(count or 1))]


def png_pixels(data):
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))



def residual_stream(model, tokens):
    """The model's residual stream before each layer and after the last, by the loop-by-loop oracle."""
    seq_len = len(tokens)
    causal = np.tril(np.ones((seq_len, seq_len), dtype=bool))
    streams = [model.embed[tokens] + model.pos[:seq_len]]  # (seq_len, d_model)
    for mha in model.layers:
        output, _ = oracle.multi_head_attention(streams[-1][None], mha.W_qkv, mha.W_o, mha.num_heads, causal)
        streams.append(streams[-1] + output[0])
    return streams


def assert_trained_drawing_matches(ex):
    model, layer = ex.trained_model, ex.layer.value
    tokens = encode_letters(ex.tokens.value.lower()) if ex.token_error is None else ex.frame.tokens
    np.testing.assert_array_equal(ex.frame.tokens, tokens)
    seq_len = len(tokens)
    weights = model.forward(tokens)[1][layer]  # (num_heads, seq_len, seq_len): the model's own forward
    streams = residual_stream(model, tokens)
    inputs_2d, outputs_2d, _ = embedding_shift_2d(streams[layer], streams[layer + 1])
    heatmaps, inputs_drawn, outputs_drawn = drawn(ex)
    future = np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)
    assert heatmaps.shape == weights.shape == (model.num_heads, seq_len, seq_len)
    np.testing.assert_array_equal(np.isnan(heatmaps), np.broadcast_to(future, heatmaps.shape))
    np.testing.assert_allclose(np.where(future, 0.0, heatmaps), weights, atol=1e-12)
    # The oracle sums in another order: the PCA points agree to rounding, relative to their spread.
    scale = np.abs(inputs_2d).max()
    np.testing.assert_allclose(inputs_drawn, inputs_2d, atol=1e-9 * scale)
    np.testing.assert_allclose(outputs_drawn, outputs_2d, atol=1e-9 * scale)
    np.testing.assert_array_equal(ex.frame.predictions, model.predict(tokens))


