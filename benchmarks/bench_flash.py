"""flash_attention (query and key tiles, online softmax) against the query blocks and torch's SDPA.

Run from the repository root (torch is a benchmark-only dependency; without it the torch
column is left out)::

    python benchmarks/bench_flash.py --threads 1   # a few minutes on an idle 2-core machine
    python benchmarks/bench_flash.py --threads 2
    python benchmarks/bench_flash.py --quick       # fewer repeats, memory up to 8k

Two measurements, side by side in one run:

* **Time** at ``(batch, seq_len, d_model, num_heads) = (1, 4096, 256, 4)``, float32, no
  weights: ``Q, K, V`` of shape ``(1, 4, 4096, 64)``, with and without a causal mask, and
  with flash's ``is_causal=True`` (no mask array) against the blocks' causal mask.
  ``mhattn.engine.flash_attention`` against ``mhattn.engine.blockwise_attention`` (the
  query-block path), both with their default block sizes, and against
  ``torch.nn.functional.scaled_dot_product_attention`` (its fused CPU kernel; with
  ``is_causal=True`` for the two causal lines, with the boolean mask for none). Both
  libraries run ``--threads`` threads (NumPy's BLAS through threadpoolctl, torch through
  ``torch.set_num_threads``). The calls alternate, which one goes first alternates too,
  each timed call follows a 0.2 s pause (OpenBLAS's threads spin ~0.1 s after a call and
  would steal a core from the next) and one untimed call; each line gives the medians and
  the medians of the back-to-back ratios, with their range (neighbouring calls see the same
  load from the rest of the machine). Aims: flash / SDPA <= 1.3, flash / blocks <= 1.5.
* **Memory**: ``tracemalloc``'s peak during one call (NumPy reports every buffer to it), minus
  the output (and, for flash, the log-sum-exp) that the call returns: the *extra* memory.
  From seq_len 1k to 16k, one head of 64 in float32 (more heads multiply both columns). Flash holds one tile of
  ``block_q x block_k`` scores per head group whatever seq_len is. The query blocks hold
  ``BLOCK_SCORES`` scores too, by shrinking the block to ``BLOCK_SCORES // seq_k`` rows, which
  works until a single row no longer fits (seq_k > 2**17); their key norms add ``seq_k``
  numbers per head.

Both outputs are checked equal (to float32 rounding) before anything is timed.
"""

import argparse
import gc
import os
import statistics
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from mhattn import causal_mask
from mhattn.engine import blockwise_attention, flash_attention

MiB = 2**20


def inputs(seq_len, num_heads=4, d_k=64, seed=0):
    generator = np.random.default_rng(seed)
    return tuple(generator.standard_normal((1, num_heads, seq_len, d_k), dtype=np.float32) for _ in range(3))


def side_by_side(calls, repeats, pause):
    """``{name: median seconds}``, and ``{name: (median, min, max)}`` of the first one's time over each one's.

    The calls alternate (the order reverses every round); each timed call follows a pause
    and one untimed call, so no library's spinning threads slow the next one.
    """
    for call in calls.values():
        call()  # warm up
    samples = {name: [] for name in calls}
    order = list(calls.items())
    for r in range(repeats):
        for name, call in order if r % 2 == 0 else order[::-1]:
            time.sleep(pause)
            call()
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    first = samples[next(iter(calls))]
    ratios = {}
    for name, times in samples.items():
        pairs = [a / b for a, b in zip(first, times, strict=True)]
        ratios[name] = (statistics.median(pairs), min(pairs), max(pairs))
    return {name: statistics.median(times) for name, times in samples.items()}, ratios


