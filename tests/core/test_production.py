"""Grouped-query attention, cross-attention and attention dropout, against PyTorch and the definitions.

torch is an optional test dependency: the PyTorch comparisons (marked ``needs_torch``)
skip where it is missing, except in CI (CI=true), where a missing torch is a failure
(``oracle.require_torch``). The other tests run everywhere; tolerances are
:func:`helpers.module_tolerances`.
"""

import math

import numpy as np
import pytest
from helpers import module_tolerances, needs_torch, raises, torch_twin
from oracle import torch

from mhattn import (
    GroupedQueryAttention,
    MultiHeadAttention,
    attention_with_dropout,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)


def torch_gqa_forward(mha, x, context=None, mask=None):
    """The module computed by torch: projections from the copied columns of W_qkv, then
    F.scaled_dot_product_attention(..., enable_gqa=True), then W_o. mask: True = may attend."""
    d_model, kv_width, d_k = mha.d_model, mha.num_kv_heads * mha.d_k, mha.d_k
    W = torch.from_numpy(mha.W_qkv)
    W_q, W_k, W_v = W[:, :d_model], W[:, d_model : d_model + kv_width], W[:, d_model + kv_width :]
    xt = torch.from_numpy(x)
    ct = xt if context is None else torch.from_numpy(context)
    batch, seq_q, seq_k = xt.shape[0], xt.shape[1], ct.shape[1]
    q = (xt @ W_q).view(batch, seq_q, mha.num_heads, d_k).transpose(1, 2)  # (B, H, T, d_k)
    k = (ct @ W_k).view(batch, seq_k, mha.num_kv_heads, d_k).transpose(1, 2)  # (B, H_kv, S, d_k)
    v = (ct @ W_v).view(batch, seq_k, mha.num_kv_heads, d_k).transpose(1, 2)
    attn_mask = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    heads = sdpa(q, k, v, attn_mask=attn_mask, enable_gqa=True)  # (B, H, T, d_k)
    return (heads.transpose(1, 2).reshape(batch, seq_q, d_model) @ torch.from_numpy(mha.W_o)).numpy()


# --- grouped-query and multi-query attention ----------------------------------------------


@needs_torch
@pytest.mark.parametrize("num_heads, num_kv_heads", [(8, 8), (8, 4), (8, 2), (8, 1), (6, 3)])
@pytest.mark.parametrize("masked", [False, True])
def test_grouped_query_attention_equals_torch_enable_gqa(num_heads, num_kv_heads, masked):
    d_model = 4 * num_heads
    mha = GroupedQueryAttention(d_model, num_heads, seed=num_kv_heads, num_kv_heads=num_kv_heads)
    x = np.random.default_rng(num_heads).standard_normal((2, 7, d_model))
    mask = causal_mask(7) if masked else None
    output, weights = mha(x, mask)
    np.testing.assert_allclose(output, torch_gqa_forward(mha, x, mask=mask), rtol=0, atol=module_tolerances(mha, x)[0])
    assert weights.shape == (2, num_heads, 7, 7)


def test_the_weight_layout_queries_then_keys_then_values():
    mha = GroupedQueryAttention(24, 6, num_kv_heads=2)
    assert mha.W_qkv.shape == (24, 24 + 2 * 2 * 4)  # d_model + 2 * num_kv_heads * d_k
    assert (mha.num_kv_heads, mha.d_k) == (2, 4)


