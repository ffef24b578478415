"""An independent oracle for attention, written for the tests.

It shares no code with ``mhattn``: plain Python loops over batch, head and query, one
vector operation at a time, straight from the formulas. Slow and obviously right.
"""

import math
import os

import numpy as np
import pytest

try:  # PyTorch's autograd, the second oracle of the gradient tests: an optional test dependency
    import torch
except ImportError:
    torch = None


def require_torch():
    """torch, for the calling test (or test module); without it, skip, except under CI=true, where it fails."""
    if torch is None:
        if os.environ.get("CI") == "true":
            pytest.fail("torch is not installed, but CI=true: CI must run the comparisons with PyTorch")
        pytest.skip("torch is not installed: comparison with PyTorch skipped", allow_module_level=True)
    return torch


def attention_row(q, K, V, allowed):
    """One query's attention. q: (d_k,), K: (seq_k, d_k), V: (seq_k, d_v), allowed: (seq_k,) bool."""
    scores = [float(np.dot(q, K[j])) / math.sqrt(len(q)) for j in range(len(K))]
    visible = [j for j in range(len(K)) if allowed[j]]
    weights = np.zeros(len(K))
    if not visible:  # a query that may see nothing receives nothing
        return np.zeros(V.shape[1]), weights
    top = max(scores[j] for j in visible)
    for j in visible:
        weights[j] = math.exp(scores[j] - top)
    weights /= weights.sum()
    output = np.zeros(V.shape[1])
    for j in visible:
        output += weights[j] * V[j]
    return output, weights


def attention(Q, K, V, mask=None):
    """Attention for 4-D inputs. Q: (batch, heads, seq_q, d_k), K/V: (batch, heads, seq_k, d).

    mask: None or bool broadcastable to (batch, heads, seq_q, seq_k), True = may attend.
    Returns output (batch, heads, seq_q, d_v) and weights (batch, heads, seq_q, seq_k).
    """
    batch, heads, seq_q, _ = Q.shape
    seq_k = K.shape[2]
    if mask is None:
        mask = np.ones((seq_q, seq_k), dtype=bool)
    mask = np.broadcast_to(mask, (batch, heads, seq_q, seq_k))
    output = np.zeros((batch, heads, seq_q, V.shape[3]))
    weights = np.zeros((batch, heads, seq_q, seq_k))
    for b in range(batch):
        for h in range(heads):
            for i in range(seq_q):
                output[b, h, i], weights[b, h, i] = attention_row(Q[b, h, i], K[b, h], V[b, h], mask[b, h, i])
    return output, weights


def multi_head_attention(x, W_qkv, W_o, num_heads, mask=None):
    """Multi-head self-attention with separate per-head projections cut out of W_qkv.

    x: (batch, seq_len, d_model). Head h's query weights are columns
    h*d_k .. (h+1)*d_k of the first d_model columns of W_qkv; keys and values likewise in
    the second and third blocks of d_model columns.
    """
    batch, seq_len, d_model = x.shape
    d_k = d_model // num_heads
    mask = np.ones((seq_len, seq_len), dtype=bool) if mask is None else mask
    mask = np.broadcast_to(mask, (batch, num_heads, seq_len, seq_len))
    concatenated = np.zeros((batch, seq_len, d_model))
    weights = np.zeros((batch, num_heads, seq_len, seq_len))
    for b in range(batch):
        for h in range(num_heads):
            cols = slice(h * d_k, (h + 1) * d_k)
            W_q = W_qkv[:, :d_model][:, cols]
            W_k = W_qkv[:, d_model : 2 * d_model][:, cols]
            W_v = W_qkv[:, 2 * d_model :][:, cols]
            q, k, v = x[b] @ W_q, x[b] @ W_k, x[b] @ W_v
            for i in range(seq_len):
                concatenated[b, i, cols], weights[b, h, i] = attention_row(q[i], k, v, mask[b, h, i])
    return concatenated @ W_o, weights


def numeric_gradient(loss, array, h):
    """Central differences of ``loss()`` with respect to every entry of ``array`` (perturbed in place, restored)."""
    grad = np.zeros_like(array)
    for index in np.ndindex(array.shape):
        old = array[index]
        array[index] = old + h
        up = loss()
        array[index] = old - h
        down = loss()
        array[index] = old
        grad[index] = (up - down) / (2 * h)
    return grad


def frequencies(d_k, base=10000.0):
    """theta_i = base ** (-2 i / d_k), i = 0 .. d_k/2 - 1, written out once more."""
    return np.array([base ** (-2.0 * i / d_k) for i in range(d_k // 2)])


def complex_rope(x, positions, base=10000.0):
    """RoPE as a complex product: x_i + 1j x_{i + d_k/2} times exp(1j p theta_i)."""
    half = x.shape[-1] // 2
    z = x[..., :half] + 1j * x[..., half:]  # (..., seq, d_k / 2)
    phase = np.exp(1j * np.asarray(positions, dtype=np.float64)[:, None] * frequencies(x.shape[-1], base))
    turned = z * phase  # (..., seq, d_k / 2)
    return np.concatenate([turned.real, turned.imag], axis=-1)
