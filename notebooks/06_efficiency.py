# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 6. Efficiency: the same numbers, faster and in less memory
#
# Everything so far was written to be read. This notebook asks what it costs to run, and
# which choices in `mhattn` make it cheaper without changing a single output beyond
# rounding. Every claim below is measured on the machine that runs the notebook.
#
# **What you will learn**
#
# - how many floating-point operations (FLOPs) one forward pass takes, where they go, and
#   how close NumPy gets to the speed of a plain matrix product (the *roofline*);
# - why one fused `W_qkv` product beats three separate ones, and batched heads beat a loop;
# - why float32 is about twice as fast as float64, and the one-character bug that silently
#   turns float32 attention into float64;
# - why the weights of long sequences fill memory quadratically, and how processing a
#   block of queries at a time makes memory grow linearly instead;
# - how the block path avoids the two slowest habits of NumPy here: passes over data that
#   does not fit in cache, and exponentials that run on one core only.
#
# Timings depend on the machine and on whatever else it is doing, so the cells that print
# them are not compared when the notebook is tested; everything else is.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import math
import time
import tracemalloc
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from threadpoolctl import threadpool_limits

from mhattn import MultiHeadAttention, blockwise, causal_mask
from mhattn.attention import attend
from mhattn.blockwise import blockwise_attention
from mhattn.source import show_source

np.set_printoptions(precision=4, suppress=True)
FIGURES = Path("..") / "figures"  # the notebooks run with notebooks/ as the working directory
FIGURES.mkdir(exist_ok=True)


def best_time(function, repeat=5):
    """Seconds taken by the fastest of `repeat` calls (after one warm-up call).

    The fastest run is the one least disturbed by other programs, so it is the steadiest
    estimate of what the code itself costs.
    """
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(function):
    """The most bytes NumPy had allocated at any moment during `function()`, its result included."""
    tracemalloc.start()  # NumPy reports every array buffer it allocates to tracemalloc
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# %% [markdown]
# ## 1. Counting the work
#
# For an input of shape `(batch, n, d)` with $H$ heads of width $d_k = d / H$, the forward
# pass is four matrix products and one softmax. A product of an $m \times k$ matrix with a
# $k \times p$ matrix takes $m\,k\,p$ multiplications and as many additions: $2mkp$ FLOPs.
#
# | step | shapes | FLOPs |
# |---|---|---|
# | `x @ W_qkv` | $(bn \times d)(d \times 3d)$ | $6\,b\,n\,d^2$ |
# | scores $QK^\top$, every head | $H \times (n \times d_k)(d_k \times n)$ | $2\,b\,n^2 d$ |
# | weights $\times V$, every head | $H \times (n \times n)(n \times d_k)$ | $2\,b\,n^2 d$ |
# | `heads @ W_o` | $(bn \times d)(d \times d)$ | $2\,b\,n\,d^2$ |
#
# In total $8\,b\,n\,d^2 + 4\,b\,n^2 d$. The projections grow with $n$, attention with
# $n^2$: attention dominates once $n > 2d$. The softmax adds only a handful of operations
# per score ($b H n^2$ scores), but we will see that they are not the cheap part.


# %%
def forward_flops(batch, seq_len, d_model):
    """FLOPs of the four matrix products of one forward pass (the softmax not counted)."""
    projections = 8 * batch * seq_len * d_model**2
    attention = 4 * batch * seq_len**2 * d_model
    return projections, attention


for seq_len in (6, 128, 512, 4096):
    projections, attention = forward_flops(1, seq_len, 256)
    print(
        f"seq_len {seq_len:>5}, d_model 256: {(projections + attention) / 1e9:8.4f} GFLOP, "
        f"{attention / (projections + attention):4.0%} of them in attention"
    )

# %% [markdown]
# How fast can this machine do them? The upper limit for NumPy is a large, plain matrix
# product: BLAS, the library underneath `@`, is tuned to run it near the processor's peak,
# on all cores. We time one and call its speed the *roofline*. Our layer can only
# approach it: its products are smaller and thinner ($d_k$ is only 64 wide here), and the
# softmax between them does little arithmetic per byte it reads.

