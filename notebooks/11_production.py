# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
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
# # 11. The layer in production
#
# The chapter's `MultiHeadAttention` is the layer of every Transformer. The one that
# serves a language model computes the same numbers, but four ideas make it affordable.
# This notebook derives each of them from what the chapter already built, shows the
# package's code for it, checks it against the chapter's own layer, and draws what it
# buys. The layer that gathers them is `GroupedQueryAttention`: notebook 04's module
# with notebook 06's rotary positions (optional here), grouped key/value heads, a KV
# cache and cross-attention, and the bridges to PyTorch's weights. With its defaults it
# is notebook 04's module, weight for weight.
#
# **In this notebook you will learn**
#
# - the *online softmax* behind FlashAttention: notebook 01's max trick, applied one
#   tile of keys at a time, with a one-line correction whenever the maximum grows. It
#   needs memory for one tile, never for a whole row of scores (and, with
#   `is_causal=True`, no mask either);
# - why the row's *log-sum-exp* is all a backward pass needs to rebuild the weights;
# - the *KV cache*: why writing token $t$ of a text costs $O(t)$ instead of $O(t^2)$;
# - *grouped-query* and *multi-query* attention, which shrink that cache, and what it
#   weighs for a real model;
# - *cross-attention*, where the queries come from one sequence and the keys and values
#   from another.
#
# Everything here is computed exactly (counts of operations and bytes) or checked to
# float rounding against the chapter's layer; the timings live in `benchmarks/`, since
# they differ from machine to machine.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import math
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np

from mhattn import (
    GroupedQueryAttention,
    attention_vjp,
    attention_with_dropout,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
)
from mhattn.engine import KVCache, flash_attention
from mhattn.engine import flash as flash_module
from mhattn.pictures import exercise, show_source

np.set_printoptions(precision=4, suppress=True)
rng = np.random.default_rng(8)

# %% [markdown]
# ## 1. The online softmax
#
# ### The problem
#
# Notebook 12 cut the *queries* into blocks so that the weights never exist all at once.
# But each block still holds whole rows of scores, `seq_k` numbers per query: for a
# context of a million tokens that is a million scores per row. To bound the memory by a
# tile size alone, we must also cut the *keys* (and not store a `(seq_q, seq_k)` mask
# either: a causal mask of a million tokens is a terabyte of booleans, so the tiles
# below build theirs from positions). Then no tile ever holds a whole row, and the
# softmax seems impossible: its maximum and its sum run over the whole row.
#
# ### The max trick, once more
#
# Notebook 01 showed that the softmax of scores $s_1, \dots, s_n$ is the same for *any*
# shift $m$:
#
# $$\operatorname{softmax}(s)_j = \frac{e^{s_j - m}}{\sum_i e^{s_i - m}},$$
#
# because the factor $e^{-m}$ cancels between the numerator and the denominator.
# Choosing $m = \max_i s_i$ only keeps every exponent $\le 0$. So the output of one
# query, $o = \sum_j \operatorname{softmax}(s)_j\, v_j$, is
#
# $$o = \frac{\text{acc}}{\ell}, \qquad \ell = \sum_j e^{s_j - m}, \qquad
# \text{acc} = \sum_j e^{s_j - m}\, v_j,$$
#
# for any $m$ we like: the *same* $m$ in $\ell$ and in acc is all that matters.
#
# ### Two tiles
#
# Split the keys into two tiles, $A$ then $B$. After tile $A$ alone we know its maximum
# and sums:
#
# $$m_A = \max_{j \in A} s_j, \qquad \ell_A = \sum_{j \in A} e^{s_j - m_A}, \qquad
# \text{acc}_A = \sum_{j \in A} e^{s_j - m_A}\, v_j .$$
#
# Now tile $B$ arrives. The maximum of the whole row is
# $m = \max(m_A, \max_{j \in B} s_j)$. Every term of $\ell_A$ was measured against
# $m_A$, not $m$; but
#
# $$e^{m_A - m}\, e^{s_j - m_A} = e^{s_j - m},$$
#
# so multiplying $\ell_A$ and $\text{acc}_A$ by the single number $\alpha = e^{m_A - m}$
# turns every one of their terms into the term measured against $m$. Hence
#
# $$\ell = \alpha\,\ell_A + \sum_{j \in B} e^{s_j - m}, \qquad
# \text{acc} = \alpha\,\text{acc}_A + \sum_{j \in B} e^{s_j - m}\, v_j ,$$
#
# are *exactly* the sums over the whole row with shift $m$, and $o = \text{acc} / \ell$
# is the softmax-weighted average, as if we had seen the row at once. Since $m \ge m_A$,
# $\alpha \le 1$: the correction only ever shrinks numbers, and every exponent stays
# $\le 0$, so nothing can overflow. A third tile is the same step with
# $(m, \ell, \text{acc})$ in the place of $(m_A, \ell_A, \text{acc}_A)$, and so on: by
# induction, any number of tiles. The running maximum and sum, rescaled as the maximum
# grows, are the *online softmax* of Milakov and Gimelshein (2018), who computed a
# softmax's denominator in one pass. Carrying the weighted sum of the values, acc,
# along with them and rescaling it by the same $\alpha$ is what turns it into
# attention: Rabe and Staats (2021) did so to compute attention without storing the
# scores, and FlashAttention (Dao et al. 2022) on tiles of queries and keys held in
# fast on-chip memory.
#
# Here it is with numbers: one query, four keys, tiles of two.

# %%
s = np.array([1.0, 3.0, 5.0, 2.0])  # one query's scores
# four values of width 2
v = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [-1.0, 1.0]])
A, B = slice(0, 2), slice(2, 4)

m_A = s[A].max()
l_A = np.exp(s[A] - m_A).sum()
acc_A = np.exp(s[A] - m_A) @ v[A]
print(f"after tile A: m = {m_A:.4f}, l = {l_A:.4f}, acc = {np.round(acc_A, 4)}")

m = max(m_A, s[B].max())  # the maximum grew from 3 to 5
# e^(3 - 5): what everything measured against 3 must be multiplied by
alpha = np.exp(m_A - m)
ell = alpha * l_A + np.exp(s[B] - m).sum()  # ell is the l of the formulas
acc = alpha * acc_A + np.exp(s[B] - m) @ v[B]
print(
    f"after tile B: m = {m:.4f}, alpha = {alpha:.4f}, l = {ell:.4f}, acc = "
    f"{np.round(acc, 4)}"
)

online = acc / ell
at_once = softmax(s) @ v
print("online acc / l      :", np.round(online, 4))
print("softmax(s) @ v      :", np.round(at_once, 4))
print(
    "equal to float64 rounding:",
    np.allclose(online, at_once, rtol=4 * np.finfo(float).eps, atol=0),
)

