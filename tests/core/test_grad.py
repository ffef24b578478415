"""The backward pass (the vjps of mhattn, GroupedQueryAttention.vjp) against two independent oracles.

1. Central finite differences of the module's own *forward* (not of the vjp's forward), in
   float64. With step h, the difference quotient errs by about h**2 * |f'''| / 6 (truncation)
   plus eps * |L| / h (rounding of the loss L). With h = 1e-6, |L| ~ 10 and eps = 2.2e-16,
   that is ~1e-9 of the gradient's scale: the required 1e-7 leaves a factor of 100.
2. PyTorch autograd on the same computation with the weights copied (float64): the two
   differ only by float64 rounding in a handful of products of inner size <= 3 * d_model,
   ~1e-14 at these magnitudes; the required 1e-10 leaves four orders of magnitude.
"""

import threading

import numpy as np
import oracle
import pytest
from helpers import small_module
from oracle import require_torch, torch

from mhattn import (
    GroupedQueryAttention,
    MultiHeadAttention,
    attention_vjp,
    causal_mask,
    combine_heads,
    combine_heads_vjp,
    linear_vjp,
    multihead_vjp,
    padding_mask,
    repeat_kv_vjp,
    scaled_dot_product_attention,
    softmax,
    softmax_vjp,
    split_heads,
    split_heads_vjp,
)
from mhattn.core.grad_full import layer_vjp

FD_STEP = 1e-6
FD_RTOL = 1e-7  # the bound; the expected error is ~1e-9 (module docstring)
TORCH_ATOL = 1e-10


def relative_error(numeric, analytic):
    """max |numeric - analytic| / max |analytic|: the error on the gradient's own scale."""
    return np.abs(numeric - analytic).max() / np.abs(analytic).max()


def numeric_gradient(loss, array, h=FD_STEP):
    """Central differences of ``loss()`` with respect to every entry of ``array`` (perturbed in place)."""
    return oracle.numeric_gradient(loss, array, h)


def fully_masked_rows_mask(batch, num_heads, seq_len, lengths):
    """Causal and padding together, on queries as well as keys: the padded queries see nothing.

    Shape (batch, 1, seq_len, seq_len); row i of sequence b is all False when i >= lengths[b].
    """
    keys = padding_mask(lengths, seq_len)  # (batch, 1, 1, seq_len)
    queries = keys.transpose(0, 1, 3, 2)  # (batch, 1, seq_len, 1)
    return causal_mask(seq_len) & keys & queries  # (batch, 1, seq_len, seq_len)


MASKS = {
    "none": lambda batch, heads, seq: None,
    "causal": lambda batch, heads, seq: causal_mask(seq),
    "padding": lambda batch, heads, seq: padding_mask(np.arange(batch) % seq + 1, seq),
    "fully_masked_rows": lambda batch, heads, seq: fully_masked_rows_mask(batch, heads, seq, np.arange(batch) % 3 + 1),
    "per_head": lambda batch, heads, seq: np.random.default_rng(7).random((batch, heads, seq, seq)) < 0.6,
}

# (batch, seq_len, d_model, num_heads, num_kv_heads): every axis a different size where possible
SHAPES = [(2, 5, 12, 3, 3), (3, 4, 8, 2, 2), (1, 6, 8, 4, 2), (2, 3, 6, 2, 1)]


def setup(shape, mask_name, seed=0):
    batch, seq_len, d_model, num_heads, num_kv_heads = shape
    mha = GroupedQueryAttention(d_model, num_heads, seed=seed, num_kv_heads=num_kv_heads)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, seq_len, d_model))
    d_output = rng.standard_normal((batch, seq_len, d_model))
    mask = MASKS[mask_name](batch, num_heads, seq_len)
    return mha, x, d_output, mask


# --- finite differences ----------------------------------------------------------------------