# %%
# NBVAL_IGNORE_OUTPUT
rng = np.random.default_rng(0)
A = rng.standard_normal((1024, 1024), dtype=np.float32)
B = rng.standard_normal((1024, 1024), dtype=np.float32)
roofline = 2 * 1024**3 / best_time(lambda: A @ B) / 1e9
print(f"plain float32 matrix product, 1024 x 1024 x 1024: {roofline:6.1f} GFLOP/s")

batch, d_model, num_heads = 1, 256, 4
mha = MultiHeadAttention(d_model, num_heads)
achieved = {}
for seq_len in (128, 512, 2048):
    x = rng.standard_normal((batch, seq_len, d_model), dtype=np.float32)
    flops = sum(forward_flops(batch, seq_len, d_model))
    for need_weights in (True, False):
        seconds = best_time(lambda x=x, need=need_weights: mha(x, need_weights=need), repeat=3)
        achieved[seq_len, need_weights] = flops / seconds / 1e9
        print(
            f"seq_len {seq_len:>4}, need_weights={need_weights!s:<5}: {seconds * 1e3:7.2f} ms, "
            f"{achieved[seq_len, need_weights]:6.1f} GFLOP/s = {achieved[seq_len, need_weights] / roofline:4.0%} of the roofline"
        )

# %% [markdown]
# Read the percentages, not the absolute numbers: a fraction of the roofline. What keeps
# the layer below it? We find out by taking the forward pass apart.

# %% [markdown]
# ## 2. One fused projection instead of three
#
# `W_qkv` holds the query, key and value matrices side by side, so one product replaces
# three. The arithmetic is identical, column for column; what changes is the overhead:
# one call instead of three, and `x` read once instead of three times. For small inputs,
# the per-call overhead of NumPy (a few microseconds) is most of the cost.

# %%
mha = MultiHeadAttention(d_model=64, num_heads=4)
W_qkv = mha.W_qkv.astype(np.float32)
W_q, W_k, W_v = np.split(W_qkv, 3, axis=1)  # each (d_model, d_model)
x_small = rng.standard_normal((1, 6, 64), dtype=np.float32)

fused = x_small @ W_qkv  # (1, 6, 3 * d_model)
separate = np.concatenate([x_small @ W_q, x_small @ W_k, x_small @ W_v], axis=-1)
print("the same numbers:", np.allclose(fused, separate, rtol=1e-6, atol=1e-6))

# %%
# NBVAL_IGNORE_OUTPUT
for shape in ((1, 6, 64), (8, 512, 64)):
    x_p = rng.standard_normal(shape, dtype=np.float32)
    t_fused = best_time(lambda x_p=x_p: x_p @ W_qkv, repeat=20)
    t_separate = best_time(lambda x_p=x_p: (x_p @ W_q, x_p @ W_k, x_p @ W_v), repeat=20)
    print(f"x of shape {shape}: fused {t_fused * 1e6:8.1f} us, three products {t_separate * 1e6:8.1f} us")

# %% [markdown]
# ## 3. Batched heads instead of a loop
#
# The head axis is just another leading axis of `Q`, `K` and `V`, so one call to `attend`
# computes every head: `matmul` runs the per-head products inside compiled code. The loop
# below is what you would write first: one head at a time, a Python iteration each. The
# two give the same numbers.


# %%
def heads_in_a_loop(Q, K, V):
    """attend() one head at a time. Q, K, V: (batch, num_heads, seq_len, d_k)."""
    outputs = [attend(Q[:, h], K[:, h], V[:, h])[0] for h in range(Q.shape[1])]
    return np.stack(outputs, axis=1)  # (batch, num_heads, seq_len, d_k)


