"""mhattn against torch.nn.MultiheadAttention, measured side by side in one run.

Run from the repository root (torch is a benchmark-only dependency)::

    python benchmarks/bench_vs_torch.py            # all four shapes, about a minute
    python benchmarks/bench_vs_torch.py --quick    # fewer repeats
    python benchmarks/bench_vs_torch.py --threads 1  # both libraries on one core

For each shape ``(batch, seq_len, d_model, num_heads)`` in float32 it times two paths:

* ``weights``: ``mha(x)`` against ``torch_mha(x, x, x, average_attn_weights=False)``; both
  return the per-head weights ``(batch, num_heads, seq_len, seq_len)``.
* ``no weights``: ``mha(x, need_weights=False)`` (query blocks, :mod:`mhattn.blockwise`)
  against ``torch_mha(x, x, x, need_weights=False)``, which runs torch's fused
  ``scaled_dot_product_attention``.

Fairness: torch gets the same weights (``in_proj_weight = W_qkv.T``, ``out_proj.weight =
W_o.T``, ``bias=False``, ``batch_first=True``), as many threads as NumPy's BLAS, is built
outside ``inference_mode`` and called under ``no_grad``. Both outputs are checked against
each other before anything is timed. The two libraries alternate run by run (which one
goes first alternates too), with a 0.2 s pause between runs so OpenBLAS's spinning worker
threads do not steal a core from the next call; each row reports the medians and their
ratio. After each pause one untimed call wakes the threads and cores up again (on this
virtual machine, a call right after 0.2 s of idling runs up to twice as slow, for either
library), so both are timed in their steady state. The ratio is what to read: other
processes on the machine slow both sides alike.

Peak memory is measured in a child process started with ``MALLOC_MMAP_THRESHOLD_=65536``
(every large buffer of either library is then its own ``mmap``, returned to the system
when freed), as the growth of the peak resident set size (``VmHWM``, reset through
``/proc/self/clear_refs``) during one call, with the input and the weights already in
memory. For mhattn the ``tracemalloc`` peak is printed too: NumPy reports its buffers to
``tracemalloc``, torch does not.
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import torch
from threadpoolctl import threadpool_info, threadpool_limits

import mhattn

SHAPES = [(1, 6, 64, 4), (8, 128, 256, 8), (4, 512, 512, 8), (1, 4096, 256, 4)]  # (batch, seq_len, d_model, heads)
PAUSE = 0.2  # seconds between runs: lets OpenBLAS's worker threads go to sleep
MiB = 2**20


def numpy_threads():
    """Threads NumPy's BLAS uses (torch gets the same number)."""
    counts = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(counts, default=1)


def build(batch, seq_len, d_model, num_heads):
    """An mhattn module, its torch twin with the same weights, and one float32 input."""
    mha = mhattn.MultiHeadAttention(d_model, num_heads, seed=0)
    twin = torch.nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.from_numpy(mha.W_qkv.T.astype(np.float32)))
        twin.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.astype(np.float32)))
    twin.eval()
    x = np.random.default_rng(0).standard_normal((batch, seq_len, d_model), dtype=np.float32)
    return mha, twin, x


def paths(mha, twin, x):
    """The four calls to compare, as ``{path: (mhattn call, torch call)}``."""
    xt = torch.from_numpy(x)

    def torch_call(**kwargs):
        def call():
            with torch.no_grad():
                return twin(xt, xt, xt, **kwargs)

        return call

    return {
        "weights": (lambda: mha(x), torch_call(average_attn_weights=False)),
        "no weights": (lambda: mha(x, need_weights=False), torch_call(need_weights=False)),
    }


def check_agreement(mha, twin, x):
    """Both libraries must compute the same thing before we time them."""
    for path, (ours, theirs) in paths(mha, twin, x).items():
        (out, w), (out_t, w_t) = ours(), theirs()
        np.testing.assert_allclose(out, out_t.numpy(), rtol=1e-3, atol=1e-4, err_msg=f"outputs differ ({path})")
        if w is not None:
            np.testing.assert_allclose(w, w_t.numpy(), rtol=1e-3, atol=1e-5, err_msg="weights differ")
        else:
            assert w_t is None, "torch returned weights with need_weights=False"


