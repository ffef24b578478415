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
# # 12. Appendix: efficiency and the engine
#
# > **An appendix, for readers curious about the machine.** Skip it on a first reading:
# > no other notebook needs it, and notebook 11 recalls the one idea it builds on.
#
# This appendix is about how the computation meets the machine: how many operations a
# forward pass takes, what limits how fast NumPy can do them (memory bandwidth, cache
# sizes, BLAS threads), and the *engine*, `mhattn.engine`, which computes the teaching
# path's numbers in memory that grows linearly with the sequence. Timings depend on the
# machine and on whatever else it is doing, so time is measured in **one** cell, whose
# output is not compared when the notebook is tested; every other number is exact
# (operation counts, and bytes of memory measured with `tracemalloc`).
#
# **What you will learn**
#
# - how many floating-point operations (FLOPs) a forward pass takes, and why that count
#   grows like `seq_len**2` only once `seq_len` is much larger than `2 * d_model`;
# - the *roofline*: which kernels are limited by arithmetic and which by memory;
# - why the engine's memory grows like `seq_len` while the weights grow like
#   `seq_len**2`, and why its blocks of queries are sized to a core's cache;
# - which parts of NumPy use every core, and why the engine has no thread pool;
# - the NumPy 2 trap that silently turns float32 attention into float64.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import math
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from mhattn.engine import FastMultiHeadAttention, blocks, blockwise_attention
from mhattn.pictures import exercise, not_yet, save_figure, show_source

np.set_printoptions(precision=4, suppress=True)
FIGURES = Path("..") / "figures"  # the notebooks run in notebooks/
rng = np.random.default_rng(0)

# %% [markdown]
# Two small measuring helpers sit in the collapsed cell below: `best_time(function)`,
# the fastest of several calls (the one least disturbed by other programs), and
# `peak_bytes(function)`, the most bytes NumPy had allocated at any moment of the call,
# as `tracemalloc` counts them.

# %% jupyter={"source_hidden": true}
import time
import tracemalloc

from matplotlib.ticker import NullLocator
from threadpoolctl import threadpool_info, threadpool_limits


def best_time(function, repeat=5, budget=0.1):
    """Seconds taken by the fastest call (after one warm-up call).

    At least `repeat` calls, and more until `budget` seconds have passed (at most 100).
    """
    function()
    times = []
    while len(times) < repeat or (sum(times) < budget and len(times) < 100):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(function):
    """The most bytes NumPy had allocated during `function()`, its result included."""
    tracemalloc.start()  # NumPy reports every array buffer it allocates to tracemalloc
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def log_axis_ticks(ax, axis, values):
    """Ticks of a log axis at exactly `values`, labelled plainly."""
    getattr(ax, f"set_{axis}ticks")(values, [str(v) for v in values])
    getattr(ax, f"{axis}axis").set_minor_locator(NullLocator())


# %% [markdown]
# ## 1. Counting the work
#
# For an input of shape `(batch, n, d)` with $H$ heads of width $d_k = d / H$, the
# forward pass is four matrix products and one softmax. A product of an $m \times k$
# matrix with a $k \times p$ matrix takes $m\,k\,p$ multiplications and as many
# additions: $2mkp$ FLOPs.
#
# | step | shapes | FLOPs |
# |---|---|---|
# | `x @ W_qkv` | $(bn \times d)(d \times 3d)$ | $6\,b\,n\,d^2$ |
# | scores $QK^\top$, all heads | $H \times (n \times d_k)(d_k \times n)$ | $2bn^2 d$ |
# | weights $\times V$, all heads | $H \times (n \times n)(n \times d_k)$ | $2bn^2 d$ |
# | `heads @ W_o` | $(bn \times d)(d \times d)$ | $2\,b\,n\,d^2$ |
#
# In total $F(n) = 8\,b\,n\,d^2 + 4\,b\,n^2 d$. The projections grow with $n$, attention
# with $n^2$, and the two are equal at $n = 2d$. The softmax adds only a handful of
# operations per score, but section 4 shows that they are not the cheap part.


# %%
def forward_flops(batch, seq_len, d_model):
    """FLOPs of the four matrix products of one forward pass (not the softmax)."""
    projections = 8 * batch * seq_len * d_model**2
    attention = 4 * batch * seq_len**2 * d_model
    return projections, attention


for seq_len in (6, 128, 512, 4096):
    projections, attention = forward_flops(1, seq_len, 256)
    total = projections + attention
    print(f"seq_len {seq_len:>5}, d_model 256: {total / 1e9:8.4f} GFLOP, "
          f"{attention / total:4.0%} of them in attention")

# %% [markdown]
# **How fast does the cost grow?** On a log-log plot, a cost $c\,n^p$ is a straight line
# of slope $p$. Ours is a sum of an $n$ term and an $n^2$ term, so its slope changes:
#
# $$
# s(n) = \frac{d \log F}{d \log n} = \frac{8bnd^2 + 8bn^2d}{8bnd^2 + 4bn^2d}
#      = \frac{2\,(n + d)}{n + 2d}.
# $$
#
# It is close to 1 while $n \ll 2d$, exactly 1.5 at $n = 2d$, and approaches 2 only when
# $n \gg 2d$: a slope of 1.9 needs $n = 18\,d$. So "attention is quadratic" describes
# long sequences, not the sizes of this chapter. Section 5 times the forward pass at
# two widths over these lengths:


# %%
def flop_slope(seq_len, d_model):
    """d log F / d log seq_len: the slope of the FLOP count on a log-log plot."""
    return 2 * (seq_len + d_model) / (seq_len + 2 * d_model)