Q, K, V = (rng.standard_normal((2, 8, 64, 16), dtype=np.float32) for _ in range(3))
print("the same numbers:", np.allclose(heads_in_a_loop(Q, K, V), attend(Q, K, V)[0], rtol=1e-5, atol=1e-6))

# %%
# NBVAL_IGNORE_OUTPUT
t_loop = best_time(lambda: heads_in_a_loop(Q, K, V), repeat=20)
t_batched = best_time(lambda: attend(Q, K, V), repeat=20)
print(f"8 heads in a loop: {t_loop * 1e6:7.1f} us; batched: {t_batched * 1e6:7.1f} us ({t_loop / t_batched:.1f}x)")

# %% [markdown]
# ## 4. float32 instead of float64
#
# A float32 number takes 4 bytes, a float64 number 8. Twice as many float32 numbers fit in
# a vector register, a cache line and a second of memory bandwidth, so float32 attention
# runs about twice as fast and needs half the memory, at a precision (about 7 significant
# digits) that neural networks never miss. `MultiHeadAttention` keeps float32 inputs in
# float32 end to end: its weights are cast once and cached.

# %%
# NBVAL_IGNORE_OUTPUT
mha = MultiHeadAttention(d_model=256, num_heads=4)
x64 = rng.standard_normal((2, 512, 256))
x32 = x64.astype(np.float32)
t64 = best_time(lambda: mha(x64), repeat=3)
t32 = best_time(lambda: mha(x32), repeat=3)
print(f"float64 {t64 * 1e3:6.1f} ms, float32 {t32 * 1e3:6.1f} ms ({t64 / t32:.1f}x)")

# %% [markdown]
# The speed is easy to lose. NumPy 2 keeps the precision of a NumPy *scalar*: dividing a
# float32 array by `np.sqrt(d_k)`, which is a float64 scalar, gives a float64 array, and
# every step after it runs at float64 speed. No error, no warning. `attend` scales by a
# plain Python float, which NumPy treats as "whatever precision the array has".

# %%
scores32 = np.ones((2, 2), dtype=np.float32)
d_k = 64
print("scores / np.sqrt(d_k)      ->", (scores32 / np.sqrt(d_k)).dtype)
print("scores / math.sqrt(d_k)    ->", (scores32 / math.sqrt(d_k)).dtype)
print("scores * (1 / math.sqrt(d_k)) ->", (scores32 * (1 / math.sqrt(d_k))).dtype)
print("mha(x32) returns", mha(x32)[0].dtype, "and", mha(x32)[1].dtype)

# %% [markdown]
# `attend` also multiplies `Q` by the scale instead of dividing the scores: `Q` has
# `seq_len * d_k` numbers, the scores `seq_len * seq_len`, so for long sequences this is
# far less work. And the softmax runs *in place* on the freshly made score array, so the
# largest array of the computation exists only once:

# %%
show_source(attend)

# %% [markdown]
# ## 5. Memory: quadratic weights, linear blocks
#
# The weights have `batch * num_heads * seq_len**2` entries. At `seq_len = 4096` with 4
# heads that is 256 MiB in float32 for a single sequence, and it grows fourfold with every
# doubling. Yet each query's output needs only its own row of weights. So
# `mha(x, need_weights=False)` cuts the queries into blocks and keeps the scores of one
# block at a time:
#
# 1. scores of the block, `q @ k.T`: shape `(block_size, seq_len)`;
# 2. exponentials, in place;
# 3. `exp(scores) @ v`, divided row by row by the sum of the exponentials.
#
# Step 3 divides after the product: the same numbers as normalising the weights first,
# but `d_k` divisions per query instead of `seq_len`. Here is the code that runs on each
# block (with `need_weights=True` the scores are divided first, since the weights must be
# returned):

# %%
show_source(blockwise._attend_block)

# %% [markdown]
# The exponentials are the softmax without its division:

# %%
show_source(blockwise._exponentials)

