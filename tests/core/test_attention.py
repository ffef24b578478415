"""scaled_dot_product_attention against an independent per-query loop, with and without masks."""

import warnings

import numpy as np
import oracle
import pytest
from helpers import assert_refused_by_name, raises, random_qkv, refusals
from hypothesis import given, settings
from hypothesis import strategies as st

import mhattn
from mhattn import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention, softmax

# Every axis a different length, so a transposed or mixed-up axis cannot go unnoticed.
SHAPES = [
    (2, 3, 5, 5, 4, 7),  # self-attention
    (3, 2, 4, 7, 6, 5),  # cross-attention, seq_q < seq_k
    (1, 4, 9, 2, 3, 8),  # cross-attention, seq_q > seq_k
]


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_the_oracle_without_a_mask(shape):
    batch, heads, seq_q, seq_k, d_k, d_v = shape
    Q, K, V = random_qkv(np.random.default_rng(0), (batch, heads, seq_q, d_k), seq_k, d_v)
    output, weights = scaled_dot_product_attention(Q, K, V)
    expected_output, expected_weights = oracle.attention(Q, K, V)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_the_oracle_with_a_random_per_head_mask(shape):
    rng = np.random.default_rng(1)
    batch, heads, seq_q, seq_k, d_k, d_v = shape
    Q, K, V = random_qkv(rng, (batch, heads, seq_q, d_k), seq_k, d_v)
    mask = rng.random((batch, heads, seq_q, seq_k)) < 0.6
    mask[0, 0, 0] = False  # at least one fully masked row
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    expected_output, expected_weights = oracle.attention(Q, K, V, mask)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


def test_matches_the_oracle_with_causal_and_padding_masks_combined():
    rng = np.random.default_rng(2)
    Q, K, V = random_qkv(rng, (3, 2, 6, 4), 6, 5)
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
    Q, K, V = random_qkv(rng, (batch, heads, seq_q, d_k), seq_k, 3, dtype=dtype)
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
    Q, K, V = random_qkv(np.random.default_rng(3), (1, 1, 3, 2), 4, 2)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_array_equal(weights[0, 0, 1], 0.0)
    np.testing.assert_array_equal(output[0, 0, 1], 0.0)
    assert np.isfinite(output).all()
    np.testing.assert_allclose(weights[0, 0, [0, 2]].sum(axis=-1), 1.0)


def test_a_mask_that_blocks_nothing_changes_nothing():
    Q, K, V = random_qkv(np.random.default_rng(4), (2, 2, 3, 4), 5, 4)
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
    Q, K, V = random_qkv(np.random.default_rng(7), (1, 2, 3, 4), 3, 4)
    copies = [a.copy() for a in (Q, K, V)]
    scaled_dot_product_attention(Q, K, V, causal_mask(3))
    for before, after in zip(copies, (Q, K, V), strict=True):
        np.testing.assert_array_equal(before, after)


# --- float16, overflow and empty axes: a clear error or an empty result, never a silent NaN ---


def test_float16_attention_is_as_accurate_as_one_rounding_to_float16():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((2, 3, 40, 16)).astype(np.float16) for _ in range(3))
    output, weights = scaled_dot_product_attention(Q, K, V, causal_mask(40))
    assert output.dtype == weights.dtype == np.float16
    exact = [a.astype(np.float64) for a in (Q, K, V)]
    exact_output, exact_weights = scaled_dot_product_attention(*exact, causal_mask(40))
    # float32 arithmetic adds ~seq_k * eps32 relative error, far below the final rounding to float16:
    # each result is within half a float16 spacing of the exact one (one ulp allows for the float32 part).
    for got, exact in ((output, exact_output), (weights, exact_weights)):
        spacing = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(got.astype(np.float64) - exact) <= spacing + 40 * 2**-23 * np.abs(exact).max())


def test_scores_that_overflow_float32_raise_instead_of_returning_nan():
    Q = np.full((1, 4, 8), 1e20, np.float32)  # q.k = 8e40 > float32's 3.4e38
    with pytest.raises(FloatingPointError, match="overflowed float32.*compute in float64"):
        scaled_dot_product_attention(Q, Q, np.ones((1, 4, 2), np.float32))
    output, _ = scaled_dot_product_attention(Q.astype(np.float64), Q.astype(np.float64), np.ones((1, 4, 2)))
    np.testing.assert_array_equal(output, 1.0)  # the same input in float64 is fine


