"""Every beginner's mistake ends in a ValueError or TypeError that names the argument,
the expected value or shape and the actual one; never NumPy's broadcasting message."""

import re

import numpy as np
import pytest

from mhattn import MultiHeadAttention, scaled_dot_product_attention


def raises(error, message):
    return pytest.raises(error, match=re.escape(message))


@pytest.mark.parametrize(
    "d_model, num_heads, error, message",
    [
        (64.0, 4, TypeError, "d_model must be a positive int; got 64.0 of type float"),
        ("64", 4, TypeError, "d_model must be a positive int; got '64' of type str"),
        (True, 1, TypeError, "d_model must be a positive int; got True of type bool"),
        (0, 1, ValueError, "d_model must be a positive int; got 0"),
        (64, -2, ValueError, "num_heads must be a positive int; got -2"),
        (64, None, TypeError, "num_heads must be a positive int; got None of type NoneType"),
    ],
)
def test_sizes_must_be_positive_ints(d_model, num_heads, error, message):
    with raises(error, message):
        MultiHeadAttention(d_model, num_heads)


def test_numpy_integers_are_fine_as_sizes():
    mha = MultiHeadAttention(np.int64(12), np.int32(3))
    assert (mha.d_model, mha.num_heads, mha.d_k) == (12, 3, 4)
    assert type(mha.d_k) is int


def test_an_indivisible_head_count_lists_the_ones_that_work():
    message = (
        "num_heads must divide d_model = 12; got num_heads = 5. "
        "Head counts up to 64 that work: [1, 2, 3, 4, 6, 12]"
    )
    with raises(ValueError, message):
        MultiHeadAttention(12, 5)


@pytest.fixture
def mha():
    return MultiHeadAttention(8, 2)


def test_x_must_be_3d(mha):
    with raises(ValueError, "x must be 3-D with shape (batch, seq_len, d_model=8); got shape (5, 8)"):
        mha(np.zeros((5, 8)))


def test_x_must_end_in_d_model(mha):
    message = "x must have shape (batch, seq_len, d_model=8); got shape (1, 5, 6) (last axis 6 != d_model 8)"
    with raises(ValueError, message):
        mha(np.zeros((1, 5, 6)))


@pytest.mark.parametrize("bad, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_x_must_be_finite_and_the_first_bad_entry_is_located(mha, bad, shown):
    x = np.zeros((1, 3, 8))
    x[0, 2, 5] = bad
    with raises(ValueError, f"x must be finite; found {shown} at index (0, 2, 5)"):
        mha(x)


def test_x_must_be_numbers(mha):
    with raises(TypeError, "x must hold real numbers; got an array of dtype complex128"):
        mha(np.zeros((1, 3, 8), dtype=complex))


def test_mask_must_be_boolean(mha):
    message = "mask must be a boolean array (True = this query may attend to this key); got dtype int64"
    with raises(TypeError, message):
        mha(np.zeros((1, 3, 8)), mask=np.ones((3, 3), dtype=np.int64))


@pytest.mark.parametrize("shape", [(4, 4), (3, 1, 3, 3), (1, 3, 3, 3), (3,) * 5, (2, 3), (3,), (3, 1, 3), (2, 2, 3, 1)])
def test_mask_must_have_a_documented_layout(mha, shape):
    message = f"mask of shape {shape} does not fit scores of shape (2, 2, 3, 3): a mask is boolean"
    with raises(ValueError, message) as error:
        mha(np.zeros((2, 3, 8)), mask=np.ones(shape, dtype=bool))
    assert "padding_mask(lengths, seq_len) gives (batch, 1, 1, seq_k)" in str(error.value)


@pytest.mark.parametrize(
    "name, shape, expected",
    [("W_qkv", (8, 16), (8, 24)), ("W_qkv", (24, 8), (8, 24)), ("W_o", (8, 4), (8, 8))],
)
def test_reassigned_weights_of_the_wrong_shape_are_caught_when_used(mha, name, shape, expected):
    setattr(mha, name, np.zeros(shape))
    with raises(ValueError, f"{name} must have shape {expected}; got shape {shape}"):
        mha(np.zeros((1, 3, 8)))


def test_reassigned_weights_must_be_finite(mha):
    W_o = np.eye(8)
    W_o[1, 2] = np.nan
    mha.W_o = W_o
    with raises(ValueError, "W_o must be finite; found nan at index (1, 2)"):
        mha(np.zeros((1, 3, 8)))


def test_reassigned_weights_must_be_numbers(mha):
    mha.W_qkv = np.array([["a"]])
    with raises(TypeError, "W_qkv must hold real numbers; got an array of dtype <U1"):
        mha(np.zeros((1, 3, 8)))


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
