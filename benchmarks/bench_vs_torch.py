"""mhattn against torch.nn.MultiheadAttention, side by side, at one or several thread counts.

Run from the repository root (torch is a benchmark-only dependency)::

    python benchmarks/bench_vs_torch.py                      # as many threads as cores
    python benchmarks/bench_vs_torch.py --threads 1,2,4,8,16 # one table, every count
    python benchmarks/bench_vs_torch.py --quick              # fewer repeats

For each shape ``(batch, seq_len, d_model, num_heads)`` in float32 it times:

* ``fast weights``: :class:`mhattn.engine.FastMultiHeadAttention` ``mha(x)`` against
  ``torch_mha(x, x, x, average_attn_weights=False)``; both return the per-head weights;
* ``fast no weights``: ``mha(x, need_weights=False)`` (key tiles, extra memory flat in seq_len)
  against ``torch_mha(x, x, x, need_weights=False)`` (torch's fused attention);
* ``teaching``: the teaching :class:`mhattn.MultiHeadAttention` ``mha(x)``, for the
  chapter-size shape only, against torch's default call ``torch_mha(x, x, x)``.

**Threads.** ``--threads N`` sets the thread count of both libraries for real: each count
runs in its own child process started with ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``
and ``MKL_NUM_THREADS`` set to N (BLAS reads them once, when NumPy is imported; no
threadpoolctl needed, which may not find NumPy's BLAS at all), and calls
``torch.set_num_threads(N)``. The ``blas`` column is how many threads OpenBLAS really
runs: it caps the count at the number of cores; torch does not.

**Fairness.** torch gets the same weights (``in_proj_weight = W_qkv.T``, ``out_proj.weight =
W_o.T``, ``bias=False``, ``batch_first=True``), is built outside ``inference_mode`` and called
under ``no_grad``. Both outputs are compared before anything is timed. The two libraries
alternate run by run (which one goes first alternates too), with a 0.2 s pause between
runs so OpenBLAS's spinning worker threads do not steal a core from the next call, and one
untimed call after each pause. The ratio is the median over back-to-back pairs of mhattn
time / torch time: other processes on the machine slow both sides alike.

**Memory.** Peak memory is measured in another child process started with
``MALLOC_MMAP_THRESHOLD_=65536`` (every large buffer of either library is then its own
``mmap``, returned to the system when freed), as the growth of the peak resident set size
(``VmHWM``, reset through ``/proc/self/clear_refs``) during one call, with the input and
the weights already in memory.
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [(1, 6, 64, 4), (8, 128, 256, 8), (4, 512, 512, 8), (1, 4096, 256, 4)]  # (batch, seq_len, d_model, heads)
CHAPTER_SHAPE = SHAPES[0]
PAUSE = 0.2  # seconds between runs: lets OpenBLAS's worker threads go to sleep
MiB = 2**20


# --- in the child process: one thread count --------------------------------------------------


def build(batch, seq_len, d_model, num_heads):
    """mhattn's two modules, their torch twin with the same weights, and one float32 input."""
    import numpy as np
    import torch

    import mhattn
    from mhattn.engine import FastMultiHeadAttention

    teaching = mhattn.MultiHeadAttention(d_model, num_heads, seed=0)
    fast = FastMultiHeadAttention(d_model, num_heads, seed=0)
    twin = torch.nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.from_numpy(teaching.W_qkv.T.astype(np.float32)))
        twin.out_proj.weight.copy_(torch.from_numpy(teaching.W_o.T.astype(np.float32)))
    twin.eval()
    x = np.random.default_rng(0).standard_normal((batch, seq_len, d_model), dtype=np.float32)
    return teaching, fast, twin, x


def paths(shape):
    """The calls to compare for ``shape``, as ``{path: (mhattn call, torch call)}``."""
    import torch

    teaching, fast, twin, x = build(*shape)
    xt = torch.from_numpy(x)

    def torch_call(**kwargs):
        def call():
            with torch.no_grad():
                return twin(xt, xt, xt, **kwargs)

        return call

    calls = {
        "fast weights": (lambda: fast(x), torch_call(average_attn_weights=False)),
        "fast no weights": (lambda: fast(x, need_weights=False), torch_call(need_weights=False)),
    }
    if shape == CHAPTER_SHAPE:
        calls["teaching"] = (lambda: teaching(x), torch_call())
    return calls