# %% [markdown]
# Subtracting the row maximum before `exp` is what makes a softmax safe from overflow
# (notebook 1). It costs two passes over the block. The block code skips them when it can
# *prove* they are unnecessary: by the Cauchy-Schwarz inequality no score can exceed the
# length of the longest query times the length of the longest key, and when that bound is
# small, `exp` can neither overflow nor lose precision. Because the factor $e^{-\max}$
# cancels in the division, skipping it changes nothing else.
#
# First the check that matters most: the block path gives the full path's numbers, here
# with a causal mask, blocks of 16 queries, and a sequence length (100) that is no
# multiple of 16.

# %%
Q, K, V = (rng.standard_normal((2, 4, 100, 16), dtype=np.float32) for _ in range(3))
mask = causal_mask(100)
full_output, _ = attend(Q, K, V, mask)
block_output = blockwise_attention(Q, K, V, mask, block_size=16)
error = np.abs(block_output - full_output).max() / np.abs(full_output).max()
assert error < 1e-6, f"the paths differ by {error:.1e} of the largest output"
print("largest difference below 1e-6 of the largest output:", error < 1e-6)

# %% [markdown]
# Now the memory, measured with `tracemalloc` as the largest number of bytes NumPy held at
# any moment, the result included. We use one thread here: each thread of the block path
# holds its own block, so the numbers would otherwise depend on the machine's core count.
# With one thread they are exact and the same on every run.

# %%
seq_lens = [128, 256, 512, 1024, 2048]
num_heads, d_k, block_size = 4, 16, 64
peaks = {"full": [], "blocks": []}
with threadpool_limits(limits=1, user_api="blas"):
    for n in seq_lens:
        Q, K, V = (rng.standard_normal((1, num_heads, n, d_k), dtype=np.float32) for _ in range(3))
        peaks["full"].append(peak_bytes(lambda Q=Q, K=K, V=V: attend(Q, K, V)))
        peaks["blocks"].append(peak_bytes(lambda Q=Q, K=K, V=V: blockwise_attention(Q, K, V, block_size=block_size)))

print(f"{'seq_len':>8} {'full (MiB)':>11} {'blocks (MiB)':>13} {'weights alone (MiB)':>20}")
for n, full, blocks in zip(seq_lens, peaks["full"], peaks["blocks"], strict=True):
    print(f"{n:>8} {full / 2**20:>11.2f} {blocks / 2**20:>13.2f} {num_heads * n * n * 4 / 2**20:>20.2f}")

# %% [markdown]
# The full path's peak is essentially the weight matrix: it quadruples when `seq_len`
# doubles. The block path holds the output (`seq_len * d_k` numbers per head) and one
# block of `block_size * seq_len` scores: it doubles.

# %%
# Rounded as printed above: the last few bytes (Python's own small objects) vary run to run.
peaks_mib = {name: np.round(np.array(values) / 2**20, 2) for name, values in peaks.items()}
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(seq_lens, peaks_mib["full"], "o-", label="full weights (need_weights=True)")
ax.loglog(seq_lens, peaks_mib["blocks"], "s-", label=f"blocks of {block_size} queries")
ax.set_xlabel("seq_len")
ax.set_ylabel("peak memory (MiB)")
ax.set_title(f"Peak memory of attention, {num_heads} heads, float32")
ax.legend()
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(FIGURES / "06_memory.png", dpi=100, metadata={"Software": None})

# %% [markdown]
# On a log-log plot a power law is a straight line whose slope is the exponent: 2 for the
# full path, 1 for the blocks. Let us read the slopes off the measurements.

# %%
for name, values in peaks.items():
    slope = np.polyfit(np.log(seq_lens[2:]), np.log(values[2:]), 1)[0]
    print(f"{name:>6}: memory grows like seq_len^{slope:.1f}")

