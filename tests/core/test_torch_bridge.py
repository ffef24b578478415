"""MultiHeadAttention against PyTorch's own modules, with the weights copied across.

torch is an optional test dependency: these tests skip where it is missing, except in CI
(CI=true), where a missing torch is a failure, so the comparison always runs there.
"""

import re

import numpy as np
import pytest
from helpers import torch_twin
from oracle import require_torch

from mhattn import (
    GroupedQueryAttention,
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
)

torch = require_torch()


@pytest.mark.parametrize("batch, seq_len, d_model, num_heads", [(1, 6, 64, 4), (3, 7, 24, 3), (2, 5, 16, 8)])
def test_outputs_and_per_head_weights_equal_nn_multiheadattention(batch, seq_len, d_model, num_heads):
    mha = MultiHeadAttention(d_model, num_heads, seed=batch)
    x = np.random.default_rng(seq_len).standard_normal((batch, seq_len, d_model))
    output, weights = mha(x)
    t = torch.from_numpy(x)
    with torch.no_grad():
        expected_output, expected_weights = torch_twin(mha)(t, t, t, need_weights=True, average_attn_weights=False)
    np.testing.assert_allclose(output, expected_output.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(weights, expected_weights.numpy(), rtol=0, atol=1e-10)


def test_a_causal_mask_means_the_opposite_in_nn_multiheadattention():
    """Our mask: True = may attend. nn.MultiheadAttention's boolean attn_mask: True = blocked."""
    mha = MultiHeadAttention(16, 2, seed=3)
    x = np.random.default_rng(0).standard_normal((2, 5, 16))
    mask = causal_mask(5)
    output, weights = mha(x, mask)
    t = torch.from_numpy(x)
    with torch.no_grad():
        expected_output, expected_weights = torch_twin(mha)(
            t, t, t, attn_mask=torch.from_numpy(~mask), average_attn_weights=False
        )
    np.testing.assert_allclose(output, expected_output.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(weights, expected_weights.numpy(), rtol=0, atol=1e-10)


def test_a_padding_mask_matches_key_padding_mask():
    mha = MultiHeadAttention(12, 3, seed=4)
    x = np.random.default_rng(1).standard_normal((3, 6, 12))
    lengths = [6, 4, 1]
    output, _ = mha(x, padding_mask(lengths, 6))
    key_padding_mask = torch.arange(6)[None, :] >= torch.tensor(lengths)[:, None]  # True = padding
    t = torch.from_numpy(x)
    with torch.no_grad():
        expected_output, _ = torch_twin(mha)(t, t, t, key_padding_mask=key_padding_mask)
    np.testing.assert_allclose(output, expected_output.numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("module", [MultiHeadAttention, GroupedQueryAttention])
def test_float32_matches_torch_in_float32(module):
    mha = module(32, 4, seed=5)
    x = np.random.default_rng(2).standard_normal((2, 8, 32)).astype(np.float32)
    output, weights = mha(x, need_weights=True) if module is GroupedQueryAttention else mha(x)
    twin = torch_twin(mha).float()
    t = torch.from_numpy(x)
    with torch.no_grad():
        expected_output, expected_weights = twin(t, t, t, average_attn_weights=False)
    assert output.dtype == np.float32
    np.testing.assert_allclose(output, expected_output.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(weights, expected_weights.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("seq_q, seq_k", [(5, 5), (3, 7)])
def test_sdpa_equals_torch_functional_sdpa_with_the_same_mask_polarity(seq_q, seq_k):
    rng = np.random.default_rng(seq_q)
    Q = rng.standard_normal((2, 3, seq_q, 4))
    K = rng.standard_normal((2, 3, seq_k, 4))
    V = rng.standard_normal((2, 3, seq_k, 6))
    mask = rng.random((2, 1, seq_q, seq_k)) < 0.7
    mask[1, 0, 0] = False  # a fully masked row: torch's CPU SDPA, like mhattn, gives zeros
    output, _ = scaled_dot_product_attention(Q, K, V, mask)
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (Q, K, V)), attn_mask=torch.from_numpy(mask)
    )
    np.testing.assert_allclose(output, expected.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(output[1, :, 0], 0.0)


def test_sdpa_weights_equal_softmax_of_torchs_scaled_scores():
    rng = np.random.default_rng(9)
    Q, K, V = rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 6, 5)), rng.standard_normal((2, 6, 3))
    _, weights = scaled_dot_product_attention(Q, K, V)
    q, k = torch.from_numpy(Q), torch.from_numpy(K)
    expected = torch.softmax(q @ k.transpose(-1, -2) / 5**0.5, dim=-1)
    np.testing.assert_allclose(weights, expected.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn], ids=str)
def test_a_tensor_of_a_dtype_numpy_cannot_hold_is_refused_by_name_with_its_dtype_and_the_conversion(dtype):
    def message(name):
        return rf"^{name} is a {re.escape(str(dtype))} Tensor, which NumPy cannot hold; .*e\.g\. {name}\.float\(\)$"

    rng = np.random.default_rng(6)
    x = torch.from_numpy(rng.standard_normal((2, 5, 8))).to(dtype)
    weights = [rng.standard_normal((8, 8)) for _ in range(4)]
    mha = MultiHeadAttention(8, 2, seed=7)
    with pytest.raises(TypeError, match=message("x")):
        mha(x=x)
    with pytest.raises(TypeError, match=message("x")):
        softmax(x)
    with pytest.raises(TypeError, match=message("W_q")):
        GroupedQueryAttention.from_weights(torch.eye(8).to(dtype), *weights[1:], num_heads=2, layout="torch")
    with pytest.raises(TypeError, match=message("W_k")):
        GroupedQueryAttention.from_weights(weights[0], torch.eye(8).to(dtype), *weights[2:], num_heads=2,
                                           layout="torch")
    # the conversion the message names gives the call it refused
    np.testing.assert_array_equal(mha(x=x.float())[0], mha(x.float().numpy())[0])
    np.testing.assert_array_equal(softmax(x.float()), softmax(x.float().numpy()))
