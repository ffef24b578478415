"""Rotary position embeddings (mhattn.apply_rope, RotaryMultiHeadAttention, GroupedQueryAttention(rope=True)).

Oracles, none of which shares code with mhattn:

* the complex-number form: pair ``(x_i, x_{i + d_k/2})`` is the complex number
  ``x_i + 1j x_{i + d_k/2}``, multiplied by ``exp(1j p theta_i)`` (Su et al. 2021, eq. 12);
* the closed form of a rotated score, ``sum_i cos(phi_i) (q1 k1 + q2 k2) + sin(phi_i) (q2 k1 - q1 k2)``
  with ``phi_i = (j - i) theta_i``;
* a per-head loop over ``tests/oracle.py``'s attention, keys and queries rotated by the complex form;
* PyTorch: ``torch.polar`` for the complex form, and Hugging Face's ``rotate_half`` form
  (``x cos + cat(-x2, x1) sin``) under autograd for the gradients;
* central finite differences of the module's own forward.

Tolerances. Angles ``p theta_i`` are computed in float64 with relative error ~eps, an absolute
error ~``p eps`` radians; a dot product over ``d_k`` coordinates adds ~``d_k eps |q| |k|``.
The module's outputs go through products of inner size <= ``d_model`` of numbers below ~10:
~``d_model * eps * 10`` ~ 1e-13 in float64, against the 1e-12 required of decoding.
"""


import numpy as np
import oracle
import pytest
from helpers import close_in
from oracle import complex_rope, frequencies, require_torch, torch

from mhattn import (
    FastMultiHeadAttention,
    GroupedQueryAttention,
    MultiHeadAttention,
    RotaryMultiHeadAttention,
    apply_rope,
    apply_rope_interleaved,
    causal_mask,
    interleaved_to_half_split,
    padding_mask,
    rope_angles,
    rope_vjp,
)
from mhattn.core.grad_full import layer_vjp

EPS = np.finfo(np.float64).eps
FD_STEP, FD_RTOL = 1e-6, 1e-7  # as tests/core/test_grad.py: truncation + rounding error ~1e-9 of the gradient's scale
TORCH_ATOL = 1e-10


def complex_rope_interleaved(x, positions, base=10000.0):
    """RoFormer's pairing: x_{2i} + 1j x_{2i + 1}."""
    z = x[..., 0::2] + 1j * x[..., 1::2]
    turned = z * np.exp(1j * np.asarray(positions, dtype=np.float64)[:, None] * frequencies(x.shape[-1], base))
    out = np.empty(x.shape)
    out[..., 0::2], out[..., 1::2] = turned.real, turned.imag
    return out


def oracle_module(mha, x, mask=None, rotate=complex_rope):
    """A rotary module (RotaryMultiHeadAttention, GroupedQueryAttention(rope=True)) head by head, from the formulas."""
    batch, seq_len, d_model = x.shape
    num_kv_heads = getattr(mha, "num_kv_heads", mha.num_heads)  # the rotary module has no grouped heads
    d_k, group = mha.d_k, mha.num_heads // num_kv_heads
    kv_width = num_kv_heads * d_k
    W_q = mha.W_qkv[:, :d_model]
    W_k = mha.W_qkv[:, d_model : d_model + kv_width]
    W_v = mha.W_qkv[:, d_model + kv_width :]
    positions = np.arange(seq_len)
    heads = []
    for h in range(mha.num_heads):
        g = h // group  # the key/value head this query head reads
        q = rotate(x @ W_q[:, h * d_k : (h + 1) * d_k], positions, mha.rope_base)  # (batch, seq, d_k)
        k = rotate(x @ W_k[:, g * d_k : (g + 1) * d_k], positions, mha.rope_base)
        v = x @ W_v[:, g * d_k : (g + 1) * d_k]
        heads.append(oracle.attention(q[:, None], k[:, None], v[:, None], mask)[0][:, 0])  # (batch, seq, d_k)
    return np.concatenate(heads, axis=-1) @ mha.W_o