# %% [markdown]
# ## 6. Time: blocks in cache, blocks on every core
#
# Blocks also save time, for two reasons.
#
# - **Cache.** A softmax passes over its scores five times (maximum, subtract, exponential,
#   sum, divide). A full score matrix is too large for the processor's cache, so every pass
#   goes out to main memory and back. A block of about a million scores stays in a core's
#   cache through all the passes.
# - **Cores.** NumPy runs `exp` and the other elementwise passes on a single core; only the
#   matrix products use every core (inside BLAS). But blocks are independent, so the
#   block code gives whole blocks to several threads and asks BLAS for one thread per
#   call: every core then does everything, products and exponentials. This works in
#   Python because NumPy releases the interpreter lock inside `matmul` and `exp`.
#
# `attend` itself hands inputs with many scores (and the weights, which it still returns)
# to the same block loop; small inputs take the textbook route shown above.

# %%
# NBVAL_IGNORE_OUTPUT
seq_lens_t = [128, 256, 512, 1024, 2048]
mha = MultiHeadAttention(d_model=256, num_heads=4)
times = {"weights": [], "no weights": [], "textbook": []}
for n in seq_lens_t:
    x = rng.standard_normal((1, n, 256), dtype=np.float32)
    times["weights"].append(best_time(lambda x=x: mha(x), repeat=3))
    times["no weights"].append(best_time(lambda x=x: mha(x, need_weights=False), repeat=3))
    original, blockwise.PARALLEL_MIN_SCORES = blockwise.PARALLEL_MIN_SCORES, float("inf")  # attend never hands over
    try:
        times["textbook"].append(best_time(lambda x=x: mha(x), repeat=3))
    finally:
        blockwise.PARALLEL_MIN_SCORES = original
for i, n in enumerate(seq_lens_t):
    print(f"seq_len {n:>5}: " + ", ".join(f"{name} {times[name][i] * 1e3:7.2f} ms" for name in times))

# %% [markdown]
# ("textbook" is `mha(x)` with the hand-over switched off: one score matrix, BLAS threads
# for the products, one core for the softmax.) Time grows
# like `seq_len**2` for every path, since every query still meets every key: blocks cut the
# constant, not the exponent. The right panel puts the achieved speed next to the roofline.

# %%
# NBVAL_IGNORE_OUTPUT
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
for name, values in times.items():
    left.loglog(seq_lens_t, np.array(values) * 1e3, "o-", label=name)
    flops = np.array([sum(forward_flops(1, n, 256)) for n in seq_lens_t])
    right.semilogx(seq_lens_t, flops / np.array(values) / 1e9, "o-", label=name)
reference = np.array(seq_lens_t, dtype=float) ** 2
left.loglog(seq_lens_t, reference / reference[-1] * times["weights"][-1] * 1e3, "k:", label="slope 2")
right.axhline(roofline, color="k", linestyle="--", label="plain matrix product")
left.set(xlabel="seq_len", ylabel="time per forward pass (ms)", title="Time, d_model 256, 4 heads, float32")
right.set(xlabel="seq_len", ylabel="GFLOP/s", title="Achieved speed against the roofline")
right.set_ylim(bottom=0)
for ax in (left, right):
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()  # not saved to figures/: its timings differ on every run and every machine

# %% [markdown]
# ## Summary
#
# - A forward pass costs $8bnd^2 + 4bn^2d$ FLOPs; beyond $n = 2d$ attention dominates.
# - Fused projections and batched heads do the same arithmetic in fewer, larger calls.
# - float32 is about twice as fast as float64; keep it so by scaling with a Python float.
# - The full weights need memory quadratic in `seq_len`. Query blocks need linear memory
#   and give the same numbers; `need_weights=False` uses them.
# - Blocks are also faster: they stay in cache, and they let every core run the
#   exponentials that NumPy would run on one.
# - `benchmarks/bench_vs_torch.py` compares all of this with `torch.nn.MultiheadAttention`.
#
# ## Exercises
#
# **Exercise 1: count the products.** Write `count_matmul_flops(shapes)` that takes a list of
# matrix-product shapes `(m, k, p)` (an `m x k` times a `k x p` matrix) and returns their
# total FLOPs. The check lists the products of a forward pass and compares your total with
# `forward_flops`.


