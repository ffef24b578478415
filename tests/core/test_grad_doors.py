"""The backward helpers check their doors like their forwards: wrong numbers and internals' messages refused.

Each gradient is compared with its definition: RoPE's vjp is the rotation by ``-positions``,
computed here from int64 positions, never from the caller's dtype.
"""

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn  # the vjps behind their doors, as a caller meets them
from mhattn import apply_rope, apply_rope_interleaved

RNG = np.random.default_rng(0)


def test_rope_vjp_of_uint32_positions_is_the_rotation_by_minus_positions():
    d = RNG.standard_normal((2, 3, 4))
    positions = np.array([0, 1, 5], dtype=np.uint32)  # -positions would wrap to 2**32 - p
    expected = apply_rope(d, -positions.astype(np.int64))  # R(p)^T = R(-p)
    np.testing.assert_allclose(mhattn.rope_vjp(d, positions), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("positions", [np.array([0, 1, 5], dtype=np.uint32), np.array([[0, 1, 5], [7, 8, 9]])])
def test_rope_interleaved_vjp_is_the_adjoint_of_the_rotation(positions):
    """<R x, d> = <x, R^T d> for every x and d: the definition of the vjp, with no negation written here."""
    x, d = RNG.standard_normal((2, 2, 3, 4)), RNG.standard_normal((2, 2, 3, 4))
    forward = np.sum(apply_rope_interleaved(x, positions.astype(np.int64)) * d)
    np.testing.assert_allclose(np.sum(x * mhattn.rope_interleaved_vjp(d, positions)), forward, rtol=1e-13)


@pytest.mark.parametrize(("d_rotated", "positions", "name"), [
    (np.ones((3, 4)), np.array([0, 1, np.iinfo(np.int64).min]), "positions"),  # -int64.min wraps to itself
    (np.ones((3, 4)), np.array([0.0, 1.0, 2.0]), "positions"),
    (np.ones((3, 4)), np.arange(4), "positions"),
    (np.ones((3, 3)), np.arange(3), "d_rotated"),  # odd d_k: no pairs
    (np.full((3, 4), np.nan), np.arange(3), "d_rotated"),
])
def test_rope_interleaved_vjp_refuses_before_negating(d_rotated, positions, name):
    with pytest.raises((TypeError, ValueError), match=name):
        mhattn.rope_interleaved_vjp(d_rotated, positions)


@pytest.mark.parametrize(("positions", "base", "name"), [
    (np.array([0, 1, np.iinfo(np.int64).min]), 10000.0, "positions"),  # -int64.min wraps to itself
    (np.array([0, 1, 2**62]), 10000.0, "positions"),  # beyond 2**53: positions no longer exact
    (np.array([0.0, 1.0, 2.0]), 10000.0, "positions"),
    (np.arange(3), 0.0, "base"),
    (np.arange(3), float("nan"), "base"),
])
def test_rope_vjp_refuses_positions_and_bases_before_negating_them(positions, base, name):
    with pytest.raises((TypeError, ValueError), match=name):
        mhattn.rope_vjp(RNG.standard_normal((3, 4)), positions, base)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: mhattn.combine_heads_vjp(np.ones((1, 2, 4)), 0), "num_heads"),
    (lambda: mhattn.combine_heads_vjp(np.ones((1, 2, 4)), 3), "num_heads"),
    (lambda: mhattn.combine_heads_vjp(np.ones((1, 2, 4)), True), "num_heads"),
    (lambda: mhattn.split_heads_vjp(np.ones((2, 3, 4))), "d_heads"),
    (lambda: mhattn.softmax_vjp(np.ones((2, 3)) / 3, np.ones((2, 4))), "d_weights"),
    (lambda: mhattn.softmax_vjp(np.ones((2, 3)) / 3, np.full((2, 3), np.nan)), "d_weights"),
    (lambda: mhattn.attention_vjp(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 5)), np.ones((2, 3)),
                                np.ones((2, 4))), "d_output"),
    (lambda: mhattn.attention_vjp(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 5)), np.ones((3, 3)),
                                np.ones((2, 5))), "weights"),
    (lambda: mhattn.attention_vjp(np.ones((2, 4)), np.ones((3, 2)), np.ones((3, 5)), np.ones((2, 3)),
                                np.ones((2, 5))), "K"),
    (lambda: mhattn.repeat_kv_vjp(np.ones((1, 4, 2, 3)), 3), "group"),
    (lambda: mhattn.repeat_kv_vjp(np.ones((3, 4, 2, 3)), 3), "group"),  # the batch divides, the heads do not
    (lambda: mhattn.repeat_kv_vjp(np.ones((4, 2, 3)), 2), "d_repeated"),
    (lambda: mhattn.linear_vjp(np.ones((2, 3)), np.ones((4, 5)), np.ones((2, 5))), "x"),
    (lambda: mhattn.linear_vjp(np.ones((2, 3)), np.ones((3, 5)), np.ones((2, 4))), "d_y"),
    (lambda: mhattn.linear_vjp(np.ones((2, 3)), np.ma.masked_array(np.ones((3, 5))), np.ones((2, 5))), "W"),
])
def test_each_vjp_names_the_argument_that_does_not_fit(call, name):
    with pytest.raises((TypeError, ValueError), match=name):
        call()