# %% [markdown]
# And the induction, checked: a hundred scores in tiles of 7 (the last tile is shorter),
# against the softmax of the whole row.

# %%
s = 10 * rng.standard_normal(100)  # scores up to about +-30: exp alone would reach 1e13
v = rng.standard_normal((100, 3))
m, ell, acc = -np.inf, 0.0, np.zeros(3)
for start in range(0, 100, 7):
    tile = slice(start, start + 7)
    m_new = max(m, s[tile].max())
    alpha = np.exp(m - m_new)  # 0 for the first tile: exp(-inf)
    ell = alpha * ell + np.exp(s[tile] - m_new).sum()
    acc = alpha * acc + np.exp(s[tile] - m_new) @ v[tile]
    m = m_new
print(
    "15 tiles, online == at once:",
    np.allclose(acc / ell, softmax(s) @ v, rtol=0, atol=1e-13),
)

# %% [markdown]
# ### The package's code
#
# `mhattn.engine.flash_attention(Q, K, V, mask=None, *, block_q=None, block_k=None,`
# `is_causal=False, return_lse=False)` runs exactly this loop, for a tile of queries at
# once (all rows of the tile together, for one or several heads at a time: when a whole
# head's scores fit in a tile, one tile holds several heads). Here is the loop over the
# key tiles of one query tile; $m$ is `row_max` there, $\ell$ is `row_sum`, and `s`
# holds one tile of scores. Three details go beyond the derivation:
#
# - the running maximum only keeps `exp` from overflowing. When every score of a query
#   tile provably lies in a small range (Cauchy-Schwarz: $|q \cdot k| \le |q|\,|k|$),
#   $m$ stays 0 (`fixed_max`): no maximum, no subtraction, no rescaling, and each key
#   tile costs two products, one `exp` and the row sums;
# - a row whose keys have all been masked so far has $m = -\infty$; shifting by it would
#   give $-\infty - (-\infty) = $ NaN, so such a row is shifted by 0 (its exponentials
#   are 0 anyway), and a row masked to the end gets the output 0, the chapter's rule;
# - a tile whose mask is all `False` adds nothing and is skipped: half the tiles of a
#   causal mask. With `is_causal=True` there is no mask at all: query $i$ may attend to
#   key $j \le i$ (top-left aligned, PyTorch's `is_causal` convention), each tile on the
#   diagonal builds its own `(block_q, block_k)` mask from the positions (`first_query`
#   below), tiles below it need none, and the key loop stops at the tile's last query,
#   so the tiles above it are never visited. The division by $\ell$ happens once, at the
#   end (as in FlashAttention-2, Dao 2023).

# %%
show_source(flash_module._attend_query_tile)

# %% [markdown]
# ### Check: the same numbers as the chapter's attention
#
# On a causal mask with a fully masked row, with tiles that divide nothing evenly, and
# with huge scores, the tiles give the teaching path's output to float rounding. The
# bound, derived from the rounding of each step, is
# $2 \max|v|\,\varepsilon\,(2 d_k S + n + 4)$, with $S$ the largest possible score; the
# package's tests run these checks for every dtype, tile size and mask layout.


# %%
def rounding_bound(Q, K, V):
    """|flash - teaching| <= this (float64): score rounding, then the sums over keys."""
    eps, d_k, seq_k = np.finfo(np.float64).eps, Q.shape[-1], K.shape[-2]
    S = (
        np.linalg.norm(Q, axis=-1).max()
        * np.linalg.norm(K, axis=-1).max()
        / math.sqrt(d_k)
    )
    return 2 * np.abs(V).max() * eps * (2 * d_k * S + seq_k + 4)


Q, K, V = (rng.standard_normal((2, 4, 50, 16)) for _ in range(3))
mask = causal_mask(50) & (np.arange(50) != 7)[:, None]  # query 7 may see nothing
for label, scale in (("ordinary scores", 1.0), ("huge scores (|s| ~ 1000)", 200.0)):
    expected, _ = scaled_dot_product_attention(scale * Q, K, V, mask)
    tiled = flash_attention(scale * Q, K, V, mask, block_q=6, block_k=9)
    within = np.abs(tiled - expected).max() <= rounding_bound(scale * Q, K, V)
    print(
        f"{label:<26} equal within the bound: {within}; fully masked row is zeros: "
        f"{np.all(tiled[:, :, 7] == 0)}"
    )

# %% [markdown]
# And `is_causal=True`, with no mask passed, against the teaching path given
# `causal_mask(50)`:

# %%
expected, _ = scaled_dot_product_attention(Q, K, V, causal_mask(50))
tiled = flash_attention(Q, K, V, block_q=6, block_k=9, is_causal=True)
print(
    "is_causal=True equal within the bound:",
    np.abs(tiled - expected).max() <= rounding_bound(Q, K, V),
)

# %% [markdown]
# ### Picture: the tile schedule
#
# For one head, the queries are cut into tiles of `block_q` rows and the keys into tiles
# of `block_k` columns. Each query tile walks over the key tiles from left to right,
# carrying its $(m, \ell, \text{acc})$; under a causal mask, the tiles above the
# diagonal are all masked and skipped, and those on it are partly masked. This loop
# order, query tiles outside and key tiles inside, is FlashAttention-2's (Dao 2023):
# each query tile's state stays in fast memory until its row is done. The first
# FlashAttention (Dao et al. 2022, Algorithm 1) looped the other way round, with the
# key and value tiles outside, updating every query tile's state in slow memory.

# %%
seq_len, block_q, block_k = 512, 64, 128
allowed = causal_mask(seq_len)
rows, cols = seq_len // block_q, seq_len // block_k
status = np.array(
    [
        [
            allowed[
                i * block_q : (i + 1) * block_q, j * block_k : (j + 1) * block_k
            ].mean()
            for j in range(cols)
        ]
        for i in range(rows)
    ]
)  # fraction of each tile that may be attended to: 0 = skipped
# skipped, partly masked, full
kinds = np.where(status == 0, 0, np.where(status == 1, 2, 1))

fig, ax = plt.subplots(figsize=(7.5, 5))
colours = plt.matplotlib.colors.ListedColormap(["#eeeeee", "#9ecae1", "#3182bd"])
ax.imshow(kinds, cmap=colours, vmin=0, vmax=2, extent=(0, seq_len, seq_len, 0))
for i in range(rows):
    computed = [j for j in range(cols) if kinds[i, j] > 0]
    y = (i + 0.5) * block_q
    ax.annotate(
        "",
        xy=((computed[-1] + 0.8) * block_k, y),
        xytext=(0.2 * block_k, y),
        arrowprops={"arrowstyle": "->", "color": "white", "lw": 1.2},
    )
