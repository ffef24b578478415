"""Decoding with a KV cache against recomputing the whole causal forward for every token.

Run from the repository root::

    python benchmarks/bench_kv_cache.py            # 1024 tokens, under a minute on an idle 2-core machine
    python benchmarks/bench_kv_cache.py --tokens 256
    python benchmarks/bench_kv_cache.py --threads 1  # on a busy machine: see below

The module is ``MultiHeadAttention(d_model=256, num_heads=4)`` (and, for the cache's size,
its grouped-query variants), float32, batch 1. A decoder produces token ``t`` from the
tokens before it; for the attention layer that means the output at position ``t`` of

* **without a cache**: ``mha(x[:, :t + 1], causal_mask(t + 1))``, the whole prefix again,
  keeping only its last row: ``O(t)`` projections and ``O(t**2)`` scores for one token;
* **with a cache**: ``mha(x[:, t : t + 1], kv_cache=cache)``: one token's projections and
  ``t + 1`` scores per head.

Both produce the same outputs (checked, to float32 rounding, before the timing is
reported). The two loops run one after the other over all the tokens; each token's time is
recorded, and the per-token cost is printed at a few positions (median over a window of 16
tokens) together with the total. Goal: the cache at least 20x faster over 1024 tokens.

Timings depend on the machine; the exact FLOP counts behind them are in notebook 11. On a
machine busy with other work, OpenBLAS's threads make the small products of short prefixes
erratic (a 17-token forward took 60 ms with 2 threads under load, 0.3 ms with 1): there,
``--threads 1`` gives steadier numbers for both loops.
"""

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from mhattn import MultiHeadAttention, causal_mask
from mhattn.engine import KVCache


def decode_without_cache(mha, x):
    """Each token's output by recomputing the causal forward over its whole prefix."""
    outputs, seconds = [], []
    for t in range(x.shape[1]):
        start = time.perf_counter()
        output, _ = mha(x[:, : t + 1], causal_mask(t + 1))
        seconds.append(time.perf_counter() - start)
        outputs.append(output[:, -1:])
    return np.concatenate(outputs, axis=1), seconds


def decode_with_cache(mha, x):
    """Each token's output with the keys and values of the earlier tokens cached."""
    cache = KVCache()
    outputs, seconds = [], []
    for t in range(x.shape[1]):
        start = time.perf_counter()
        output, _ = mha(x[:, t : t + 1], kv_cache=cache)
        seconds.append(time.perf_counter() - start)
        outputs.append(output)
    return np.concatenate(outputs, axis=1), seconds, cache


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024, help="tokens to decode (default 1024)")
    parser.add_argument("--threads", type=int, help="BLAS threads (default: NumPy's)")
    args = parser.parse_args()
    if args.threads:
        threadpool_limits(limits=args.threads, user_api="blas")
    n, d_model, num_heads = args.tokens, 256, 4
    mha = MultiHeadAttention(d_model, num_heads, seed=0)
    x = np.random.default_rng(0).standard_normal((1, n, d_model), dtype=np.float32)
    mha(x[:, :8], causal_mask(8))  # warm up: the float32 weights are cast once

    cached, with_cache, cache = decode_with_cache(mha, x)
    recomputed, without_cache = decode_without_cache(mha, x)
    full, _ = mha(x, causal_mask(n))
    for name, output in (("with the cache", cached), ("recomputing", recomputed)):
        # float32: sums of d_model = 256 products of O(1) numbers, three matrix products deep
        np.testing.assert_allclose(output, full, rtol=0, atol=1e-4, err_msg=f"decoding {name} differs")

    total_with, total_without = sum(with_cache), sum(without_cache)
    print(f"Decoding {n} tokens, d_model {d_model}, {num_heads} heads, float32, batch 1")
    print(f"  recomputing the causal forward per token: {total_without:8.2f} s")
    print(f"  with the KV cache:                        {total_with:8.2f} s")
    print(f"  speed-up: {total_without / total_with:.1f}x; outputs equal to the full causal forward")
    print()
    print("Per-token cost (median of 16 tokens around position t), in ms")
    print(f"{'t':>6} {'recompute':>10} {'cache':>8}")
    for t in sorted({16, n // 8, n // 4, n // 2, n - 16}):
        window = slice(max(t - 8, 0), t + 8)
        print(
            f"{t:>6} {statistics.median(without_cache[window]) * 1e3:10.3f} "
            f"{statistics.median(with_cache[window]) * 1e3:8.3f}"
        )
    print()
    print(
        f"Cache after {n} tokens: {cache.nbytes / 2**20:.2f} MiB (keys and values, float32), capacity {cache.capacity}"
    )
    for num_kv_heads in (2, 1):
        grouped = KVCache()
        MultiHeadAttention(d_model, num_heads, seed=0, num_kv_heads=num_kv_heads)(x, kv_cache=grouped)
        print(f"  with num_kv_heads = {num_kv_heads}: {grouped.nbytes / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
