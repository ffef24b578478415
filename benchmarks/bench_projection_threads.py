"""Would running the projections on mhattn's block threads pay? Measured against torch.

Run from the repository root (torch is a benchmark-only dependency)::

    python benchmarks/bench_projection_threads.py

``MultiHeadAttention.forward`` computes ``x @ W_qkv`` and ``heads @ W_o`` with ``@``, so
OpenBLAS runs them on its own threads, which keep spinning for about 0.1 s after each call.
The attention that follows runs on mhattn's block threads (:mod:`mhattn.blockwise`), and for
its first 0.1 s it shares the cores with those spinning threads. ``proposed_forward`` below
is ``forward`` with its two products written as ``blockwise.matmul(a, b)``, which computes
``a @ b`` on the block threads instead; nothing else differs. This script times the current
forward, the proposed one and ``torch.nn.MultiheadAttention`` side by side (alternating,
medians of back-to-back ratios, see ``bench_vs_torch.py``), for both paths, at the two
shapes where the difference shows.
"""

import statistics
import time

import numpy as np
import torch
from bench_vs_torch import PAUSE, build, numpy_threads

from mhattn import _checks, blockwise
from mhattn.attention import attend

SHAPES = [(4, 512, 512, 8), (1, 4096, 256, 4)]


def proposed_forward(mha, x, mask=None, *, need_weights=True):
    """``MultiHeadAttention.forward`` with both projections on the block threads."""
    x = mha._check_input(x)
    batch, seq_len, _ = x.shape
    mask = _checks.broadcast_mask(mask, (batch, mha.num_heads, seq_len, seq_len), "(batch, num_heads, seq_q, seq_k)")
    W_qkv, W_o = mha._weights(x.dtype)
    qkv = blockwise.matmul(x, W_qkv)  # was: x @ W_qkv
    Q, K, V = np.split(qkv, 3, axis=-1)
    Q, K, V = (mha.split_heads(t) for t in (Q, K, V))
    if need_weights:
        heads, weights = attend(Q, K, V, mask)
    else:
        heads, weights = blockwise.blockwise_attention(Q, K, V, mask), None
    return blockwise.matmul(mha.combine_heads(heads), W_o), weights  # was: ... @ W_o


def compare(mha, twin, x, need_weights, repeats=9):
    """Median seconds of the current forward, the proposed one and torch; median ratios to torch."""
    xt = torch.from_numpy(x)
    kwargs = {"average_attn_weights": False} if need_weights else {"need_weights": False}

    def torch_call():
        with torch.no_grad():
            return twin(xt, xt, xt, **kwargs)

    calls = {
        "current": lambda: mha(x, need_weights=need_weights),
        "proposed": lambda: proposed_forward(mha, x, need_weights=need_weights),
        "torch": torch_call,
    }
    np.testing.assert_allclose(calls["proposed"]()[0], calls["current"]()[0], rtol=1e-5, atol=1e-5)
    times = {name: [] for name in calls}
    for r in range(repeats):
        for name in list(calls) if r % 2 == 0 else list(calls)[::-1]:
            time.sleep(PAUSE)
            calls[name]()  # untimed warm-up after the pause
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    ratios = {
        name: statistics.median(a / b for a, b in zip(times[name], times["torch"], strict=True))
        for name in ("current", "proposed")
    }
    return {name: statistics.median(t) for name, t in times.items()}, ratios


def main():
    torch.set_num_threads(numpy_threads())
    print(f"{numpy_threads()} threads each; medians of 9 alternating runs; ratios against torch")
    for shape in SHAPES:
        mha, twin, x = build(*shape)
        for need_weights in (True, False):
            medians, ratios = compare(mha, twin, x, need_weights)
            path = "weights" if need_weights else "no weights"
            print(
                f"{str(shape):>18} {path:>10}: "
                + ", ".join(f"{name} {medians[name] * 1e3:7.1f} ms ({ratios[name]:.2f}x)" for name in ratios)
                + f", torch {medians['torch'] * 1e3:7.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