ax.set_xticks(np.arange(0, seq_len + 1, block_k))
ax.set_yticks(np.arange(0, seq_len + 1, block_q))
ax.grid(True, color="black", linewidth=0.8)
ax.set_xlabel(f"keys, in tiles of block_k = {block_k}")
ax.set_ylabel(f"queries, in tiles of block_q = {block_q}")
ax.set_title("Causal attention in tiles")
legend = [
    plt.Rectangle((0, 0), 1, 1, facecolor=colour, edgecolor="black")
    for colour in colours.colors
]
ax.legend(
    legend,
    ["skipped (all masked)", "partly masked", "full"],
    loc="upper left",
    bbox_to_anchor=(1.02, 1),
)
fig.tight_layout()
print(
    f"{(kinds > 0).sum()} of {kinds.size} tiles computed, {(kinds == 0).sum()} skipped"
)

# %% [markdown] tags=["figure-caption"]
# **Figure.** How a causal flash kernel tiles the score matrix: tiles above the diagonal
# are skipped, tiles on it are computed with a mask, and the rest in full, one row of
# tiles at a time.
#
# <!-- alt: A 512-by-512 grid of tiles, 8 rows of 64 queries by 4 columns of 128 keys.
# Light grey tiles above the diagonal are skipped, light blue tiles on the diagonal
# partly masked, dark blue tiles below it full; a white arrow in each row runs left to
# right up to the diagonal. -->

# %% [markdown]
# ### Memory: one tile, whatever the length
#
# The extra memory is one tile's scratch, plus the output the call returns. We measure
# the peak with `tracemalloc` (NumPy reports every buffer to it) and subtract the
# returned output and log-sum-exp. For tiles of `block_q = 64` queries by
# `block_k = 128` keys, one head of $d_k = d_v = 16$, in float32, the scratch is
#
# - the tile's own buffers: the scores ($64 \times 128$), the scaled queries, the
#   running acc and one key tile's share of the output ($64 \times 16$ each), the
#   running $m$ and $\ell$ (64 each) and a vector of 128 ones (the row sums are a
#   matrix product): 45.0 KiB;
# - a few things of fixed size: the vectors each tile computes on the way (the queries'
#   lengths, the test that lets $m$ stay 0), the scan for the longest key (512 keys at
#   a time), the headers of NumPy's arrays and views, and on NumPy 2.0 and 2.1 a
#   32 KiB ufunc buffer. None of them depends on the length.
#
# So we check two things: the extra is never less than the tile's buffers, and it does
# not grow from 512 to 4096 tokens.
#
# With `is_causal=True`
# the tiles on the diagonal build their masks as views of one vector of
# `block_q + block_k - 1` flags, so causal attention needs no `(seq_len, seq_len)` mask
# and (almost) no more memory.


# %%
def extra_peak_bytes(seq_len, block_q=64, block_k=128, is_causal=False):
    Q = np.ones((1, 1, seq_len, 16), dtype=np.float32)
    tracemalloc.start()
    try:
        output, lse = flash_attention(
            Q,
            Q,
            Q,
            return_lse=True,
            block_q=block_q,
            block_k=block_k,
            is_causal=is_causal,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - output.nbytes - lse.nbytes


# scores, scaled q, acc, one tile's p @ v, m and l, ones
accounted = 4 * (64 * 128 + 3 * 64 * 16 + 2 * 64 + 128)
extra_peak_bytes(512)  # a first call allocates NumPy's and Python's one-time caches
# tracemalloc also counts what the kernel's own threads allocate meanwhile, which only
# adds: the least of three runs is the layer's own peak
lengths = (512, 1024, 2048, 4096)
extras = [min(extra_peak_bytes(n) for _ in range(3)) for n in lengths]
causal_extras = [
    min(extra_peak_bytes(n, is_causal=True) for _ in range(3)) for n in lengths
]
print(f"tile buffers {accounted / 1024:.1f} KiB")
print(
    "measured extra at least that, at every seq_len:",
    all(e >= accounted for e in extras),
)
print(
    "the same with is_causal=True (no mask array):",
    all(e >= accounted for e in causal_extras),
)
print(
    "extra memory the same (within 1 KiB) from 512 to 4096, with or without is_causal:",
    max(extras + causal_extras) - min(extras + causal_extras) < 1024,
)

# %% [markdown]
# `benchmarks/bench_flash.py` shows the same from 1k to 16k tokens and times the tiles
# against notebook 12's query blocks at
# `(batch, seq_len, d_model, heads) = (1, 4096, 256, 4)`. In NumPy both are bound by the
# passes over the scores; the tiles, with their fixed maximum, make fewer passes, which
# is why `FastMultiHeadAttention` uses them when no weights are asked for and the keys
# fill more than one tile, and with a causal mask they skip the masked tiles altogether.
# The point of FlashAttention on a GPU is that a tile fits in fast on-chip memory.
#
# ## 2. What a backward pass needs: the log-sum-exp
#
# Training needs gradients, and notebook 07's `attention_vjp` uses the weights $P$.
# FlashAttention never stores $P$ (that is the whole point), so its backward must
# rebuild it, tile by tile. One number per query row makes that possible: the row's
# *log-sum-exp*,
#
# $$\operatorname{lse}_i = \log \sum_j e^{s_{ij}} = m_i + \log \ell_i,$$
#
# which the forward has at hand at the end of the row. Then every weight is one
# subtraction and one exponential, with no maximum and no sum to recompute:
#
# $$P_{ij} = \frac{e^{s_{ij}}}{\sum_k e^{s_{ik}}} = e^{s_{ij} - \operatorname{lse}_i}.$$
#
# The backward also needs $\sum_j dP_{ij} P_{ij}$ for the softmax's vjp, and since
# $dP = dO\,V^\top$ that is $\sum_j P_{ij} (dO_i \cdot v_j) = dO_i \cdot o_i$: the
# stored output gives it, again without a row of $P$. So the forward keeps $O$ and the
# lse, $n$ numbers per head instead of $n^2$. Below: the weights rebuilt from the lse,
# and the gradients computed from them, equal the teaching path's.

# %%
Q, K, V = (rng.standard_normal((1, 2, 12, 8)) for _ in range(3))
mask = causal_mask(12)
output, lse = flash_attention(Q, K, V, mask, return_lse=True, block_k=5)
scores = np.where(mask, Q @ K.swapaxes(-1, -2) / math.sqrt(8), -np.inf)
rebuilt = np.exp(scores - lse[..., None])  # one subtraction and one exp per weight

_, weights = scaled_dot_product_attention(Q, K, V, mask)
d_output = rng.standard_normal(output.shape)
print(
    "weights rebuilt from the lse:", np.allclose(rebuilt, weights, rtol=0, atol=1e-14)
)
print(
    "sum_j dP_ij P_ij == dO_i . o_i:",
    np.allclose(
        ((d_output @ V.swapaxes(-1, -2)) * weights).sum(-1), (d_output * output).sum(-1)
    ),
)
grads = [attention_vjp(Q, K, V, P, d_output) for P in (rebuilt, weights)]
print(
    "dQ, dK, dV from the rebuilt weights equal:",
    all(np.allclose(a, b, rtol=0, atol=1e-13) for a, b in zip(*grads, strict=True)),
)

# %% [markdown]
# ## 3. The KV cache: decoding in O(t) per token
#
# A language model writes one token at a time: token $t + 1$ is chosen from the output
# at position $t$, which needs the queries of position $t$ and the keys and values of
# positions $0, \dots, t$. Recomputing the whole causal forward for each new token
# repeats the work of every earlier step. Under a causal mask that work never changes:
# token $i$ sees only tokens $\le i$, so its key $x_i W_k$ and value $x_i W_v$ do not
# depend on anything that comes later. A cache keeps them. Each step then projects only
# the new tokens, appends their keys and values, and lets the new queries attend to
# everything cached (with the causal mask among the new tokens themselves).
#
# `mha(x_t, kv_cache=cache)` does exactly that: the module calls
# `cache.extend(K_new, V_new, owner=self)`, which appends and returns all keys and
# values so far, and the causal mask of the new rows.

# %%
show_source(KVCache.extend)

# %% [markdown]
# Appending to a NumPy array copies it (`np.concatenate` makes a new one): for token $t$
# that moves all $t$ cached keys and values. That is still $O(t)$ per token, the order
# of the attention itself; but on top of the attention's one read of the cached keys
# and values, every step reads and writes them all again. The cache over-allocates like
# a Python list instead: when full, it doubles its capacity and copies once, so copying
# costs $O(1)$ per token on average.

# %%
show_source(KVCache._grow)

# %% [markdown]
# Check: feeding a sequence one token at a time, or in uneven chunks, gives the causal
# forward's outputs (the tests require agreement to 1e-12 in float64).

# %%
mha = GroupedQueryAttention(d_model=32, num_heads=4, seed=0)
x = rng.standard_normal((2, 20, 32))
expected, _ = mha(x, causal_mask(20))
for chunks in ([1] * 20, [7, 1, 5, 7]):
    cache = KVCache()
    bounds = np.cumsum([0] + chunks)
    decoded = np.concatenate(
        [
            mha(x[:, a:b], kv_cache=cache)[0]
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ],
        axis=1,
    )
    print(
        f"chunks {chunks[:4]}{'...' if len(chunks) > 4 else ''}: equal to mha(x, "
        "causal_mask(20)) within 1e-12:",
        np.abs(decoded - expected).max() < 1e-12,
        f"| cache {cache}",
    )

# %% [markdown]
# ### Picture: what a token costs
#
# Count the FLOPs (notebook 12's rule: an $m \times k$ by $k \times p$ product costs
# $2mkp$) of producing token $t$'s output, for one sequence of width $d$ = `d_model`:
#
# - **recomputing** the causal forward over the $t + 1$ tokens so far:
#   $8 (t+1) d^2 + 4 (t+1)^2 d$, growing like $t^2$;
# - **with the cache**: the new token's projections, $8 d^2$, plus its scores and
#   weighted sum over $t + 1$ keys, $4 (t + 1) d$: nearly flat.
#
# Summed over a text of $n$ tokens, that is $O(n^3)$ against $O(n^2)$ (for $n < 2d$, the
# projections dominate, and it is $O(n^2)$ against $O(n)$). The counts are exact;
# `benchmarks/bench_kv_cache.py` measures the times for 1024 tokens at `d_model` 256
# with 4 heads, and checks that both loops give the same outputs.

# %%
d, n = 256, 1024
t = np.arange(n)
recompute = 8 * (t + 1) * d**2 + 4 * (t + 1) ** 2 * d
cached = 8 * d**2 + 4 * (t + 1) * d

fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8))
left.semilogy(t, recompute, label="recompute the causal forward")
left.semilogy(t, cached, label="with the KV cache")
left.set(
    xlabel="token t",
    ylabel="FLOPs for token t",
    title=f"Cost of one token, d_model = {d}",
)
left.legend()
left.grid(True, which="both", alpha=0.3)