def time_side_by_side(ours, theirs, repeats):
    """Median seconds per call of each, and the median ratio of back-to-back pairs.

    The two calls alternate, and so does which one goes first. A pair of neighbouring runs
    sees the same load from the rest of the machine, so the median of the pairs' ratios is
    steadier than the ratio of the medians when other processes come and go.
    """
    start = time.perf_counter()
    ours()
    once = time.perf_counter() - start
    inner = max(1, int(0.05 / max(once, 1e-7)))  # calls per sample: each sample lasts >= ~50 ms
    for call in (ours, theirs):  # warm up both (allocator, thread pools, caches)
        call()
    samples = {"mhattn": [], "torch": []}
    for r in range(repeats):
        order = [("mhattn", ours), ("torch", theirs)]
        for name, call in order if r % 2 == 0 else order[::-1]:
            time.sleep(PAUSE)  # the other library's worker threads go idle
            call()  # untimed: wakes this library's threads and the idle cores up again
            start = time.perf_counter()
            for _ in range(inner):
                call()
            samples[name].append((time.perf_counter() - start) / inner)
    ratios = [a / b for a, b in zip(samples["mhattn"], samples["torch"], strict=True)]
    return statistics.median(samples["mhattn"]), statistics.median(samples["torch"]), statistics.median(ratios)


def rss_peak_growth(call):
    """Growth of the peak resident set size during ``call()``, in bytes (None if unsupported)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current resident size
    except OSError:
        return None
    before = _status_kib("VmRSS")  # after the reset, VmHWM == VmRSS
    call()
    return (_status_kib("VmHWM") - before) * 1024


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def tracemalloc_peak(call):
    """Peak bytes allocated (through NumPy) during ``call()``, the result included."""
    gc.collect()
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def memory_child():
    """Runs in the child process: print each path's peak memory as JSON lines."""
    for shape in SHAPES:
        mha, twin, x = build(*shape)
        for path, (ours, theirs) in paths(mha, twin, x).items():
            row = {"shape": shape, "path": path}
            for name, call in (("mhattn", ours), ("torch", theirs)):
                call()  # warm-up: weight casts, thread pools
                row[name] = min(rss_peak_growth(call) for _ in range(3))
            row["mhattn_tracemalloc"] = tracemalloc_peak(ours)
            print(json.dumps(row), flush=True)


def measure_memory(threads):
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    child = subprocess.run(
        [sys.executable, __file__, "--memory-child", "--threads", str(threads)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
    return {(tuple(r["shape"]), r["path"]): r for r in rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 repeats instead of 11")
    parser.add_argument("--threads", type=int, help="threads for each library (default: as many as NumPy's BLAS)")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    threads = args.threads or numpy_threads()
    threadpool_limits(limits=threads, user_api="blas")  # mhattn's block threads follow BLAS's count
    torch.set_num_threads(threads)
    if args.memory_child:
        memory_child()
        return
    repeats = 5 if args.quick else 11
    print(
        f"numpy {np.__version__}, torch {torch.__version__}, {threads} threads each, float32, "
        f"{repeats} alternating runs per cell, medians; load average {os.getloadavg()[0]:.2f}"
    )
    memory = measure_memory(threads)
    header = (
        f"{'(batch, seq, d_model, heads)':>29} {'path':>10} {'mhattn':>10} {'torch':>10} {'ratio':>6}"
        f" {'peak mhattn':>12} {'peak torch':>11} {'tracemalloc':>12}"
    )
    print(header)
    print("-" * len(header))
    for shape in SHAPES:
        mha, twin, x = build(*shape)
        check_agreement(mha, twin, x)
        for path, (ours, theirs) in paths(mha, twin, x).items():
            t_ours, t_theirs, ratio = time_side_by_side(ours, theirs, repeats)
            mem = memory[(shape, path)]
            print(
                f"{str(shape):>29} {path:>10} {_ms(t_ours):>10} {_ms(t_theirs):>10} {ratio:>5.2f}x"
                f" {_mib(mem['mhattn']):>12} {_mib(mem['torch']):>11} {_mib(mem['mhattn_tracemalloc']):>12}",
                flush=True,
            )
    print("ratio = median over the runs of mhattn time / torch time in back-to-back pairs (below 1: mhattn is faster).")
    print("peak = growth of the peak resident memory during one call (input and weights already allocated).")


def _ms(seconds):
    return f"{seconds * 1e3:.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"


def _mib(nbytes):
    return "n/a" if nbytes is None else f"{nbytes / MiB:.1f} MiB"


if __name__ == "__main__":
    main()