seq_lens_t = [256, 512, 1024, 2048]
for d_model in (32, 256):
    print(f"d_model {d_model:>3}: n / 2d", [n / (2 * d_model) for n in seq_lens_t],
          "slope", [round(flop_slope(n, d_model), 2) for n in seq_lens_t])

# %% [markdown]
# ## 2. The engine: the same numbers, a block of queries at a time
#
# The teaching path computes every score at once: `batch * num_heads * seq_len**2`
# weights. At `seq_len = 4096` with 4 heads that is 256 MiB in float32 for one sequence,
# and it grows fourfold with every doubling. Yet each query's output needs only its own
# row of weights. So the engine cuts the queries into blocks and runs, for one block at
# a time, the three steps of `scaled_dot_product_attention`: the block's scores, their
# softmax, the block's output. A block is `block_size` query rows of one head, or by
# default about `BLOCK_SCORES` scores. The loop over the blocks:

# %%
show_source(blocks.attention_in_blocks)

# %% [markdown]
# One block computes what `scaled_dot_product_attention` computes, in an order that
# touches less memory. It makes the block's scores, then weighs the values with them:

# %%
show_source(blocks._attend_block)

# %% [markdown]
# The scores. The block's queries are scaled by $1/\sqrt{d_k}$ instead of its scores
# (`rows * d_k` multiplications instead of `rows * seq_k`), and the scores go into a
# scratch array made once and reused by every block (or straight into their rows of the
# weights, when the weights are asked for). A bound on every score comes for free: no
# score can exceed the length of the longest query times that of the longest key
# (Cauchy-Schwarz, $|q \cdot k| \le \lVert q \rVert\,\lVert k \rVert$).

# %%
show_source(blocks._block_scores)

# %% [markdown]
# The weighted values. When the bound is small, `exp` can neither overflow nor lose
# precision, and since the factor $e^{-\max}$ cancels in the division anyway, the
# softmax skips subtracting each row's maximum: two of its five passes over the scores.
# And where it is safe, the output rows (`d_v` numbers each) are divided instead of the
# weights (`seq_k` each): one more pass saved.

# %%
show_source(blocks._weigh_values)

# %%
show_source(blocks._softmax_)

# %% [markdown]
# `FastMultiHeadAttention` is notebook 11's `GroupedQueryAttention` with one step,
# `_attention`, replaced: by the block loop, or by notebook 11's tiles (the online
# softmax) when no weights are asked for and the keys are longer than one tile. The
# projections, the heads, the positions, the cache and `W_o` are inherited unchanged:

# %%
show_source(FastMultiHeadAttention)

# %% [markdown]
# The engine is only worth having if it computes the teaching path's numbers: the same
# layer, with a causal mask, in float64 and float32 (both paths add the same 64-term dot
# products in another order, so they may differ by a few dozen $\epsilon$), and
# `blockwise_attention` with blocks of 16 queries on a length, 100, that 16 does not
# divide.

# %%
x, mask = rng.standard_normal((2, 100, 64)), causal_mask(100)
teaching, fast = MultiHeadAttention(64, 4), FastMultiHeadAttention(64, 4)  # same seed
for dtype in (np.float64, np.float32):
    tolerance = 100 * np.finfo(dtype).eps
    expected, expected_weights = teaching(x.astype(dtype), mask)
    got, got_weights = fast(x.astype(dtype), mask)
    error = np.abs(got - expected).max() / np.abs(expected).max()
    same = np.allclose(got_weights, expected_weights, rtol=tolerance, atol=tolerance)
    print(f"{got.dtype}: within 100 eps: {error < tolerance}, same weights: {same}")

Q, K, V = rng.standard_normal((3, 2, 4, 100, 16))
full_output, _ = scaled_dot_product_attention(Q, K, V, mask)
block_output = blockwise_attention(Q, K, V, mask, block_size=16)
print("blocks of 16 == the full path:",
      np.allclose(block_output, full_output, rtol=1e-12, atol=1e-12))

# %% [markdown]
# ## 3. Memory: quadratic weights, linear blocks
#
# How much memory does each path hold at its worst moment? `tracemalloc` sees every
# array NumPy allocates, so its peak is an exact count of bytes, the same on every run.
# Compare the teaching path with the block path (no weights returned), 4 heads of width
# 64, blocks of 64 queries, against two formulas: three weight matrices for the full
# path, the output plus one block of scores for the block path.

# %%
seq_lens = [128, 256, 512, 1024, 2048]
num_heads, d_k, block_size = 4, 64, 64
peaks = {"full": [], "blocks": []}


def over(measured, formula):
    """How far a peak lies above its formula, as a bound (the same on every NumPy)."""
    extra = (measured - formula) / 2**20
    return "+ under 0.2" if 0 <= extra < 0.2 else f"+ {extra:.2f}"


for n in seq_lens:
    Q, K, V = rng.standard_normal((3, 1, num_heads, n, d_k), dtype=np.float32)
    peaks["full"].append(peak_bytes(partial(scaled_dot_product_attention, Q, K, V)))
    blocked = partial(blockwise_attention, Q, K, V, block_size=block_size)
    peaks["blocks"].append(peak_bytes(blocked))

print(f"{'seq_len':>7} {'3 x weights':>12} {'full path':>12} {'output + block':>15}"
      f" {'block path':>12}   (MiB)")
for i, n in enumerate(seq_lens):
    three_weights = 3 * num_heads * n * n * 4  # bytes, float32
    output_and_block = (num_heads * n * d_k + block_size * n) * 4
    print(f"{n:>7} {three_weights / 2**20:>12.2f} "
          f"{over(peaks['full'][i], three_weights):>12} "
          f"{output_and_block / 2**20:>15.2f} "
          f"{over(peaks['blocks'][i], output_and_block):>12}")

