"""scaled_dot_product_attention against an independent per-query loop, with and without masks."""

import numpy as np
import oracle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mhattn import causal_mask, padding_mask, scaled_dot_product_attention


def random_qkv(rng, batch, heads, seq_q, seq_k, d_k, d_v, dtype=np.float64):
    Q = rng.standard_normal((batch, heads, seq_q, d_k)).astype(dtype)
    K = rng.standard_normal((batch, heads, seq_k, d_k)).astype(dtype)
    V = rng.standard_normal((batch, heads, seq_k, d_v)).astype(dtype)
    return Q, K, V


# Every axis a different length, so a transposed or mixed-up axis cannot go unnoticed.
SHAPES = [
    (2, 3, 5, 5, 4, 7),  # self-attention
    (3, 2, 4, 7, 6, 5),  # cross-attention, seq_q < seq_k
    (1, 4, 9, 2, 3, 8),  # cross-attention, seq_q > seq_k
]


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_the_oracle_without_a_mask(shape):
    Q, K, V = random_qkv(np.random.default_rng(0), *shape)
    output, weights = scaled_dot_product_attention(Q, K, V)
    expected_output, expected_weights = oracle.attention(Q, K, V)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_the_oracle_with_a_random_per_head_mask(shape):
    rng = np.random.default_rng(1)
    Q, K, V = random_qkv(rng, *shape)
    batch, heads, seq_q, seq_k = shape[:4]
    mask = rng.random((batch, heads, seq_q, seq_k)) < 0.6
    mask[0, 0, 0] = False  # at least one fully masked row
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    expected_output, expected_weights = oracle.attention(Q, K, V, mask)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


def test_matches_the_oracle_with_causal_and_padding_masks_combined():
    rng = np.random.default_rng(2)
    Q, K, V = random_qkv(rng, 3, 2, 6, 6, 4, 5)
    mask = causal_mask(6) & padding_mask([6, 3, 1], 6)  # (3, 1, 6, 6)
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    expected_output, expected_weights = oracle.attention(Q, K, V, mask)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 3), st.integers(1, 3), st.integers(1, 7), st.integers(1, 7), st.integers(1, 6),
    st.integers(0, 2**32 - 1), st.sampled_from([np.float32, np.float64]),
)
def test_rows_sum_to_one_and_masked_keys_get_exactly_zero(batch, heads, seq_q, seq_k, d_k, seed, dtype):
    rng = np.random.default_rng(seed)
    Q, K, V = random_qkv(rng, batch, heads, seq_q, seq_k, d_k, 3, dtype)
    Q *= 10  # sharp distributions, where rounding is hardest
    mask = rng.random((batch, heads, seq_q, seq_k)) < 0.5
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    assert output.dtype == weights.dtype == dtype
    assert (weights[~mask] == 0).all()
    row_sums = weights.sum(axis=-1)
    has_a_key = mask.any(axis=-1)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(row_sums[has_a_key], 1.0, atol=tolerance)
    assert (row_sums[~has_a_key] == 0).all()


def test_a_fully_masked_query_gets_zero_weights_and_zero_output():
    Q, K, V = random_qkv(np.random.default_rng(3), 1, 1, 3, 4, 2, 2)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_array_equal(weights[0, 0, 1], 0.0)
    np.testing.assert_array_equal(output[0, 0, 1], 0.0)
    assert np.isfinite(output).all()
    np.testing.assert_allclose(weights[0, 0, [0, 2]].sum(axis=-1), 1.0)


def test_a_mask_that_blocks_nothing_changes_nothing():
    Q, K, V = random_qkv(np.random.default_rng(4), 2, 2, 3, 5, 4, 4)
    unmasked = scaled_dot_product_attention(Q, K, V)
    masked = scaled_dot_product_attention(Q, K, V, np.ones((3, 5), dtype=bool))
    np.testing.assert_array_equal(unmasked[0], masked[0])


def test_identical_keys_give_uniform_weights_and_the_mean_value():
    rng = np.random.default_rng(5)
    Q = rng.standard_normal((1, 4, 3))
    K = np.tile(rng.standard_normal(3), (5, 1))[None]  # (1, 5, 3): all keys equal
    V = rng.standard_normal((1, 5, 2))
    output, weights = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(weights, 0.2)
    np.testing.assert_allclose(output, np.broadcast_to(V.mean(axis=1, keepdims=True), (1, 4, 2)))


def test_the_scale_is_one_over_sqrt_d_k():
    """With one query and two keys, the weight ratio is exp((q.k1 - q.k2) / sqrt(d_k))."""
    d_k = 16
    q = np.zeros((1, d_k))
    q[0, 0] = 1.0
    K = np.zeros((2, d_k))
    K[0, 0] = 8.0  # q . k1 = 8, q . k2 = 0
    _, weights = scaled_dot_product_attention(q, K, np.eye(2))
    np.testing.assert_allclose(weights[0, 0] / weights[0, 1], np.exp(8.0 / 4.0))


def test_no_leading_axes_and_many_leading_axes_both_work():
    rng = np.random.default_rng(6)
    Q, K, V = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    output, weights = scaled_dot_product_attention(Q, K, V)
    expected_output, expected_weights = oracle.attention(Q[None, None], K[None, None], V[None, None])
    np.testing.assert_allclose(output, expected_output[0, 0], atol=1e-12)
    Q5 = rng.standard_normal((2, 1, 3, 4, 3))
    output5, _ = scaled_dot_product_attention(Q5, K, V)  # K and V broadcast over (2, 1, 3)
    assert output5.shape == (2, 1, 3, 4, 2)
    for index in np.ndindex(2, 1, 3):
        np.testing.assert_allclose(output5[index], scaled_dot_product_attention(Q5[index], K, V)[0], atol=1e-12)


def test_inputs_are_not_modified():
    Q, K, V = random_qkv(np.random.default_rng(7), 1, 2, 3, 3, 4, 4)
    copies = [a.copy() for a in (Q, K, V)]
    scaled_dot_product_attention(Q, K, V, causal_mask(3))
    for before, after in zip(copies, (Q, K, V), strict=True):
        np.testing.assert_array_equal(before, after)
