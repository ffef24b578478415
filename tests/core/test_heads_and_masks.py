"""split_heads / combine_heads and the two mask builders."""

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals
from hypothesis import given
from hypothesis import strategies as st

import mhattn
from mhattn import (
    MultiHeadAttention,
    causal_mask,
    combine_heads,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)


@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 5), st.integers(1, 6))
def test_split_then_combine_is_the_identity(batch, seq_len, num_heads, d_k):
    x = np.arange(batch * seq_len * num_heads * d_k, dtype=float).reshape(batch, seq_len, num_heads * d_k)
    heads = split_heads(x, num_heads)
    assert heads.shape == (batch, num_heads, seq_len, d_k)
    np.testing.assert_array_equal(combine_heads(heads), x)


@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 5), st.integers(1, 6))
def test_combine_then_split_is_the_identity(batch, seq_len, num_heads, d_k):
    heads = np.arange(batch * num_heads * seq_len * d_k, dtype=float).reshape(batch, num_heads, seq_len, d_k)
    np.testing.assert_array_equal(split_heads(combine_heads(heads), num_heads), heads)


def test_head_h_gets_columns_h_times_d_k_onwards_of_the_same_token():
    batch, seq_len, num_heads, d_k = 2, 5, 3, 4
    x = np.random.default_rng(0).standard_normal((batch, seq_len, num_heads * d_k))
    heads = split_heads(x, num_heads)
    for b in range(batch):
        for h in range(num_heads):
            for t in range(seq_len):
                np.testing.assert_array_equal(heads[b, h, t], x[b, t, h * d_k : (h + 1) * d_k])


def test_split_heads_returns_a_view_not_a_copy():
    x = np.zeros((1, 2, 4))
    assert np.shares_memory(split_heads(x, 2), x)


def test_causal_mask_allows_exactly_the_past_and_present():
    mask = causal_mask(4)
    assert mask.dtype == bool and mask.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert mask[i, j] == (j <= i)


def test_padding_mask_hides_exactly_the_keys_past_each_length():
    mask = padding_mask([3, 0, 5], 5)
    assert mask.dtype == bool and mask.shape == (3, 1, 1, 5)
    for b, length in enumerate([3, 0, 5]):
        assert mask[b, 0, 0].tolist() == [j < length for j in range(5)]


def test_masks_broadcast_against_batch_heads_queries_keys():
    combined = causal_mask(5) & padding_mask([5, 2], 5)
    assert np.broadcast_shapes(combined.shape, (2, 4, 5, 5)) == (2, 4, 5, 5)
    assert not combined[1, 0, 4, 3]  # padding hides key 3 of sequence 1
    assert not combined[0, 0, 1, 2]  # causality hides the future


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: split_heads(np.zeros((2, 3)), 1), ValueError,
         r"x must be 3-D with shape \(batch, seq_len, d_model\); got shape \(2, 3\)"),
        (lambda: split_heads(np.zeros((1, 2, 6)), 4), ValueError,
         r"num_heads must divide d_model = 6; got num_heads = 4"),
        (lambda: split_heads(np.zeros((1, 2, 6)), 0), ValueError, r"num_heads must be a positive int; got 0"),
        (lambda: combine_heads(np.zeros((2, 3, 4))), ValueError,
         r"x must be 4-D with shape \(batch, num_heads, seq_len, d_k\); got shape \(2, 3, 4\)"),
        (lambda: causal_mask(2.5), TypeError, r"seq_len must be a positive int; got 2.5 of type float"),
        (lambda: causal_mask(0), ValueError, r"seq_len must be a positive int; got 0"),
        (lambda: padding_mask([1.5], 4), TypeError, r"lengths must be integers; got dtype float64"),
        (lambda: padding_mask([[1]], 4), ValueError, r"lengths must be 1-D with shape \(batch,\); got shape \(1, 1\)"),
        (lambda: padding_mask([2, 5], 4), ValueError, r"lengths must lie in \[0, seq_len = 4\]; got \[2, 5\]"),
        (lambda: padding_mask([-1], 4), ValueError, r"lengths must lie in \[0, seq_len = 4\]; got \[-1\]"),
    ],
)
def test_bad_arguments_are_named_with_expected_and_actual(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- masks in other libraries' layouts are refused, not applied to the wrong axes -------------


def test_the_annotated_transformers_mask_layout_masks_sequences_in_the_module_and_is_refused_by_attention():
    batch = 4  # == num_heads, so NumPy alone would silently broadcast batch onto the heads
    mha = MultiHeadAttention(8, 4)
    lengths = [6, 4, 2, 1]
    annotated = np.arange(6) < np.array(lengths)[:, None, None]  # (batch, 1, seq): the Annotated Transformer's
    x = np.random.default_rng(0).standard_normal((batch, 6, 8))
    np.testing.assert_array_equal(mha(x, annotated)[1], mha(x, padding_mask(lengths, 6))[1])  # batch, not heads
    Q = np.ones((batch, 4, 6, 2))  # scaled_dot_product_attention's mask follows the scores' axes: refused there
    with pytest.raises(ValueError, match=r"mask of shape \(4, 1, 6\) does not fit .* padding_mask"):
        scaled_dot_product_attention(Q, Q, Q, annotated)


def test_a_batch_by_seq_mask_is_refused_when_batch_differs_from_seq():
    with pytest.raises(ValueError, match=r"mask of shape \(2, 6\) does not fit scores of shape \(2, 2, 6, 6\)"):
        MultiHeadAttention(8, 2)(np.ones((2, 6, 8)), np.ones((2, 6), dtype=bool))


def test_padding_mask_layout_is_accepted_and_means_what_it_says():
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(0).standard_normal((2, 5, 8))
    _, weights = mha(x, padding_mask([5, 2], 5))
    np.testing.assert_array_equal(weights[1, :, :, 2:], 0.0)
    assert np.all(weights[0] > 0)


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.split_heads,
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4)), num_heads=2),
        x=[np.random.default_rng(0).standard_normal((3, 4))],
        num_heads=[3]),
    *refusals(
        mhattn.combine_heads,
        dict(x=np.random.default_rng(0).standard_normal((1, 2, 3, 4))),
        x=[np.random.default_rng(0).standard_normal((2, 3, 4))]),
    *refusals(
        mhattn.padding_mask,
        dict(lengths=np.array([2, 3]), seq_len=3),
        lengths=[np.random.default_rng(0).standard_normal((2,)), np.array([4, 1]), np.array([-1, 1])]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