tokens = np.arange(1, n + 1)
# 16 at first, then doubling
capacity = 16 * 2 ** np.ceil(np.log2(np.maximum(tokens, 16) / 16)).astype(int)
# tokens moved on growth
copied = np.cumsum(np.where(np.r_[False, capacity[1:] > capacity[:-1]], tokens - 1, 0))
right.plot(tokens, capacity, label="capacity (doubles when full)")
right.plot(tokens, copied, label="tokens copied so far")
right.plot(tokens, 2 * tokens, "k:", label="2 x tokens")
right.set(
    xlabel="tokens cached",
    ylabel="tokens",
    title="Cache growth: amortised O(1) per token",
)
right.legend()
right.grid(True, alpha=0.3)
fig.tight_layout()
print(
    f"total for {n} tokens: recompute {recompute.sum() / 1e9:.1f} GFLOP, cache "
    f"{cached.sum() / 1e9:.2f} GFLOP ({recompute.sum() / cached.sum():.0f}x fewer)"
)

# %% [markdown] tags=["figure-caption"]
# **Figure.** The KV cache turns each new token's cost from the whole causal forward
# into one row, and doubling its capacity when full keeps the copying at amortised O(1)
# per token.
#
# <!-- alt: Top: log-scale FLOPs for token t against t up to 1024: recomputing rises
# steeply to about 1.6e9, the KV cache slowly from 5e5 to 1.6e6. Bottom: a staircase of
# cache capacity doubling at 32, 64 ... 512 tokens, the tokens copied so far just below
# it, both under a dotted line at twice the tokens. -->

# %% [markdown]
# The capacity drawn in the bottom panel is the cache's own rule, checked here against a
# real cache:

# %%
cache, seen = KVCache(), []
for _ in range(n):
    cache.extend(np.zeros((1, 1, 1, 2)), np.zeros((1, 1, 1, 2)))
    seen.append(cache.capacity)
print("the drawn capacity is the KVCache's:", np.array_equal(seen, capacity))

# %% [markdown]
# `benchmarks/bench_kv_cache.py` times both loops on your machine; the FLOP counts above
# are what the cache saves in arithmetic, on any machine.
#
# ## 4. Grouped-query and multi-query attention: a smaller cache
#
# The cache holds, for every layer and every token, one key and one value per head. For
# a large model that, not the weights, is what limits how many sequences fit in memory.
# Multi-query attention (Shazeer 2019) keeps all the query heads but only *one*
# key/value head, shared by all of them; grouped-query attention (Ainslie et al. 2023)
# sits between: `num_kv_heads` key/value heads, each shared by a group of
# `num_heads // num_kv_heads` query heads. Query head $h$ reads key/value head $h$ //
# `(num_heads // num_kv_heads)` (PyTorch's `enable_gqa` convention), and `W_qkv` shrinks
# to `(d_model, d_model + 2 * num_kv_heads * d_k)`: the query columns, then the key
# columns, then the value columns.