def check_agreement(path, ours, theirs):
    """A guard against gross errors (a wrong axis, a wrong scale) before timing; the tests check precision."""
    import numpy as np

    (out, _), (out_t, _) = ours(), theirs()
    np.testing.assert_allclose(out, out_t.numpy(), rtol=1e-3, atol=1e-4, err_msg=f"outputs differ ({path})")


def time_side_by_side(ours, theirs, repeats):
    """Median seconds per call of each, and the median ratio of back-to-back pairs."""
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
    before = _status("VmRSS")  # after the reset, VmHWM == VmRSS
    call()
    return (_status("VmHWM") - before) * 1024


def _status(field):
    """A number from /proc/self/status (kB for memory fields)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def child(mode, threads, repeats):
    """Print one JSON line per (shape, path): times, or peak memory."""
    import torch

    torch.set_num_threads(threads)
    for shape in SHAPES:
        for path, (ours, theirs) in paths(shape).items():
            row = {"shape": shape, "path": path}
            if mode == "time":
                check_agreement(path, ours, theirs)
                row["mhattn"], row["torch"], row["ratio"] = time_side_by_side(ours, theirs, repeats)
            else:
                for name, call in (("mhattn", ours), ("torch", theirs)):
                    call()  # warm-up: weight casts, thread pools
                    row[name] = min(rss_peak_growth(call) for _ in range(3))
            print(json.dumps(row), flush=True)


# --- in the parent process: one table ----------------------------------------------------------


def run_child(mode, threads, repeats):
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # read once, when NumPy starts
    env = dict(os.environ, **dict.fromkeys(names, str(threads)))
    if mode == "memory":
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    command = [sys.executable, __file__, "--child", mode, "--threads", str(threads), "--repeats", str(repeats)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(f"the {mode} child at {threads} threads failed:\n{result.stderr}")
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {(tuple(r["shape"]), r["path"]): r for r in rows}


def blas_threads(threads):
    """How many threads OpenBLAS really uses when asked for ``threads`` (it caps at the cores)."""
    script = (
        "import numpy, threadpoolctl; "
        "print(max([i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'], "
        "default='?'))"
    )
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
    return result.stdout.strip() or "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 repeats instead of 11")
    parser.add_argument("--threads", default=str(os.cpu_count()), help="a count or a list, e.g. 1,2,4,8,16")
    parser.add_argument("--child", choices=["time", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    counts = [int(n) for n in args.threads.split(",")]
    repeats = args.repeats or (5 if args.quick else 11)
    if args.child:
        child(args.child, counts[0], repeats)
        return

    import numpy as np
    import torch

    print(
        f"numpy {np.__version__}, torch {torch.__version__}, {os.cpu_count()} cores, float32, "
        f"{repeats} alternating runs per cell, medians; load average {os.getloadavg()[0]:.2f}"
    )
    header = (
        f"{'(batch, seq, d_model, heads)':>28} {'path':>15} {'threads':>7} {'blas':>4} {'mhattn':>10} {'torch':>10}"
        f" {'ratio':>6} {'peak mhattn':>12} {'peak torch':>11}"
    )
    print(header)
    print("-" * len(header))
    results = {n: (run_child("time", n, repeats), run_child("memory", n, repeats), blas_threads(n)) for n in counts}
    for key in results[counts[0]][0]:
        for n in counts:
            times, memory, blas = results[n]
            t, m = times[key], memory[key]
            print(
                f"{str(key[0]):>28} {key[1]:>15} {n:>7} {blas:>4} {_ms(t['mhattn']):>10} {_ms(t['torch']):>10}"
                f" {t['ratio']:>5.2f}x {_mib(m['mhattn']):>12} {_mib(m['torch']):>11}",
                flush=True,
            )
    print("ratio = median over the runs of mhattn time / torch time in back-to-back pairs (below 1: mhattn is faster).")
    print("blas = threads OpenBLAS runs when asked for `threads` (capped at the cores); torch runs as many as asked.")
    print("peak = growth of the peak resident memory during one call (input and weights already allocated).")


def _ms(seconds):
    return f"{seconds * 1e3:.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"


def _mib(nbytes):
    return "n/a" if nbytes is None else f"{nbytes / MiB:.1f} MiB"


if __name__ == "__main__":
    main()
