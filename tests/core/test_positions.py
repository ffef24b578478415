"""Where order comes from: permutation equivariance, the causal mask, sinusoidal encodings.

The sinusoidal encodings are checked entry by entry against Vaswani et al.'s formula written
with ``math.sin``; the offset property against rotation matrices built by hand. Angles
``pos / 10000**(2i/d)`` carry a relative rounding error ~eps, an absolute one ~``pos * eps``
radians, so the tolerances grow with the longest position.
"""

import math

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
from mhattn import MultiHeadAttention, causal_mask, sinusoidal_encoding

EPS = np.finfo(np.float64).eps


@pytest.mark.parametrize(
    ("seq_len", "d_model", "base"), [(50, 16, 10000.0), (7, 5, 10000.0), (30, 1, 100.0), (0, 4, 10.0)]
)
def test_sinusoidal_encoding_matches_the_formula_entry_by_entry(seq_len, d_model, base):
    expected = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for column in range(d_model):
            angle = pos / base ** (2 * (column // 2) / d_model)
            expected[pos, column] = math.sin(angle) if column % 2 == 0 else math.cos(angle)
    encoding = sinusoidal_encoding(seq_len, d_model, base)
    assert encoding.shape == (seq_len, d_model) and encoding.dtype == np.float64
    np.testing.assert_allclose(encoding, expected, rtol=0, atol=8 * EPS * (1 + seq_len))


@pytest.mark.parametrize("offset", [1, 5, 37])
def test_a_fixed_offset_is_one_rotation_for_every_position(offset):
    d_model, seq_len = 16, 100
    encoding = sinusoidal_encoding(seq_len, d_model)
    M = np.zeros((d_model, d_model))  # row form: encoding[pos + offset] = encoding[pos] @ M
    for i in range(d_model // 2):
        b = offset / 10000 ** (2 * i / d_model)
        # (sin a, cos a) -> (sin(a + b), cos(a + b)) = (sin a cos b + cos a sin b, cos a cos b - sin a sin b)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[math.cos(b), -math.sin(b)], [math.sin(b), math.cos(b)]]
    np.testing.assert_allclose(encoding[offset:], encoding[:-offset] @ M, rtol=0, atol=16 * EPS * seq_len)


def test_sinusoidal_dot_products_depend_only_on_the_offset():
    encoding = sinusoidal_encoding(60, 32)
    gram = encoding @ encoding.T  # (60, 60): sum_i cos((p - q) theta_i)
    for offset in range(-59, 60):
        diagonal = np.diagonal(gram, offset)
        assert np.ptp(diagonal) <= 64 * EPS * 32 * 60, offset


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: sinusoidal_encoding(-1, 4), ValueError, "seq_len must be an int >= 0"),
        (lambda: sinusoidal_encoding(3.0, 4), TypeError, "seq_len must be an int >= 0"),
        (lambda: sinusoidal_encoding(3, 0), ValueError, "d_model must be a positive int"),
        (lambda: sinusoidal_encoding(3, 4, base=float("inf")), ValueError, "base must be a positive, finite float"),
    ],
)
def test_sinusoidal_encoding_refuses_bad_arguments(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


# --- attention and order -----------------------------------------------------------------------------------


def test_attention_without_a_mask_is_permutation_equivariant():
    mha = MultiHeadAttention(24, 4, seed=0)
    x = np.random.default_rng(0).standard_normal((2, 9, 24))
    perm = np.random.default_rng(1).permutation(9)
    output, weights = mha(x)
    shuffled_output, shuffled_weights = mha(x[:, perm])
    np.testing.assert_allclose(shuffled_output, output[:, perm], rtol=0, atol=1e-12)
    np.testing.assert_allclose(shuffled_weights, weights[:, :, perm][:, :, :, perm], rtol=0, atol=1e-14)


def test_a_causal_mask_breaks_permutation_equivariance():
    mha = MultiHeadAttention(24, 4, seed=0)
    x = np.random.default_rng(0).standard_normal((1, 9, 24))
    perm = np.random.default_rng(1).permutation(9)
    mask = causal_mask(9)
    assert np.abs(mha(x[:, perm], mask)[0] - mha(x, mask)[0][:, perm]).max() > 1e-2


def two_causal_layers(layers, x):
    """Residual layers without positions: h = h + attention(h) under a causal mask."""
    h = x
    for layer in layers:
        h = h + layer(h, causal_mask(h.shape[1]))[0]
    return h


def test_one_causal_layer_cannot_see_the_order_of_earlier_tokens_but_two_can():
    layers = [MultiHeadAttention(16, 2, seed=s) for s in (1, 2)]
    x = np.random.default_rng(2).standard_normal((1, 8, 16))
    last = 7
    for seed in range(5):
        order = np.r_[np.random.default_rng(seed + 10).permutation(last), last]  # shuffle 0..6, keep token 7 last
        one = two_causal_layers(layers[:1], x)[0, last] - two_causal_layers(layers[:1], x[:, order])[0, last]
        # only the order of the sums changes: rounding, ~ d_model * eps * |h| ~ 1e-14
        assert np.abs(one).max() <= 1e-12, "one causal layer sees the earlier tokens as a set"
        two = two_causal_layers(layers, x)[0, last] - two_causal_layers(layers, x[:, order])[0, last]
        assert np.abs(two).max() > 1e-3, "after two causal layers the last output depends on the order before it"


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(mhattn.interleaved_to_half_split, dict(d_k=4), d_k=[3]),  # an odd d_k has no pairs to reorder
    *refusals(
        mhattn.rope_angles,
        dict(positions=np.array([0, 1, 2]), d_k=4),
        positions=[np.array([[0, 1, 2]]), np.full((1,), 1152921504606846976)]),
    *refusals(
        mhattn.apply_rope,
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4)), positions=np.array([0, 1, 2])),
        x=[np.random.default_rng(0).standard_normal((2, 3, 3))],
        positions=[np.array([[0, 1, 2]]), np.array([0, 1, 2, 3]), np.array([0, 1, 1152921504606846976])]),
    *refusals(
        mhattn.apply_rope_interleaved,
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4)), positions=np.array([0, 1, 2])),
        positions=[np.array([0, 1, 1152921504606846976])]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