# %% [markdown]
# Each path sits just above its formula (a few small arrays on top). The teaching code
# keeps its steps readable, and each step of its softmax makes a new score-sized array:
# at the worst moment the scores, the scores minus their row maximum and the
# exponentials all exist. The block path holds the output and one block of
# `block_size * seq_len` scores. On a log-log plot a power law is a straight line whose
# slope is the exponent; the last three points give:

# %%
for name, values in peaks.items():
    slope = np.polyfit(np.log(seq_lens[2:]), np.log(values[2:]), 1)[0]
    print(f"{name:>6}: memory grows like seq_len^{slope:.1f}")

# %% jupyter={"source_hidden": true}
# Rounded as printed: a few hundred bytes of Python's own objects can differ between
# Python versions.
peaks_mib = {name: np.round(np.array(v) / 2**20, 2) for name, v in peaks.items()}
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(seq_lens, peaks_mib["full"], "o-", label="all scores at once (teaching path)")
ax.loglog(seq_lens, peaks_mib["blocks"], "s-",
          label=f"blocks of {block_size} queries (engine)")
log_axis_ticks(ax, "x", seq_lens)
ax.set(xlabel="seq_len", ylabel="peak memory (MiB)",
       title=f"Peak memory of attention, {num_heads} heads, float32")