def sdpa(Q, K, V, mask=None, is_causal=False):
    """torch's fused attention on the same arrays (no copies), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    Qt, Kt, Vt = (torch.from_numpy(a) for a in (Q, K, V))
    mask_t = None if mask is None else torch.from_numpy(mask)
    attend = torch.nn.functional.scaled_dot_product_attention

    def call():
        with torch.no_grad():
            return attend(Qt, Kt, Vt, attn_mask=mask_t, is_causal=is_causal)

    return call


def extra_peak(call):
    """tracemalloc's peak during ``call()`` minus the bytes of the arrays it returns."""
    gc.collect()
    tracemalloc.start()
    try:
        result = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    arrays = result if isinstance(result, tuple) else (result,)
    return peak - sum(a.nbytes for a in arrays)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 repeats instead of 11, memory up to 8k")
    parser.add_argument("--threads", type=int, help="threads of both libraries (default: NumPy's BLAS default)")
    args = parser.parse_args()
    if args.threads:
        threadpool_limits(limits=args.threads, user_api="blas")
    threads = args.threads or max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    try:
        import torch

        torch.set_num_threads(threads)
        versions = f", torch {torch.__version__}"
    except ImportError:
        versions = ", no torch"
    repeats = 5 if args.quick else 11
    pause = 0.2 if threads > 1 else 0.0

    Q, K, V = inputs(4096)
    print(
        f"Time at (batch, seq_len, d_model, heads) = (1, 4096, 256, 4), float32, no weights; {threads} thread(s), "
        f"numpy {np.__version__}{versions}, {repeats} alternating runs, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'mask':>9} {'blocks (ms)':>12} {'flash (ms)':>11} {'SDPA (ms)':>10} "
        f"{'flash / SDPA [range]':>22} {'flash / blocks':>15}"
    )
    causal = causal_mask(4096)
    # is_causal: flash builds each tile's mask from positions (no (n, n) mask); blocks get causal_mask
    for label, mask, flash_mask, is_causal in (
        ("none", None, None, False),
        ("causal", causal, causal, False),
        ("is_causal", causal, None, True),
    ):
        expected = blockwise_attention(Q, K, V, mask)
        output = flash_attention(Q, K, V, flash_mask, is_causal=is_causal)
        np.testing.assert_allclose(output, expected, rtol=0, atol=1e-5, err_msg=f"outputs differ ({label})")
        calls = {
            "flash": lambda m=flash_mask, c=is_causal: flash_attention(Q, K, V, m, is_causal=c),
            "blocks": lambda m=mask: blockwise_attention(Q, K, V, m),
        }
        # torch gets is_causal where flash does, the mask otherwise (its boolean mask: True = attend, as ours)
        theirs = sdpa(Q, K, V, None if is_causal else flash_mask, is_causal)
        if theirs is not None:
            np.testing.assert_allclose(theirs().numpy(), expected, atol=1e-4, err_msg=f"torch differs ({label})")
            calls["SDPA"] = theirs
        seconds, ratios = side_by_side(calls, repeats, pause)
        to_sdpa = "" if "SDPA" not in ratios else "{:.2f} [{:.2f}-{:.2f}]".format(*ratios["SDPA"])
        print(
            f"{label:>9} {seconds['blocks'] * 1e3:12.1f} {seconds['flash'] * 1e3:11.1f} "
            f"{seconds.get('SDPA', float('nan')) * 1e3:10.1f} {to_sdpa:>22} {ratios['blocks'][0]:15.2f}"
        )
    print("flash / SDPA: median [min-max] over back-to-back pairs of flash time / torch time (1: as fast as torch).")

    print()
    print("Extra peak memory (tracemalloc, output excluded), one head of 64, float32, no mask")
    print(f"{'seq_len':>8} {'output (MiB)':>13} {'blocks (MiB)':>13} {'flash (MiB)':>12}")
    seq_lens = [1024, 2048, 4096, 8192] + ([] if args.quick else [16384])
    flash_peaks = []
    for n in seq_lens:
        Q, K, V = inputs(n, num_heads=1)
        blocks = extra_peak(lambda Q=Q, K=K, V=V: blockwise_attention(Q, K, V))
        flash = extra_peak(lambda Q=Q, K=K, V=V: flash_attention(Q, K, V, return_lse=True))
        flash_peaks.append(flash)
        print(f"{n:>8} {Q.nbytes / MiB:13.2f} {blocks / MiB:13.3f} {flash / MiB:12.3f}")
    spread = (max(flash_peaks) - min(flash_peaks)) / MiB
    print(f"flash: extra memory varies by {spread:.3f} MiB from seq_len {seq_lens[0]} to {seq_lens[-1]}")


if __name__ == "__main__":
    main()