@pytest.mark.parametrize("mask_name", list(MASKS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_vjp_matches_central_differences_of_forward_on_x_and_every_weight(shape, mask_name):
    mha, x, d_output, mask = setup(shape, mask_name)
    _, _, backward = mha.vjp(x, mask)
    grads = backward(d_output)
    x = x.copy()

    def loss():  # L = <forward(x), d_output>, so dL/d(output) = d_output
        return float(np.sum(mha.forward(x, mask)[0] * d_output))

    for name, array in (("x", x), ("W_qkv", mha.W_qkv), ("W_o", mha.W_o)):
        numeric = numeric_gradient(loss, array)
        assert relative_error(numeric, grads[name]) < FD_RTOL, name


def test_softmax_vjp_matches_central_differences():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((3, 7)) * 3
    scores[1, [0, 4]] = -np.inf  # masked entries: no gradient flows there
    g = rng.standard_normal((3, 7))

    def loss():
        return float(np.sum(softmax(scores) * g))

    finite = np.isfinite(scores)
    numeric = numeric_gradient(loss, scores)
    analytic = softmax_vjp(softmax(scores), g)
    assert relative_error(numeric[finite], analytic[finite]) < FD_RTOL
    assert np.all(analytic[~finite] == 0.0)


@pytest.mark.parametrize("mask_name", ["none", "causal", "fully_masked_rows"])
def test_attention_vjp_matches_central_differences(mask_name):
    rng = np.random.default_rng(2)
    Q, K, V = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    V = rng.standard_normal((2, 3, 5, 6))  # d_v != d_k
    mask = MASKS[mask_name](2, 3, 5)
    d_output = rng.standard_normal((2, 3, 5, 6))
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    analytic = attention_vjp(Q, K, V, weights, d_output)

    def loss():
        return float(np.sum(scaled_dot_product_attention(Q, K, V, mask)[0] * d_output))

    for array, grad in zip((Q, K, V), analytic, strict=True):
        numeric = numeric_gradient(loss, array)
        assert np.abs(numeric - grad).max() <= FD_RTOL * np.abs(grad).max()


def test_linear_vjp_matches_central_differences():
    rng = np.random.default_rng(3)
    x, W, d_y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((2, 3, 5))
    d_x, d_W = linear_vjp(x, W, d_y)

    def loss():
        return float(np.sum((x @ W) * d_y))

    assert relative_error(numeric_gradient(loss, x), d_x) < FD_RTOL
    assert relative_error(numeric_gradient(loss, W), d_W) < FD_RTOL


# --- the reshapes: a vjp of a linear map is its adjoint ----------------------------------------


def test_split_and_combine_heads_vjps_are_adjoints():
    """<f(x), g> = <x, vjp(g)> for a linear f; for reshapes both sides add the same products."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 12))
    g = rng.standard_normal((2, 3, 5, 4))
    assert np.sum(split_heads(x, 3) * g) == pytest.approx(np.sum(x * split_heads_vjp(g)), rel=1e-13)
    y = rng.standard_normal((2, 3, 5, 4))
    h = rng.standard_normal((2, 5, 12))
    assert np.sum(combine_heads(y) * h) == pytest.approx(np.sum(y * combine_heads_vjp(h, 3)), rel=1e-13)


def test_repeat_kv_vjp_is_the_adjoint_of_repeat():
    rng = np.random.default_rng(5)
    K = rng.standard_normal((2, 2, 5, 4))
    g = rng.standard_normal((2, 6, 5, 4))
    assert np.sum(np.repeat(K, 3, axis=1) * g) == pytest.approx(np.sum(K * repeat_kv_vjp(g, 3)), rel=1e-13)


# --- masks: exactly zero, not merely small -------------------------------------------------------


def test_masked_keys_and_fully_masked_rows_get_exactly_zero_gradient():
    rng = np.random.default_rng(6)
    Q, K, V = (rng.standard_normal((2, 2, 6, 4)) for _ in range(3))
    mask = fully_masked_rows_mask(2, 2, 6, np.array([4, 2]))  # keys and queries >= length are masked
    _, weights = scaled_dot_product_attention(Q, K, V, mask)
    dQ, dK, dV = attention_vjp(Q, K, V, weights, rng.standard_normal((2, 2, 6, 4)))
    for b, length in enumerate([4, 2]):
        assert np.all(dQ[b, :, length:] == 0.0)  # fully masked query rows
        assert np.all(dK[b, :, length:] == 0.0)  # keys nobody may see
        assert np.all(dV[b, :, length:] == 0.0)
        # the rest do get gradient (query 0 sees only key 0: a softmax of one score is constant, so 0 too)
        assert np.all(dQ[b, :, 1:length] != 0.0) and np.all(dK[b, :, :length] != 0.0)


def test_a_padded_token_gets_exactly_zero_gradient_through_the_module():
    mha = GroupedQueryAttention(12, 3, seed=1)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 12))
    lengths = np.array([6, 3])
    output, weights, backward = mha.vjp(x, fully_masked_rows_mask(2, 3, 6, lengths))
    grads = backward(rng.standard_normal(output.shape))  # padded outputs get a gradient too: it must die
    assert np.all(grads["x"][1, 3:] == 0.0)
    assert np.all(grads["x"][1, :3] != 0.0) and np.all(grads["x"][0] != 0.0)
    assert np.all(output[1, 3:] == 0.0) and np.all(weights[1, :, 3:] == 0.0)


def test_without_a_gradient_on_the_output_every_gradient_is_zero():
    mha = GroupedQueryAttention(8, 2, seed=2)
    x = np.random.default_rng(8).standard_normal((2, 4, 8))
    grads = mha.vjp(x, causal_mask(4))[2](np.zeros((2, 4, 8)))
    assert all(np.all(g == 0.0) for g in grads.values())


def test_softmax_vjp_rows_sum_to_zero():
    """Raising every score of a row by the same amount changes nothing, so the gradient has no such part."""
    rng = np.random.default_rng(9)
    weights = softmax(rng.standard_normal((4, 9)) * 4)
    d_scores = softmax_vjp(weights, rng.standard_normal((4, 9)))
    np.testing.assert_allclose(d_scores.sum(axis=-1), 0.0, atol=9 * 4 * np.finfo(np.float64).eps)


# --- the API: shapes, dtypes, purity ---------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("mask_name", ["none", "causal", "fully_masked_rows"])
def test_vjp_forward_is_bitwise_the_module_forward(shape, mask_name):
    mha, x, _, mask = setup(shape, mask_name)
    for dtype in (np.float64, np.float32, np.float16):
        output, weights, _ = mha.vjp(x.astype(dtype), mask)
        expected_output, expected_weights = mha.forward(x.astype(dtype), mask)
        assert output.dtype == expected_output.dtype == dtype and weights.dtype == expected_weights.dtype
        assert np.array_equal(output, expected_output) and np.array_equal(weights, expected_weights)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_gradients_have_the_shape_and_dtype_of_their_inputs(dtype):
    mha = GroupedQueryAttention(12, 3, seed=3, num_kv_heads=1)
    x = np.random.default_rng(10).standard_normal((2, 5, 12)).astype(dtype)
    output, _, backward = mha.vjp(x, causal_mask(5))
    grads = backward(np.ones_like(output))
    assert set(grads) == {"x", "W_qkv", "W_o"}
    assert grads["x"].shape == x.shape and grads["x"].dtype == dtype
    for name in ("W_qkv", "W_o"):
        assert grads[name].shape == getattr(mha, name).shape and grads[name].dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_low_precision_gradients_agree_with_float64(dtype):
    """float16 is computed in float32, like the forward; only the result is rounded to float16.

    The float32 computation errs by about eps32 * sqrt(inner size) relative to the largest
    gradient (inner sizes <= 3 * d_model = 48): ~1e-6; 1e-4 leaves room. float16 adds the
    rounding of x and of the result, 2**-11 each, relative to their own magnitudes.
    """
    mha = GroupedQueryAttention(16, 4, seed=4)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 6, 16)).astype(dtype)  # the float64 reference uses the same rounded x
    d_output = rng.standard_normal((2, 6, 16))
    grads = mha.vjp(x, causal_mask(6))[2](d_output.astype(dtype))
    reference = mha.vjp(x.astype(np.float64), causal_mask(6))[2](d_output.astype(dtype).astype(np.float64))
    rounding = 2.0**-11 if dtype == np.float16 else 0.0
    for name, expected in reference.items():
        scale = np.abs(expected).max()
        tolerance = 1e-4 * scale + rounding * np.abs(expected)
        assert np.all(np.abs(grads[name].astype(np.float64) - expected) <= tolerance), name


def test_vjp_leaves_no_state_on_the_module_and_backward_can_run_twice():
    mha = GroupedQueryAttention(8, 2, seed=5)
    before = {name: (value.copy() if isinstance(value, np.ndarray) else value) for name, value in vars(mha).items()}
    x = np.random.default_rng(12).standard_normal((2, 4, 8))
    _, _, backward = mha.vjp(x, causal_mask(4))
    first = backward(np.ones((2, 4, 8)))
    second = backward(np.ones((2, 4, 8)))
    assert vars(mha).keys() == before.keys()
    for name, value in before.items():
        assert np.array_equal(vars(mha)[name], value) if isinstance(value, np.ndarray) else vars(mha)[name] == value
    assert all(np.array_equal(first[name], second[name]) for name in first)


def test_updating_the_weights_in_place_after_the_forward_does_not_change_backward():
    """An optimizer may step between forward and backward; backward uses the forward's weights."""
    mha = GroupedQueryAttention(8, 2, seed=6)
    x = np.random.default_rng(13).standard_normal((2, 4, 8))
    _, _, backward = mha.vjp(x)
    expected = backward(np.ones((2, 4, 8)))
    mha.W_qkv += 1.0
    mha.W_o *= 3.0
    got = backward(np.ones((2, 4, 8)))
    assert all(np.array_equal(expected[name], got[name]) for name in expected)


def test_vjp_is_safe_to_call_from_several_threads():
    mha = GroupedQueryAttention(16, 4, seed=7)
    rng = np.random.default_rng(14)
    inputs = [rng.standard_normal((2, 5, 16)) for _ in range(8)]
    d_output = np.ones((2, 5, 16))
    expected = [mha.vjp(x, causal_mask(5))[2](d_output) for x in inputs]
    results = [None] * len(inputs)

    def work(i):
        for _ in range(20):
            results[i] = mha.vjp(inputs[i], causal_mask(5))[2](d_output)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected, strict=True):
        assert all(np.array_equal(got[name], want[name]) for name in want)


def test_layer_vjp_on_plain_arrays_equals_the_module():
    mha = GroupedQueryAttention(12, 3, seed=8, num_kv_heads=1)
    x = np.random.default_rng(15).standard_normal((2, 5, 12))
    output, weights, backward = layer_vjp(x, mha.W_qkv, mha.W_o, 3, 1, causal_mask(5))
    expected_output, expected_weights, expected_backward = mha.vjp(x, causal_mask(5))
    assert np.array_equal(output, expected_output) and np.array_equal(weights, expected_weights)
    got, want = backward(np.ones_like(output)), expected_backward(np.ones_like(output))
    assert all(np.array_equal(got[name], want[name]) for name in want)


def test_backward_rejects_a_d_output_of_the_wrong_shape_or_with_nan():
    mha = GroupedQueryAttention(8, 2, seed=9)
    _, _, backward = mha.vjp(np.zeros((2, 4, 8)))
    with pytest.raises(ValueError, match=r"d_output must have the shape of output, \(2, 4, 8\); got shape \(2, 8, 4\)"):
        backward(np.zeros((2, 8, 4)))
    with pytest.raises(ValueError, match="d_output must be finite"):
        backward(np.full((2, 4, 8), np.nan))


def test_a_gradient_that_overflows_float32_raises_instead_of_returning_inf():
    mha = GroupedQueryAttention(8, 2, seed=11)
    x = np.full((2, 4, 8), 1e3, dtype=np.float32)
    _, _, backward = mha.vjp(x)
    with pytest.raises(FloatingPointError, match="overflowed float32"):
        backward(np.full((2, 4, 8), 3e38, dtype=np.float32))


def test_vjp_checks_its_arguments_like_forward():
    mha = GroupedQueryAttention(8, 2, seed=10)
    with pytest.raises(ValueError, match="d_model=8"):
        mha.vjp(np.zeros((2, 4, 6)))
    with pytest.raises(TypeError, match="mask must be a boolean array"):
        mha.vjp(np.zeros((2, 4, 8)), np.ones((4, 4)))


# --- PyTorch autograd ------------------------------------------------------------------------------

def torch_gradients(mha, x, mask, d_output):
    """The same module written in torch (weights copied, our layout), differentiated by autograd."""
    F = torch.nn.functional
    d_model, num_heads, num_kv_heads, d_k = mha.d_model, mha.num_heads, mha.num_kv_heads, mha.d_k
    tx = torch.tensor(x, requires_grad=True)
    W_qkv = torch.tensor(mha.W_qkv, requires_grad=True)
    W_o = torch.tensor(mha.W_o, requires_grad=True)
    batch, seq_len, _ = x.shape
    q, k, v = torch.split(tx @ W_qkv, [d_model, num_kv_heads * d_k, num_kv_heads * d_k], dim=-1)
    q = q.view(batch, seq_len, num_heads, d_k).transpose(1, 2)  # (batch, heads, seq, d_k)
    k = k.view(batch, seq_len, num_kv_heads, d_k).transpose(1, 2)
    v = v.view(batch, seq_len, num_kv_heads, d_k).transpose(1, 2)
    attn_mask = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, enable_gqa=num_kv_heads != num_heads)
    output = heads.transpose(1, 2).reshape(batch, seq_len, d_model) @ W_o
    (output * torch.from_numpy(d_output)).sum().backward()
    return {"x": tx.grad.numpy(), "W_qkv": W_qkv.grad.numpy(), "W_o": W_o.grad.numpy()}