ax.legend()
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
save_figure(fig, FIGURES / "12_memory.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** Memory is what the blocked engine saves: all scores at once grow with the
# square of the sequence, blocks of 64 queries only linearly.
#
# <!-- alt: Log-scale line chart of peak memory in MiB against seq_len 128 to 2048: the
# blue line (all scores at once) climbs from under 1 to about 190 MiB, the orange line
# (blocks of 64 queries) from about 0.2 to 2.5 MiB. -->

# %% [markdown]
# ## 4. What limits the speed: the roofline
#
# A processor can be slow at a kernel for two reasons: it cannot *compute* any faster,
# or it cannot *feed* its arithmetic units with data any faster. The roofline model
# (Williams, Waterman and Patterson 2009) puts both on one picture. Give each kernel its
# **arithmetic intensity** $I$, the FLOPs it performs per byte it moves to or from
# memory. Its speed is then at most
#
# $$
# \text{FLOP/s} \le \min\left(P,\; B \cdot I\right),
# $$
#
# where $P$ is the peak compute rate (the flat *compute roof*) and $B$ the bandwidth of
# the memory the data comes from (a sloped *bandwidth roof*, one per level: main memory,
# cache). A kernel left of the ridge point $P / B$ is **memory-bound**: fewer bytes
# would help it, more arithmetic units would not. Intensities need no measurement, only
# counting. A product of an $m \times k$ by a $k \times p$ float32 matrix reads both and
# writes the result once; one elementwise pass of the softmax performs about one
# operation per score and reads and writes 4 bytes each: $I \approx 1/8$.


# %%
def matmul_intensity(m, k, p, itemsize=4):
    """FLOPs per byte of an (m x k) @ (k x p) product, each matrix moved once."""
    return 2 * m * k * p / (itemsize * (m * k + k * p + m * p))


kernels = {
    "x @ W_qkv, seq_len 2048, d_model 256": (2048, 256, 768),
    "q @ k.T, a block of 128 queries, seq_k 2048, d_k 64": (128, 64, 2048),
    "q @ k.T, one query at a time": (1, 64, 2048),
    "weights @ v, 128 queries, seq_k 2048, d_k 64": (128, 2048, 64),
    "plain 512 x 512 x 512 product": (512, 512, 512),
}
for name, shape in kernels.items():
    print(f"{name:<55} {matmul_intensity(*shape):7.2f} FLOP/byte")
print(f"{'one elementwise pass of the softmax (exp)':<55} {1 / 8:7.2f} FLOP/byte")

# %% [markdown]
# On current CPUs the ridge point lies between about 1 and 20 FLOPs per byte for main
# memory, lower for cache (section 5 measures this machine's). The projection and the
# plain product sit right of it on any of them: compute-bound. A block's score product
# (21 for 128 queries of width 64) sits near the ridge or right of it; one query at a
# time (0.49) would be memory-bound everywhere, since it reads all of `k` for a single
# row of scores (exercise 3 asks how many rows a block needs). The softmax's passes, at
# about 1/8, sit far left of every ridge: for the cheap ones (maximum, subtract, sum,
# divide) the speed is set by where the scores live. (`exp` is the exception: one
# exponential costs a dozen or more instructions.) A full score matrix of a long
# sequence is larger than any cache, so each pass streams it from main memory and back;
# a block small enough to stay in a core's L2 cache makes every pass after the first
# read from the cache. That is why the engine sizes its blocks:

# %%
print(f"the engine's default block: {blocks.BLOCK_SCORES} float32 scores = "
      f"{blocks.BLOCK_SCORES * 4 / 2**20:g} MiB")

# %% [markdown]
# 1 MiB is the L2 cache of one core on many current processors (1 to 2 MiB on recent
# Intel and AMD cores). Where L2 is smaller, a block spills into the L3 cache, slower
# than L2 but still far faster than main memory. The size was measured, not guessed: the
# comment above `BLOCK_SCORES` in `mhattn/engine/blocks.py` gives the times of blocks
# from 128 KiB to 1 MiB.
#
# ## 5. The measurements
#
# The one cell that measures time (collapsed below; open it to read it) measures the
# roofs of this machine (the compute roof with all BLAS threads and with one; the
# bandwidth of main memory and of a core's cache, as seen by one NumPy elementwise
# pass), the kernels of section 4 (`exp` also into a new array), and the forward pass of
# the teaching path and of the engine at the two widths of section 1, with BLAS on one
# thread, so that the two algorithms are compared, not BLAS's threading. Its output is
# what the machine that last ran this notebook measured; yours will print other numbers.

# %% jupyter={"source_hidden": true}
# NBVAL_IGNORE_OUTPUT
# (Timings differ on every machine and every run: the only cell whose output is not
# compared.)
measured = {}
A, B = (rng.standard_normal((512, 512), dtype=np.float32) for _ in range(2))
flops_512 = 2 * 512**3
measured["peak, all BLAS threads"] = (
    flops_512 / best_time(lambda: A @ B, budget=0.2) / 1e9)
with threadpool_limits(limits=1, user_api="blas"):
    measured["peak, one BLAS thread"] = (
        flops_512 / best_time(lambda: A @ B, budget=0.2) / 1e9)
time.sleep(0.2)  # OpenBLAS's threads spin ~0.1 s after a product: let them sleep
big = np.ones(2**24, dtype=np.float32)  # 64 MiB: far larger than any cache
small = np.ones(blocks.BLOCK_SCORES, dtype=np.float32)  # as many numbers as one block
repeats = big.size // small.size  # the same number of bytes, from cache
measured["memory GB/s"] = (
    big.nbytes * 2 / best_time(lambda: np.multiply(big, 1.0, out=big), 3) / 1e9)
measured["cache GB/s"] = big.nbytes * 2 / best_time(
    lambda: [np.multiply(small, 1.0, out=small) for _ in range(repeats)], 3) / 1e9
scores = rng.standard_normal((4, 2048, 2048), dtype=np.float32)  # 4 heads: 64 MiB
exps = np.empty_like(scores)
rows = blocks.BLOCK_SCORES // 2048  # the rows of one default block against 2048 keys
block, block_exps = scores[0, :rows].copy(), np.empty((rows, 2048), dtype=np.float32)
measured["exp Gop/s, all scores"] = (
    scores.size / best_time(lambda: np.exp(scores, out=exps), 3) / 1e9)
measured["exp Gop/s, all scores, new array"] = (
    scores.size / best_time(lambda: np.exp(scores), 3) / 1e9)
measured["exp Gop/s, one block"] = scores.size / best_time(
    lambda: [np.exp(block, out=block_exps) for _ in range(scores.size // block.size)],
    3) / 1e9
q = rng.standard_normal((128, 64), dtype=np.float32)
k = rng.standard_normal((2048, 64), dtype=np.float32)
with threadpool_limits(limits=1, user_api="blas"):  # one core, as in the timing below
    measured["q @ k.T GFLOP/s, 128 rows, one thread"] = (
        2 * 128 * 2048 * 64 / best_time(lambda: q @ k.T, 20) / 1e9)
blas = [info for info in threadpool_info() if info.get("user_api") == "blas"]
print(f"BLAS: {blas[0]['internal_api']}, {blas[0]['num_threads']} threads"
      if blas else "BLAS: not found by threadpoolctl")
for name, value in measured.items():
    print(f"{name:<38} {value:8.1f}")

times = {}
with threadpool_limits(limits=1, user_api="blas"):  # the algorithms, not BLAS threads
    for d_model in (32, 256):
        for n in seq_lens_t:
            x = rng.standard_normal((1, n, d_model), dtype=np.float32)
            teaching = MultiHeadAttention(d_model, 4)
            fast = FastMultiHeadAttention(d_model, 4)
            times["teaching", d_model, n] = best_time(lambda x=x, m=teaching: m(x), 3)
            times["engine", d_model, n] = best_time(
                lambda x=x, m=fast: m(x, need_weights=False), 3)


def slopes(values):
    """Log-log slopes between neighbouring lengths of seq_lens_t."""
    pairs = zip(seq_lens_t, seq_lens_t[1:], strict=False)
    return [math.log(values[b] / values[a]) / math.log(b / a) for a, b in pairs]


print(f"\n{'forward pass (ms)':>28}" + "".join(f"{n:>9}" for n in seq_lens_t))
for path in ("teaching", "engine"):
    for d_model in (32, 256):
        row = "".join(f"{times[path, d_model, n] * 1e3:9.2f}" for n in seq_lens_t)
        print(f"{path + ', d_model ' + str(d_model):>28}{row}")
for d_model in (32, 256):
    measured_slopes = slopes({n: times["teaching", d_model, n] for n in seq_lens_t})
    flop_slopes = slopes({n: sum(forward_flops(1, n, d_model)) for n in seq_lens_t})
    print(f"d_model {d_model:>3}: slopes of the teaching path "
          + ", ".join(f"{v:.2f}" for v in measured_slopes)
          + "; of its FLOPs " + ", ".join(f"{v:.2f}" for v in flop_slopes))
    faster = [n for n in seq_lens_t
              if times["engine", d_model, n] < times["teaching", d_model, n]]
    since = [n for n in faster if all(m in faster for m in seq_lens_t if m >= n)]
    print(f"d_model {d_model:>3}: the engine was faster "
          + (f"from seq_len {since[0]} on" if since else "at no length"))

# %% [markdown]
# The same measurements as two pictures (drawn by the collapsed cell below). Top, the
# time of a forward pass against `seq_len`, with the shape of the FLOP count drawn
# through the last point of each teaching curve. Bottom, the roofline of this machine,
# with the kernels of section 4 at their intensities.

# %% jupyter={"source_hidden": true}
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 10))
for d_model, colour in ((32, "tab:blue"), (256, "tab:orange")):
    for path, style in (("teaching", "o-"), ("engine", "s--")):
        values = np.array([times[path, d_model, n] for n in seq_lens_t]) * 1e3
        top.loglog(seq_lens_t, values, style, color=colour,
                   label=f"{path}, d_model {d_model}")
    flops = np.array([sum(forward_flops(1, n, d_model)) for n in seq_lens_t], float)
    model = flops / flops[-1] * times["teaching", d_model, seq_lens_t[-1]] * 1e3
    top.loglog(seq_lens_t, model, ":", color="black",
               label="FLOP count" if d_model == 32 else None)
log_axis_ticks(top, "x", seq_lens_t)
top.set(xlabel="seq_len", ylabel="time per forward pass (ms)",
        title="Time, 4 heads, float32, one BLAS thread")
top.legend()
top.grid(True, which="major", alpha=0.3)

intensity = np.logspace(-2, 3, 200)
peak = max(measured["peak, all BLAS threads"], measured["peak, one BLAS thread"])
for name, colour in (("memory GB/s", "tab:red"), ("cache GB/s", "tab:green")):
    bottom.loglog(intensity, np.minimum(peak, measured[name] * intensity),
                  color=colour, label=f"roof: {name[:-5]}")
bottom.axhline(measured["peak, one BLAS thread"], color="grey", linestyle=":",
               label="compute roof, one thread")
points = {
    "512^3 product": (matmul_intensity(512, 512, 512), peak),
    "q @ k.T, 128 queries, one thread": (
        matmul_intensity(128, 64, 2048),
        measured["q @ k.T GFLOP/s, 128 rows, one thread"]),
    "exp, all scores": (1 / 8, measured["exp Gop/s, all scores"]),
    "exp, one block": (1 / 8, measured["exp Gop/s, one block"]),
}
for name, (i, speed) in points.items():
    bottom.loglog(i, speed, "o", label=name)
bottom.set(xlabel="arithmetic intensity (FLOP per byte)", ylabel="GFLOP/s",
           title="Roofline of this machine (measured)")
bottom.legend(loc="upper left", bbox_to_anchor=(0, -0.2), ncol=2)
bottom.grid(True, which="major", alpha=0.3)
fig.tight_layout()  # not saved to figures/: its numbers differ on every run

# %% [markdown] tags=["figure-caption"]
# **Figure.** Top: the time of a forward pass grows at least as fast as its FLOP count
# once the sequence is long. Bottom: matrix products with many rows run near the compute
# roof; the exponentials over the scores run far below it.
#
# <!-- alt: Top: log-log chart of milliseconds per forward pass against seq_len 256 to
# 2048, for the teaching and engine paths at d_model 32 and 256, with dotted lines for
# the FLOP count; every line rises with seq_len. Bottom: a log-log roofline, GFLOP/s
# against arithmetic intensity: a red memory roof and a green cache roof rise to a flat
# compute roof, a dotted line marks the one-thread compute roof, and four measured
# kernels are dots: the 512-cubed product, q @ k.T, and exp on all scores and on one
# block, both at intensity 1/8. -->

# %% [markdown]
# How to read them, on any machine:
#
# - **The FLOP count's slope is a floor, not the answer.** Over these lengths it is 1.85
#   to 1.96 at `d_model = 32` and only 1.4 to 1.7 at `d_model = 256`. The measured
#   slopes of the teaching path are usually steeper and can pass 2: the FLOP count
#   leaves out the softmax, whose passes over the scores also grow like `seq_len**2` and
#   run at the speed of memory, and each time the scores outgrow a level of cache every
#   pass gets slower per number. Below a few hundred tokens, fixed costs per call
#   (Python, NumPy's dispatch, small allocations) flatten the curve instead.
# - **Where the engine is faster.** It makes fewer passes over the scores, allocates no
#   new score-sized arrays, and its blocks keep the remaining passes in cache. (A new
#   array of many MiB comes straight from the operating system, which on Linux takes a
#   page fault for every 4 KiB page written the first time: compare the two `exp` lines
#   of all scores.) So its lead grows with `seq_len`: small or none at a few hundred
#   tokens, large once the score matrix reaches 16 MiB and more (`seq_len` 1024 and
#   beyond, 4 heads). The cell prints from which `seq_len` on it was faster here.
# - **Cheap passes are memory-bound; `exp` is costly.** The `memory` and `cache` lines
#   are passes with one multiplication per number, and cache is several times faster.
#   `exp` on one core sits below both roofs: counted as one operation it looks
#   memory-bound, but one exponential costs a dozen or more instructions. So blocks
#   speed up the cheap passes, and `exp` gains most from what the engine avoids.
# - **Matrix products use every core; elementwise passes use one.** With several BLAS
#   threads (the cell prints how many BLAS has), the compute roof rises above the
#   one-thread roof, by up to the number of cores; NumPy's `exp`, `max` and `sum` run on
#   a single core whatever BLAS does.
#
# ## 6. Threads: why the engine has no thread pool
#
# The blocks are independent: why not give them to a pool of Python threads, one block
# per core, so that every core runs exponentials? NumPy releases Python's global
# interpreter lock (GIL) inside `matmul`, `exp` and the other array loops, so threads
# can run NumPy code at the same time. The plan is fast on the machine it is tuned on,
# and fragile everywhere else:
#
# - **Oversubscription.** Each block's products are threaded by BLAS too: $T$ pool
#   threads each asking BLAS for $T$ threads put $T^2$ threads on $T$ cores. Limiting
#   BLAS to one thread per call is a process-wide setting (`threadpoolctl`) that other
#   threads can change while a call runs, and that some versions silently ignore when it
#   is set from a thread other than the first.
# - **`fork`.** A pool created before `os.fork()` (what `multiprocessing` does by
#   default on Linux before Python 3.14) is dead in the child: its first large call
#   waits forever.
# - **Scaling.** On a 16-core machine it got *slower* beyond 8 threads, and its memory
#   grew with the thread count, since every thread holds a block.
#
# The engine therefore runs its blocks one after another on the caller's thread and
# leaves threads to BLAS. It gives up parallel exponentials, and gains code that is as
# fast from any thread, safe after `fork`, leaves no state behind and holds one block at
# a time. `benchmarks/bench_vs_torch.py --threads N` compares it with PyTorch at any
# thread count.
#
# ## 7. float32 instead of float64
#
# A float32 number takes 4 bytes, a float64 number 8. Twice as many float32 numbers fit
# in a vector register, a cache line and a second of memory bandwidth, so float32
# attention runs up to about twice as fast in half the memory. Its precision, about 7
# significant digits, is enough for the forward pass of a trained network; training is
# more delicate, which is why mixed-precision training keeps a float32 copy of the
# weights (Micikevicius et al. 2018).
#
# The speed is easy to lose. NumPy 2 keeps the precision of a NumPy *scalar*: dividing a
# float32 array by `np.sqrt(d_k)`, a float64 scalar, gives a float64 array, and every
# step after it runs at float64 speed, with no error and no warning.
# `scaled_dot_product_attention` divides by `math.sqrt(d_k)`, a Python float, which
# NumPy treats as "whatever precision the array has".

# %%
scores32 = np.ones((2, 2), dtype=np.float32)
print("scores / np.sqrt(64)    ->", (scores32 / np.sqrt(64)).dtype)
print("scores / math.sqrt(64)  ->", (scores32 / math.sqrt(64)).dtype)
x32 = rng.standard_normal((1, 6, 64), dtype=np.float32)
for layer in (MultiHeadAttention(64, 4), FastMultiHeadAttention(64, 4)):
    print(f"{type(layer).__name__:<22} ->", [a.dtype for a in layer(x32)])

# %% [markdown]
# ## Summary
#
# - A forward pass costs $8bnd^2 + 4bn^2d$ FLOPs. Its log-log slope is
#   $2(n + d)/(n + 2d)$: 1.5 at $n = 2d$, near 2 only for $n \gg 2d$.
# - The roofline says what limits a kernel: matrix products with many rows are
#   compute-bound; the softmax's cheap passes (1/8 FLOP per byte) are memory-bound on
#   every machine, and its `exp` costs far more than one FLOP.
# - The full weights need memory quadratic in `seq_len`; the engine's query blocks need
#   linear memory and give the same numbers. They are also faster wherever the scores
#   are a large part of the work: fewer passes, no new score-sized arrays, blocks sized
#   to stay in a core's cache.
# - BLAS threads the matrix products; NumPy's elementwise passes run on one core. The
#   engine adds no thread pool of its own: it would fight BLAS for the cores, break
#   after `fork` and depend on process-wide state.
# - float32 is up to twice as fast as float64; keep it by scaling with a Python float.

# %% [markdown]
# ## Exercises
#
# Each exercise has a cell for your answer, holding `...` where the answer goes, and a
# cell that checks it. Replace the `...`, run your cell, then run the check: it prints
# "not yet" while the `...` is still there, "correct." when your answer passes, and
# otherwise stops with a message that says what to look at. Below each check is a
# collapsed cell with a solution, run through the same check; open it only after trying.
# None of the checks measures time: they count FLOPs and bytes, which are the same on
# every machine.
#
# **Exercise 1 (predict, then write): the engine's memory.** Section 3 measured the
# engine's peak with `tracemalloc`. Write
# `predicted_peak_bytes(num_heads, seq_len, d_k, block_size)`, a formula for the peak of
# `blockwise_attention(Q, K, V, block_size=block_size)` on float32 arrays of shape
# `(1, num_heads, seq_len, d_k)`. Count the arrays that must exist at the worst moment;
# small ones (a number per key, say) may be left out: the check allows 25% and another
# 64 KiB for them and for Python's own objects. Before writing it, predict: by what
# factor does the peak grow when `seq_len` doubles, and when `block_size` doubles?


# %%
def predicted_peak_bytes(num_heads, seq_len, d_k, block_size):
    """Peak bytes of blockwise_attention on float32 (1, num_heads, seq_len, d_k)
    inputs.
    """
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint=(
    "predicted_peak_bytes(num_heads, seq_len, d_k, block_size) returns a number "
    "of bytes."
))
def check_exercise_1(function):
    not_yet(function(4, 2048, 16, 64))
    # (num_heads, seq_len, d_k, block_size): the output dominates, the block
    # dominates, both, many heads
    for num_heads, n, d_k, rows in [
        (1, 2048, 64, 16),
        (1, 2048, 8, 512),
        (4, 1024, 16, 64),
        (8, 256, 8, 32),
    ]:
        Q, K, V = (
            np.ones((1, num_heads, n, d_k), dtype=np.float32) for _ in range(3)
        )
        measured = peak_bytes(
            lambda Q=Q, K=K, V=V, rows=rows: blockwise_attention(
                Q, K, V, block_size=rows
            )
        )
        predicted = function(num_heads, n, d_k, rows)
        assert abs(predicted - measured) <= 0.25 * measured + 64 * 1024, (
            f"num_heads {num_heads}, seq_len {n}, d_k {d_k}, block_size {rows}: "
            f"you predict {predicted} bytes, tracemalloc measured {measured}. Which "
            "arrays exist while the last block runs? (float32: 4 bytes a number; "
            "the weights are never all there)"
        )