# %%
show_source(GroupedQueryAttention.forward)

# %% [markdown]
# The `np.repeat` lets every query head of a group read its group's keys and values; the
# cache stores them *before* the repeat. Check: with `num_kv_heads = 2` and 4 query
# heads, heads 0 and 1 attend with the same keys (their weights differ because their
# queries do), and the cache is half as large.

# %%
x = rng.standard_normal((1, 6, 32))
for num_kv_heads in (4, 2, 1):
    mha = GroupedQueryAttention(32, 4, seed=1, num_kv_heads=num_kv_heads)
    cache = KVCache()
    mha(x, kv_cache=cache)
    print(
        f"num_kv_heads = {num_kv_heads}: W_qkv {mha.W_qkv.shape}, cache {cache.nbytes} "
        "bytes for 6 tokens"
    )

mha = GroupedQueryAttention(32, 4, seed=1, num_kv_heads=2)
_, weights = mha(x)
# (1, 4, 6, 8)
Q_all = (x @ mha.W_qkv[:, :32]).reshape(1, 6, 4, 8).transpose(0, 2, 1, 3)
# (1, 2, 6, 8)
K_shared = (x @ mha.W_qkv[:, 32:48]).reshape(1, 6, 2, 8).transpose(0, 2, 1, 3)
by_hand = [
    softmax(Q_all[0, h] @ K_shared[0, h // 2].T / math.sqrt(8)) for h in range(4)
]
print(
    "head h uses key/value head h // 2:",
    all(np.allclose(weights[0, h], by_hand[h], rtol=0, atol=1e-12) for h in range(4)),
)

# %% [markdown]
# The package's tests check the module against
# `torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)` with the same
# projections.
#
# ### What the cache weighs for a published model
#
# Llama 2 70B (Touvron et al. 2023) has 80 layers of 64 query heads of width 128
# (`d_model` = 8192) and uses grouped-query attention with 8 key/value heads. In 16-bit
# floats, the cache of one token is
#
# $$2\ (\text{K and V}) \times 80\ \text{layers} \times 8\ \text{heads}
#   \times 128 \times 2\ \text{bytes} = 327{,}680\ \text{bytes} = 320\ \text{KiB},$$
#
# 1.25 GiB for one sequence of its 4096-token context. With a key/value head per query
# head it would be 8 times that.


# %%
def kv_bytes_per_token(layers, num_kv_heads, d_head, bytes_per_number=2):
    return 2 * layers * num_kv_heads * d_head * bytes_per_number  # keys and values


layers, num_heads, d_head, context = 80, 64, 128, 4096
variants = {"MHA (64 KV heads)": 64, "GQA (8, as published)": 8, "MQA (1 KV head)": 1}
per_sequence = {
    name: kv_bytes_per_token(layers, kv, d_head) * context / 2**30
    for name, kv in variants.items()
}
for name, kv in variants.items():
    print(
        f"{name:<22} {kv_bytes_per_token(layers, kv, d_head) / 1024:7.0f} KiB per "
        f"token, {per_sequence[name]:6.2f} GiB per {context}-token sequence"
    )

fig, ax = plt.subplots(figsize=(7, 3.2))
bars = ax.barh(
    list(per_sequence)[::-1],
    list(per_sequence.values())[::-1],
    color=["#fdae6b", "#3182bd", "#9ecae1"],
)
ax.bar_label(
    bars, labels=[f"{v:.2f} GiB" for v in list(per_sequence.values())[::-1]], padding=3
)
ax.set_xlabel(f"KV cache of one {context}-token sequence, float16 (GiB)")
ax.set_title("Llama 2 70B's attention layout: 80 layers, 64 query heads of 128")
ax.set_xlim(0, 12)
fig.tight_layout()

# %% [markdown] tags=["figure-caption"]
# **Figure.** Grouped-query attention shrinks the KV cache by the factor of heads it
# shares: Llama 2 70B's eight KV heads need an eighth of the memory of full multi-head
# attention.
#
# <!-- alt: Horizontal bar chart of the KV cache of one 4096-token sequence in GiB: MHA
# with 64 KV heads 10.00 GiB, GQA with 8 as published 1.25 GiB, MQA with 1 KV head 0.16
# GiB. -->

# %% [markdown]
# ## 5. Cross-attention
#
# In an encoder-decoder model (the original Transformer, a translation model, Whisper),
# the decoder also attends to the *encoder's* output. The queries come from the
# decoder's own tokens `x`, shape `(batch, seq_q, d_model)`; the keys and values from
# the encoder's output, the *context*, shape `(batch, seq_k, d_model)`. The same
# module does it: `mha(x, mask, context=context)` projects `x` through the query columns
# of `W_qkv` and the context through the key and value columns. The weights have shape
# `(batch, num_heads, seq_q, seq_k)`, and a padding mask on the context keeps the
# queries off its padding. The tests check it against
# `torch.nn.MultiheadAttention(query=x, key=context, value=context)` with copied
# weights.
#
# A KV cache with a context is refused: a cache appends the keys and values of new
# tokens, and the context gains none during decoding. This module projects the context
# again at every call, which is correct but repeats work; a decoder built for speed
# keeps the context's keys and values from the first step.

# %%
mha = GroupedQueryAttention(16, 2, seed=3)
x = rng.standard_normal((2, 4, 16))  # the decoder's 4 tokens
# the encoder's output: 7 tokens, the second sequence has 5
context = rng.standard_normal((2, 7, 16))
mask = padding_mask([7, 5], 7)  # (batch, 1, 1, seq_k)
output, weights = mha(x, mask, context=context)
print("output", output.shape, "weights", weights.shape)
print(
    "padding gets no weight:",
    np.all(weights[1, :, :, 5:] == 0),
    "| rows sum to one:",
    np.allclose(weights.sum(-1), 1),
)
print(
    "context=x is self-attention:",
    np.allclose(mha(x, context=x)[0], mha(x)[0], rtol=0, atol=1e-13),
)

# the chapter's colours: Blues for weights, grey for masked cells
cmap = plt.get_cmap("Blues").with_extremes(bad="#d9d9d9")
fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.2), layout="constrained")
for b, ax in enumerate(axes):
    allowed = np.broadcast_to(mask[b, 0], weights[b, 0].shape)  # (seq_q, seq_k)
    image = ax.imshow(
        np.ma.masked_where(~allowed, weights[b, 0]), cmap=cmap, vmin=0, vmax=1
    )
    ax.set(xlabel="context token (key)", title=f"sequence {b}, head 0")
    ax.set_xticks(range(7))
    ax.set_yticks(range(4))