@pytest.mark.parametrize("mask_name", ["none", "causal", "padding", "fully_masked_rows"])
@pytest.mark.parametrize("shape", SHAPES + [(4, 16, 64, 4, 4)], ids=str)
def test_vjp_matches_torch_autograd_in_float64(shape, mask_name):
    require_torch()
    mha, x, d_output, mask = setup(shape, mask_name, seed=3)
    grads = mha.vjp(x, mask)[2](d_output)
    expected = torch_gradients(mha, x, mask, d_output)
    for name in ("x", "W_qkv", "W_o"):
        np.testing.assert_allclose(grads[name], expected[name], rtol=0, atol=TORCH_ATOL, err_msg=name)


# --- the backward never reads an array the caller may change ----------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vjp_backward_ignores_an_in_place_residual_update_of_x(dtype):
    mha, x, d_out = small_module(dtype)
    expected = mha.vjp(x.copy())[2](d_out)  # a backward whose x nobody touches
    output, _, backward = mha.vjp(x)
    x += output  # the residual stream, updated in place after the forward
    for name, grad in backward(d_out).items():
        np.testing.assert_array_equal(grad, expected[name], err_msg=name)


def test_vjp_backward_ignores_changes_to_the_weights_it_returned():
    mha, x, d_out = small_module()
    expected = mha.vjp(x)[2](d_out)
    _, weights, backward = mha.vjp(x)
    weights *= 0.5  # the caller's array: the backward must not read it
    for name, grad in backward(d_out).items():
        np.testing.assert_array_equal(grad, expected[name], err_msg=name)


