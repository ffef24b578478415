"""One training step of notebook 07's model: mhattn (NumPy, hand-written backward) against PyTorch eager.

    python benchmarks/bench_training.py                    # float32, 2 threads
    python benchmarks/bench_training.py --threads 1 --dtype float64
    python benchmarks/bench_training.py --time-to-targets  # also train mhattn until every target is met
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_training.py --default-recipe  # the trainer's CPU time, whole

``--default-recipe`` runs :func:`mhattn.learn.train.train` as ``python -m mhattn.train`` does (3500
steps, its history and probes, one BLAS thread) and prints the CPU time of the process
(``resource.getrusage``) and the 1-minute load average before and after, beside the shipped
model's own record (:func:`mhattn.learn.training_record`, what the trainer's ``--help`` and the
README state). On a loaded machine the CPU time rises too (caches shared with other work), so
read it with the load average.

A step is: draw a batch (64 sequences of 32 tokens), forward, the mean cross-entropy of every
next token (the loss of :func:`mhattn.learn.train.loss_and_grads`), backward, Adam. Both sides start
from the same weights and see the same batches (their first losses must agree), at the same
dtype and the same number of threads (NumPy's BLAS through threadpoolctl, torch through
torch.set_num_threads). PyTorch runs two ways: F.scaled_dot_product_attention with
is_causal=True (what one would write in PyTorch; its fused kernel never holds the weights),
and the explicit softmax (the weights materialised, as mhattn does, to plot them).

The sides alternate in rounds, with a pause between them (OpenBLAS threads keep spinning
for ~0.1 s after a call), and the median over rounds is reported, with the ratio in the same
run: machine load cancels out of the ratio, not out of the absolute numbers.
"""

import argparse
import os
import resource
import statistics
import time

import numpy as np

from mhattn.learn.circuits import claims, measure
from mhattn.learn.model import InductionModel
from mhattn.learn.optim import Adam
from mhattn.learn.shipped import training_record
from mhattn.learn.task import induction_batch
from mhattn.learn.train import BATCH_SIZE, LEARNING_RATE, initial_model, keep_freed_memory, train
from mhattn.learn.training_step import loss_and_grads


def numpy_stepper(model, dtype):
    optimizer = Adam(model.parameters(), lr=LEARNING_RATE)

    def step(tokens, n):
        loss, grads, _ = loss_and_grads(model, tokens, n, dtype)
        optimizer.step(grads)
        return loss

    return step