axes[0].set_ylabel("decoder token (query)")
fig.colorbar(image, ax=axes, label="attention weight", shrink=0.9)
fig.suptitle("Cross-attention weights (grey: the context's padding)")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Cross-attention: the decoder's queries read the context's keys, and the
# context's padding is masked for every query.
#
# <!-- alt: Two 4-by-7 heatmaps, decoder token down and context token across. Sequence 0
# has no grey cells, with its darkest cell at query 2, key 0. Sequence 1 has columns 5
# and 6 grey in every row. -->

# %% [markdown]
# ## 6. Attention dropout
#
# During training, some models drop attention weights at random after the softmax
# (`dropout_p`; BERT used 0.1) and scale the survivors by $1 / (1 - p)$ so
# that each weight keeps its expected value. Most large language models trained today
# use no attention dropout at all ($p = 0$), and at inference it is always off.
# `attention_with_dropout(Q, K, V, mask, dropout_p=p, rng=rng)` does so, seeded
# through a NumPy `Generator`; at `dropout_p=0` it changes nothing and draws no random
# numbers. Averaged over many draws, the output comes back to the one without dropout:

# %%
Q, K, V = (rng.standard_normal((1, 5, 4)) for _ in range(3))
plain, _ = scaled_dot_product_attention(Q, K, V)
generator = np.random.default_rng(0)
mean = np.mean(
    [
        attention_with_dropout(Q, K, V, dropout_p=0.3, rng=generator)[0]
        for _ in range(2000)
    ],
    axis=0,
)
print(
    "mean of 2000 dropped outputs minus the plain output, largest entry:",
    f"{np.abs(mean - plain).max():.2f}",
)
print(
    "one draw, seeded again, is the same:",
    np.array_equal(
        *(
            attention_with_dropout(
                Q, K, V, dropout_p=0.3, rng=np.random.default_rng(1)
            )[1]
            for _ in range(2)
        )
    ),
)

# %% [markdown]
# ## 7. Where the layer sits: a Transformer block
#
# A language model stacks the same block many times. For a batch of token vectors `x` of
# shape `(batch, seq_len, d_model)`, a block in the pre-LayerNorm layout of GPT-2 and
# most models since (Xiong et al. 2020) is
#
# $$h = x + \operatorname{MultiHead}(\operatorname{LN}_1(x)), \qquad
#   y = h + \operatorname{MLP}(\operatorname{LN}_2(h)),$$
#
# - `LN` is a LayerNorm: each token's vector is shifted and scaled to mean 0 and
#   variance 1 over its `d_model` features, then given a learned scale and shift; shape
#   unchanged, `(batch, seq_len, d_model)`;
# - `MultiHead` is this chapter's layer, with the causal mask in a language model; its
#   output has the shape of its input, so it can be added back;
# - the two additions are the *residual connections* of notebook 05's exercise 3: each
#   sublayer writes a change into the stream of token vectors, which the next one reads;
# - `MLP` acts on each token on its own: `(batch, seq_len, d_model)` to
#   `(batch, seq_len, 4 * d_model)` (typically), a nonlinearity, and back to `d_model`.
#   Attention is the only place where tokens exchange information.
#
# The original Transformer put the LayerNorm after each addition instead (post-LN,
# $\operatorname{LN}(x + \operatorname{MultiHead}(x))$); before the addition, as above,
# deep stacks train more stably. A block's output has the shape of its input, so blocks
# stack: `y` is the next block's `x`.
#
# ### The same pieces in PyTorch
#
# (`F` is `torch.nn.functional`.)
#
# - `scaled_dot_product_attention(Q, K, V, mask)` is
#   `F.scaled_dot_product_attention(q, k, v, attn_mask=mask)`; a boolean `attn_mask`
#   means True = may attend, as here.
# - `causal_mask(seq_len)` is its `is_causal=True`: no mask array, top-left aligned.
# - `flash_attention`, the tiles of section 1, are the fused kernels (FlashAttention,
#   memory-efficient attention) that `F.scaled_dot_product_attention` picks by itself.
# - `num_kv_heads` (section 4) is its `enable_gqa=True`, with fewer key/value heads
#   than query heads; `dropout_p` (section 6) has the same name there.
# - `GroupedQueryAttention(d_model, num_heads)` (notebook 04's `MultiHeadAttention` too)
#   is
#   `nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True)`, whose
#   boolean masks mean True = *blocked* (notebook 02); its `in_proj_weight` and
#   `out_proj.weight` are our `W_qkv` and `W_o`, stored transposed (`x @ W.T`).
# - `KVCache` has no counterpart in `torch.nn`: libraries that generate text keep
#   their own.
#
# The chapter's tests compare the package with PyTorch under these names.
#
# ### Loading a PyTorch module's weights
#
# `GroupedQueryAttention.from_torch(module)` copies the weights of a bias-free
# `nn.MultiheadAttention` (batch first or not); `mha.to_torch()` goes the other
# way. Weights kept as four matrices, as most codebases keep them (`q_proj`,
# `k_proj`, ...), come in through `GroupedQueryAttention.from_weights(W_q, W_k, W_v,
# W_o, num_heads=..., layout="torch")`. The `layout` has no default: a square
# weight has the same shape transposed, and a transposed one runs without
# complaint and gives other numbers. For RoPE, `rope=True` pairs coordinates `i`
# and `i + d_k / 2` (GPT-NeoX, Hugging Face's Llama) and `rope="interleaved"`
# pairs `2i` and `2i + 1` (RoFormer, Meta's Llama); `forward(x, positions=...)`
# takes each token's position, one row per sequence if need be.
#
# Below, a torch module and its copy run on the same tokens under the same causal
# mask, which torch wants inverted (True = blocked).

# %%
# NBVAL_IGNORE_OUTPUT
# (what this cell prints depends on whether PyTorch is installed)
try:
    import torch
except ImportError:  # the rest of the notebook needs no torch
    torch = None
    print("This cell compares with PyTorch, which is not installed:",
          'pip install "mhattn[torch]" to run it.')
if torch is not None:
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(16, 4, bias=False, batch_first=True,
                                         dtype=torch.float64).eval()
    from_torch = GroupedQueryAttention.from_torch(module)  # (out, in) -> (in, out)
    x_torch = np.random.default_rng(0).standard_normal((2, 6, 16))  # (batch, seq, d)
    ours, our_weights = from_torch(x_torch, causal_mask(6))
    t, blocked = torch.from_numpy(x_torch), torch.from_numpy(~causal_mask(6))
    with torch.no_grad():  # average_attn_weights=False: one weight matrix per head
        theirs, their_weights = module(t, t, t, attn_mask=blocked,
                                       average_attn_weights=False)
    same = np.allclose(ours, theirs.numpy(), rtol=0, atol=1e-12)
    print("same outputs:", same)
    same = np.allclose(our_weights, their_weights.numpy(), rtol=0, atol=1e-12)
    print("same weights, head by head:", same)