def test_query_head_h_reads_key_value_head_h_over_the_group_size():
    """Heads 0-2 share key/value head 0, heads 3-5 head 1: their weights come from the same keys."""
    mha = GroupedQueryAttention(24, 6, seed=3, num_kv_heads=2)
    x = np.random.default_rng(0).standard_normal((1, 5, 24))
    _, weights = mha(x)
    d_model, d_k = 24, 4
    Q = (x @ mha.W_qkv[:, :d_model]).reshape(1, 5, 6, d_k).transpose(0, 2, 1, 3)
    K = (x @ mha.W_qkv[:, d_model : d_model + 2 * d_k]).reshape(1, 5, 2, d_k).transpose(0, 2, 1, 3)
    for h in range(6):
        scores = Q[0, h] @ K[0, h // 3].T / math.sqrt(d_k)
        expected = np.exp(scores - scores.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        np.testing.assert_allclose(weights[0, h], expected, rtol=0, atol=module_tolerances(mha, x)[1])


def test_num_kv_heads_none_changes_nothing():
    """The seed's worked example is unchanged: same weights, same outputs as num_kv_heads=num_heads and the seed."""
    default, explicit = GroupedQueryAttention(16, 4, seed=42), GroupedQueryAttention(16, 4, seed=42, num_kv_heads=4)
    seed = MultiHeadAttention(16, 4, seed=42)
    assert default.num_kv_heads == 4 and default.W_qkv.shape == (16, 48)
    np.testing.assert_array_equal(default.W_qkv, explicit.W_qkv)
    np.testing.assert_array_equal(default.W_qkv, seed.W_qkv)
    x = np.random.default_rng(1).standard_normal((1, 3, 16))
    np.testing.assert_array_equal(default(x)[0], explicit(x)[0])
    np.testing.assert_array_equal(default(x)[0], seed(x)[0])


@needs_torch
def test_num_kv_heads_equal_to_num_heads_equals_nn_multiheadattention():
    mha = GroupedQueryAttention(16, 4, seed=9, num_kv_heads=4)
    twin = torch_twin(mha)
    x = np.random.default_rng(5).standard_normal((2, 6, 16))
    with torch.no_grad():
        expected, _ = twin(*(torch.from_numpy(x),) * 3)
    np.testing.assert_allclose(mha(x)[0], expected.numpy(), rtol=0, atol=module_tolerances(mha, x)[0])


@pytest.mark.parametrize(
    "num_heads, num_kv_heads, error, message",
    [
        (
            8,
            3,
            ValueError,
            "num_kv_heads must divide num_heads = 8 (each key/value head serves a group of query heads); "
            "got num_kv_heads = 3",
        ),
        (4, 8, ValueError, "num_kv_heads must divide num_heads = 4"),
        (4, 0, ValueError, "num_kv_heads must be a positive int; got 0"),
        (4, 2.0, TypeError, "num_kv_heads must be a positive int; got 2.0 of type float"),
    ],
)
def test_bad_num_kv_heads(num_heads, num_kv_heads, error, message):
    with raises(error, message):
        GroupedQueryAttention(16, num_heads, num_kv_heads=num_kv_heads)


# --- cross-attention ---------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("seq_q, seq_k", [(5, 9), (9, 5), (1, 12)])
def test_cross_attention_equals_nn_multiheadattention_with_a_key_padding_mask(seq_q, seq_k):
    mha = GroupedQueryAttention(24, 3, seed=seq_k)
    generator = np.random.default_rng(seq_q)
    x = generator.standard_normal((3, seq_q, 24))
    context = generator.standard_normal((3, seq_k, 24))
    lengths = [seq_k, seq_k - 3, 1]  # how many context tokens are real in each sequence
    output, weights = mha(x, padding_mask(lengths, seq_k), context=context)
    key_padding_mask = ~padding_mask(lengths, seq_k)[:, 0, 0]  # torch: True = ignore this key
    with torch.no_grad():
        expected_output, expected_weights = torch_twin(mha)(
            torch.from_numpy(x),
            torch.from_numpy(context),
            torch.from_numpy(context),
            key_padding_mask=torch.from_numpy(key_padding_mask),
            average_attn_weights=False,
        )
    assert output.shape == (3, seq_q, 24) and weights.shape == (3, 3, seq_q, seq_k)
    output_atol, weights_atol = module_tolerances(mha, x, context)
    np.testing.assert_allclose(output, expected_output.numpy(), rtol=0, atol=output_atol)
    np.testing.assert_allclose(weights, expected_weights.numpy(), rtol=0, atol=weights_atol)
    assert np.all(weights[2, :, :, 1:] == 0)  # padded context tokens get exactly no weight


@needs_torch
def test_grouped_cross_attention_equals_torch_enable_gqa():
    mha = GroupedQueryAttention(32, 8, seed=2, num_kv_heads=2)
    generator = np.random.default_rng(8)
    x, context = generator.standard_normal((2, 4, 32)), generator.standard_normal((2, 11, 32))
    mask = padding_mask([11, 6], 11)
    expected = torch_gqa_forward(mha, x, context=context, mask=mask)
    atol = module_tolerances(mha, x, context)[0]
    np.testing.assert_allclose(mha(x, mask, context=context)[0], expected, rtol=0, atol=atol)


def test_cross_attention_with_x_as_context_is_self_attention():
    mha = GroupedQueryAttention(16, 4, seed=4, num_kv_heads=2)
    x = np.random.default_rng(2).standard_normal((2, 5, 16))
    np.testing.assert_allclose(mha(x, context=x)[0], mha(x)[0], rtol=0, atol=module_tolerances(mha, x)[0])


@pytest.mark.parametrize(
    "context, error, message",
    [
        (
            np.zeros((2, 4, 12)),
            ValueError,
            "context must have shape (batch, seq_len, d_model=16); got shape (2, 4, 12)",
        ),
        (
            np.zeros((4, 16)),
            ValueError,
            "context must be 3-D with shape (batch, seq_len, d_model=16); got shape (4, 16)",
        ),
        (np.zeros((3, 4, 16)), ValueError, "context must have the batch size of x, 2; got context of shape (3, 4, 16)"),
        (np.full((2, 4, 16), np.inf), ValueError, "context must be finite"),
        (np.zeros((2, 4, 16), complex), TypeError, "context must hold real numbers"),
    ],
)
def test_bad_context(context, error, message):
    with raises(error, message):
        GroupedQueryAttention(16, 4)(np.zeros((2, 3, 16)), context=context)


def test_a_mask_for_cross_attention_must_fit_seq_q_by_seq_k():
    mha = GroupedQueryAttention(16, 4)
    with raises(ValueError, "mask of shape (3, 3) does not fit scores of shape (2, 4, 3, 5)"):
        mha(np.zeros((2, 3, 16)), causal_mask(3), context=np.zeros((2, 5, 16)))


# --- attention dropout -------------------------------------------------------------------


def qkv(shape=(2, 3, 6, 5), seed=0):
    generator = np.random.default_rng(seed)
    return tuple(generator.standard_normal(shape) for _ in range(3))


def test_dropout_zero_is_a_no_op_and_draws_nothing():
    Q, K, V = qkv()
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    plain = scaled_dot_product_attention(Q, K, V)
    for result in (
        attention_with_dropout(Q, K, V, dropout_p=0.0, rng=rng),
        attention_with_dropout(Q, K, V, dropout_p=0),
        attention_with_dropout(Q, K, V),
    ):
        np.testing.assert_array_equal(result[0], plain[0])
        np.testing.assert_array_equal(result[1], plain[1])
    assert rng.bit_generator.state == state


def test_dropout_is_seeded_through_rng():
    Q, K, V = qkv()
    first = attention_with_dropout(Q, K, V, dropout_p=0.3, rng=np.random.default_rng(7))
    again = attention_with_dropout(Q, K, V, dropout_p=0.3, rng=np.random.default_rng(7))
    other = attention_with_dropout(Q, K, V, dropout_p=0.3, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[1], other[1])


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_zeroes_weights_and_rescales_the_rest_by_one_over_one_minus_p(p):
    Q, K, V = qkv((4, 8, 32, 4))
    _, plain = scaled_dot_product_attention(Q, K, V)
    output, dropped = attention_with_dropout(Q, K, V, dropout_p=p, rng=np.random.default_rng(3))
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], plain[kept] / (1 - p), rtol=4 * np.finfo(float).eps)
    # the output uses the dropped weights: two sums of seq_k = 32 products, each off by 32 eps sum|w v|
    atol = 2 * 32 * np.finfo(float).eps * np.abs(dropped).sum(-1).max() * np.abs(V).max()
    np.testing.assert_allclose(output, dropped @ V, rtol=0, atol=atol)
    # The number dropped is Binomial(n, p): within 6 standard deviations (a chance of 2e-9 to fail
    # for a correct implementation; with the fixed seed, the test is deterministic anyway).
    n = plain.size
    assert abs((~kept).sum() - n * p) <= 6 * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("p", [0.2, 0.6])