# --- the rotation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_k", [2, 16, 64])
def test_rope_score_depends_only_on_the_relative_position(d_k):
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, d_k))
    positions = np.array([0, 1, 2, 5, 17, 40, 1000, 1041])
    rotated_q = apply_rope(np.tile(q, (len(positions), 1)), positions)  # (n, d_k): q at every position
    rotated_k = apply_rope(np.tile(k, (len(positions), 1)), positions)
    scores = rotated_q @ rotated_k.T  # (n, n): scores[a, b] = q at positions[a] . k at positions[b]
    half = d_k // 2
    q1, q2, k1, k2 = q[:half], q[half:], k[:half], k[half:]
    offset = positions[None, :] - positions[:, None]  # (n, n): j - i
    phi = offset[..., None] * frequencies(d_k)  # (n, n, d_k / 2)
    closed_form = (np.cos(phi) * (q1 * k1 + q2 * k2) + np.sin(phi) * (q2 * k1 - q1 * k2)).sum(-1)
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    tol = EPS * scale * (8 * d_k + 8 * positions.max())
    np.testing.assert_allclose(scores, closed_form, rtol=0, atol=tol)
    pairs = {}  # offset j - i -> the scores at that offset, wherever it sits: all equal
    for a in range(len(positions)):
        for b in range(len(positions)):
            pairs.setdefault(offset[a, b], []).append(scores[a, b])
    repeated = {o: s for o, s in pairs.items() if len(s) > 1}
    assert repeated, "the positions should repeat some offsets"
    for o, s in repeated.items():
        assert np.ptp(s) <= 2 * tol, f"offset {o}: scores {s}"


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("magnitude", [1e-3, 1.0, 1e3])
def test_rope_preserves_the_length_of_every_pair_in_every_dtype(dtype, magnitude):
    rng = np.random.default_rng(1)
    x = (magnitude * rng.standard_normal((2, 3, 7, 8))).astype(dtype)
    positions = np.array([0, 1, 2, 3, 100, 10_000, 1_000_000])
    y = apply_rope(x, positions)
    assert y.dtype == dtype and y.shape == x.shape
    pair_norm = lambda a: np.hypot(a[..., :4].astype(np.float64), a[..., 4:].astype(np.float64))  # noqa: E731
    eps = np.finfo(dtype).eps  # float16 is computed in float32, then rounded once: half an ulp per coordinate
    np.testing.assert_allclose(pair_norm(y), pair_norm(x), rtol=4 * eps, atol=0)


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 6, 16), (1, 2, 3, 4, 2)], ids=str)
def test_rope_equals_multiplication_by_a_complex_phase(shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    positions = rng.integers(-50, 5000, size=shape[-2])
    for base in (10000.0, 500.0):
        expected = complex_rope(x, positions, base)
        tol = 8 * EPS * np.abs(x).max() * (1 + np.abs(positions).max())
        np.testing.assert_allclose(apply_rope(x, positions, base=base), expected, rtol=0, atol=tol)


def test_rope_interleaved_is_roformers_pairing_and_equals_half_split_up_to_a_column_permutation():
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 2, 9, 12))
    positions = np.arange(9) + 3
    tol = 8 * EPS * np.abs(q).max() * (1 + positions.max())
    np.testing.assert_allclose(apply_rope_interleaved(q, positions), complex_rope_interleaved(q, positions), atol=tol)
    order = interleaved_to_half_split(12)
    assert sorted(order) == list(range(12)) and list(order[:6]) == [0, 2, 4, 6, 8, 10]
    np.testing.assert_allclose(apply_rope_interleaved(q, positions)[..., order], apply_rope(q[..., order], positions),
                               rtol=0, atol=tol)
    # reorder the columns of both q and k: every score is unchanged
    interleaved = apply_rope_interleaved(q, positions) @ apply_rope_interleaved(k, positions).swapaxes(-1, -2)
    half_split = apply_rope(q[..., order], positions) @ apply_rope(k[..., order], positions).swapaxes(-1, -2)
    np.testing.assert_allclose(half_split, interleaved, rtol=0, atol=12 * tol * np.abs(k).max())


def test_rope_at_position_zero_is_the_identity_and_negative_positions_turn_back():
    x = np.random.default_rng(4).standard_normal((3, 5, 8))
    assert np.array_equal(apply_rope(x, np.zeros(5, dtype=int)), x)  # cos 0 = 1 and sin 0 = 0 exactly
    positions = np.array([1, 7, 30, 500, 9000])
    np.testing.assert_allclose(apply_rope(apply_rope(x, positions), -positions), x, rtol=0, atol=16 * EPS)