print(check_exercise_1(predicted_peak_bytes))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: doubling seq_len doubles the peak (both the output and a block's row
# of scores grow with seq_len); doubling block_size adds one more block of scores, which
# doubles the peak only where the block dominates.
# At the worst moment the engine holds the output, (num_heads, seq_len, d_k), and the
# scores of one block, (block_size, seq_len), plus a block of scaled queries and one
# number per key (the longest key), which are small.
def solution_predicted_peak_bytes(num_heads, seq_len, d_k, block_size):
    output = num_heads * seq_len * d_k  # numbers
    one_block = block_size * seq_len + block_size * d_k  # scores and scaled queries
    return 4 * (output + one_block)  # float32


print(check_exercise_1(solution_predicted_peak_bytes))

# %% [markdown]
# **Exercise 2 (predict, then write): your own query blocks.** Write
# `attention_by_query_blocks(Q, K, V, mask, block_size)` that returns the output of
# `scaled_dot_product_attention(Q, K, V, mask)` (not the weights) by calling
# `scaled_dot_product_attention` on one block of `block_size` queries at a time and
# putting the blocks' outputs together. `mask` may be None, `(seq_q, seq_k)`, or 4-D
# like `padding_mask`'s `(batch, 1, 1, seq_k)`. First predict: which part of the mask
# does the block of queries `start:stop` need, and does any block need another block's
# result?


# %%
def attention_by_query_blocks(Q, K, V, mask, block_size):
    """scaled_dot_product_attention(Q, K, V, mask)[0], computed block_size queries at a
    time.
    """
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "Each block of queries needs every key and its own rows of the mask; "
    "broadcast a padding mask to the scores' shape before slicing it."
))
def check_exercise_2(function):
    Q, K, V = (
        np.random.default_rng(3).standard_normal((2, 4, 50, 8)) for _ in range(3)
    )
    not_yet(function(Q, K, V, None, 16))
    lengths = np.array([50, 31])
    masks = {
        "no mask": None,
        "a causal mask": causal_mask(50),
        "a padding mask": np.arange(50) < lengths[:, None, None, None],
    }
    for name, mask in masks.items():
        expected = scaled_dot_product_attention(Q, K, V, mask)[0]
        for rows in (1, 7, 16, 50, 64):
            try:
                got = function(Q, K, V, mask, rows)
            # e.g. a mask whose rows were sliced without broadcasting it first
            except ValueError as error:
                raise AssertionError(
                    f"{name}, block_size {rows}: {error}"
                ) from None
            assert np.shape(got) == expected.shape, (
                f"{name}, block_size {rows}: shape {np.shape(got)}, not "
                f"{expected.shape}"
            )
            assert np.allclose(got, expected, rtol=1e-12, atol=1e-12), (
                f"{name}, block_size {rows}: the output differs. Each block needs "
                "its own rows of the mask (a padding mask has a query axis of size 1: "
                "broadcast it to the scores' shape before slicing rows)"
            )
    Q32, K32, V32 = (a.astype(np.float32) for a in (Q, K, V))
    assert function(Q32, K32, V32, None, 16).dtype == np.float32, (
        "float32 in should give float32 out"
    )
    Q, K, V = (np.ones((1, 4, 1024, 8), dtype=np.float32) for _ in range(3))
    peak = peak_bytes(lambda: function(Q, K, V, causal_mask(1024), 64))
    weights_bytes = 4 * 1024 * 1024 * 4
    assert peak < weights_bytes / 2, (
        f"at seq_len 1024 your function held {peak / 2**20:.1f} MiB at its peak; "
        f"all the weights take {weights_bytes / 2**20:.0f} MiB. Does it compute the "
        "scores of every query at once somewhere?"
    )