def test_dropout_keeps_the_expected_output(p):
    """E[output with dropout] = output without: the 1 / (1 - p) rescaling.

    For one query, output_d = sum_j w_j b_j v_jd / (1 - p) with b_j ~ Bernoulli(1 - p), so
    Var = p / (1 - p) * sum_j w_j**2 v_jd**2. The mean of N independent draws then lies within
    6 of its standard deviations of the true output, for every one of the entries (a chance
    of about 2e-9 each, 1e-6 over all of them, to fail for a correct implementation).
    """
    Q, K, V = qkv((1, 2, 6, 3), seed=4)
    expected, weights = scaled_dot_product_attention(Q, K, V)
    rng = np.random.default_rng(11)
    draws = 4000
    total = np.zeros_like(expected)
    for _ in range(draws):
        total += attention_with_dropout(Q, K, V, dropout_p=p, rng=rng)[0]
    sigma = np.sqrt(p / (1 - p) * np.einsum("...qk,...kd->...qd", weights**2, V**2) / draws)
    z = np.abs(total / draws - expected) / sigma
    assert z.max() <= 6, f"the mean of {draws} dropout outputs is {z.max():.1f} standard deviations off"
    # And the test has power: without the rescaling the mean would be (1 - p) times too small.
    assert (np.abs((1 - p) * expected - expected) / sigma).max() > 6