def test_rope_vjp_is_the_adjoint_of_the_rotation():
    rng = np.random.default_rng(5)
    x, d = rng.standard_normal((2, 2, 3, 6, 10))
    positions = np.arange(6) * 11
    left = np.vdot(apply_rope(x, positions), d)  # <R x, d>
    right = np.vdot(x, rope_vjp(d, positions))  # <x, R^T d>
    assert abs(left - right) <= 64 * EPS * np.abs(x).sum() * np.abs(d).max()


def test_rope_angles_are_position_times_frequency():
    angles = rope_angles(np.array([0, 1, 3]), 8, base=100.0)
    np.testing.assert_allclose(angles, np.array([0, 1, 3])[:, None] * frequencies(8, 100.0), rtol=2 * EPS)


# --- the module ------------------------------------------------------------------------------------------

# (batch, seq_len, d_model, num_heads, num_kv_heads): ordinary, grouped and multi-query
SHAPES = [(2, 7, 12, 3, 3), (1, 9, 16, 4, 2), (2, 6, 8, 2, 1)]
MASKS = {
    "none": lambda batch, seq: None,
    "causal": lambda batch, seq: causal_mask(seq),
    "padding": lambda batch, seq: padding_mask(np.arange(batch) % seq + 2, seq),
}


@pytest.mark.parametrize("mask_name", list(MASKS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_rope_module_equals_a_per_head_loop_with_complex_rotations(shape, mask_name):
    batch, seq_len, d_model, num_heads, num_kv_heads = shape
    mha = GroupedQueryAttention(d_model, num_heads, seed=1, num_kv_heads=num_kv_heads, rope=True, rope_base=100.0)
    x = 3 * np.random.default_rng(6).standard_normal((batch, seq_len, d_model))
    mask = MASKS[mask_name](batch, seq_len)
    expected = oracle_module(mha, x, mask)
    np.testing.assert_allclose(mha(x, mask)[0], expected, rtol=0, atol=1e-12 * max(1, np.abs(expected).max()))
    if num_kv_heads == num_heads:  # the rotary module of notebook 06 too
        rotary = RotaryMultiHeadAttention(d_model, num_heads, seed=1, rope=True, rope_base=100.0)
        np.testing.assert_allclose(rotary(x, mask)[0], expected, rtol=0, atol=1e-12 * max(1, np.abs(expected).max()))
    fast = FastMultiHeadAttention(d_model, num_heads, seed=1, num_kv_heads=num_kv_heads, rope=True, rope_base=100.0)
    np.testing.assert_allclose(fast(x, mask)[0], expected, rtol=0, atol=1e-12 * max(1, np.abs(expected).max()))


def test_rope_changes_the_module_and_breaks_permutation_equivariance():
    x = np.random.default_rng(7).standard_normal((1, 8, 16))
    plain, rotary = MultiHeadAttention(16, 4, seed=3), RotaryMultiHeadAttention(16, 4, seed=3, rope=True)
    perm = np.random.default_rng(8).permutation(8)
    np.testing.assert_allclose(plain(x[:, perm])[0], plain(x)[0][:, perm], rtol=0, atol=1e-12)
    assert np.abs(rotary(x[:, perm])[0] - rotary(x)[0][:, perm]).max() > 1e-3


def test_rope_module_float32_is_computed_in_float32_and_close_to_float64():
    for module in (RotaryMultiHeadAttention, GroupedQueryAttention):
        mha = module(d_model=16, num_heads=2, seed=4, rope=True)
        x = np.random.default_rng(12).standard_normal((2, 6, 16))
        out32, out64 = mha(x.astype(np.float32))[0], mha(x)[0]
        assert out32.dtype == np.float32
        # inner products of size d_model = 16 over numbers ~ 3, through a softmax whose slope is <= 1 per unit score
        bound = 16 * 16 * np.finfo(np.float32).eps * 9
        assert np.abs(out32 - out64).max() <= bound * max(1, np.abs(out64).max())


# --- gradients -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_kv_heads", [2, 1])
@pytest.mark.parametrize("mask_name", ["none", "causal"])
def test_rope_vjp_matches_central_differences_of_the_forward(num_kv_heads, mask_name):
    mha = GroupedQueryAttention(8, 2, seed=6, num_kv_heads=num_kv_heads, rope=True, rope_base=50.0)
    rng = np.random.default_rng(13)
    x, d_output = rng.standard_normal((2, 2, 5, 8))
    mask = MASKS[mask_name](2, 5)
    grads = mha.vjp(x, mask)[2](d_output)
    for name, array in (("x", x), ("W_qkv", mha.W_qkv), ("W_o", mha.W_o)):
        numeric = oracle.numeric_gradient(lambda: float(np.vdot(mha(x, mask)[0], d_output)), array, FD_STEP)
        error = np.abs(numeric - grads[name]).max() / np.abs(grads[name]).max()
        assert error < FD_RTOL, f"{name}: relative error {error:.2e}"


def test_rope_vjp_forward_is_the_module_forward_and_plain_arrays_agree():
    mha = GroupedQueryAttention(12, 3, seed=7, rope=True)
    x, d_output = np.random.default_rng(14).standard_normal((2, 2, 4, 12))
    output, weights, backward = mha.vjp(x, causal_mask(4))
    expected_output, expected_weights = mha(x, causal_mask(4))
    np.testing.assert_array_equal(output, expected_output)
    np.testing.assert_array_equal(weights, expected_weights)
    plain = layer_vjp(x, mha.W_qkv, mha.W_o, 3, 3, causal_mask(4), rope_base=10000.0)[2](d_output)
    for name, grad in backward(d_output).items():
        np.testing.assert_array_equal(grad, plain[name])


def torch_rotate_half(x, positions, base):
    """Hugging Face's Llama rotation, in torch: x cos + rotate_half(x) sin, rotate_half = cat(-x2, x1)."""
    d_k = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # (d_k / 2,)
    angles = torch.outer(torch.as_tensor(positions, dtype=torch.float64), inv_freq)  # (seq, d_k / 2)
    cos, sin = torch.cat([angles.cos(), angles.cos()], -1), torch.cat([angles.sin(), angles.sin()], -1)
    x1, x2 = x[..., : d_k // 2], x[..., d_k // 2 :]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def test_rope_equals_torch_polar_complex_rotation():
    require_torch()
    x = np.random.default_rng(15).standard_normal((2, 3, 7, 10))
    positions = np.array([0, 1, 2, 50, 51, 900, 4000])
    t = torch.from_numpy(x)
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, 10, 2, dtype=torch.float64) / 10)
    angles = torch.outer(torch.from_numpy(positions).double(), inv_freq)
    phase = torch.polar(torch.ones_like(angles), angles)  # exp(i angle)
    turned = torch.complex(t[..., :5], t[..., 5:]) * phase
    expected = torch.cat([turned.real, turned.imag], -1).numpy()
    tol = 8 * EPS * np.abs(x).max() * (1 + positions.max())
    np.testing.assert_allclose(apply_rope(x, positions), expected, rtol=0, atol=tol)
    np.testing.assert_allclose(apply_rope(x, positions), torch_rotate_half(t, positions, 10000.0).numpy(),
                               rtol=0, atol=tol)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding"])
def test_rope_vjp_matches_torch_autograd_through_torchs_own_rotation(shape, mask_name):
    require_torch()
    batch, seq_len, d_model, num_heads, num_kv_heads = shape
    mha = GroupedQueryAttention(d_model, num_heads, seed=8, num_kv_heads=num_kv_heads, rope=True, rope_base=300.0)
    rng = np.random.default_rng(16)
    x, d_output = rng.standard_normal((2, batch, seq_len, d_model))
    mask = MASKS[mask_name](batch, seq_len)
    output, _, backward = mha.vjp(x, mask)
    grads = backward(d_output)

    d_k, kv_width = mha.d_k, num_kv_heads * mha.d_k
    tx = torch.tensor(x, requires_grad=True)
    W_qkv = torch.tensor(mha.W_qkv, requires_grad=True)
    W_o = torch.tensor(mha.W_o, requires_grad=True)
    q, k, v = torch.split(tx @ W_qkv, [d_model, kv_width, kv_width], dim=-1)
    q = q.view(batch, seq_len, num_heads, d_k).transpose(1, 2)
    k = k.view(batch, seq_len, num_kv_heads, d_k).transpose(1, 2)
    v = v.view(batch, seq_len, num_kv_heads, d_k).transpose(1, 2)
    positions = np.arange(seq_len)
    q, k = torch_rotate_half(q, positions, 300.0), torch_rotate_half(k, positions, 300.0)
    attn_mask = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    heads = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, enable_gqa=num_kv_heads != num_heads
    )
    t_output = heads.transpose(1, 2).reshape(batch, seq_len, d_model) @ W_o
    (t_output * torch.from_numpy(d_output)).sum().backward()
    np.testing.assert_allclose(output, t_output.detach().numpy(), rtol=0, atol=TORCH_ATOL)
    for name, expected in (("x", tx.grad), ("W_qkv", W_qkv.grad), ("W_o", W_o.grad)):
        np.testing.assert_allclose(grads[name], expected.numpy(), rtol=0, atol=TORCH_ATOL, err_msg=name)


