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
# Notebook 10 ran a real language model, SmolLM2, with the chapter's own attention: its
# nine query heads share three key/value heads, and it wrote text with a KV cache. This
# notebook derives those two ideas, and two more that make attention affordable at
# scale. The layer that gathers them is `GroupedQueryAttention`: notebook 04's module
# with notebook 06's rotary positions (optional), grouped key/value heads, a KV cache
# and cross-attention. With its defaults it is notebook 04's module, weight for weight.
#
# **In this notebook you will learn**
#
# - the *online softmax* behind FlashAttention: notebook 01's max trick, one tile of
#   keys at a time, in memory for one tile, never for a whole row of scores;
# - why the row's *log-sum-exp* is all a backward pass needs to rebuild the weights;
# - the *KV cache*: why writing token $t$ costs $O(t)$ instead of $O(t^2)$;
# - *grouped-query* attention, which shrinks that cache;
# - *cross-attention*: queries from one sequence, keys and values from another.
#
# Everything here is counted exactly or checked to float rounding against the chapter's
# layer; timings live in `benchmarks/`, since they differ from machine to machine.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import math

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
from mhattn.core import projection
from mhattn.engine import KVCache, flash_attention
from mhattn.engine import flash as flash_module
from mhattn.pictures import exercise, not_yet, show_source

np.set_printoptions(precision=4, suppress=True)
rng = np.random.default_rng(8)

# %% [markdown]
# ## 1. The online softmax
#
# ### The problem
#
# Each query's softmax runs over a whole row of scores, `seq_k` numbers: for a context
# of a million tokens, a million scores per query. Computing a few queries at a time
# does not help with that. To bound the memory by a tile size alone we must also cut
# the *keys*, and then no tile holds a whole row, while the softmax's maximum and sum
# run over the whole row. (Nor can we store a `(seq_q, seq_k)` mask: a causal mask of a
# million tokens is a terabyte of booleans, so the tiles build theirs from positions.)
#
# ### The max trick, once more
#
# Notebook 01 showed that the softmax of scores $s_1, \dots, s_n$ is the same for *any*
# shift $m$, because $e^{-m}$ cancels between numerator and denominator. So the output
# of one query, $o = \sum_j \operatorname{softmax}(s)_j\, v_j$, is
#
# $$o = \frac{\text{acc}}{\ell}, \qquad \ell = \sum_j e^{s_j - m}, \qquad
# \text{acc} = \sum_j e^{s_j - m}\, v_j,$$
#
# for any $m$, as long as $\ell$ and acc use the *same* $m$; $m = \max_j s_j$ only keeps
# every exponent $\le 0$.
#
# ### Two tiles
#
# Split the keys into tiles $A$ then $B$. After $A$ alone we know
# $m_A = \max_{j \in A} s_j$, $\ell_A = \sum_{j \in A} e^{s_j - m_A}$ and
# $\text{acc}_A = \sum_{j \in A} e^{s_j - m_A} v_j$. When $B$ arrives, the row's maximum
# is $m = \max(m_A, \max_{j \in B} s_j)$, and since
# $e^{m_A - m}\, e^{s_j - m_A} = e^{s_j - m}$, one number $\alpha = e^{m_A - m}$ moves
# every term of $\ell_A$ and $\text{acc}_A$ to the new shift:
#
# $$\ell = \alpha\,\ell_A + \sum_{j \in B} e^{s_j - m}, \qquad
# \text{acc} = \alpha\,\text{acc}_A + \sum_{j \in B} e^{s_j - m}\, v_j .$$
#
# These are *exactly* the sums over the whole row, so $o = \text{acc} / \ell$. As
# $m \ge m_A$, $\alpha \le 1$: nothing can overflow. A third tile repeats the step with
# $(m, \ell, \text{acc})$ in the place of $(m_A, \ell_A, \text{acc}_A)$, and so on. The
# running maximum and sum are the *online softmax* of Milakov and Gimelshein (2018);
# carrying acc along, rescaled by the same $\alpha$, computes attention without storing
# the scores (Rabe and Staats 2021), and FlashAttention (Dao et al. 2022) does it on
# tiles held in a GPU's fast on-chip memory. With numbers: one query, four keys, tiles
# of two.

# %%
s = np.array([1.0, 3.0, 5.0, 2.0])  # one query's scores
v = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [-1.0, 1.0]])  # four values
A, B = slice(0, 2), slice(2, 4)

m_A = s[A].max()
l_A = np.exp(s[A] - m_A).sum()
acc_A = np.exp(s[A] - m_A) @ v[A]