def test_the_vjps_still_match_their_definitions():
    weights = np.array([[0.2, 0.8], [0.5, 0.5]])
    g = np.array([[1.0, 0.0], [0.0, 2.0]])
    jacobian_rows = [np.diag(p) - np.outer(p, p) for p in weights]  # dp/ds per row
    expected = [J.T @ r for J, r in zip(jacobian_rows, g, strict=True)]
    np.testing.assert_allclose(mhattn.softmax_vjp(weights, g), expected, atol=1e-15)
    d_x = RNG.standard_normal((1, 3, 4))
    np.testing.assert_array_equal(mhattn.combine_heads_vjp(d_x, 2), d_x.reshape(1, 3, 2, 2).transpose(0, 2, 1, 3))


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.softmax_vjp,
        dict(weights=np.random.default_rng(0).standard_normal((3, 4)),
             d_weights=np.random.default_rng(0).standard_normal((3, 4))),
        d_weights=[np.random.default_rng(0).standard_normal((1, 3, 4))]),
    *refusals(
        mhattn.attention_vjp,
        dict(Q=np.random.default_rng(0).standard_normal((3, 4)), K=np.random.default_rng(0).standard_normal((5, 4)),
             V=np.random.default_rng(0).standard_normal((5, 4)), weights=np.full((3, 5), 1.0),
             d_output=np.full((3, 4), 1.0)),
        weights=[np.full((1, 3, 5), 1.0)],
        d_output=[np.full((1, 3, 4), 1.0)]),
    *refusals(
        mhattn.split_heads_vjp,
        dict(d_heads=np.random.default_rng(0).standard_normal((1, 2, 3, 4))),
        d_heads=[np.random.default_rng(0).standard_normal((1, 1, 2, 3, 4)),
                 np.random.default_rng(0).standard_normal((2, 3, 4))]),
    *refusals(
        mhattn.combine_heads_vjp,
        dict(d_x=np.random.default_rng(0).standard_normal((2, 3, 4)), num_heads=2),
        d_x=[np.random.default_rng(0).standard_normal((1, 2, 3, 4))],
        num_heads=[3]),
    *refusals(
        mhattn.linear_vjp,
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4)), W=np.full((4, 5), 1.0),
             d_y=np.full((2, 3, 5), 1.0)),
        W=[np.full((1, 4, 5), 1.0)],
        d_y=[np.full((1, 2, 3, 5), 1.0)]),
    *refusals(
        mhattn.repeat_kv_vjp,
        dict(d_repeated=np.random.default_rng(0).standard_normal((1, 2, 3, 4)), group=2),
        d_repeated=[np.random.default_rng(0).standard_normal((1, 1, 2, 3, 4))],
        group=[3]),
    *refusals(
        mhattn.rope_vjp,
        dict(d_rotated=np.random.default_rng(0).standard_normal((2, 3, 4)), positions=np.array([0, 1, 2])),
        positions=[np.array([[0, 1, 2]]), np.array([0, 1, -9223372036854775808])]),
    *refusals(
        mhattn.rope_interleaved_vjp,
        dict(d_rotated=np.random.default_rng(0).standard_normal((2, 3, 4)), positions=np.array([0, 1, 2])),
        d_rotated=[np.random.default_rng(0).standard_normal((2, 3, 3)),
                   np.random.default_rng(0).standard_normal((4,))],
        positions=[np.array([[0, 1, 2]]), np.array([0, 1, 2, 3]), np.array([0, 1, -9223372036854775808])]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