# %% [markdown]
# ## Summary
#
# - The softmax's shift can be *any* number, so it can change on the way: multiplying
#   the running sum and output by $e^{m_\text{old} - m_\text{new}}$ moves them to the
#   new maximum. That is the online softmax; carrying the output along, over tiles of
#   queries and keys, is FlashAttention, in memory bounded by the tile size.
# - The row's log-sum-exp and the output are all a backward pass needs:
#   $P_{ij} = e^{s_{ij} - \operatorname{lse}_i}$, recomputed tile by tile.
# - Under a causal mask, old keys and values never change: a KV cache makes each new
#   token cost $O(t)$ instead of $O(t^2)$, and doubling its capacity keeps appending
#   $O(1)$ amortised.
# - Grouped-query attention shares each key/value head among a group of query heads; the
#   cache shrinks by `num_heads / num_kv_heads` (8x for Llama 2 70B).
# - Cross-attention is the same module with the keys and values projected from another
#   sequence.
# - In a Transformer block the layer sits between a LayerNorm and a residual addition,
#   followed by a per-token MLP; PyTorch's `F.scaled_dot_product_attention` and
#   `nn.MultiheadAttention` are the same computation under other names.
#
# ## Exercises
#
# Each exercise has a cell for your answer, holding `...`, and a cell that checks it: it
# prints "not yet" while the `...` is there, "correct." when your answer passes, and
# otherwise stops with a message that says what to look at. A collapsed solution
# follows.
#
# **Exercise 1 (merge two tiles).** Two workers each processed half of a row's keys and
# returned their partial states `(m, l, acc)`: each a maximum, a sum of `exp(s - m)` and
# an unnormalised output measured against its own `m`. Write `merge(state_1, state_2)`
# that returns the state of the whole row. (This is how Flash-Decoding splits a long row
# of keys across several processors, its "split-KV" (Dao et al. 2023).) A worker that
# saw only masked keys
# returns `(-inf, 0.0, zeros)`.


# %%
def merge(state_1, state_2):
    """The (m, l, acc) of a row from the (m, l, acc) of its two halves."""
    return ...  # your code here


# %%
def check_exercise_1(merge):
    try:
        generator = np.random.default_rng(1)
        s, v = 20 * generator.standard_normal(12), generator.standard_normal((12, 3))

        def state(part):
            if part.stop == part.start:
                return -np.inf, 0.0, np.zeros(3)
            m = s[part].max()
            return m, np.exp(s[part] - m).sum(), np.exp(s[part] - m) @ v[part]

        result = merge(state(slice(0, 5)), state(slice(5, 12)))
        if result is ...:
            return (
                "Exercise 1: not yet. Replace the ... with your answer and run the "
                "cell again."
            )
        m, ell, acc = result
        assert np.isclose(m, s.max()), (
            f"the merged maximum should be the row's maximum {s.max():.4f}; got {m}"
        )
        assert np.allclose(acc / ell, softmax(s) @ v, rtol=1e-12, atol=1e-12), (
            "acc / l is not the softmax-weighted average: multiply each half's l and "
            "acc by exp(its m - merged m)"
        )
        assert np.isclose(ell, np.exp(s - m).sum()), (
            "l should be the sum of exp(s - m) over the whole row"
        )
        # one worker saw nothing
        for halves in ((slice(0, 12), slice(12, 12)), (slice(0, 0), slice(0, 12))):
            m, ell, acc = merge(state(halves[0]), state(halves[1]))
            assert np.allclose(acc / ell, softmax(s) @ v), (
                "a worker with no keys (m = -inf, l = 0) must change nothing"
            )
        # -inf - (-inf) is NaN: the check below reports it
        with np.errstate(invalid="ignore"):
            m, ell, acc = merge(state(slice(0, 0)), state(slice(0, 0)))
        assert m == -np.inf and ell == 0 and np.all(np.asarray(acc) == 0), (
            "two workers that saw no keys should give (-inf, 0, zeros); got NaN? "
            "exp(m_1 - m) with m_1 = m = -inf is exp(NaN): handle the case where both "
            "maxima are -inf"
        )
    except (ValueError, TypeError, IndexError, AttributeError) as error:
        # a near miss that crashes gets a hint, not a traceback
        raise AssertionError(
            f"Exercise 1: your answer raised {type(error).__name__}: {error}. merge "
            "returns a tuple (m, l, acc), like each of its two arguments."
        ) from None
    return "Exercise 1: correct."


print(check_exercise_1(merge))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Both halves move to the larger maximum: each one's l and acc are multiplied by
# exp(its own m - the merged m), a number <= 1. If a half saw no keys, its m is -inf and
# its factor exp(-inf) = 0: nothing of it is added.
def solution_merge(state_1, state_2):
    (m_1, l_1, acc_1), (m_2, l_2, acc_2) = state_1, state_2
    m = max(m_1, m_2)
    if m == -np.inf:  # both halves saw only masked keys
        return m, 0.0, acc_1 + acc_2
    a_1, a_2 = np.exp(m_1 - m), np.exp(m_2 - m)
    return m, a_1 * l_1 + a_2 * l_2, a_1 * acc_1 + a_2 * acc_2


print(check_exercise_1(solution_merge))

# %% [markdown]
# **Exercise 2 (fit a batch).** Section 4 counts the bytes one token adds to the cache.
# A server asks the inverse question: with `free_bytes` of memory left after the
# weights, how many sequences of `tokens` tokens can it decode at once? Write
# `sequences_that_fit(free_bytes, layers, num_kv_heads, d_head, tokens,
# bytes_per_number)`,
# the largest whole number of sequences whose keys and values fit. The check compares
# it with real `KVCache`s and with Llama 2 70B.


# %%
def sequences_that_fit(
    free_bytes, layers, num_kv_heads, d_head, tokens, bytes_per_number
):
    """How many `tokens`-long sequences fit their keys and values in `free_bytes`."""
    return ...  # your code here


# %%
def check_exercise_2(sequences_that_fit):
    try:
        answer = sequences_that_fit(40 * 2**30 + 2**29, 80, 8, 128, 4096, 2)
        if answer is ...:
            return (
                "Exercise 2: not yet. Replace the ... with your answer and run the "
                "cell again."
            )
        mha = GroupedQueryAttention(24, 6, num_kv_heads=3)
        caches = [KVCache() for _ in range(2)]  # two layers, one sequence of 5 tokens
        for cache in caches:
            mha(np.zeros((1, 5, 24)), kv_cache=cache)
        one = sum(cache.nbytes for cache in caches)
        for free in (one - 1, one, 7 * one + one // 2):
            mine = sequences_that_fit(free, 2, 3, 4, 5, 8)
            assert mine == free // one, (
                "two layers of a 6-head module with 3 key/value heads of width 4, "
                f"sequences of 5 tokens in float64: each sequence's caches hold {one} "
                f"bytes, and {free} bytes hold {free // one} of them; you say {mine}. "
                "Count keys *and* values, the key/value heads (not the query heads), "
                "and only whole sequences"
            )
        assert answer == 32, (
            "Llama 2 70B, 4096-token sequences in bfloat16, 40.5 GiB free: you say "
            f"{answer} sequences"
        )
    except (
        ValueError, TypeError, IndexError, AttributeError, ZeroDivisionError
    ) as error:
        # a near miss that crashes gets a hint, not a traceback
        raise AssertionError(
            f"Exercise 2: your answer raised {type(error).__name__}: {error}. "
            "sequences_that_fit(...) returns one whole number."
        ) from None
    return "Exercise 2: correct."