def test_huge_scores_and_a_fully_masked_row_together():
    """The -1e9-for--inf slip: huge scores with an empty row must give zeros there, exact weights elsewhere."""
    Q = np.array([[[1e6, 0.0], [1e6, 0.0], [-1e6, 0.0]]])  # scores ~ +-7e11: far beyond -1e9
    V = np.array([[[1.0], [2.0], [3.0]]])
    mask = np.array([[True, False, False], [False, False, False], [True, True, True]])
    output, weights = scaled_dot_product_attention(Q, Q, V, mask)
    np.testing.assert_array_equal(weights[0, 1], 0.0)  # empty row: nothing, not spread over masked keys
    np.testing.assert_array_equal(output[0, 1], 0.0)
    np.testing.assert_array_equal(weights[0, 0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(weights[0, 2], [0.0, 0.0, 1.0])  # the largest score, q.k = +1e12, wins outright


@pytest.mark.parametrize("name", ["Q", "K", "V"])
def test_a_value_that_is_not_finite_is_refused_even_where_the_mask_hides_it(name):
    """The door reads every value, the key that no query may see included."""
    Q, K, V = (np.random.default_rng(3).standard_normal((1, 2, 4, 8)) for _ in range(3))
    mask = np.ones((4, 4), bool)
    mask[:, -1] = False  # no query sees key 3
    {"Q": Q, "K": K, "V": V}[name][0, 1, -1, 2] = np.nan  # query 3 of head 1 sees keys 0-2 only
    with raises(ValueError, f"{name} must be finite; found nan at index (0, 1, 3, 2)"):
        scaled_dot_product_attention(Q, K, V, mask)


def test_a_call_whose_sums_of_squares_vouch_for_nothing_is_checked_in_full_and_computed_as_usual():
    """float32 queries of 1e19: their sum of squares overflows, the scores (q.k / 8 = 8) do not."""
    Q = np.full((1, 4, 64), 1e19, np.float32)
    K, V = np.full((1, 4, 64), 1e-19, np.float32), np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    output, weights = scaled_dot_product_attention(Q, K, V, causal_mask(4))
    plain_output, plain_weights = scaled_dot_product_attention.__wrapped__(Q, K, V, causal_mask(4))
    np.testing.assert_array_equal(output, plain_output)
    np.testing.assert_array_equal(weights, plain_weights)
    assert output.dtype == np.float32 and np.isfinite(output).all()


@pytest.mark.parametrize("setting", ["ignore", "warn", "raise"])
def test_weights_that_underflow_to_zero_are_no_error_whatever_numpy_is_told(setting):
    # Scores 160 apart in float32: exp(-160) underflows to zero. A reader's np.seterr(under=...) is
    # for their own code; the door runs the body with NumPy's warnings silenced, as always.
    Q = np.zeros((1, 1, 2, 4), np.float32)
    Q[..., 0] = 80.0
    K = np.array([[[[2.0, 0, 0, 0], [-2.0, 0, 0, 0]]]], np.float32)
    V = np.eye(2, 4, dtype=np.float32)[None, None]
    with warnings.catch_warnings(), np.errstate(under=setting):
        warnings.simplefilter("error")
        output, weights = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(weights[0, 0], [[1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_array_equal(output, V[..., :1, :].repeat(2, axis=-2))


@pytest.mark.parametrize("call", ["attention", "module"])
def test_scores_overflowing_to_minus_infinity_raise_instead_of_looking_masked(call):
    """q.k = -8e40: every allowed score is -inf in float32, which looked like a fully masked row (zeros)."""
    Q = np.full((1, 3, 8), 1e20, np.float32)
    if call == "attention":
        with pytest.raises(FloatingPointError, match="overflowed float32.*a score"):
            scaled_dot_product_attention(Q, -Q, np.ones((1, 3, 2), np.float32))
        return
    mha = MultiHeadAttention(8, 2)
    # K = -Q, both ~1e10 x; float32 weights and tokens: the module computes in float32
    mha.W_qkv = (np.hstack([np.eye(8), -np.eye(8), np.eye(8)]) * 1e10).astype(np.float32)
    mha.W_o = mha.W_o.astype(np.float32)
    with pytest.raises(FloatingPointError, match="overflowed float32.*a score"):
        mha(np.full((1, 3, 8), 1e10, np.float32))
    mha(np.full((1, 3, 8), 1e10))  # float64 holds the scores (~1e41): no error


def test_no_queries_give_an_empty_output_and_no_keys_give_zeros():
    Q, K, V = np.ones((2, 0, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 3))
    output, weights = scaled_dot_product_attention(Q, K, V)
    assert output.shape == (2, 0, 3) and weights.shape == (2, 0, 5)
    output, weights = scaled_dot_product_attention(np.ones((2, 3, 4)), np.ones((2, 0, 4)), np.ones((2, 0, 3)))
    np.testing.assert_array_equal(output, np.zeros((2, 3, 3)))  # a query with no key receives nothing
    assert weights.shape == (2, 3, 0)
    assert softmax(np.zeros((3, 0))).shape == (3, 0)


def test_zero_depth_is_named_not_a_division_by_zero():
    with raises(ValueError, "Q and K must have depth d_k >= 1 (last axis), to divide by sqrt(d_k); got Q (2, 3, 0)"):
        scaled_dot_product_attention(np.ones((2, 3, 0)), np.ones((2, 3, 0)), np.ones((2, 3, 1)))


# --- bad input: each error names the argument, the expected and the actual value --------------


Q, K, V = np.zeros((2, 3, 4)), np.zeros((2, 5, 4)), np.zeros((2, 5, 6))


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((Q, np.zeros((2, 5, 3)), V), ValueError,
         "Q and K must have the same depth d_k (last axis); got Q (2, 3, 4) and K (2, 5, 3)"),
        ((Q, K, np.zeros((2, 4, 6))), ValueError,
         "K and V must have the same length seq_k (axis -2); got K (2, 5, 4) and V (2, 4, 6)"),
        ((np.zeros(4), K, V), ValueError, "Q must have shape (..., seq_len, depth); got shape (4,)"),
        ((np.zeros((3, 3, 4)), K, V), ValueError,
         "the leading (batch, head) axes of Q, K and V must broadcast; got Q (3, 3, 4), K (2, 5, 4), V (2, 5, 6)"),
        ((Q, K.astype(bool), V), TypeError, "K must hold real numbers; got an array of dtype bool"),
        ((Q, K, np.full((2, 5, 6), np.nan)), ValueError, "V must be finite; found nan at index (0, 0, 0)"),
    ],
)
def test_sdpa_shape_and_value_errors(args, error, message):
    with raises(error, message):
        scaled_dot_product_attention(*args)


def test_sdpa_mask_must_fit_its_scores():
    message = "mask of shape (3, 3) does not fit scores of shape (2, 3, 5)"
    with raises(ValueError, message):
        scaled_dot_product_attention(Q, K, V, mask=np.ones((3, 3), dtype=bool))


def test_sdpa_mask_must_be_boolean():
    with pytest.raises(TypeError, match="mask must be a boolean array .* got dtype float64"):
        scaled_dot_product_attention(Q, K, V, mask=np.ones((3, 5)))


# --- the scale before the product, and longdouble ---------------------------------------------


RNG = np.random.default_rng(16)


def test_attention_does_not_overflow_q_k_before_dividing_by_sqrt_d_k():
    # |q|, |k| near sqrt(max / 32) with d_k = 64: q . k = 64 * max / 32 = 2 max overflows float32,
    # the score q . k / 8 = max / 4 does not. Equal q and k: the row is all equal scores -> mean of V.
    d_k = 64
    big = np.float32(np.sqrt(np.finfo(np.float32).max / 32))
    Q = np.full((1, 2, d_k), -big, dtype=np.float32)
    K = np.full((3, d_k), big, dtype=np.float32)
    V = RNG.standard_normal((3, 4)).astype(np.float32)
    output, weights = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(weights, np.full((1, 2, 3), 1 / 3), rtol=1e-6)
    np.testing.assert_allclose(output, np.broadcast_to(V.mean(axis=0), (1, 2, 4)), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps, reason="longdouble is float64 here")
def test_longdouble_attention_is_accurate_to_longdouble_precision():
    # Oracle: every score q.k / sqrt(d_k) and the softmax written out in longdouble, one query at a time.
    d_k = 3  # sqrt(3) is irrational: a float64 sqrt errs by ~1e-17, 100x longdouble's eps
    Q = RNG.standard_normal((4, d_k)).astype(np.longdouble)
    K = RNG.standard_normal((5, d_k)).astype(np.longdouble)
    V = RNG.standard_normal((5, 2)).astype(np.longdouble)
    root = np.sqrt(np.longdouble(d_k))
    expected = np.zeros((4, 2), dtype=np.longdouble)
    for i in range(4):
        scores = np.array([sum(Q[i, c] * K[j, c] for c in range(d_k)) / root for j in range(5)])
        exps = np.exp(scores - scores.max())
        expected[i] = sum(exps[j] * V[j] for j in range(5)) / exps.sum()
    output, weights = scaled_dot_product_attention(Q, K, V)
    assert output.dtype == weights.dtype == np.longdouble
    eps = np.finfo(np.longdouble).eps
    assert np.abs(output - expected).max() <= 32 * eps * np.abs(V).max()  # ~d_k + seq_k roundings


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.scaled_dot_product_attention,
        dict(Q=np.random.default_rng(0).standard_normal((3, 4)), K=np.random.default_rng(0).standard_normal((5, 4)),
             V=np.random.default_rng(0).standard_normal((5, 4))),
        K=[np.random.default_rng(0).standard_normal((5, 3))],
        V=[np.random.default_rng(0).standard_normal((4, 4))],
        mask=[np.full((3, 5), 1.0), np.ones((5, 3), bool)]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
