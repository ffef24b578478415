"""Where do the microseconds of a tiny forward pass go? (the chapter's size, (1, 6, 64, 4))

Run from the repository root::

    python benchmarks/bench_small_overhead.py

At this size the arithmetic is a few thousand operations: the time is NumPy's fixed cost per
call (about a microsecond each) and Python's. The script times each step of
``MultiHeadAttention.forward`` on its own, the whole call, a leaner variant of the same
computation (``lean_forward`` below: the same numbers, fewer NumPy calls), and
``torch.nn.MultiheadAttention`` with the same weights, all in one run (best of 7 repeats of
a few thousand calls each, which is steady for calls this short).
"""

import math
import timeit

import numpy as np
import torch
from bench_vs_torch import build, numpy_threads

from mhattn import _checks
from mhattn.attention import attend
from mhattn.softmax import softmax_  # noqa: F401 (used in the timed statements)

SHAPE = (1, 6, 64, 4)  # (batch, seq_len, d_model, num_heads)


def lean_softmax_(scores):
    """``softmax_`` with clamps instead of boolean indexing: 5 NumPy calls fewer."""
    row_max = np.maximum.reduce(scores, axis=-1, keepdims=True)
    np.maximum(row_max, np.finfo(scores.dtype).min, out=row_max)  # an all -inf row subtracts a finite number
    np.subtract(scores, row_max, out=scores)
    np.exp(scores, out=scores)
    total = np.add.reduce(scores, axis=-1, keepdims=True)
    np.maximum(total, np.finfo(scores.dtype).tiny, out=total)  # an all -inf row: 0 / tiny = 0
    return np.divide(scores, total, out=scores)


def lean_forward(mha, x):
    """``forward(x)`` with one reshape instead of np.split + three split_heads calls."""
    x = mha._check_input(x)
    batch, seq_len, _ = x.shape
    _checks.broadcast_mask(None, (batch, mha.num_heads, seq_len, seq_len), "")
    W_qkv, W_o = mha._weights(x.dtype)
    qkv = x @ W_qkv  # (batch, seq_len, 3 * d_model)
    Q, K, V = qkv.reshape(batch, seq_len, 3, mha.num_heads, mha.d_k).transpose(2, 0, 3, 1, 4)  # 3 x (b, h, n, d_k)
    scores = (Q * (1.0 / math.sqrt(mha.d_k))) @ K.swapaxes(-1, -2)
    weights = lean_softmax_(scores)
    heads = weights @ V  # (batch, num_heads, seq_len, d_k)
    return heads.transpose(0, 2, 1, 3).reshape(batch, seq_len, mha.d_model) @ W_o, weights


def best_microseconds(statement, namespace, number=3000):
    return min(timeit.repeat(statement, globals=namespace, number=number, repeat=7)) / number * 1e6


def main():
    torch.set_num_threads(numpy_threads())
    mha, twin, x = build(*SHAPE)
    xt = torch.from_numpy(x)
    W_qkv, W_o = mha._weights(x.dtype)
    qkv = x @ W_qkv
    Q, K, V = (mha.split_heads(t) for t in np.split(qkv, 3, axis=-1))
    scores = (Q * 0.25) @ np.swapaxes(K, -1, -2)
    heads, _ = attend(Q, K, V)
    out, weights = lean_forward(mha, x)
    np.testing.assert_allclose(out, mha(x)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights, mha(x)[1], rtol=1e-5, atol=1e-7)

    def torch_call():
        with torch.no_grad():
            return twin(xt, xt, xt, average_attn_weights=False)

    namespace = dict(globals(), **locals())
    steps = [
        ("mha._check_input(x)", "input checks (finite, dtype, shape)"),
        ("mha._weights(x.dtype)", "cached float32 weights"),
        ("x @ W_qkv", "fused projection"),
        ("np.split(qkv, 3, axis=-1)", "np.split"),
        ("[mha.split_heads(t) for t in np.split(qkv, 3, axis=-1)]", "np.split + 3 split_heads"),
        ("qkv.reshape(1, 6, 3, 4, 16).transpose(2, 0, 3, 1, 4)", "one reshape + transpose instead"),
        ("attend(Q, K, V)", "attend"),
        ("softmax_(scores.copy())", "softmax_ (on a copy)"),
        ("lean_softmax_(scores.copy())", "lean softmax_ (on a copy)"),
        ("scores.copy()", "the copy alone"),
        ("mha.combine_heads(heads) @ W_o", "combine_heads + W_o"),
        ("mha(x)", "whole forward, as it is"),
        ("lean_forward(mha, x)", "whole forward, lean"),
        ("torch_call()", "torch.nn.MultiheadAttention"),
    ]
    results = {}
    for statement, label in steps:
        results[label] = best_microseconds(statement, namespace)
        print(f"{results[label]:8.2f} us  {label:<36} {statement}", flush=True)
    torch_us = results["torch.nn.MultiheadAttention"]
    for label in ("whole forward, as it is", "whole forward, lean"):
        print(f"{label}: {torch_us / results[label]:.1f}x faster than torch")


if __name__ == "__main__":
    main()
