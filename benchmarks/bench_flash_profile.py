"""Where flash_attention's time goes: each pass of its tile loop, timed alone, beside the whole call.

Run from the repository root (torch is optional: without it the SDPA line is left out)::

    python benchmarks/bench_flash_profile.py --threads 1
    python benchmarks/bench_flash_profile.py --threads 2 --seq-len 4096 --heads 4

For ``Q, K, V`` of shape ``(1, heads, seq_len, 64)`` in float32, every step of the tile loop
(one tile of queries against one tile of keys, the tile shape ``flash_attention`` chooses)
runs these passes over the tile's scores:

* ``q @ k.T``: the scores, a matrix product (BLAS);
* ``exp``: NumPy's float32 ``exp``, in place;
* ``row sums``: ``p @ ones`` (BLAS);
* ``p @ v``: the tile's share of the output, accumulated (BLAS);
* ``running max``: the row max, the subtraction and the rescaling, which the loop skips when
  every score is provably small (``mhattn.engine.flash``'s Cauchy-Schwarz test; it is
  skipped for these inputs, and shown for inputs whose scores are large).

Each pass is timed on one tile, many times over, and multiplied by the number of tile steps
of the whole call. Their sum beside the measured call shows what the loop costs beyond its
passes (Python, slicing, the checks); ``torch.nn.functional.scaled_dot_product_attention``
beside them shows which pass the gap lies in. The products' rate is compared with one large
``2048 x 2048`` product, the best BLAS does on this machine.

Threads: NumPy's BLAS through threadpoolctl, torch through ``torch.set_num_threads``. All
numbers are medians of ``--repeats`` timings, each after a pause that lets OpenBLAS's
threads stop spinning.
"""

import argparse
import math
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from mhattn.engine import flash, flash_attention

PAUSE = 0.2  # seconds: OpenBLAS's worker threads spin ~0.1 s after a call


def median_seconds(call, repeats, inner=1):
    """The median over ``repeats`` timings of ``inner`` back-to-back calls, per call."""
    times = []
    for _ in range(repeats):
        time.sleep(PAUSE)
        call()  # untimed: wakes BLAS's threads
        start = time.perf_counter()
        for _ in range(inner):
            call()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def tile_passes(d_k, rows, keys, repeats, inner=50):
    """Seconds per tile step of each pass, on one tile of random scaled queries and keys."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, rows, d_k), dtype=np.float32) / np.float32(math.sqrt(d_k))  # scaled queries
    k, v = (rng.standard_normal((1, keys, d_k), dtype=np.float32) for _ in range(2))
    scores, ones = np.empty((1, rows, keys), np.float32), np.ones(keys, np.float32)
    acc, pv, row_sum = (
        np.zeros((1, rows, d_k), np.float32),
        np.empty((1, rows, d_k), np.float32),
        np.zeros((1, rows), np.float32),
    )
    row_max = np.zeros((1, rows), np.float32)

    def product():
        np.matmul(q, k.swapaxes(-1, -2), out=scores)

    def product_and_exp():
        product()
        np.exp(scores, out=scores)

    def running_max():  # what the loop does when the shortcut does not apply
        new_max = np.maximum(row_max, scores.max(axis=-1))
        alpha = np.exp(row_max - new_max)
        np.subtract(scores, new_max[..., None], out=scores)
        row_sum.__imul__(alpha)
        acc.__imul__(alpha[..., None])

    def product_and_running_max():
        product()
        running_max()

    product_and_exp()
    seconds = {
        "q @ k.T": median_seconds(product, repeats, inner),
        "row sums": median_seconds(lambda: row_sum.__iadd__(scores @ ones), repeats, inner),
        "p @ v": median_seconds(lambda: acc.__iadd__(np.matmul(scores, v, out=pv)), repeats, inner),
    }
    seconds["exp"] = median_seconds(product_and_exp, repeats, inner) - seconds["q @ k.T"]
    seconds["running max (when needed)"] = median_seconds(product_and_running_max, repeats, inner) - seconds["q @ k.T"]
    return seconds


def large_product_gflops(repeats, n=2048):
    a, b = (np.random.default_rng(1).standard_normal((n, n), dtype=np.float32) for _ in range(2))
    return 2 * n**3 / median_seconds(lambda: a @ b, repeats) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="threads of both libraries (default 1)")
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    d_k = 64
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((1, args.heads, args.seq_len, d_k), dtype=np.float32) for _ in range(3))
    heads, rows, keys = flash._tile_shape(args.heads, args.seq_len, args.seq_len, None, None)
    steps = math.ceil(args.heads / heads) * math.ceil(args.seq_len / rows) * math.ceil(args.seq_len / keys)

    with threadpool_limits(args.threads):
        passes = tile_passes(d_k, heads * rows, keys, args.repeats)
        whole = median_seconds(lambda: flash_attention(Q, K, V), args.repeats)
        gflops = large_product_gflops(args.repeats)
        torch_seconds = None
        try:
            import torch
        except ImportError:
            pass
        else:
            torch.set_num_threads(args.threads)
            tq, tk, tv = (torch.from_numpy(a) for a in (Q, K, V))
            with torch.no_grad():
                torch_seconds = median_seconds(
                    lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv), args.repeats
                )

    print(
        f"flash_attention, Q K V {Q.shape} float32, {args.threads} thread(s): {steps} tile steps of "
        f"{heads * rows} queries x {keys} keys"
    )
    print(f"{'pass':28s} {'per tile':>10s} {'whole call':>11s}")
    in_loop = 0.0
    for name, seconds in passes.items():
        skipped = name.startswith("running max")
        in_loop += 0 if skipped else seconds
        print(
            f"{name:28s} {seconds * 1e6:8.1f} us {seconds * steps * 1e3:8.1f} ms"
            + ("  (skipped here)" if skipped else "")
        )
    products = passes["q @ k.T"] + passes["p @ v"]
    flops = 4 * rows * heads * keys * d_k  # two products of 2 * rows * keys * d_k each
    print(f"{'sum of the passes run':28s} {'':>10s} {in_loop * steps * 1e3:8.1f} ms")
    print(f"{'the whole call, measured':28s} {'':>10s} {whole * 1e3:8.1f} ms")
    print(
        f"the tile products run at {flops / products / 1e9:.0f} GFLOP/s; "
        f"one 2048 x 2048 product at {gflops:.0f} GFLOP/s"
    )
    print(f"exp costs {passes['exp'] / (heads * rows * keys) * 1e9:.2f} ns per score")
    if torch_seconds is not None:
        print(
            f"torch SDPA: {torch_seconds * 1e3:.1f} ms; flash / SDPA = {whole / torch_seconds:.2f}; "
            f"the products alone / SDPA = {products * steps / torch_seconds:.2f}; "
            f"products + exp / SDPA = {(products + passes['exp']) * steps / torch_seconds:.2f}"
        )


if __name__ == "__main__":
    main()