m = max(m_A, s[B].max())  # the maximum grows from 3 to 5
alpha = np.exp(m_A - m)
ell = alpha * l_A + np.exp(s[B] - m).sum()  # ell is the l of the formulas
acc = alpha * acc_A + np.exp(s[B] - m) @ v[B]
print(f"alpha = {alpha:.4f}, l = {ell:.4f}, acc = {acc}")
print("acc / l       :", acc / ell)
print("softmax(s) @ v:", softmax(s) @ v)

# %% [markdown]
# And the induction, checked: a hundred scores in tiles of 7 (the last one shorter).

# %%
s = 10 * rng.standard_normal(100)  # scores up to about 30: exp alone reaches 1e13
v = rng.standard_normal((100, 3))
m, ell, acc = -np.inf, 0.0, np.zeros(3)
for start in range(0, 100, 7):
    tile = slice(start, start + 7)
    m_new = max(m, s[tile].max())
    alpha = np.exp(m - m_new)  # 0 for the first tile: exp(-inf)
    ell = alpha * ell + np.exp(s[tile] - m_new).sum()
    acc = alpha * acc + np.exp(s[tile] - m_new) @ v[tile]
    m = m_new
print("15 tiles equal the whole row:",
      np.allclose(acc / ell, softmax(s) @ v, rtol=0, atol=1e-13))

# %% [markdown]
# ### The package's code
#
# `flash_attention(Q, K, V, mask=None, *, block_q=None, block_k=None, is_causal=False,`
# `return_lse=False)` runs this loop for a tile of queries at once (all rows together,
# for one head or several). Here is one query tile's walk over the key tiles; $m$ is
# `row_max`, $\ell$ is `row_sum`, and `s` holds one tile of scores.

# %%
show_source(flash_module._attend_query_tile)

# %% [markdown]
# The step of the derivation, $\alpha$ and all, is `_raise_running_max`:

# %%
show_source(flash_module._raise_running_max)

# %% [markdown]
# Three details go beyond the derivation. The maximum only keeps `exp` from
# overflowing: when every score of a query tile provably lies in a small range
# (Cauchy-Schwarz: $|q \cdot k| \le |q|\,|k|$), $m$ stays 0 (`fixed_max`) and the
# rescaling is skipped. A row whose keys have all been masked so far has
# $m = -\infty$, and $-\infty - (-\infty)$ is NaN, so it is shifted by 0 instead; a row
# masked to the end gets the output 0, the chapter's rule. And a key tile nobody may
# see is skipped: with `is_causal=True` (query $i$ may see key $j \le i$, PyTorch's
# convention) the loop stops at the tile's last query, and tiles on the diagonal build
# their own small mask from the positions. The division by $\ell$ happens once, at the
# end (`_finish_rows`), as in FlashAttention-2 (Dao 2023).
#
# ### Check: the same numbers as the chapter's attention
#
# With a causal mask, a fully masked row (query 7), tiles that divide nothing evenly,
# and huge scores, the tiles give the teaching path's output within the rounding bound
# $2 \max|v|\,\varepsilon\,(2 d_k S + n + 4)$, $S$ the largest possible score (the
# collapsed cell computes it).

# %% jupyter={"source_hidden": true}
def rounding_bound(Q, K, V):
    """|flash - teaching| <= this (float64): score rounding, then the sums over keys."""
    eps, d_k, seq_k = np.finfo(np.float64).eps, Q.shape[-1], K.shape[-2]
    norm = np.linalg.norm
    S = norm(Q, axis=-1).max() * norm(K, axis=-1).max() / math.sqrt(d_k)
    return 2 * np.abs(V).max() * eps * (2 * d_k * S + seq_k + 4)


# %%
Q, K, V = (rng.standard_normal((2, 4, 50, 16)) for _ in range(3))
mask = causal_mask(50) & (np.arange(50) != 7)[:, None]  # query 7 may see nothing
for scale in (1.0, 200.0):  # 200: scores around 1000
    expected, _ = scaled_dot_product_attention(scale * Q, K, V, mask)
    tiled = flash_attention(scale * Q, K, V, mask, block_q=6, block_k=9)
    within = np.abs(tiled - expected).max() <= rounding_bound(scale * Q, K, V)
    print(f"scale {scale:5}: within the bound {within},",
          f"masked row zeros {np.all(tiled[:, :, 7] == 0)}")
expected, _ = scaled_dot_product_attention(Q, K, V, causal_mask(50))
tiled = flash_attention(Q, K, V, block_q=6, block_k=9, is_causal=True)
within = np.abs(tiled - expected).max() <= rounding_bound(Q, K, V)
print("is_causal=True, no mask, within the bound:", within)

