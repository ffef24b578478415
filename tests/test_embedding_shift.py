"""embedding_shift_2d: one PCA plane for inputs and outputs, checked against an SVD."""

import re

import numpy as np
import pytest

import mhattn
from mhattn.pictures.embedding_shift import embedding_shift_2d
from mhattn.pictures.source import show_source


def svd_projection(inputs, outputs):
    """Independent PCA: centre the stacked rows, project on the top two right singular vectors."""
    stacked = np.vstack([inputs, outputs])
    centred = stacked - stacked.mean(axis=0)
    _, singular_values, Vt = np.linalg.svd(centred, full_matrices=False)
    points = centred @ Vt[:2].T
    ratio = singular_values[:2] ** 2 / (singular_values**2).sum()
    return points, ratio, Vt[:2]


def test_agrees_with_an_svd_up_to_each_components_sign():
    rng = np.random.default_rng(0)
    inputs, outputs = rng.standard_normal((7, 10)), rng.standard_normal((7, 10)) * 2
    inputs_2d, outputs_2d, ratio = embedding_shift_2d(inputs, outputs)
    points, expected_ratio, _ = svd_projection(inputs, outputs)
    ours = np.vstack([inputs_2d, outputs_2d])
    for c in range(2):
        sign = np.sign(ours[:, c] @ points[:, c])
        np.testing.assert_allclose(ours[:, c], sign * points[:, c], atol=1e-10)
    np.testing.assert_allclose(ratio, expected_ratio, rtol=1e-10)


def test_signs_are_fixed_so_the_largest_loading_is_positive():
    rng = np.random.default_rng(1)
    inputs, outputs = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    inputs_2d, outputs_2d, _ = embedding_shift_2d(inputs, outputs)
    stacked = np.vstack([inputs, outputs])
    centred = stacked - stacked.mean(axis=0)
    ours = np.vstack([inputs_2d, outputs_2d])
    for c in range(2):
        direction = np.linalg.lstsq(centred, ours[:, c], rcond=None)[0]  # the axis we projected on
        assert direction[np.abs(direction).argmax()] > 0


def test_rows_stay_with_their_tokens():
    """Row i of inputs_2d and outputs_2d belong to token i: moving one output moves one point."""
    rng = np.random.default_rng(2)
    inputs, outputs = rng.standard_normal((6, 8)), rng.standard_normal((6, 8))
    a_in, a_out, _ = embedding_shift_2d(inputs, outputs)
    same_in, same_out, _ = embedding_shift_2d(inputs, outputs.copy())
    np.testing.assert_array_equal(a_in, same_in)
    np.testing.assert_array_equal(a_out, same_out)
    assert a_in.shape == a_out.shape == (6, 2)
    # an output equal to its input lands on the same point
    outputs[3] = inputs[3]
    b_in, b_out, _ = embedding_shift_2d(inputs, outputs)
    np.testing.assert_allclose(b_in[3], b_out[3], atol=1e-12)


@pytest.mark.parametrize(
    "inputs, outputs, message",
    [
        (np.zeros((3, 4)), np.zeros((3, 5)), "outputs must have the shape of inputs (3, 4); got shape (3, 5)"),
        (np.zeros((1, 4)), np.zeros((1, 4)), "inputs must hold at least 2 tokens for a 2-D PCA; got shape (1, 4)"),
        (np.zeros((1, 3, 4)), np.zeros((1, 3, 4)),
         "inputs must be 2-D with shape (seq_len, d_model); got shape (1, 3, 4)"),
    ],
)
def test_bad_shapes_are_named(inputs, outputs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        embedding_shift_2d(inputs, outputs)


def test_show_source_renders_the_packages_own_code_as_a_python_block():
    shown = show_source(mhattn.softmax).data
    assert shown.startswith("```python\n@checked(softmax_args)\ndef softmax(x, axis=-1):")
    assert shown.endswith("```")
    assert "def softmax_args" not in shown  # only the function asked for, not its checks
    assert "exps = np.exp(x - x_max)" in shown