print(check_exercise_2(attention_by_query_blocks))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: the block start:stop needs rows start:stop of the mask and all its
# columns (every key), and nothing from any other block: each query's softmax runs over
# its own row of scores. That independence is the whole idea of the engine. A mask whose
# query axis has size 1 (padding) must first be broadcast to the scores' shape, or
# slicing its rows 16:32 gives an empty array.
def solution_attention_by_query_blocks(Q, K, V, mask, block_size):
    seq_q, seq_k = Q.shape[-2], K.shape[-2]
    if mask is not None:
        mask = np.broadcast_to(
            mask, np.broadcast_shapes(mask.shape, Q.shape[:-2] + (seq_q, seq_k))
        )
    outputs = []
    for start in range(0, seq_q, block_size):
        rows = slice(start, start + block_size)
        block_mask = None if mask is None else mask[..., rows, :]  # (..., rows, seq_k)
        # (..., rows, d_v)
        outputs.append(
            scaled_dot_product_attention(Q[..., rows, :], K, V, block_mask)[0]
        )
    return np.concatenate(outputs, axis=-2)  # (..., seq_q, d_v)


print(check_exercise_2(solution_attention_by_query_blocks))

# %% [markdown]
# **Exercise 3 (predict, then compute): how many queries per block?** Take a machine
# whose ridge point is 20 FLOPs per byte (say 1000 GFLOP/s from 50 GB/s). A block's
# score product `q @ k.T`, float32, reads `q` (rows x d_k) and `k` (seq_k x d_k) and
# writes the scores (rows x seq_k). Write `rows_to_reach(ridge, seq_k, d_k)`: the
# smallest number of query rows whose score product has an arithmetic intensity of at
# least `ridge`, or None if no number of rows reaches it. First predict: with
# `seq_k = 2048`, is a block of 128 rows enough for heads of width `d_k = 64`? And for
# `d_k = 16`, how many rows would it take?