def test_dropout_keeps_float32():
    Q, K, V = (a.astype(np.float32) for a in qkv())
    output, weights = attention_with_dropout(Q, K, V, dropout_p=0.5, rng=np.random.default_rng(0))
    assert output.dtype == np.float32 and weights.dtype == np.float32


@pytest.mark.parametrize(
    "dropout_p, error, message",
    [
        (1.0, ValueError, "dropout_p must be a float in [0, 1); got 1.0"),
        (-0.1, ValueError, "dropout_p must be a float in [0, 1); got -0.1"),
        (float("nan"), ValueError, "dropout_p must be a float in [0, 1); got nan"),
        ("0.1", TypeError, "dropout_p must be a float in [0, 1); got '0.1' of type str"),
        (True, TypeError, "dropout_p must be a float in [0, 1); got True of type bool"),
    ],
)
def test_bad_dropout_p(dropout_p, error, message):
    with raises(error, message):
        attention_with_dropout(*qkv(), dropout_p=dropout_p, rng=np.random.default_rng(0))


def test_rng_must_be_a_generator():
    with raises(TypeError, "rng must be a numpy.random.Generator (np.random.default_rng(seed)) or None; got 42"):
        attention_with_dropout(*qkv(), dropout_p=0.1, rng=42)


def test_dropout_without_rng_still_drops():
    _, weights = attention_with_dropout(*qkv((2, 8, 40, 4)), dropout_p=0.5)
    # the default generator, unseeded: 25600 weights, each zero with p = 0.5, so the fraction has
    # sigma = sqrt(0.25 / 25600) = 0.0031 and 0.3 is 64 sigma below 0.5 (0 would mean no dropout at all)
    assert (weights == 0).mean() > 0.3


@pytest.mark.parametrize("keyword", ["dropout_p", "rng"])
def test_scaled_dot_product_attention_refuses_dropout_and_says_where_it_lives(keyword):
    value = {"dropout_p": 0.1, "rng": np.random.default_rng(0)}[keyword]
    where = "attention dropout lives in mhattn.attention_with_dropout(Q, K, V, mask, dropout_p=..., rng=...)"
    with raises(TypeError, f"scaled_dot_product_attention() takes no {keyword}=: {where}"):
        scaled_dot_product_attention(*qkv(), **{keyword: value})


def test_dropout_with_a_mask_drops_only_among_the_allowed_weights():
    Q, K, V = qkv((2, 3, 6, 5))
    mask = causal_mask(6)
    _, plain = scaled_dot_product_attention(Q, K, V, mask)
    _, dropped = attention_with_dropout(Q, K, V, mask, dropout_p=0.5, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(dropped[..., ~mask], 0.0)  # a masked key stays at exactly zero
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], plain[kept] / 0.5, rtol=4 * np.finfo(float).eps)


# --- the positions given to project ------------------------------------------------------


def rotary_module_and_tokens():
    """A grouped-query module with RoPE, and tokens of shape (batch, seq_len, d_model) = (2, 4, 16)."""
    x = np.random.default_rng(5).standard_normal((2, 4, 16))
    return GroupedQueryAttention(16, 4, num_kv_heads=2, rope=True, seed=0), x


@pytest.mark.parametrize(
    "positions", [[0.5, 1.5, 2.5, 3.5], np.arange(8).reshape(2, 4) + 0.5], ids=["one-row", "a-row-per-sequence"]
)
def test_project_refuses_fractional_positions_naming_positions(positions):
    mha, x = rotary_module_and_tokens()
    mha.project(x, positions=np.floor(positions).astype(int))  # whole positions of the same shape are taken
    with pytest.raises(TypeError, match="positions"):
        mha.project(x, positions=positions)


@pytest.mark.parametrize(
    "positions",
    [np.arange(3), np.arange(5), np.zeros((2, 3), int), np.zeros((3, 4), int)],
    ids=["shorter", "longer", "shorter-rows", "a-row-too-many"],
)
def test_project_refuses_positions_of_another_length_than_the_tokens(positions):
    mha, x = rotary_module_and_tokens()
    np.testing.assert_array_equal(mha.project(x, positions=np.arange(4))[0], mha.project(x)[0])
    with pytest.raises(ValueError, match="positions"):
        mha.project(x, positions=positions)