def torch_stepper(model, dtype, explicit_softmax):
    import torch
    functional = torch.nn.functional

    tdtype = {np.float32: torch.float32, np.float64: torch.float64}[np.dtype(dtype).type]
    params = {name: torch.tensor(array, dtype=tdtype, requires_grad=True) for name, array in model.parameters().items()}
    optimizer = torch.optim.Adam(params.values(), lr=LEARNING_RATE)
    num_layers, num_heads, d_model = len(model.layers), model.num_heads, model.d_model
    d_k = d_model // num_heads
    causal = torch.ones(model.max_len, model.max_len, dtype=torch.bool).tril()

    def attention(h, W_qkv, W_o):
        batch, seq_len, _ = h.shape
        q, k, v = (h @ W_qkv).view(batch, seq_len, 3, num_heads, d_k).permute(2, 0, 3, 1, 4)
        if explicit_softmax:
            scores = (q @ k.transpose(-1, -2)) / d_k**0.5
            weights = scores.masked_fill(~causal[:seq_len, :seq_len], float("-inf")).softmax(dim=-1)
            heads = weights @ v
        else:
            heads = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return heads.transpose(1, 2).reshape(batch, seq_len, d_model) @ W_o

    def step(tokens, n):
        tokens_t = torch.from_numpy(tokens)
        h = params["embed"][tokens_t] + params["pos"][: tokens.shape[1]]
        for i in range(num_layers):
            h = h + attention(h, params[f"layer{i}.W_qkv"], params[f"layer{i}.W_o"])
        logits = (h @ params["unembed"])[:, :-1]
        loss = functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens_t[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def median_step_seconds(step, batches, repeats):
    times = []
    for tokens, n in batches[:repeats]:
        start = time.perf_counter()
        step(tokens, n)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_to_targets(dtype, seed, check_every=50, max_steps=4000):
    """Train mhattn until every target holds (checked every ``check_every`` steps); training time only."""
    model = initial_model(2, seed)  # what train(seed=seed) starts from, and its batches
    data = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
    step = numpy_stepper(model, dtype)
    seconds = 0.0
    for i in range(1, max_steps + 1):
        tokens, n, *_ = induction_batch(data, BATCH_SIZE)
        start = time.perf_counter()
        step(tokens, n)
        seconds += time.perf_counter() - start
        if i % check_every == 0 and all(claims(measure(model)).values()):
            return i, seconds
    return None, seconds


def default_recipe():
    """Train the default recipe once; print its CPU time beside the promise and the machine's load."""
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    train(2, seed=0, threads=1)
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    print(f"default recipe (2 layers, seed 0): {cpu:.1f} s of CPU ({time.perf_counter() - start:.1f} s wall); "
          f"the shipped model's run recorded {training_record()['cpu_seconds']:.0f} s; 1-minute load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40, help="steps per side per round")
    parser.add_argument("--time-to-targets", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--default-malloc", action="store_true", help="skip keep_freed_memory() (both sides slow down)")
    parser.add_argument("--default-recipe", action="store_true", help="time python -m mhattn.train's recipe, whole")
    args = parser.parse_args()
    if args.default_recipe:
        keep_freed_memory()  # as the command line does
        return default_recipe()
    malloc = "glibc defaults" if args.default_malloc else f"keep_freed_memory() -> {keep_freed_memory()}"

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    dtype = np.dtype(args.dtype).type
    with threadpool_limits(args.threads):
        batches = [induction_batch(np.random.default_rng(i), BATCH_SIZE)[:2] for i in range(args.steps)]
        sides = {
            "mhattn (NumPy)": numpy_stepper(InductionModel(2, seed=0), dtype),
            "torch eager, F.scaled_dot_product_attention": torch_stepper(InductionModel(2, seed=0), dtype, False),
            "torch eager, explicit softmax": torch_stepper(InductionModel(2, seed=0), dtype, True),
        }
        first_losses = {name: step(*batches[0]) for name, step in sides.items()}  # same weights, same batch
        tolerance = 1e-4 if dtype == np.float32 else 1e-10  # a mean of log-probabilities of order 1
        if max(first_losses.values()) - min(first_losses.values()) > tolerance * max(first_losses.values()):
            raise SystemExit(f"the two sides compute different losses: {first_losses}")
        for step in sides.values():  # warm up: first calls allocate, torch builds its kernels
            median_step_seconds(step, batches, 5)
        results = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, step in sides.items():
                time.sleep(0.2)
                results[name].append(median_step_seconds(step, batches, args.steps))
        medians = {name: statistics.median(times) for name, times in results.items()}

        print(f"one training step (batch {BATCH_SIZE}, 2 layers, d_model 64, 4 heads), {args.dtype}, "
              f"{args.threads} thread(s), median of {args.rounds} rounds x {args.steps} steps; malloc: {malloc}")
        reference = medians["torch eager, F.scaled_dot_product_attention"]
        for name, seconds in medians.items():
            print(f"  {name:46s} {seconds * 1e3:7.2f} ms/step  {1 / seconds:6.1f} steps/s  "
                  f"{seconds / reference:5.2f}x torch sdpa")
        if args.time_to_targets:
            steps, seconds = time_to_targets(dtype, args.seed)
            print(f"mhattn, seed {args.seed}: every target met after {steps} steps, {seconds:.1f} s of training "
                  f"(checked every 50 steps; torch at its step time would need "
                  f"{steps * reference if steps else float('nan'):.1f} s for as many steps)")


if __name__ == "__main__":
    main()