# %%
def rows_to_reach(ridge, seq_k, d_k):
    """Smallest rows with intensity(q @ k.T) >= ridge (float32), or None if none
    reaches it.
    """
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint=(
    "rows_to_reach(ridge, seq_k, d_k) returns a whole number, or None."
))
def check_exercise_3(function):
    not_yet(function(20, 2048, 64))

    # FLOPs >= ridge * bytes moved, in exact integers
    def reaches(rows, ridge, seq_k, d_k):
        flops = 2 * rows * seq_k * d_k
        # read q and k, write the scores
        moved = 4 * (rows * d_k + seq_k * d_k + rows * seq_k)
        return flops >= ridge * moved

    for ridge, seq_k, d_k in [
        (20, 2048, 64),
        (10, 4096, 32),
        (20, 2048, 16),
        (2, 512, 16),
        (31, 2048, 64),
    ]:
        answer = function(ridge, seq_k, d_k)
        # even infinitely many rows stay below the ridge
        if 2 * seq_k * d_k <= 4 * ridge * (d_k + seq_k):
            assert answer is None, (
                f"ridge {ridge}, seq_k {seq_k}, d_k {d_k}: you say {answer} rows, "
                "but no number of rows reaches it. Did you count the bytes of the "
                "scores the product writes?"
            )
            continue
        assert isinstance(answer, (int, np.integer)), (
            f"ridge {ridge}, seq_k {seq_k}, d_k {d_k}: give a whole number"
        )
        assert reaches(answer, ridge, seq_k, d_k), (
            f"ridge {ridge}, seq_k {seq_k}, d_k {d_k}: {answer} rows fall short"
        )
        assert answer == 1 or not reaches(answer - 1, ridge, seq_k, d_k), (
            f"ridge {ridge}, seq_k {seq_k}, d_k {d_k}: {answer - 1} rows already "
            "reach it"
        )