print(check_exercise_2(sequences_that_fit))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# One sequence caches, per layer and per token, one key and one value (the 2) of width
# d_head for each key/value head; the query heads are not cached at all. Whole
# sequences only: floor division.
def solution_sequences_that_fit(
    free_bytes, layers, num_kv_heads, d_head, tokens, bytes_per_number
):
    per_sequence = 2 * layers * num_kv_heads * d_head * tokens * bytes_per_number
    return free_bytes // per_sequence


print(check_exercise_2(solution_sequences_that_fit))

# %% [markdown]
# **Exercise 3 (predict).** A causal attention over `seq_len = 1024` tokens runs in
# tiles of `block_q = block_k = 128`. How many of the $8 \times 8 = 64$ tiles does
# `flash_attention` compute, and how many of those are partly masked? Answer with a pair
# of ints.

# %%
tiles_prediction = ...  # (tiles computed, of which partly masked)


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint=(
    "tiles_prediction should be a pair of whole numbers: (computed, partly "
    "masked)."
))
def check_exercise_3(prediction):
    allowed = causal_mask(1024)
    # (query tile, key tile)
    fractions = allowed.reshape(8, 128, 8, 128).mean(axis=(1, 3))
    computed, partly = (
        int((fractions > 0).sum()),
        int(((fractions > 0) & (fractions < 1)).sum()),
    )
    computed_guess, partly_guess = prediction
    assert computed_guess == computed, (
        f"{computed_guess} tiles computed? A tile is skipped only when every one "
        "of its entries is masked: in which tiles does the causal mask leave one "
        "allowed entry?"
    )
    assert partly_guess == partly, (
        f"{partly_guess} partly masked? A partly masked tile holds allowed and "
        "masked entries both: where does the edge of the causal mask run?"
    )


print(check_exercise_3(tiles_prediction))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Tiles at or below the diagonal hold at least one allowed entry: 8 + 7 + ... + 1 = 36.
# The 8 on the diagonal are partly masked (their upper triangle); the other 28 are full.
# The 28 above the diagonal are skipped: nearly half the work.
solution_tiles = (36, 8)
print(check_exercise_3(solution_tiles))

# %% [markdown]
# ## References
#
# - Milakov, M. and Gimelshein, N. (2018). *Online normalizer calculation for softmax.*
#   [arXiv:1805.02867](https://arxiv.org/abs/1805.02867). The running maximum and sum of
#   a softmax, rescaled when the maximum grows: section 1's $m$ and $\ell$.
# - Rabe, M. N. and Staats, C. (2021). *Self-attention Does Not Need $O(n^2)$ Memory.*
#   [arXiv:2112.05682](https://arxiv.org/abs/2112.05682). The value accumulator acc,
#   rescaled with them: attention over chunks of keys without storing the scores.
# - Dao, T., Fu, D. Y., Ermon, S., Rudra, A. and Ré, C. (2022). *FlashAttention: Fast
#   and Memory-Efficient Exact Attention with IO-Awareness.* NeurIPS 2022.
#   [arXiv:2205.14135](https://arxiv.org/abs/2205.14135). Algorithm 1: the rescaled
#   accumulator over tiles held in fast on-chip memory (key tiles in the outer loop);
#   the backward pass from the stored statistics.
# - Dao, T. (2023). *FlashAttention-2: Faster Attention with Better Parallelism and Work
#   Partitioning.* [arXiv:2307.08691](https://arxiv.org/abs/2307.08691). The loop order
#   drawn in section 1 (query tiles outside, key tiles inside), the division by $\ell$
#   deferred to the end, and the log-sum-exp as the one statistic kept for the
#   backward.
# - Dao, T., Haziza, D., Massa, F. and Sizov, G. (2023). *Flash-Decoding for
#   long-context inference.* [PyTorch blog](https://pytorch.org/blog/flash-decoding/).
#   Split-KV: one query's keys split across processors, the partial `(m, l, acc)`
#   merged at the end (exercise 1).
# - Shazeer, N. (2019). *Fast Transformer Decoding: One Write-Head is All You Need.*
#   [arXiv:1911.02150](https://arxiv.org/abs/1911.02150). Multi-query attention, and why
#   decoding is bound by the memory traffic of the keys and values.
# - Ainslie, J., Lee-Thorp, J., de Jong, M., Zemlyanskiy, Y., Lebrón, F. and Sanghai, S.
#   (2023). *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
#   Checkpoints.* EMNLP 2023. [arXiv:2305.13245](https://arxiv.org/abs/2305.13245).
#   Grouped-query attention.
# - Touvron, H. et al. (2023). *Llama 2: Open Foundation and Fine-Tuned Chat Models.*
#   [arXiv:2307.09288](https://arxiv.org/abs/2307.09288). The 70B model's grouped-query
#   attention (section 2.2 and appendix A.2.1); its 80 layers, 64 heads of 128 and 8
#   key/value heads are those of the released configuration.
# - Vaswani, A. et al. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Cross-attention is its
#   "encoder-decoder attention" (section 3.2.3, Applications of Attention in our Model).
# - Xiong, R. et al. (2020). *On Layer Normalization in the Transformer Architecture.*
#   ICML 2020. [arXiv:2002.04745](https://arxiv.org/abs/2002.04745). The LayerNorm
#   before each sublayer (pre-LN) of section 7, and why it trains more stably.
# - Pope, R. et al. (2023). *Efficiently Scaling Transformer Inference.* MLSys 2023.
#   [arXiv:2211.05102](https://arxiv.org/abs/2211.05102). The KV cache's memory as the
#   limit of batch size and context length in serving.
#
# **Measure it yourself:** `python benchmarks/bench_flash.py` (tiles against query
# blocks, time and memory) and `python benchmarks/bench_kv_cache.py` (decoding with and
# without the cache).
#
# ---
# Previous: [07_learning_to_attend.ipynb](07_learning_to_attend.ipynb), the backward
# pass and a model that learns. Next: the explorer
# ([explore.ipynb](explore.ipynb)), every control of the chapter in one place, including
# the trained model of notebook 07.