# --- argument checks -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: apply_rope(np.ones((4, 7)), np.arange(4)), ValueError, "d_k (the last axis of x) must be even"),
        (lambda: apply_rope(np.ones(8), np.arange(1)), ValueError, "x must have shape (..., seq_len, d_k)"),
        (lambda: apply_rope(np.ones((4, 8)), np.arange(3)), ValueError, "positions must have shape (seq_len,) = (4,)"),
        (lambda: apply_rope(np.ones((4, 8)), np.arange(4.0)), TypeError, "positions must be an array of ints"),
        (lambda: apply_rope(np.ones((4, 8)), np.ones((4, 1), int)), ValueError, "positions must be 1-D"),
        (lambda: apply_rope(np.ones((4, 8)), np.arange(4), base=0), ValueError, "base must be a positive"),
        (lambda: apply_rope(np.ones((4, 8)), np.arange(4), base="1e4"), TypeError, "base must be a positive float"),
        (lambda: apply_rope(np.full((4, 8), np.nan), np.arange(4)), ValueError, "x must be finite"),
        (lambda: interleaved_to_half_split(5), ValueError, "d_k must be even"),
        (lambda: GroupedQueryAttention(12, 4, rope=True), ValueError, "rope=True needs an even d_k"),
        (lambda: GroupedQueryAttention(16, 4, rope=1), TypeError, "rope must be True or False"),
        (lambda: GroupedQueryAttention(16, 4, rope=True, rope_base=-2.0), ValueError, "rope_base must be a positive"),
        (lambda: RotaryMultiHeadAttention(12, 4, rope=True), ValueError, "rope=True needs an even d_k"),
        (lambda: RotaryMultiHeadAttention(16, 4, rope=1), TypeError, "rope must be True or False"),
        (lambda: RotaryMultiHeadAttention(16, 4, rope=True, rope_base=-2.0), ValueError,
         "rope_base must be a positive"),
        (lambda: RotaryMultiHeadAttention(16, 4, rope=False), ValueError, "for no RoPE use mhattn.MultiHeadAttention"),
        (
            lambda: GroupedQueryAttention(16, 4, rope=True)(np.ones((1, 3, 16)), context=np.ones((1, 5, 16))),
            ValueError,
            "context cannot be used with rope",
        ),
    ],
)
def test_rope_refuses_bad_arguments_with_a_message_naming_them(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_rope_off_odd_d_k_is_still_allowed_and_repr_says_rope():
    assert "rope" not in repr(MultiHeadAttention(12, 4))  # d_k = 3 is fine without rope
    assert "rope" not in repr(GroupedQueryAttention(12, 4))
    assert "rope=True" in repr(GroupedQueryAttention(16, 4, rope=True))
    assert "rope=True" in repr(RotaryMultiHeadAttention(16, 4, rope=True))


@pytest.mark.parametrize("rope", [True, "half", "interleaved"])
@pytest.mark.parametrize("mask_name", list(MASKS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_rotary_module_is_grouped_query_attention_with_rope_exactly(rope, mask_name, dtype):
    rotary = RotaryMultiHeadAttention(16, 4, seed=9, rope=rope, rope_base=500.0)
    full = GroupedQueryAttention(16, 4, seed=9, rope=rope, rope_base=500.0)
    np.testing.assert_array_equal(rotary.W_qkv, full.W_qkv)
    np.testing.assert_array_equal(rotary.W_o, full.W_o)
    assert (rotary.rope, rotary.rope_pairing, rotary.rope_base) == (full.rope, full.rope_pairing, full.rope_base)
    x = np.random.default_rng(17).standard_normal((2, 6, 16)).astype(dtype)
    mask = MASKS[mask_name](2, 6)
    positions = np.array([[0, 1, 2, 3, 4, 5], [7, 8, 9, 40, 41, 42]])
    for given in (None, np.arange(6) + 3, positions):
        pairs = zip(rotary(x, mask, positions=given), full(x, mask, positions=given), close_in(full, x, dtype),
                    strict=True)
        for got, want, bound in pairs:
            assert got.dtype == want.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=0, atol=bound)  # float64: exactly (the bound is 0)