@pytest.mark.parametrize("vjp", ["multihead_vjp", "layer_vjp"])
def test_multihead_vjp_backward_ignores_in_place_changes_to_every_input(vjp):
    mha, x, d_out = small_module()
    W_qkv, W_o = mha.W_qkv.copy(), mha.W_o.copy()
    run = (lambda *a: multihead_vjp(*a, 2)) if vjp == "multihead_vjp" else (lambda *a: layer_vjp(*a, 2, 2))
    expected = run(x.copy(), W_qkv.copy(), W_o.copy())[2](d_out)
    output, weights, backward = run(x, W_qkv, W_o)
    x += output
    weights *= 0.5
    W_qkv *= 2.0
    W_o -= 1.0
    for name, grad in backward(d_out).items():
        np.testing.assert_array_equal(grad, expected[name], err_msg=name)


@pytest.mark.parametrize("mask_name", ["none", "causal", "fully_masked_rows", "per_head"])
def test_the_seeds_multihead_vjp_equals_the_full_layers_vjp_and_the_seeds_forward(mask_name):
    mha, x, d_output, mask = setup((2, 5, 12, 3, 3), mask_name, seed=4)
    seed = MultiHeadAttention(12, 3, seed=4)
    output, weights, backward = multihead_vjp(x, seed.W_qkv, seed.W_o, 3, mask)
    expected_output, expected_weights = seed(x, mask)
    np.testing.assert_array_equal(output, expected_output)
    np.testing.assert_array_equal(weights, expected_weights)
    full_output, _, full_backward = mha.vjp(x, mask)
    np.testing.assert_array_equal(output, full_output)
    got, want = backward(d_output), full_backward(d_output)
    assert set(got) == {"x", "W_qkv", "W_o"}
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_the_seeds_multihead_vjp_matches_central_differences():
    seed = MultiHeadAttention(8, 2, seed=12)
    rng = np.random.default_rng(18)
    x, d_output = rng.standard_normal((2, 2, 4, 8))
    mask = causal_mask(4)
    grads = multihead_vjp(x, seed.W_qkv, seed.W_o, 2, mask)[2](d_output)

    def loss():
        return float(np.sum(seed(x, mask)[0] * d_output))

    for name, array in (("x", x), ("W_qkv", seed.W_qkv), ("W_o", seed.W_o)):
        assert relative_error(numeric_gradient(loss, array), grads[name]) < FD_RTOL, name