# %% [markdown]
# ### Picture: the tile schedule
#
# The queries are cut into tiles of `block_q` rows, the keys into tiles of `block_k`
# columns. Each query tile walks over the key tiles from left to right, carrying its
# $(m, \ell, \text{acc})$; under a causal mask the tiles above the diagonal are skipped.
# This loop order, query tiles outside, is FlashAttention-2's: each query tile's state
# stays in fast memory until its row is done. The first FlashAttention looped the other
# way round, keeping every query tile's state in slow memory.

# %% jupyter={"source_hidden": true}
import matplotlib.pyplot as plt

seq_len, block_q, block_k = 512, 64, 128
rows, cols = seq_len // block_q, seq_len // block_k
# the fraction of each tile that may be attended to: 0 = skipped
status = causal_mask(seq_len).reshape(rows, block_q, cols, block_k).mean(axis=(1, 3))
kinds = np.where(status == 0, 0, np.where(status == 1, 2, 1))  # skipped, partly, full

fig, ax = plt.subplots(figsize=(7.5, 5))
colours = plt.matplotlib.colors.ListedColormap(["#eeeeee", "#9ecae1", "#3182bd"])
ax.imshow(kinds, cmap=colours, vmin=0, vmax=2, extent=(0, seq_len, seq_len, 0))
for i in range(rows):
    last = max(j for j in range(cols) if kinds[i, j] > 0)
    y = (i + 0.5) * block_q
    ax.annotate("", xy=((last + 0.8) * block_k, y), xytext=(0.2 * block_k, y),
                arrowprops={"arrowstyle": "->", "color": "white", "lw": 1.2})
ax.set_xticks(np.arange(0, seq_len + 1, block_k))
ax.set_yticks(np.arange(0, seq_len + 1, block_q))
ax.grid(True, color="black", linewidth=0.8)
ax.set_xlabel(f"keys, in tiles of block_k = {block_k}")
ax.set_ylabel(f"queries, in tiles of block_q = {block_q}")
ax.set_title("Causal attention in tiles")
legend = [plt.Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black")
          for c in colours.colors]
ax.legend(legend, ["skipped (all masked)", "partly masked", "full"],
          loc="upper left", bbox_to_anchor=(1.02, 1))
fig.tight_layout()
print(f"{(kinds > 0).sum()} of {kinds.size} tiles computed, "
      f"{(kinds == 0).sum()} skipped")

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
# The extra memory of a call is one tile's scratch, plus the output it returns. The
# collapsed cell measures the peak with `tracemalloc` (NumPy reports every buffer to
# it), less the returned output and log-sum-exp, for tiles of 64 queries by 128 keys,
# one head of width 16, in float32. The tile's own buffers (its scores, scaled queries,
# acc, one key tile's share of the output, $m$, $\ell$ and a vector of ones) take
# 45.0 KiB; a few more things of fixed size come on top (array headers, small vectors,
# on NumPy 2.0 and 2.1 a 32 KiB ufunc buffer), none of them growing with the length.
# So we check that the extra is never less than the tile's buffers, and that it does not
# grow from 512 to 4096 tokens, with or without `is_causal` (whose diagonal tiles view
# their masks in one vector of `block_q + block_k - 1` flags).

# %% jupyter={"source_hidden": true}
import tracemalloc


def extra_peak_bytes(seq_len, is_causal=False):
    Q = np.ones((1, 1, seq_len, 16), dtype=np.float32)
    tracemalloc.start()
    try:
        output, lse = flash_attention(Q, Q, Q, return_lse=True, block_q=64, block_k=128,
                                      is_causal=is_causal)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - output.nbytes - lse.nbytes


# scores, scaled q, acc, one tile's p @ v, m and l, ones
accounted = 4 * (64 * 128 + 3 * 64 * 16 + 2 * 64 + 128)
extra_peak_bytes(512)  # the first call allocates NumPy's and Python's one-time caches
# tracemalloc also counts what BLAS threads allocate meanwhile, which only adds:
# the least of three runs is the call's own peak
lengths = (512, 1024, 2048, 4096)
extras = [min(extra_peak_bytes(n, causal) for _ in range(3))
          for causal in (False, True) for n in lengths]
print(f"tile buffers {accounted / 1024:.1f} KiB")
print("measured extra at least that, at every seq_len:",
      all(e >= accounted for e in extras))
print("extra the same (within 1 KiB) from 512 to 4096, with or without is_causal:",
      max(extras) - min(extras) < 1024)

