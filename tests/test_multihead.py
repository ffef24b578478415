"""MultiHeadAttention: the fused module against per-head loops and the reference formula."""

import math

import numpy as np
import oracle
import pytest

from mhattn import MultiHeadAttention, causal_mask, padding_mask


def reference_example():
    """The reference section's worked example, recomputed from its formulas with nothing from mhattn."""
    np.random.seed(123)
    x = np.random.randn(1, 6, 64)
    np.random.seed(42)
    scale = math.sqrt(2.0 / 64)
    W_qkv = np.random.randn(64, 192) * scale
    W_o = np.random.randn(64, 64) * scale
    return x, W_qkv, W_o


def test_reproduces_the_reference_worked_example():
    x, W_qkv, W_o = reference_example()
    mha = MultiHeadAttention(64, 4)
    np.testing.assert_array_equal(mha.W_qkv, W_qkv)
    np.testing.assert_array_equal(mha.W_o, W_o)
    output, weights = mha(x)
    assert output.shape == (1, 6, 64)
    assert weights.shape == (1, 4, 6, 6)
    assert mha.d_k == 16 and mha.num_heads == 4
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    expected_output, expected_weights = oracle.multi_head_attention(x, W_qkv, W_o, num_heads=4)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


def test_never_touches_numpys_global_random_state():
    np.random.seed(7)
    before = np.random.get_state()
    MultiHeadAttention(32, 4, seed=1)
    after = np.random.get_state()
    assert before[0] == after[0] and (before[1] == after[1]).all() and before[2:] == after[2:]


def test_the_seed_decides_the_weights():
    a, b, c = MultiHeadAttention(16, 2, seed=1), MultiHeadAttention(16, 2, seed=1), MultiHeadAttention(16, 2, seed=2)
    np.testing.assert_array_equal(a.W_qkv, b.W_qkv)
    assert not np.array_equal(a.W_qkv, c.W_qkv)


@pytest.mark.parametrize(
    "batch, seq_len, d_model, num_heads",
    [(2, 5, 12, 3), (3, 7, 8, 1), (1, 4, 8, 8), (2, 3, 20, 4)],
)
@pytest.mark.parametrize("masked", [False, True])
def test_matches_separate_per_head_projections(batch, seq_len, d_model, num_heads, masked):
    """'Fused' means: one matmul with W_qkv equals slicing it into W_q, W_k, W_v per head."""
    rng = np.random.default_rng(batch * 100 + seq_len)
    x = rng.standard_normal((batch, seq_len, d_model))
    mask = None
    if masked:
        lengths = rng.integers(0, seq_len + 1, size=batch)
        mask = causal_mask(seq_len) & padding_mask(lengths, seq_len)
    mha = MultiHeadAttention(d_model, num_heads, seed=seq_len)
    output, weights = mha(x, mask)
    expected_output, expected_weights = oracle.multi_head_attention(x, mha.W_qkv, mha.W_o, num_heads, mask)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


def test_has_four_d_model_squared_parameters():
    mha = MultiHeadAttention(48, 6)
    assert mha.W_qkv.shape == (48, 144) and mha.W_o.shape == (48, 48)
    assert mha.W_qkv.size + mha.W_o.size == 4 * 48**2


def test_float32_stays_float32_and_agrees_with_float64():
    mha = MultiHeadAttention(32, 4)
    x = np.random.default_rng(0).standard_normal((2, 5, 32))
    output64, weights64 = mha(x)
    output32, weights32 = mha(x.astype(np.float32))
    assert output32.dtype == weights32.dtype == np.float32
    assert output64.dtype == weights64.dtype == np.float64
    np.testing.assert_allclose(output32, output64, rtol=1e-4, atol=1e-5)


def test_weights_are_read_at_every_call_so_an_update_takes_effect():
    mha = MultiHeadAttention(8, 2)
    x = np.ones((1, 3, 8), dtype=np.float32)
    mha(x)
    mha.W_qkv[:] = 0.0  # an in-place update, as a training step makes
    output, _ = mha(x)
    np.testing.assert_array_equal(output, 0.0)
    mha.W_qkv = np.ones((8, 24))  # and an assignment
    mha.W_o = np.zeros((8, 8))
    np.testing.assert_array_equal(mha(x)[0], 0.0)


def test_assigned_weights_are_used():
    mha = MultiHeadAttention(4, 2)
    mha.W_qkv = np.hstack([np.zeros((4, 8)), np.eye(4)])  # Q = K = 0, V = x: uniform attention
    mha.W_o = np.eye(4)
    x = np.random.default_rng(1).standard_normal((1, 3, 4))
    output, weights = mha(x)
    np.testing.assert_allclose(weights, 1 / 3)
    np.testing.assert_allclose(output, np.broadcast_to(x.mean(axis=1, keepdims=True), x.shape), atol=1e-15)


def test_need_weights_false_gives_the_same_output_and_no_weights():
    mha = MultiHeadAttention(16, 4)
    x = np.random.default_rng(2).standard_normal((2, 9, 16))
    mask = causal_mask(9)
    full, _ = mha(x, mask)
    output, weights = mha(x, mask, need_weights=False)
    assert weights is None
    np.testing.assert_allclose(output, full, rtol=0, atol=1e-12)


def test_calling_the_module_is_forward():
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(3).standard_normal((1, 4, 8))
    np.testing.assert_array_equal(mha(x)[0], mha.forward(x)[0])


def test_each_output_position_depends_only_on_allowed_positions():
    """With a causal mask, changing the last token must not change any earlier output."""
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(4).standard_normal((1, 5, 8))
    changed = x.copy()
    changed[0, -1] += 10.0
    before, _ = mha(x, causal_mask(5))
    after, _ = mha(changed, causal_mask(5))
    np.testing.assert_allclose(before[0, :-1], after[0, :-1], atol=1e-12)
    assert not np.allclose(before[0, -1], after[0, -1])


def test_a_fully_padded_sequence_gives_zero_output_not_nan():
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(5).standard_normal((2, 4, 8))
    output, weights = mha(x, padding_mask([4, 0], 4))
    np.testing.assert_array_equal(output[1], 0.0)
    np.testing.assert_array_equal(weights[1], 0.0)
    assert np.isfinite(output).all()


def test_repr_names_the_sizes():
    assert repr(MultiHeadAttention(64, 4)) == "MultiHeadAttention(d_model=64, num_heads=4, d_k=16)"