print(check_exercise_3(rows_to_reach))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: for d_k = 64, 128 rows are just enough (113 is the smallest). For d_k
# = 16, no number of rows is: every score costs 4 bytes to write and carries only 2 *
# d_k FLOPs, so the intensity can never exceed 2 * d_k / 4 = d_k / 2 = 8 FLOPs per byte,
# less than 20. The score product of narrow heads is memory-bound however it is blocked,
# unless the scores never go to memory at all: FlashAttention keeps them in fast on-chip
# memory (notebook 11). Solving intensity(rows) >= ridge for rows:
#   2 r s d >= 4 ridge (r d + s d + r s)
#   <=>   r (2 s d - 4 ridge (d + s)) >= 4 ridge s d
def solution_rows_to_reach(ridge, seq_k, d_k):
    # FLOPs minus ridge * bytes, per extra row
    gain = 2 * seq_k * d_k - 4 * ridge * (d_k + seq_k)
    if gain <= 0:
        return None
    return max(1, -(-4 * ridge * seq_k * d_k // gain))  # the ceiling, in exact integers


print(check_exercise_3(solution_rows_to_reach))


# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Section 4 compares the cost
#   per layer of self-attention, $O(n^2 d)$, with recurrent and convolutional layers.
# - Williams, S., Waterman, A. and Patterson, D. (2009). *Roofline: An Insightful Visual
#   Performance Model for Multicore Architectures.* Communications of the ACM 52(4),
#   65-76. [doi:10.1145/1498765.1498785](https://doi.org/10.1145/1498765.1498785). The
#   roofline of section 4.
# - Rabe, M. N. and Staats, C. (2021). *Self-attention Does Not Need $O(n^2)$ Memory.*
#   [arXiv:2112.05682](https://arxiv.org/abs/2112.05682). Attention in chunks of queries
#   and keys, in memory that grows with $\sqrt{n}$ or $\log n$ in the sequence.
# - Dao, T., Fu, D. Y., Ermon, S., Rudra, A. and Ré, C. (2022). *FlashAttention: Fast
#   and Memory-Efficient Exact Attention with IO-Awareness.* NeurIPS 2022.
#   [arXiv:2205.14135](https://arxiv.org/abs/2205.14135). The same argument on a GPU:
#   count the bytes moved between memory levels, tile both queries and keys so that the
#   scores never leave fast memory, and use an online softmax across key tiles
#   ([notebook 11](11_production.ipynb)).
# - Goto, K. and van de Geijn, R. A. (2008). *Anatomy of High-Performance Matrix
#   Multiplication.* ACM Transactions on Mathematical Software 34(3), 12.
#   [doi:10.1145/1356052.1356053](https://doi.org/10.1145/1356052.1356053). How BLAS
#   blocks a matrix product for the caches, and why it runs near the compute roof.
# - Micikevicius, P. et al. (2018). *Mixed Precision Training.* ICLR 2018.
#   [arXiv:1710.03740](https://arxiv.org/abs/1710.03740). Why training in half precision
#   keeps float32 master weights.
#
# **Read next.** Drepper, U. (2007), *What Every Programmer Should Know About Memory*
# ([akkadia.org/drepper/cpumemory.pdf](https://akkadia.org/drepper/cpumemory.pdf)), for
# caches and bandwidth; the Python documentation's page on the GIL and free threading
# ([docs.python.org/3/glossary.html#term-global-interpreter-lock](https://docs.python.org/3/glossary.html#term-global-interpreter-lock));
# and `benchmarks/bench_vs_torch.py` in this repository, which compares the engine with
# `torch.nn.MultiheadAttention` on your machine.
#
# ---
# This appendix ends the chapter. [11_production.ipynb](11_production.ipynb) takes the
# engine's idea further: tiles of keys as well as queries, with an online softmax (as
# in FlashAttention), and a cache of keys and values for generating text; the explorer
# ([explore.ipynb](explore.ipynb)) gathers every control of the chapter in one place.