# %%
def count_matmul_flops(shapes):
    """Total FLOPs of the matrix products (m, k, p) in `shapes`."""
    return None  # your code here


# %%
def check_exercise_1(function):
    batch, n, d, heads = 2, 10, 12, 3
    d_k = d // heads
    shapes = [(batch * n, d, 3 * d)]  # x @ W_qkv
    shapes += [(n, d_k, n)] * (batch * heads)  # Q K^T, one per (batch, head)
    shapes += [(n, n, d_k)] * (batch * heads)  # weights @ V
    shapes += [(batch * n, d, d)]  # heads @ W_o
    total = function(shapes)
    if total is None:
        return "Exercise 1: not answered yet."
    assert function([(2, 3, 4)]) == 48, "one product of (2 x 3)(3 x 4): 2*3*4 multiplications and as many additions"
    assert total == sum(forward_flops(batch, n, d)), f"got {total}; expected {sum(forward_flops(batch, n, d))}"
    return "Exercise 1: correct."


print(check_exercise_1(count_matmul_flops))

# %% [markdown]
# **Exercise 2: a block that fits.** A block of scores is `block_size * seq_len` float32
# numbers. Write `largest_block(seq_len, budget_bytes)`: the largest `block_size` whose
# scores fit in `budget_bytes`. The check then runs the block path with it, on one thread,
# and measures that the peak memory is the output plus about one block.


# %%
def largest_block(seq_len, budget_bytes):
    """The most queries whose float32 scores against seq_len keys fit in budget_bytes."""
    return None  # your code here


# %%
def check_exercise_2(function):
    seq_len, budget = 3000, 256 * 1024
    block = function(seq_len, budget)
    if block is None:
        return "Exercise 2: not answered yet."
    assert block * seq_len * 4 <= budget, f"{block} rows of {seq_len} float32 scores take more than {budget} bytes"
    assert (block + 1) * seq_len * 4 > budget, f"{block} rows fit, but so would {block + 1}"
    Q, K, V = (np.ones((1, seq_len, 8), dtype=np.float32) for _ in range(3))
    output_bytes = Q.nbytes
    with threadpool_limits(limits=1, user_api="blas"):
        peak = peak_bytes(lambda: blockwise_attention(Q, K, V, block_size=block))
    assert peak <= output_bytes + budget + 64 * 1024, f"peak {peak} bytes: more than the output and one block"
    return "Exercise 2: correct."


print(check_exercise_2(largest_block))

# %% [markdown]
# **Exercise 3: keep float32.** Write `scaled_scores(Q, K)` returning $QK^\top / \sqrt{d_k}$
# (for any leading axes) that stays float32 for float32 input.


# %%
def scaled_scores(Q, K):
    """Q @ K^T / sqrt(d_k), in the precision of Q and K."""
    return None  # your code here


# %%
def check_exercise_3(function):
    Q, K = (np.random.default_rng(1).standard_normal((2, 5, 16), dtype=np.float32) for _ in range(2))
    scores = function(Q, K)
    if scores is None:
        return "Exercise 3: not answered yet."
    expected = Q.astype(np.float64) @ np.swapaxes(K, -1, -2).astype(np.float64) / 4.0
    assert scores.shape == (2, 5, 5), f"expected shape (2, 5, 5), got {scores.shape}: transpose the last two axes of K"
    assert scores.dtype == np.float32, f"got {scores.dtype}: divide by a Python float (math.sqrt), not np.sqrt"
    assert np.allclose(scores, expected, rtol=1e-5, atol=1e-6), "wrong values: did you scale by sqrt(d_k) = 4?"
    return "Exercise 3: correct."


print(check_exercise_3(scaled_scores))

# %% [markdown]
# ---
# This is the last notebook of the chapter. To compare against PyTorch on your machine,
# run `python benchmarks/bench_vs_torch.py` from the repository root.
