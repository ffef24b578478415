"""softmax: a probability distribution along one axis, for logits of any size."""

import math
import warnings

import numpy as np
import pytest
from helpers import assert_refused_by_name, raises, refusals
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mhattn
from mhattn import softmax

FLOAT_DTYPES = st.sampled_from([np.float32, np.float64])


def logits(dtype=np.float64, max_side=6, bound=1e4):
    return hnp.arrays(
        dtype,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=max_side),
        elements=st.floats(-bound, bound, allow_nan=False, width=np.dtype(dtype).itemsize * 8),
    )


@given(logits(), st.integers(0, 2))
def test_sums_to_one_along_the_chosen_axis_only(x, axis):
    axis = axis % x.ndim
    p = softmax(x, axis=axis)
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=1e-12)
    assert (p >= 0).all() and (p <= 1).all()


@given(logits(bound=100), st.floats(-1e3, 1e3))
def test_adding_a_constant_to_every_logit_changes_nothing(x, shift):
    np.testing.assert_allclose(softmax(x + shift), softmax(x), atol=1e-9)


@given(logits(bound=1e4))
def test_never_overflows_even_for_huge_logits(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in exp would warn
        p = softmax(x * 1e30 if np.abs(x).max() > 0 else x)
    assert np.isfinite(p).all()


@given(FLOAT_DTYPES.flatmap(logits))
def test_keeps_float32_as_float32_and_float64_as_float64(x):
    assert softmax(x).dtype == x.dtype


def test_integers_become_float64():
    assert softmax(np.array([1, 2, 3])).dtype == np.float64


def test_matches_the_textbook_formula_for_moderate_logits():
    x = np.array([[0.5, -1.0, 2.0], [3.0, 3.0, 0.0]])
    by_hand = [[math.exp(v) / sum(math.exp(w) for w in row) for v in row] for row in x]
    np.testing.assert_allclose(softmax(x), by_hand, rtol=1e-14)


def test_huge_logits_of_both_signs_give_the_exact_limit():
    np.testing.assert_array_equal(softmax(np.array([1e4, -1e4, 0.0])), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(softmax(np.array([1e4, 1e4])), [0.5, 0.5])


def test_minus_infinity_gets_exactly_zero_probability():
    p = softmax(np.array([1.0, -np.inf, 1.0]))
    np.testing.assert_array_equal(p, [0.5, 0.0, 0.5])


def test_an_all_minus_infinity_slice_gives_zeros_without_a_warning():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = softmax(x)
    np.testing.assert_array_equal(p, [[0.0, 0.0, 0.0], [0.5, 0.0, 0.5]])


def test_axis_zero_normalises_columns_not_rows():
    x = np.array([[0.0, 1.0], [0.0, 3.0]])
    p = softmax(x, axis=0)
    np.testing.assert_allclose(p.sum(axis=0), [1.0, 1.0])
    assert not np.allclose(p.sum(axis=1), 1.0)


def test_input_is_not_modified():
    x = np.array([1.0, 2.0, 3.0])
    softmax(x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_plus_infinity_is_rejected_by_name(bad):
    with pytest.raises(ValueError, match=r"x must not contain NaN or \+inf"):
        softmax(np.array([0.0, bad]))


def test_an_axis_out_of_range_is_rejected_with_the_shape():
    with pytest.raises(ValueError, match=r"axis must be in \[-2, 1\] for x of shape \(2, 3\); got 2"):
        softmax(np.zeros((2, 3)), axis=2)


def test_non_numeric_input_is_a_type_error():
    with pytest.raises(TypeError, match="x must hold real numbers; got an array of dtype <U1"):
        softmax(np.array(["a", "b"]))


def test_a_non_integer_axis_is_a_type_error():
    with pytest.raises(TypeError, match="axis must be an int; got 1.0 of type float"):
        softmax(np.zeros((2, 3)), axis=1.0)


# --- float16 and scalars: what a user hits at the edges ---------------------------------------


def test_softmax_of_many_float16_zeros_still_sums_to_one():
    weights = softmax(np.zeros(70000, np.float16))  # in float16 alone, each exp(0) / 70000 sum overflowed
    assert weights.dtype == np.float16
    # 70000 equal weights of 1/70000 = 1.43e-5, below float16's smallest normal (6.1e-5): each is rounded
    # once to a subnormal, whose spacing is 2**-24, so each is off by at most 2**-25 and the sum by 70000 * 2**-25.
    assert abs(weights.astype(np.float64).sum() - 1) <= 70000 * 2**-25
    assert weights.astype(np.float64).sum() > 0.99  # the first edition's float16 sum gave all zeros


def test_softmax_of_a_scalar_says_what_it_needs():
    with raises(ValueError, "x must have at least one axis (the scores to normalise); got a scalar 3.0"):
        softmax(3.0)


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.softmax,
        dict(x=np.random.default_rng(0).standard_normal((3, 4)), axis=-1),
        x=[[[True]]],
        axis=[2, -3]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