# %% [markdown]
# `benchmarks/bench_flash.py` measures the same from 1k to 16k tokens, and times the
# tiles against attention a block of queries at a time. In NumPy both are bound by the
# passes over the scores; the tiles, with their fixed maximum, make fewer passes (which
# is why `FastMultiHeadAttention` uses them when no weights are asked for), and under a
# causal mask they skip the masked tiles. On a GPU, the point is that a tile fits in
# fast on-chip memory.
#
# ## 2. What a backward pass needs: the log-sum-exp
#
# Notebook 07's `attention_vjp` uses the weights $P$, which FlashAttention never stores:
# its backward rebuilds them, tile by tile, from one number per query, the row's
# *log-sum-exp* $\operatorname{lse}_i = \log \sum_j e^{s_{ij}} = m_i + \log \ell_i$,
# which the forward has at the end of the row. Each weight is then one subtraction and
# one exponential:
#
# $$P_{ij} = \frac{e^{s_{ij}}}{\sum_k e^{s_{ik}}} = e^{s_{ij} - \operatorname{lse}_i}.$$
#
# The softmax's vjp also needs $\sum_j dP_{ij} P_{ij}$, and as $dP = dO\,V^\top$ that is
# $dO_i \cdot o_i$: the stored output gives it. So the forward keeps $O$ and the lse,
# $n$ numbers per head instead of $n^2$. Below, the weights rebuilt from the lse, and
# the gradients computed from them, equal the teaching path's.

# %%
Q, K, V = (rng.standard_normal((1, 2, 12, 8)) for _ in range(3))
mask = causal_mask(12)
output, lse = flash_attention(Q, K, V, mask, return_lse=True, block_k=5)
scores = np.where(mask, Q @ K.swapaxes(-1, -2) / math.sqrt(8), -np.inf)
rebuilt = np.exp(scores - lse[..., None])  # one subtraction and one exp per weight

_, weights = scaled_dot_product_attention(Q, K, V, mask)
dO = rng.standard_normal(output.shape)
print("weights rebuilt from the lse:",
      np.allclose(rebuilt, weights, rtol=0, atol=1e-14))
dP = dO @ V.swapaxes(-1, -2)
print("sum_j dP_ij P_ij == dO_i . o_i:",
      np.allclose((dP * weights).sum(-1), (dO * output).sum(-1)))
grads = [attention_vjp(Q, K, V, P, dO) for P in (rebuilt, weights)]
print("dQ, dK, dV from the rebuilt weights equal:",
      all(np.allclose(a, b, rtol=0, atol=1e-13) for a, b in zip(*grads, strict=True)))

# %% [markdown]
# ## 3. The KV cache: decoding in O(t) per token
#
# A language model writes one token at a time: token $t + 1$ is chosen from the output
# at position $t$, which needs the query of position $t$ and the keys and values of
# positions $0, \dots, t$. Under a causal mask, token $i$ sees only tokens $\le i$, so
# its key $x_i W_k$ and value $x_i W_v$ never change once computed. A cache keeps them:
# each step projects only the new tokens, appends their keys and values, and lets the
# new queries attend to everything cached (causally among the new tokens themselves).
# `mha(x_t, kv_cache=cache)` calls `cache.extend(K_new, V_new, owner=self)`, which
# appends and returns all keys and values so far, and the causal mask of the new rows:

# %%
show_source(KVCache.extend)

# %% [markdown]
# `np.concatenate` would copy every cached key at every step. Like a Python list, the
# cache over-allocates instead: when full, it doubles its capacity and copies once, so
# copying costs $O(1)$ per token on average.

# %%
show_source(KVCache._grow)

# %% [markdown]
# Check: feeding a sequence one token at a time, or in uneven chunks, gives the causal
# forward's outputs.

# %%
mha = GroupedQueryAttention(d_model=32, num_heads=4, seed=0)
x = rng.standard_normal((2, 20, 32))
expected, _ = mha(x, causal_mask(20))
for chunks in ([1] * 20, [7, 1, 5, 7]):
    cache, bounds = KVCache(), np.cumsum([0] + chunks)
    pieces = zip(bounds[:-1], bounds[1:], strict=True)
    steps = [mha(x[:, a:b], kv_cache=cache)[0] for a, b in pieces]
    decoded = np.concatenate(steps, axis=1)
    print(f"{len(chunks)} chunks: within 1e-12 of the causal forward:",
          np.abs(decoded - expected).max() < 1e-12, f"| {cache}")

# %% [markdown]
# ### Picture: what a token costs
#
# Count the FLOPs of producing token $t$'s output for one sequence of width
# $d$ = `d_model`, an $m \times k$ by $k \times p$ product costing $2mkp$:
# **recomputing** the causal forward over the $t + 1$ tokens so far costs
# $8 (t+1) d^2 + 4 (t+1)^2 d$, growing like $t^2$; **with the cache**, the new token's
# projections, $8 d^2$, plus its scores and weighted sum over $t + 1$ keys,
# $4 (t + 1) d$: nearly flat. Summed over a text of $n$ tokens, that is $O(n^3)$ against
# $O(n^2)$. The bottom panel draws the cache's doubling rule, checked against a real
# `KVCache` in the collapsed cell; `benchmarks/bench_kv_cache.py` times both loops.

