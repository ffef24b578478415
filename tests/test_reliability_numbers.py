"""Numbers that were silently wrong: the vjp's backward, overflow before the scaling, dtypes.

Each test states a property the documentation promises and proves it against an oracle that
shares no code with the computation: a fresh backward on untouched copies, float64 or
longdouble recomputation, the formula written out.
"""

import warnings

import numpy as np
import pytest

from mhattn import KVCache, MultiHeadAttention, scaled_dot_product_attention
from mhattn.core.grad import multihead_vjp

RNG = np.random.default_rng(16)


def _setup(dtype=np.float64, seq_len=5):
    mha = MultiHeadAttention(d_model=8, num_heads=2, seed=3)
    x = RNG.standard_normal((2, seq_len, 8)).astype(dtype)
    d_out = RNG.standard_normal((2, seq_len, 8)).astype(dtype)
    return mha, x, d_out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vjp_backward_ignores_an_in_place_residual_update_of_x(dtype):
    mha, x, d_out = _setup(dtype)
    expected = mha.vjp(x.copy())[2](d_out)  # a backward whose x nobody touches
    output, _, backward = mha.vjp(x)
    x += output  # the residual stream, updated in place after the forward
    for name, grad in backward(d_out).items():
        np.testing.assert_array_equal(grad, expected[name], err_msg=name)


def test_vjp_backward_ignores_changes_to_the_weights_it_returned():
    mha, x, d_out = _setup()
    expected = mha.vjp(x)[2](d_out)
    _, weights, backward = mha.vjp(x)
    weights *= 0.5  # the caller's array: the backward must not read it
    for name, grad in backward(d_out).items():
        np.testing.assert_array_equal(grad, expected[name], err_msg=name)


def test_multihead_vjp_backward_ignores_in_place_changes_to_every_input():
    mha, x, d_out = _setup()
    W_qkv, W_o = mha.W_qkv.copy(), mha.W_o.copy()
    expected = multihead_vjp(x.copy(), W_qkv.copy(), W_o.copy(), 2, 2)[2](d_out)
    output, weights, backward = multihead_vjp(x, W_qkv, W_o, 2, 2)
    x += output
    weights *= 0.5
    W_qkv *= 2.0
    W_o -= 1.0
    for name, grad in backward(d_out).items():
        np.testing.assert_array_equal(grad, expected[name], err_msg=name)


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


def _overflowing_module():
    mha = MultiHeadAttention(d_model=4, num_heads=1, seed=0)
    mha.W_qkv = np.zeros((4, 12))
    mha.W_qkv[0, 0] = 1.0  # q = x_0
    mha.W_qkv[0, 4] = -1.0  # k = -x_0: every score is -x_0^2 / 2, -inf in float32 for x_0 = 1e20
    mha.W_o = np.eye(4)
    x = np.zeros((1, 3, 4), dtype=np.float32)
    x[..., 0] = 1e20
    return mha, x


def test_module_with_a_kv_cache_raises_on_overflow_like_the_module_without():
    mha, x = _overflowing_module()
    with pytest.raises(FloatingPointError, match="overflowed float32"):
        mha(x, np.tril(np.ones((3, 3), dtype=bool)))
    cache = KVCache()
    with pytest.raises(FloatingPointError, match="overflowed float32"):
        mha(x, kv_cache=cache)
    assert len(cache) == 0  # the failed step left nothing behind


def test_kv_cache_overflow_against_cached_keys_is_refused():
    mha, x = _overflowing_module()
    cache = KVCache()
    small = np.zeros_like(x[:, :1])
    small[..., 0] = 1e-3
    mha(x[:, :1] * 0 + small, kv_cache=cache)  # a harmless first step
    cache_keys = cache.keys.copy()
    step = np.zeros_like(x[:, :1])
    step[..., 0] = 1e20  # its own score -1e40 / 2 overflows; so would any score against a big cached key
    with pytest.raises(FloatingPointError):
        mha(step, kv_cache=cache)
    np.testing.assert_array_equal(cache.keys, cache_keys)


def test_float32_weights_with_float64_x_warn_nothing():
    mha, x, _ = _setup(np.float64)
    mha.W_qkv, mha.W_o = mha.W_qkv.astype(np.float32), mha.W_o.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        output, _ = mha(x)
    assert output.dtype == np.float64


def test_float64_overflow_message_does_not_advise_float64():
    mha = MultiHeadAttention(d_model=4, num_heads=1, seed=0)
    mha.W_o = np.full((4, 4), 1e300)
    x = np.full((1, 2, 4), 1e10)
    with pytest.raises(FloatingPointError) as error:
        mha(x)
    assert "float64" in str(error.value)  # it names the dtype that overflowed ...
    assert "compute in float64" not in str(error.value)  # ... and offers no wider one: none exists
    with pytest.raises(FloatingPointError) as error:
        mha.vjp(x)
    assert "compute in float64" not in str(error.value)


def test_float32_overflow_message_offers_float64():
    mha = MultiHeadAttention(d_model=4, num_heads=1, seed=0)
    mha.W_o = np.full((4, 4), 1e30)
    with pytest.raises(FloatingPointError, match="compute in float64"):
        mha(np.full((1, 2, 4), 1e10, dtype=np.float32))


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


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble])
def test_module_returns_the_documented_dtype(dtype):
    # forward's docstring: float16 computed in float32 and returned as float16; the others in their own.
    mha, x, d_out = _setup(dtype)
    output, weights = mha(x)
    assert output.dtype == weights.dtype == np.dtype(dtype)
    reference, _ = mha(x.astype(np.float64))
    tolerance = 8 * 8 * float(np.finfo(dtype).eps) * max(np.abs(reference).max(), 1)  # d_model roundings
    np.testing.assert_allclose(output.astype(np.float64), reference, atol=tolerance + 1e-15)
    grads = mha.vjp(x)[2](d_out)
    assert grads["x"].dtype == np.dtype(dtype)
