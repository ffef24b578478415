"""embedding_shift_2d: one PCA plane for inputs and outputs, checked against scikit-learn's PCA.

The function is called through its door (``mhattn.pictures``), which names bad arguments.
"""

import re

import numpy as np
import pytest

from mhattn.pictures import embedding_shift_2d


@pytest.mark.parametrize("seed, seq_len, d_model", [(0, 7, 10), (3, 2, 5), (4, 32, 64), (5, 20, 3)])
def test_agrees_with_scikit_learns_pca_up_to_each_components_sign(seed, seq_len, d_model):
    """scikit-learn (an independent implementation) gives the same plane and variance shares."""
    PCA = pytest.importorskip("sklearn.decomposition").PCA
    rng = np.random.default_rng(seed)
    inputs, outputs = rng.standard_normal((seq_len, d_model)), rng.standard_normal((seq_len, d_model)) * 2
    inputs_2d, outputs_2d, ratio = embedding_shift_2d(inputs, outputs)
    pca = PCA(n_components=2, svd_solver="full").fit(np.vstack([inputs, outputs]))
    points = pca.transform(np.vstack([inputs, outputs]))  # (2 * seq_len, 2)
    ours = np.vstack([inputs_2d, outputs_2d])
    scale = np.abs(points).max()  # the rounding of two SVDs of the same matrix, relative to its size
    for c in range(2):
        sign = np.sign(ours[:, c] @ points[:, c])
        np.testing.assert_allclose(ours[:, c], sign * points[:, c], atol=1e-12 * scale)
    np.testing.assert_allclose(ratio, pca.explained_variance_ratio_, rtol=1e-12)


@pytest.mark.parametrize("magnitude", [1e200, 1e-200, 1e300])
def test_huge_and_tiny_vectors_give_the_pca_of_the_same_vectors_rescaled(magnitude):
    """Squares of 1e200 overflow and of 1e-200 underflow; the plane and its shares must not care.

    The oracle: scikit-learn's PCA of the vectors divided by ``magnitude`` (numbers near 1),
    whose coordinates are ours divided by ``magnitude``.
    """
    PCA = pytest.importorskip("sklearn.decomposition").PCA
    rng = np.random.default_rng(6)
    inputs, outputs = rng.standard_normal((9, 12)), rng.standard_normal((9, 12)) * 3
    inputs_2d, outputs_2d, ratio = embedding_shift_2d(inputs * magnitude, outputs * magnitude)
    stacked = np.vstack([inputs, outputs])
    pca = PCA(n_components=2, svd_solver="full").fit(stacked)
    points = pca.transform(stacked)  # (2 * seq_len, 2)
    ours = np.vstack([inputs_2d, outputs_2d]) / magnitude
    scale = np.abs(points).max()
    for c in range(2):
        sign = np.sign(ours[:, c] @ points[:, c])
        np.testing.assert_allclose(ours[:, c], sign * points[:, c], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(ratio, pca.explained_variance_ratio_, rtol=1e-12)


def test_the_same_vector_everywhere_spans_no_plane():
    with pytest.raises(ValueError, match="inputs and outputs must not all be the same vector"):
        embedding_shift_2d(np.ones((3, 4)), np.ones((3, 4)))


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