# %% jupyter={"source_hidden": true}
d, n = 256, 1024
t = np.arange(n)
recompute = 8 * (t + 1) * d**2 + 4 * (t + 1) ** 2 * d
cached = 8 * d**2 + 4 * (t + 1) * d
tokens = np.arange(1, n + 1)
capacity = 16 * 2 ** np.ceil(np.log2(np.maximum(tokens, 16) / 16)).astype(int)
grew = np.r_[False, capacity[1:] > capacity[:-1]]
copied = np.cumsum(np.where(grew, tokens - 1, 0))  # tokens moved on growth

fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8))
left.semilogy(t, recompute, label="recompute the causal forward")
left.semilogy(t, cached, label="with the KV cache")
left.set(xlabel="token t", ylabel="FLOPs for token t",
         title=f"Cost of one token, d_model = {d}")
left.legend()
left.grid(True, which="both", alpha=0.3)
right.plot(tokens, capacity, label="capacity (doubles when full)")
right.plot(tokens, copied, label="tokens copied so far")
right.plot(tokens, 2 * tokens, "k:", label="2 x tokens")
right.set(xlabel="tokens cached", ylabel="tokens",
          title="Cache growth: amortised O(1) per token")
right.legend()
right.grid(True, alpha=0.3)
fig.tight_layout()
print(f"total for {n} tokens: recompute {recompute.sum() / 1e9:.1f} GFLOP, cache "
      f"{cached.sum() / 1e9:.2f} GFLOP ({recompute.sum() / cached.sum():.0f}x fewer)")
cache, seen = KVCache(), []
for _ in range(n):
    cache.extend(np.zeros((1, 1, 1, 2)), np.zeros((1, 1, 1, 2)))
    seen.append(cache.capacity)
print("the drawn capacity is the KVCache's:", np.array_equal(seen, capacity))

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
# ## 4. Grouped-query attention: a smaller cache
#
# The cache holds, for every layer and token, one key and one value per head: for a
# large model that, not the weights, limits how many sequences fit in memory.
# Multi-query attention (Shazeer 2019) keeps every query head but *one* key/value head;
# grouped-query attention (Ainslie et al. 2023) sits between, with `num_kv_heads`
# key/value heads, each shared by a group of `num_heads // num_kv_heads` query heads.
# Query head $h$ reads key/value head $h$ // `(num_heads // num_kv_heads)` (PyTorch's
# `enable_gqa` convention), and `W_qkv` shrinks to
# `(d_model, d_model + 2 * num_kv_heads * d_k)`. The forward repeats each key/value head
# for its group after the cache, which stores them unrepeated:

# %%
show_source(GroupedQueryAttention.forward)

# %% [markdown]
# Check: with 4 query heads and `num_kv_heads = 2`, head $h$ attends with the keys of
# key/value head $h // 2$, and the cache shrinks with the key/value heads.

# %%
x = rng.standard_normal((1, 6, 32))
for num_kv_heads in (4, 2, 1):
    mha = GroupedQueryAttention(32, 4, seed=1, num_kv_heads=num_kv_heads)
    cache = KVCache()
    mha(x, kv_cache=cache)
    print(f"num_kv_heads = {num_kv_heads}: W_qkv {mha.W_qkv.shape}, "
          f"cache {cache.nbytes} bytes for 6 tokens")

mha = GroupedQueryAttention(32, 4, seed=1, num_kv_heads=2)
_, weights = mha(x)
Q, K, _ = mha.project(x)  # (1, 4, 6, 8), (1, 2, 6, 8)
by_hand = [softmax(Q[0, h] @ K[0, h // 2].T / math.sqrt(8)) for h in range(4)]
print("head h uses key/value head h // 2:",
      all(np.allclose(weights[0, h], by_hand[h], rtol=0, atol=1e-12) for h in range(4)))

# %% [markdown]
# ### What the cache weighs for a published model
#
# Llama 2 70B (Touvron et al. 2023) has 80 layers of 64 query heads of width 128 and 8
# key/value heads. In 16-bit floats one token's cache is
# $2\ (\text{K and V}) \times 80 \times 8 \times 128 \times 2\ \text{bytes} = 320$ KiB,
# 1.25 GiB for one 4096-token sequence; with a key/value head per query head it would be
# 8 times that.

# %%
def kv_bytes_per_token(layers, num_kv_heads, d_head, bytes_per_number=2):
    return 2 * layers * num_kv_heads * d_head * bytes_per_number  # keys and values


variants = {"MHA (64 KV heads)": 64, "GQA (8, as published)": 8, "MQA (1 KV head)": 1}
per_sequence = {}
for name, kv in variants.items():
    per_token = kv_bytes_per_token(80, kv, 128)
    per_sequence[name] = per_token * 4096 / 2**30
    print(f"{name:<22} {per_token / 1024:5.0f} KiB per token, "
          f"{per_sequence[name]:6.2f} GiB per 4096-token sequence")

# %% jupyter={"source_hidden": true}
fig, ax = plt.subplots(figsize=(7, 3.2))
names, gib = list(per_sequence)[::-1], list(per_sequence.values())[::-1]
bars = ax.barh(names, gib, color=["#fdae6b", "#3182bd", "#9ecae1"])
ax.bar_label(bars, labels=[f"{v:.2f} GiB" for v in gib], padding=3)
ax.set_xlabel("KV cache of one 4096-token sequence, float16 (GiB)")
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
# decoder's tokens `x`, `(batch, seq_q, d_model)`; the keys and values from the
# encoder's output, the *context*, `(batch, seq_k, d_model)`. The same module does it:
# `mha(x, mask, context=context)` projects `x` through the query columns of `W_qkv` and
# the context through the key and value columns.

# %%
show_source(projection.project_qkv)

# %% [markdown]
# The weights have shape `(batch, num_heads, seq_q, seq_k)`, and a padding mask on the
# context keeps every query off its padding. A KV cache with a context is refused: the
# context gains no tokens during decoding (a decoder built for speed projects its keys
# and values once, at the first step).

# %%
mha = GroupedQueryAttention(16, 2, seed=3)
x = rng.standard_normal((2, 4, 16))  # the decoder's 4 tokens
context = rng.standard_normal((2, 7, 16))  # 7 encoder tokens; the second sequence has 5
mask = padding_mask([7, 5], 7)  # (batch, 1, 1, seq_k)
output, weights = mha(x, mask, context=context)
print("output", output.shape, "weights", weights.shape)
print("padding gets no weight:", np.all(weights[1, :, :, 5:] == 0),
      "| rows sum to one:", np.allclose(weights.sum(-1), 1))
print("context=x is self-attention:",
      np.allclose(mha(x, context=x)[0], mha(x)[0], rtol=0, atol=1e-13))

# %% jupyter={"source_hidden": true}
cmap = plt.get_cmap("Blues").with_extremes(bad="#d9d9d9")  # grey: masked
fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.2), layout="constrained")
for b, ax in enumerate(axes):
    allowed = np.broadcast_to(mask[b, 0], weights[b, 0].shape)  # (seq_q, seq_k)
    image = ax.imshow(np.ma.masked_where(~allowed, weights[b, 0]), cmap=cmap,
                      vmin=0, vmax=1)
    ax.set(xlabel="context token (key)", title=f"sequence {b}, head 0")
    ax.set_xticks(range(7))
    ax.set_yticks(range(4))
axes[0].set_ylabel("decoder token (query)")
fig.colorbar(image, ax=axes, label="attention weight", shrink=0.9)
_ = fig.suptitle("Cross-attention weights (grey: the context's padding)")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Cross-attention: the decoder's queries read the context's keys, and the
# context's padding is masked for every query.
#
# <!-- alt: Two 4-by-7 heatmaps, decoder token down and context token across. Sequence 0
# has no grey cells, with its darkest cell at query 2, key 0. Sequence 1 has columns 5
# and 6 grey in every row. -->

# %% [markdown]
# ## 6. Attention dropout, and the names in PyTorch
#
# Some models drop attention weights at random while training (BERT used
# `dropout_p = 0.1`), scaling the survivors by $1 / (1 - p)$ so that each weight keeps
# its expected value; most large language models trained today use none, and at
# inference it is always off. `attention_with_dropout(Q, K, V, mask, dropout_p=p,`
# `rng=rng)` does so, seeded by a NumPy `Generator`. Averaged over many draws, the
# output comes back to the plain one:

# %%
Q, K, V = (rng.standard_normal((1, 5, 4)) for _ in range(3))
plain, _ = scaled_dot_product_attention(Q, K, V)
generator = np.random.default_rng(0)
draws = [attention_with_dropout(Q, K, V, dropout_p=0.3, rng=generator)[0]
         for _ in range(2000)]
print("mean of 2000 dropped outputs minus the plain output, largest entry:",
      f"{np.abs(np.mean(draws, axis=0) - plain).max():.2f}")

# %% [markdown]
# Notebook 10 ran this layer inside a real model's blocks (a norm, the attention, a
# residual addition, a per-token MLP). In PyTorch (`F` is `torch.nn.functional`) the
# same pieces are:
#
# - `scaled_dot_product_attention(Q, K, V, mask)` is
#   `F.scaled_dot_product_attention(q, k, v, attn_mask=mask)` (True = may attend, as
#   here), and `causal_mask(seq_len)` its `is_causal=True`;
# - `flash_attention` computes what its fused kernels (FlashAttention, memory-efficient
#   attention) compute, one of which `F.scaled_dot_product_attention` picks by itself;
#   `num_kv_heads` is its `enable_gqa=True`, and `dropout_p` its `dropout_p`;
# - `GroupedQueryAttention(d_model, num_heads)` is
#   `nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True)`, whose
#   boolean masks mean True = *blocked* (notebook 02); its `in_proj_weight` and
#   `out_proj.weight` are our `W_qkv` and `W_o`, transposed;
# - `KVCache` has no counterpart in `torch.nn`: libraries that generate text keep their
#   own.
#
# `GroupedQueryAttention.from_torch(module)` copies such a module's weights and
# `mha.to_torch()` goes the other way; `GroupedQueryAttention.from_weights` takes four
# separate matrices, as notebook 10 did for SmolLM2. Below, a torch module and its copy
# run on the same tokens under a causal mask, which torch wants inverted.

# %%
# NBVAL_IGNORE_OUTPUT
# (what this cell prints depends on whether PyTorch is installed)
try:
    import torch
except ImportError:  # the rest of the notebook needs no torch
    torch = None
    print('This cell needs PyTorch: pip install "mhattn[torch]" to run it.')
if torch is not None:
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(16, 4, bias=False, batch_first=True,
                                         dtype=torch.float64).eval()
    ours = GroupedQueryAttention.from_torch(module)
    x = np.random.default_rng(0).standard_normal((2, 6, 16))
    t, blocked = torch.from_numpy(x), torch.from_numpy(~causal_mask(6))
    with torch.no_grad():
        theirs, _ = module(t, t, t, attn_mask=blocked)
    print("same outputs:", np.allclose(ours(x, causal_mask(6))[0], theirs.numpy(),
                                       rtol=0, atol=1e-12))

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
#
# ## Exercises
#
# Each exercise has a cell for your answer, holding `...`, and a collapsed cell that
# checks it: it prints "not yet" while the `...` is there, "correct." when your answer
# passes, and otherwise stops with a hint. A collapsed solution follows.
#
# **Exercise 1 (merge two tiles).** Two workers each processed half of a row's keys and
# returned their partial states `(m, l, acc)`: a maximum, a sum of `exp(s - m)` and an
# unnormalised output measured against that `m`. Write `merge(state_1, state_2)` that
# returns the state of the whole row. A worker that saw only masked keys returns
# `(-inf, 0.0, zeros)`. Flash-Decoding (Dao et al. 2023) merges states this way to
# split one query's long row of keys across many processors; the FlashAttention
# library's kernel for it is named split-KV.


# %%
def merge(state_1, state_2):
    """The (m, l, acc) of a row from the (m, l, acc) of its two halves."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint="merge returns a tuple (m, l, acc), like its two arguments.")
def check_exercise_1(merge):
    generator = np.random.default_rng(1)
    s, v = 20 * generator.standard_normal(12), generator.standard_normal((12, 3))

    def state(part):
        if part.stop == part.start:
            return -np.inf, 0.0, np.zeros(3)
        m = s[part].max()
        return m, np.exp(s[part] - m).sum(), np.exp(s[part] - m) @ v[part]

    m, ell, acc = not_yet(merge(state(slice(0, 5)), state(slice(5, 12))))
    assert np.isclose(m, s.max()), "the merged m should be the maximum of the whole row"
    assert np.allclose(acc / ell, softmax(s) @ v, rtol=1e-12, atol=1e-12), (
        "acc / l is not the softmax-weighted average: each half's l and acc were "
        "measured against its own m. Against which m must the merged ones be?"
    )
    assert np.isclose(ell, np.exp(s - m).sum()), (
        "l should be the sum of exp(s - m) over the whole row"
    )
    for halves in ((slice(0, 12), slice(12, 12)), (slice(0, 0), slice(0, 12))):
        m, ell, acc = merge(state(halves[0]), state(halves[1]))
        assert np.allclose(acc / ell, softmax(s) @ v), (
            "a worker with no keys (m = -inf, l = 0) must change nothing"
        )
    with np.errstate(invalid="ignore"):  # -inf - (-inf) is NaN: the check reports it
        m, ell, acc = merge(state(slice(0, 0)), state(slice(0, 0)))
    assert m == -np.inf and ell == 0 and np.all(np.asarray(acc) == 0), (
        "two workers that saw no keys should give (-inf, 0, zeros): what is "
        "exp(m_1 - m) when m_1 and m are both -inf?"
    )


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
# bytes_per_number)`, the largest whole number of sequences whose keys and values fit.
# The check compares it with real `KVCache`s and with Llama 2 70B.


# %%
def sequences_that_fit(
    free_bytes, layers, num_kv_heads, d_head, tokens, bytes_per_number
):
    """How many `tokens`-long sequences fit their keys and values in `free_bytes`."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint="sequences_that_fit(...) returns one whole number.")
def check_exercise_2(sequences_that_fit):
    answer = not_yet(sequences_that_fit(40 * 2**30 + 2**29, 80, 8, 128, 4096, 2))
    mha = GroupedQueryAttention(24, 6, num_kv_heads=3)
    caches = [KVCache() for _ in range(2)]  # two layers, one sequence of 5 tokens
    for cache in caches:
        mha(np.zeros((1, 5, 24)), kv_cache=cache)
    one = sum(cache.nbytes for cache in caches)
    for free in (one - 1, one, 7 * one + one // 2):
        mine = sequences_that_fit(free, 2, 3, 4, 5, 8)
        assert mine == free // one, (
            f"two layers of a 6-head module with 3 key/value heads of width 4, "
            f"sequences of 5 tokens in float64, {free} bytes free: you say {mine}. "
            "Count keys *and* values, the key/value heads (not the query heads), and "
            "only whole sequences"
        )
    assert answer == 32, (
        "Llama 2 70B, 4096-token sequences in bfloat16, 40.5 GiB free: you say "
        f"{answer} sequences"
    )


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
    fractions = allowed.reshape(8, 128, 8, 128).mean(axis=(1, 3))  # (query, key) tile
    computed = int((fractions > 0).sum())
    partly = int(((fractions > 0) & (fractions < 1)).sum())
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
#   [arXiv:1805.02867](https://arxiv.org/abs/1805.02867). The running maximum and sum.
# - Rabe, M. N. and Staats, C. (2021). *Self-attention Does Not Need $O(n^2)$ Memory.*
#   [arXiv:2112.05682](https://arxiv.org/abs/2112.05682). The rescaled value
#   accumulator: attention over chunks of keys without storing the scores.
# - Dao, T., Fu, D. Y., Ermon, S., Rudra, A. and Ré, C. (2022). *FlashAttention: Fast
#   and Memory-Efficient Exact Attention with IO-Awareness.* NeurIPS 2022.
#   [arXiv:2205.14135](https://arxiv.org/abs/2205.14135). Tiles in fast on-chip memory
#   (key tiles in the outer loop, Algorithm 1); the backward from stored statistics.
# - Dao, T. (2023). *FlashAttention-2: Faster Attention with Better Parallelism and Work
#   Partitioning.* [arXiv:2307.08691](https://arxiv.org/abs/2307.08691). Query tiles
#   outside, the division by $\ell$ at the end, the log-sum-exp kept for the backward.
# - Dao, T., Haziza, D., Massa, F. and Sizov, G. (2023). *Flash-Decoding for
#   long-context inference.* [PyTorch blog](https://pytorch.org/blog/flash-decoding/).
#   One query's keys split across processors, the partial states merged at the end
#   (exercise 1); the FlashAttention library runs it in its split-KV kernel.
# - Shazeer, N. (2019). *Fast Transformer Decoding: One Write-Head is All You Need.*
#   [arXiv:1911.02150](https://arxiv.org/abs/1911.02150). Multi-query attention.
# - Ainslie, J., Lee-Thorp, J., de Jong, M., Zemlyanskiy, Y., Lebrón, F. and Sanghai, S.
#   (2023). *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
#   Checkpoints.* EMNLP 2023. [arXiv:2305.13245](https://arxiv.org/abs/2305.13245).
# - Touvron, H. et al. (2023). *Llama 2: Open Foundation and Fine-Tuned Chat Models.*
#   [arXiv:2307.09288](https://arxiv.org/abs/2307.09288). The 70B model's layout
#   (section 2.2 and appendix A.2.1; the released configuration).
# - Vaswani, A. et al. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Cross-attention is its
#   "encoder-decoder attention" (section 3.2.3, Applications of Attention in our Model).
# - Pope, R. et al. (2023). *Efficiently Scaling Transformer Inference.* MLSys 2023.
#   [arXiv:2211.05102](https://arxiv.org/abs/2211.05102). The KV cache's memory as the
#   limit of batch size and context length in serving.
#
# **Measure it yourself:** `python benchmarks/bench_flash.py` (tiles against query
# blocks) and `python benchmarks/bench_kv_cache.py` (decoding with and without the
# cache).
#
# ---
# Previous: notebook 10, the heads of a real model. Next:
# [12_efficiency.ipynb](12_efficiency.ipynb), an appendix that counts what attention
# costs and measures the engine; or the explorer ([explore.ipynb](explore.ipynb)),
# every control of the chapter in one place.
