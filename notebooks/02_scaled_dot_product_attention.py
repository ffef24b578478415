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
# # 2. Scaled dot-product attention
#
# One attention head does one thing: every query looks at every key, decides how much
# each one matters, and takes that mix of the values. This notebook builds that step,
# checks it, and then looks closely at the two details that most often go wrong: the
# scaling by $\sqrt{d_k}$ and the masks.
#
# **In this notebook you will learn**
#
# - what queries, keys and values are, and the shape of every array involved;
# - why the scores are divided by $\sqrt{d_k}$, with a measurement instead of a claim,
#   and what the softmax does when they are not;
# - two bugs that produce no error: dividing by $\sqrt{d_\text{model}}$, and a float32
#   computation silently turned into float64 by `np.sqrt`;
# - causal and padding masks, our polarity (**True = may attend**) and why PyTorch's
#   `nn.MultiheadAttention` means the opposite;
# - what happens to a query that may attend to nothing, with `-1e9`, with `-inf`, and in
#   the package.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from mhattn.pictures import exercise, not_yet, save_figure, show_source

np.set_printoptions(precision=3, suppress=True)
# the notebooks run with the notebooks/ folder as working directory
FIGURES = Path("../figures")
rng = np.random.default_rng(0)

# %% [markdown]
# ## Queries, keys and values
#
# Think of a dictionary that answers fuzzy questions. Each entry has a **key** (what it
# is about) and a **value** (what it says). A **query** is compared with every key by a
# dot product; the softmax of those scores (notebook 01) says how much of each value
# goes into the answer:
#
# $$\operatorname{Attention}(Q, K, V)
#   = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# | array | shape | one row is |
# |---|---|---|
# | `Q` | `(seq_q, d_k)` | one query |
# | `K` | `(seq_k, d_k)` | one key, same width as the queries so they can be dotted |
# | `V` | `(seq_k, d_v)` | the value stored under the key in the same row |
# | `Q @ K.T`, weights | `(seq_q, seq_k)` | one query's score (weight) for each key |
# | output | `(seq_q, d_v)` | one query's answer: a weighted average of the value rows |
#
# In self-attention `Q`, `K` and `V` all come from the same sequence and
# `seq_q == seq_k`, but nothing in the formula needs that. Any leading axes, such as
# `(batch, num_heads)`, just come along for the ride.
#
# Below is a tiny dictionary in which every axis has a different length, so a mix-up
# cannot hide: four keys, each pointing along its own axis of a 6-dimensional space, and
# four 2-D values. The three queries match key 2, keys 0 and 1 equally, and nothing.

# %%
K = 4.0 * np.eye(4, 6)  # 4 keys, d_k = 6
V = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [2.0, 3.0]])  # 4 values, d_v = 2
Q = np.array(
    [
        K[2],  # looks exactly like key 2
        (K[0] + K[1]) / 2,  # halfway between keys 0 and 1
        np.zeros(6),  # looks like nothing in particular
    ]
)  # 3 queries, d_k = 6

output, weights = scaled_dot_product_attention(Q, K, V)
print(
    "shapes: Q",
    Q.shape,
    " K",
    K.shape,
    " V",
    V.shape,
    " weights",
    weights.shape,
    " output",
    output.shape,
)
print("weights (one row per query, one column per key):\n", weights)
print("output (one row per query):\n", output)

# %% [markdown]
# The first query puts over 99 % of its weight on key 2 and answers almost exactly
# `V[2]`. The second splits almost all of its weight between keys 0 and 1 (0.482 each)
# and answers almost the average of their values, `[0.5, 0.5]`; the small weights on
# keys 2 and 3 (0.018 each) add the rest, which is why it reads `[0.5, 0.537]`. The
# third scores every key the same, so it gets the plain mean of all four values,
# `[0.5, 1]`.
#
# Attention is a *soft* lookup: it blends, and the blend changes smoothly with the
# query.
#
# ## The code
#
# Here is the package's function. The `mhattn.scaled_dot_product_attention` you
# call checks the arguments before this body runs (shapes that fit together, finite
# numbers, a boolean mask of a shape that fits the scores) and reports a mistake by the
# argument's name. The body is the formula, one line per step, each with the shape it
# makes (the documentation, with every argument, is one `scaled_dot_product_attention?`
# away):

# %%
show_source(scaled_dot_product_attention)

# %% [markdown]
# Read the body against the formula: the scores `(Q / sqrt(d_k)) @ K.T`
# (`swapaxes(-1, -2)` is a transpose of the last two axes only, so any leading batch and
# head axes pass through), the mask, the softmax over the keys (`axis=-1`), and the
# weighted sum `weights @ V`. Two lines need a word:
#
# - the mask sets every forbidden score to `-inf`, so that its weight,
#   $e^{-\infty} = 0$, is exactly zero; the masks section below shows them at work;
# - `dropout_p` is for training only (each weight is dropped with that probability, the
#   rest rescaled); it is 0 by default, and this chapter never uses it.
#
# Two details of the first lines matter, and we will meet both again. `d_k` is made a
# number of Q's own dtype before its square root is taken: a NumPy `float64` scalar
# would silently turn float32 work into float64 (see below). And Q is divided by
# $\sqrt{d_k}$ *before* the product: same numbers, but `Q @ K.T` alone can overflow
# where the scaled scores still fit.
#
# Let us check the package against an independent, slow version: a plain loop over the
# batch, the heads and the queries, one dot product at a time.

# %%
# every axis a different length
batch, num_heads, seq_q, seq_k, d_k, d_v = 2, 3, 4, 5, 6, 7
Qb = rng.normal(size=(batch, num_heads, seq_q, d_k))
Kb = rng.normal(size=(batch, num_heads, seq_k, d_k))
Vb = rng.normal(size=(batch, num_heads, seq_k, d_v))

expected = np.zeros((batch, num_heads, seq_q, d_v))
for b in range(batch):
    for h in range(num_heads):
        for i in range(seq_q):
            scores_i = [
                Qb[b, h, i] @ Kb[b, h, j] / math.sqrt(d_k) for j in range(seq_k)
            ]
            expected[b, h, i] = softmax(np.array(scores_i)) @ Vb[b, h]

out_b, w_b = scaled_dot_product_attention(Qb, Kb, Vb)
print("output", out_b.shape, "matches the loop:", np.allclose(out_b, expected))
print(
    "weights", w_b.shape, "every row sums to one:", np.allclose(w_b.sum(axis=-1), 1.0)
)

# %% [markdown]
# ## Why divide by $\sqrt{d_k}$?
#
# Suppose the entries of a query $q$ and a key $k$ are independent with mean 0 and
# variance 1, which is roughly what a well-initialised network produces. Their dot
# product $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$ is a sum of $d_k$ independent terms,
# each with mean 0 and variance 1, so
#
# $$\operatorname{Var}(q \cdot k) = d_k, \qquad
#   \operatorname{std}(q \cdot k) = \sqrt{d_k}.$$
#
# The wider the head, the more spread out the scores, and notebook 01 showed what
# spread-out scores do to a softmax: they push it towards one-hot. Dividing by
# $\sqrt{d_k}$ brings the variance back to 1 whatever the width. Here is the claim
# measured:

# %%
widths = [4, 16, 64, 256, 1024]
rows = [" d_k   var(q.k)   std(q.k)   var(q.k / sqrt(d_k))"]
for width in widths:
    q = rng.normal(size=(10_000, width))
    k = rng.normal(size=(10_000, width))
    dots = np.einsum("nd,nd->n", q, k)  # 10,000 independent dot products
    rows.append(
        f"{width:4d} {dots.var():10.1f} {dots.std():10.1f} "
        f"{(dots / math.sqrt(width)).var():22.2f}"
    )
print("\n".join(rows))

# %% [markdown]
# The variance grows in step with $d_k$, and the scaled version stays near 1 (up to a
# few per cent of sampling noise). What does the unscaled growth do to the weights?
# Below, for each width, 200 queries each attend to their own 16 random keys; we record
# the largest weight in each row: $1/16$ for a uniform row, 1 for a one-hot row.

# %%
num_keys, num_queries = 16, 200
all_widths = 2 ** np.arange(11)  # d_k = 1, 2, 4, ..., 1024
score_std, top_unscaled, top_scaled = [], [], []
for width in all_widths:
    q = rng.normal(size=(num_queries, 1, width))
    k = rng.normal(size=(num_queries, num_keys, width))
    scores = (q * k).sum(axis=-1)  # (200 queries, 16 keys), unscaled
    score_std.append(scores.std())
    top_unscaled.append(softmax(scores).max(axis=-1).mean())
    top_scaled.append(softmax(scores / math.sqrt(width)).max(axis=-1).mean())

for width in (64, 1024):
    n = int(np.log2(width))
    print(
        f"d_k = {width:4d}: largest weight {top_unscaled[n]:.2f} unscaled, "
        f"{top_scaled[n]:.2f} scaled"
    )

# %% [markdown]
# The figure below draws both measurements for every width (its plotting code is in
# the collapsed cell).

# %% jupyter={"source_hidden": true}
fig, (ax_std, ax_top) = plt.subplots(2, 1, figsize=(7.5, 8))
ax_std.loglog(all_widths, score_std, "o-", label="measured std of q · k")
ax_std.loglog(
    all_widths, np.sqrt(all_widths), "k--", linewidth=1, label=r"$\sqrt{d_k}$"
)
ax_std.set_xlabel("head width $d_k$ (log scale)")
ax_std.set_ylabel("standard deviation of the scores (log scale)")
ax_std.set_title(r"Unscaled dot products spread like $\sqrt{d_k}$")
ax_std.legend()

ax_top.semilogx(
    all_widths,
    top_unscaled,
    "o-",
    color="tab:red",
    label=r"softmax($q \cdot k$), unscaled",
)
ax_top.semilogx(
    all_widths,
    top_scaled,
    "o-",
    color="tab:blue",
    label=r"softmax($q \cdot k / \sqrt{d_k}$)",
)
ax_top.axhline(
    1 / num_keys, color="gray", linestyle="--", linewidth=1, label="uniform, 1/16"
)
ax_top.set_xlabel("head width $d_k$ (log scale)")
ax_top.set_ylabel("largest weight in a row (mean of 200)")
ax_top.set_ylim(0, 1.02)
ax_top.set_title("Without scaling, the softmax saturates to one-hot")
ax_top.legend(loc="center right")
fig.tight_layout()
save_figure(fig, FIGURES / "02_why_scale.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** Why attention divides by √d_k: the spread of raw dot products grows like
# √d_k, and without the division the softmax saturates to one-hot as heads get wider;
# with it, the weights stay equally soft at every width.
#
# <!-- alt: Top: log-log plot of the measured standard deviation of q·k against head
# width d_k from 1 to 1024, lying on the dashed √d_k line from 1 to about 32. Bottom:
# the largest weight in a row against d_k; the unscaled red curve climbs from 0.22 to
# 0.96, the scaled blue curve stays flat near 0.24, above the uniform line at 1/16. -->

# %% [markdown]
# Without the scale, a head of width 64 already puts most of a typical row's weight on a
# single key, and the share climbs towards 1 as the heads get wider. This happens at the
# start of training, with random weights, before the model has learned anything. Worse,
# a saturated softmax barely learns: the derivative of a weight $p$ with respect to its
# own score is $p(1 - p)$, which is close to 0 when $p$ is close to 0 or 1. With the
# scale, the typical row stays equally decisive at every width.
#
# ## Common bug: dividing by $\sqrt{d_\text{model}}$
#
# In multi-head attention (notebook 03) the model width `d_model` is cut into
# `num_heads` heads of width `d_k = d_model // num_heads`, and each head's dot products
# run over its own `d_k` entries only. Dividing by $\sqrt{d_\text{model}}$ shrinks the
# scores by an extra factor $\sqrt{\text{num_heads}}$, and the weights drift towards
# uniform. Like the others in this chapter, this bug raises no error.

# %%
d_model, num_heads = 512, 8
d_k = d_model // num_heads  # 64
q = rng.normal(size=(num_queries, 1, d_k))
k = rng.normal(size=(num_queries, num_keys, d_k))
dots = (q * k).sum(axis=-1)  # one head's scores, (200 queries, 16 keys)
for name, divisor in [
    ("sqrt(d_k)    ", math.sqrt(d_k)),
    ("sqrt(d_model)", math.sqrt(d_model)),
]:
    scaled = dots / divisor
    print(
        f"divide by {name} = {divisor:5.2f}: score std {scaled.std():.2f}, largest "
        f"weight {softmax(scaled).max(axis=-1).mean():.3f} (uniform: "
        f"{1 / num_keys:.3f})"
    )

# %% [markdown]
# The package cannot make this mistake: `scaled_dot_product_attention` reads $d_k$ from
# `Q.shape[-1]`, the width of the arrays it is actually multiplying. Read sizes from the
# arrays in hand rather than from a configuration value that describes something else.
#
# ## Common bug: float32 turned into float64 by `np.sqrt`
#
# Models usually compute in float32. `np.sqrt(d_k)` returns a NumPy `float64` scalar,
# and since NumPy 2 such a scalar keeps its full precision in arithmetic: a float32
# array divided by it becomes a float64 array. Everything after that line then runs in
# float64, with twice the memory and noticeably slower, and no warning. A Python `float`
# (`math.sqrt`) or a scalar of the array's own dtype leaves the dtype alone; the package
# takes the square root of `d_k` in Q's dtype.

# %%
scores32 = rng.normal(size=(4, 128, 128)).astype(np.float32)
d_k = 64  # as above
for name, divisor in [
    ("np.sqrt(d_k)", np.sqrt(d_k)),
    ("math.sqrt(d_k)", math.sqrt(d_k)),
    ("np.float32(np.sqrt(d_k))", np.float32(np.sqrt(d_k))),
]:
    result = scores32 / divisor
    print(f"scores32 / {name:<24} -> {result.dtype}, {result.nbytes // 1024} KiB")

out32, w32 = scaled_dot_product_attention(
    *(rng.normal(size=(2, 5, 8)).astype(np.float32) for _ in range(3))
)
print("package, float32 in ->", out32.dtype, "output and", w32.dtype, "weights")

# %% [markdown]
# ## Masks: who may look at whom
#
# A mask is a boolean array with the shape of the weights (or one that broadcasts to
# it). In this package **`mask[i, j]` is True when query `i` may attend to key `j`**.
# Two masks cover most uses:
#
# - a **causal mask** lets position `i` see positions `0..i` only, so a language model
#   cannot peek at the words it is supposed to predict;
# - a **padding mask** hides the filler tokens that make short sequences in a batch as
#   long as the longest one.
#
# Masked keys get a score of `-inf` before the softmax, hence a weight of exactly 0.
#
# > **Polarity warning.** PyTorch uses both conventions. Its
# > `torch.nn.functional.scaled_dot_product_attention` agrees with us: a boolean
# > `attn_mask` is True where attention is *allowed*. Its `torch.nn.MultiheadAttention`
# > means the opposite: in a boolean `attn_mask` or `key_padding_mask`, True marks a
# > position that is *not allowed*. To pass one of our masks to `nn.MultiheadAttention`,
# > invert it (`~mask`), and reshape it: that module wants `attn_mask` as
# > `(seq_q, seq_k)` or `(batch * num_heads, seq_q, seq_k)`, and `key_padding_mask` as
# > `(batch, seq_k)`. Forgetting the `~` lets every query see exactly the keys it should
# > not.
#
# Both masks are a single comparison of positions, broadcast into a grid. The causal
# one:

# %%
show_source(causal_mask)

# %% [markdown]
# `padding_mask` compares the key positions with each sequence's length in the same way,
# `keys < lengths[:, None]`, and adds two axes of length one so that the mask broadcasts
# over heads and queries. Combined with `&`, the two give the mask of a padded batch for
# a language model:

# %%
# a batch of two sequences, the second padded with 2 fillers
seq_len, lengths = 5, np.array([5, 3])
causal = causal_mask(seq_len)  # (seq_len, seq_len)
# (batch, 1, 1, seq_len): one row of keys per sequence
padding = padding_mask(lengths, seq_len)
both = causal & padding  # broadcasts to (batch, 1, seq_len, seq_len)

print("causal mask", causal.shape, "(1 = may attend):\n", causal.astype(int))
print(
    "padding mask", padding.shape, "keys per sequence:\n", padding[:, 0, 0].astype(int)
)
print(
    "causal & padding", both.shape, "for the second sequence:\n", both[1, 0].astype(int)
)

# %%
# (batch, 1 head, seq_len, d_k); self-attention: Q = K = V = x, to keep it short
x = rng.normal(size=(2, 1, seq_len, 8))
# both: (batch, 1, seq_len, seq_len)
out_m, w_m = scaled_dot_product_attention(x, x, x, mask=both)
print("weights of the second sequence:\n", w_m[1, 0])
print("masked weights are exactly zero:", bool((w_m[~both] == 0).all()))
print("every row sums to one:", np.allclose(w_m.sum(axis=-1), 1.0))

# %% [markdown]
# Query 0 can only see itself, so its weight on key 0 is exactly 1. Queries 3 and 4 are
# fillers; they still attend to the real tokens 0 to 2 (their outputs are thrown away
# later), but no query puts any weight on keys 3 and 4.
#
# ## A query that may attend to nothing
#
# Sometimes a whole row of the mask is False: a query that may attend to no key at all.
# A sequence of length 0 in a padded batch is one such case; combining masks can make
# others (exercise 3 finds some). What should the weights of such a query be?
#
# Implementations fill masked scores with one of two values, and both go wrong on such a
# row. Here they are, written out for the demonstration (this is not package code), next
# to the package's answer:

# %%
Q_e = rng.normal(size=(2, 4))  # two queries, d_k = 4
K_e = rng.normal(size=(3, 4))  # three keys
V_e = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])  # three values
# the second query may see nothing
mask_e = np.array([[True, True, False], [False, False, False]])
scores_e = Q_e @ K_e.T / math.sqrt(4)


def softmax_without_guard(s):
    """Max-subtracting softmax without the package's guard for an all -inf row."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


with np.errstate(invalid="ignore"):  # silence the warning so that the nan is printed
    for label, fill in [("-1e9", -1e9), ("-inf", -np.inf)]:
        w_fill = softmax_without_guard(np.where(mask_e, scores_e, fill))
        print(
            f"fill {label}   : empty row's weights {w_fill[1]}, its output "
            f"{(w_fill @ V_e)[1]}"
        )
out_e, w_e = scaled_dot_product_attention(Q_e, K_e, V_e, mask=mask_e)
print(f"package     : empty row's weights {w_e[1]}, its output {out_e[1]}")
print("the other row is the same all three ways:", w_e[0])

# %% [markdown]
# - With **`-1e9`** every entry of the empty row is the same number, so the softmax
#   spreads the weight evenly: the query quietly receives `[1, 1]`, the mean of values
#   it was forbidden to see. Nothing looks wrong, which is what makes it dangerous.
# - With **`-inf`** the row's maximum is `-inf`, and `-inf - (-inf)` is `nan`. The `nan`
#   spreads to everything computed from this row, and during training, through the
#   gradients, into the weights of the whole model.
# - **The package** returns zero weights and a zero output: a query that may look at
#   nothing receives nothing. This is the rule for an all `-inf` slice in `softmax`
#   (notebook 01).
#
# What does PyTorch do? Its `torch.nn.functional.scaled_dot_product_attention` returns
# the same zeros (since PyTorch 2.5; older versions return `nan`) on the CPU, and on a
# CUDA GPU in its *math* and *memory-efficient* backends. That is not every backend: on
# a CUDA GPU in float16 or bfloat16 with a boolean mask, the backend PyTorch 2.11 picked
# by default (cuDNN) returned a finite but *nonzero* output for the empty row, with
# entries up to 0.49 in absolute value. `nn.MultiheadAttention` can still give `nan`. If
# your model can produce empty rows, zero their outputs yourself, or make sure no row is
# empty, rather than rely on a library's choice.
#
# ## A picture of the weights
#
# A heatmap shows a whole weight matrix at once: one row per query, one column per key,
# darker for more weight. Below, the same six random tokens attend with no mask, with a
# causal mask, and with a causal mask for a sequence of which only the first four tokens
# are real. Masked cells are drawn in grey; their weight is exactly 0.

# %%
tokens = rng.normal(size=(6, 8))  # six tokens, d_k = 8 (Q = K = V = tokens)
panels = [
    ("no mask", np.ones((6, 6), dtype=bool)),
    ("causal", causal_mask(6)),
    (
        "causal, and the last\n2 tokens padding",
        causal_mask(6) & padding_mask(np.array([4]), 6)[0, 0],
    ),
]
cmap = plt.get_cmap("Blues").with_extremes(bad="#d9d9d9")  # masked cells in grey

fig, axes = plt.subplots(1, 3, figsize=(7.5, 3.4), layout="constrained")
for ax, (title, mask) in zip(axes, panels, strict=True):
    _, w = scaled_dot_product_attention(tokens, tokens, tokens, mask=mask)
    image = ax.imshow(np.ma.masked_where(~mask, w), cmap=cmap, vmin=0, vmax=1)
    ax.set_xticks(range(6))
    ax.set_yticks(range(6))
    ax.set_xlabel("key")
    ax.set_title(title)
axes[0].set_ylabel("query")
fig.colorbar(image, ax=axes, label="attention weight", shrink=0.8, pad=0.02)
fig.suptitle("Each row is one query's weights and sums to 1 (grey: masked)")
save_figure(fig, FIGURES / "02_attention_heatmap.png", bbox_inches="tight")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** A mask decides which keys each query may see: masked cells get weight
# exactly zero, and each row's remaining weights still sum to 1.
#
# <!-- alt: Three 6-by-6 heatmaps of attention weights, rows queries and columns keys,
# in shades of blue. No mask: every cell is coloured, strongest on the diagonal. Causal:
# the cells above the diagonal are grey. Causal with the last two tokens as padding:
# columns 4 and 5 are grey in every row as well. -->

# %% [markdown]
# Without a mask, the diagonal stands out: with `Q = K = V` and no learned projections,
# each token's best match is usually itself. A token's score with itself is its squared
# length, $q \cdot q = |q|^2$; another key beats that only if it is both longer and
# pointing in nearly the same direction, which is rare for random vectors. The causal
# mask removes the upper triangle and each row renormalises over what is left. The
# padding removes two columns; the two padding queries (rows 4 and 5) still attend, to
# real tokens only, and their outputs are ignored downstream.
#
# <!-- live-figure: mask -->
#
# ## Summary
#
# - Attention scores every key against every query with a dot product, turns each row of
#   scores into weights with a softmax over the keys (`axis=-1`), and returns the
#   weighted average of the values: `(seq_q, d_k)`, `(seq_k, d_k)`, `(seq_k, d_v)` in,
#   `(seq_q, d_v)` and `(seq_q, seq_k)` out.
# - Dot products of width $d_k$ have variance $d_k$; dividing by $\sqrt{d_k}$ (of one
#   head, not of the whole model) keeps the softmax from saturating to one-hot.
# - Scale by a number of the array's own dtype (or a Python float): `np.sqrt` of an
#   integer gives a float64 scalar that silently turns float32 into float64.
# - Masks are True where attention is allowed; `torch.nn.MultiheadAttention` uses the
#   opposite convention. A query with nothing to attend to gets zero weights and a zero
#   output here, where `-1e9` would leak the mean of forbidden values and `-inf` gives
#   `nan`. PyTorch's `scaled_dot_product_attention` gives zeros too on the CPU and in
#   its CUDA math and memory-efficient backends, but not in every GPU backend.
#
# ## Exercises
#
# As in notebook 01: a cell for your answer (replace the `...`), a collapsed cell that
# checks it (run it without opening it), and a collapsed solution below.
#
# **Exercise 1 (predict, by hand).** One query, two keys, two values, $d_k = 2$:
#
# ```python
# Q = np.array([[1.0, 0.0]])
# K = np.array([[2.0, 0.0], [0.0, 2.0]])
# V = np.array([[10.0, 0.0], [0.0, 10.0]])
# ```
#
# Work out the scores, the weights and the output
# `scaled_dot_product_attention(Q, K, V)` returns, with pencil and a calculator for one
# `exp`. Write the output, shape `(1, 2)`, to one decimal.

# %%
output_prediction = ...  # e.g. np.array([[5.0, 5.0]])


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint="output_prediction should be an array of shape (1, 2).")
def check_exercise_1(prediction):
    Q = np.array([[1.0, 0.0]])
    K = np.array([[2.0, 0.0], [0.0, 2.0]])
    V = np.array([[10.0, 0.0], [0.0, 10.0]])
    prediction = np.asarray(prediction, dtype=float).reshape(-1)
    assert prediction.shape == (2,), (
        f"the output has one row of d_v = 2 numbers; got {prediction.size} numbers"
    )
    assert np.isclose(prediction.sum(), 10.0, atol=0.15), (
        "the two numbers should add up to 10: the weights sum to one, and each "
        "value row holds a single 10"
    )
    for divisor, mistake in [
        (1.0, "forgot to divide the scores by sqrt(d_k)"),
        (2.0, "divided by d_k instead of sqrt(d_k)"),
    ]:
        wrong = softmax(Q @ K.T / divisor) @ V
        assert not np.allclose(prediction, wrong[0], atol=0.05), (
            f"close, but this is what you get if you {mistake}"
        )
    truth = scaled_dot_product_attention(Q, K, V)[0][0]
    assert np.allclose(prediction, truth, atol=0.15), (
        "not quite: the scores are Q @ K.T / sqrt(2); take their softmax, then the "
        "weighted sum of the rows of V"
    )


print(check_exercise_1(output_prediction))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Scores: Q @ K.T = [[2, 0]], divided by sqrt(2): [[1.414, 0]].
# Weights: softmax([1.414, 0]) = [e^1.414, 1] / (e^1.414 + 1) = [4.113, 1] / 5.113 =
# [0.804, 0.196]. Output: 0.804 * [10, 0] + 0.196 * [0, 10] = [8.04, 1.96].
# (Without the scale, softmax([2, 0]) would give [8.81, 1.19]; dividing by d_k = 2,
# [7.31, 2.69].)
solution_output_prediction = np.array([[8.0, 2.0]])
print(check_exercise_1(solution_output_prediction))

# %% [markdown]
# **Exercise 2 (write).** Write `my_attention(Q, K, V, mask=None)` with NumPy only (and
# the package's `softmax` if you like), returning `(output, weights)`. It must accept
# any leading axes, apply a boolean mask (True = may attend), keep float32 as float32,
# and give a query with no allowed key zero weights and a zero output. Before you run
# the check, predict what your first attempt will do with that empty row, and which line
# decides it.


# %%
def my_attention(Q, K, V, mask=None):
    """(output, weights) of scaled dot-product attention, with NumPy only."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "Transpose only the last two axes of K (np.swapaxes(K, -1, -2)), and let the "
    "mask broadcast against the scores."
))
def check_exercise_2(function):
    rng_check = np.random.default_rng(7)
    Q, K, V = (
        rng_check.normal(size=shape)
        for shape in [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]
    )
    result = not_yet(function(Q, K, V))
    out, w = (np.asarray(a) for a in result)
    assert out.shape == (2, 3, 4, 6), (
        "output should have shape (batch, heads, seq_q, d_v) = (2, 3, 4, 6); got "
        f"{out.shape}"
    )
    assert w.shape == (2, 3, 4, 5), (
        "weights should have shape (batch, heads, seq_q, seq_k) = (2, 3, 4, 5); "
        f"got {w.shape}"
    )
    assert np.allclose(w.sum(axis=-1), 1.0), (
        "each query's weights (a row, over the keys) should sum to 1: which axis?"
    )
    dots = np.einsum("bhid,bhjd->bhij", Q, K)  # unscaled scores
    for divisor, hint in [
        (1.0, "forgot to scale the scores?"),
        (math.sqrt(8 * 3), "divided by sqrt(d_model)?"),
    ]:
        assert not np.allclose(w, softmax(dots / divisor)), (
            f"the weights are off: {hint}"
        )
    assert np.allclose(w, softmax(dots / math.sqrt(8))), (
        "the weights differ from softmax(Q K^T / sqrt(d_k))"
    )
    assert np.allclose(out, w @ V), "the output should be the weights times V"

    # (seq_q, seq_k), broadcast over batch and heads
    mask = np.tril(np.ones((4, 5), dtype=bool), k=1)
    mask[2] = False  # query 2 may attend to nothing
    # let the asserts below, not a warning, report a nan
    with np.errstate(all="ignore"):
        out, w = (np.asarray(a) for a in function(Q, K, V, mask))
    rows = [0, 1, 3]  # the queries that may attend to something
    assert np.all(w[..., rows, :][..., ~mask[rows]] == 0), (
        "a masked key must get a weight of exactly 0 (True = may attend)"
    )
    assert np.allclose(w[..., rows, :].sum(axis=-1), 1.0), (
        "the rows of queries with allowed keys should sum to 1"
    )
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(out)), (
        "the query with no allowed key gave nan or inf"
    )
    assert np.all(w[..., 2, :] == 0) and np.all(out[..., 2, :] == 0), (
        "the query with no allowed key should get zero weights and a zero output; "
        f"got weights {w[0, 0, 2]}"
    )
    out, w = function(*(a.astype(np.float32) for a in (Q, K, V)))
    assert out.dtype == np.float32 and w.dtype == np.float32, (
        f"float32 in should give float32 out; got {out.dtype} and {w.dtype} "
        "(np.sqrt?)"
    )


print(check_exercise_2(my_attention))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The usual first attempt fills masked scores with -1e9 and gets a uniform row (the mean
# of the values), or with -inf and gets nan from -inf - (-inf). The line that decides is
# the softmax: here the package's softmax, which turns an all -inf row into zeros. With
# your own softmax, subtract a finite number where the row maximum is -inf, and divide
# by 1 where the sum is 0.
def solution_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    # (..., seq_q, seq_k); a Python float keeps float32
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # True = may attend
    weights = softmax(scores, axis=-1)  # an all -inf row becomes zeros
    return weights @ V, weights  # (..., seq_q, d_v), (..., seq_q, seq_k)


print(check_exercise_2(solution_attention))

# %% [markdown]
# **Exercise 3 (predict, then write).** Language models that generate from a batch of
# prompts usually pad on the *left*, so that every prompt ends at the last position.
# First predict: for `lengths = [5, 2, 0]` and `seq_len = 5`, with left padding combined
# with a causal mask, how many queries of each of the three sequences have no key at all
# to attend to? Then write `left_padding_mask(lengths, seq_len)`: a boolean array of
# shape `(batch, 1, 1, seq_len)` that is True for the real tokens of each sequence,
# which are its *last* `lengths[b]` positions. Use `np.arange` and a comparison. The
# check combines it with a causal mask and counts the empty rows.


# %%
def left_padding_mask(lengths, seq_len):
    """(batch, 1, 1, seq_len) boolean mask, True for the last lengths[b] positions of
    sequence b.
    """
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint=(
    "left_padding_mask(lengths, seq_len) returns a boolean array of shape (batch,"
    " 1, 1, seq_len)."
))
def check_exercise_3(function):
    lengths, seq_len = np.array([5, 2, 0]), 5
    mask = not_yet(function(lengths, seq_len))
    mask = np.asarray(mask)
    assert mask.dtype == bool, f"the mask should be boolean; got {mask.dtype}"
    assert mask.shape == (3, 1, 1, 5), (
        "the shape should be (batch, 1, 1, seq_len) = (3, 1, 1, 5); got "
        f"{mask.shape}"
    )
    assert mask.sum(axis=-1).ravel().tolist() == lengths.tolist(), (
        "each sequence should have lengths[b] real tokens"
    )
    assert not (mask[..., :-1] & ~mask[..., 1:]).any(), (
        "real tokens must come last: a True may never be followed by a False"
    )

    x = np.random.default_rng(8).normal(size=(3, seq_len, 4))
    both = causal_mask(seq_len) & mask  # (batch, 1, seq_len, seq_len)
    out, w = scaled_dot_product_attention(
        x[:, None], x[:, None], x[:, None], mask=both
    )
    # (batch, seq_len): the queries with nothing to see
    empty = ~both[:, 0].any(axis=-1)
    assert empty.sum(axis=-1).tolist() == (seq_len - lengths).tolist(), (
        "combined with a causal mask, your mask leaves the wrong queries with "
        "nothing to attend to: which positions are real, and what can each see?"
    )
    assert np.all(w[:, 0][empty] == 0) and np.all(out[:, 0][empty] == 0), (
        "those queries should get zero weights and output"
    )


print(check_exercise_3(left_padding_mask))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: 0, 3 and 5. With left padding the fillers come first, and a causal
# mask lets a filler see only itself and earlier positions: all fillers. So every
# padding query has an empty row: 5 - 5 = 0, 5 - 2 = 3 and 5 - 0 = 5 of them. (With
# right padding there are none: every query can see position 0, unless the sequence has
# length 0.)
def solution_left_padding_mask(lengths, seq_len):
    # (batch, 1): where the real tokens start
    first_real = seq_len - np.asarray(lengths)[:, None]
    # (batch, 1, 1, seq_len)
    return (np.arange(seq_len) >= first_real)[:, None, None, :]


print(check_exercise_3(solution_left_padding_mask))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Section 3.2.1 defines scaled
#   dot-product attention, and its footnote 4 gives the variance argument for
#   $1/\sqrt{d_k}$ measured above.
# - Bahdanau, D., Cho, K. and Bengio, Y. (2015). *Neural Machine Translation by Jointly
#   Learning to Align and Translate.* ICLR 2015.
#   [arXiv:1409.0473](https://arxiv.org/abs/1409.0473). Attention as a learned, soft
#   alignment, before the Transformer.
# - PyTorch documentation,
#   [`torch.nn.functional.scaled_dot_product_attention`](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)
#   (a boolean `attn_mask` is True where attention is allowed) and
#   [`torch.nn.MultiheadAttention`](https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html)
#   (True where it is not).
#
# **Read next.** Zhang, Lipton, Li and Smola, *Dive into Deep Learning*, chapter
# "Attention Mechanisms and Transformers" ([d2l.ai](https://d2l.ai)), for attention as
# kernel regression; Raschka, S. (2024), *Build a Large Language Model (From Scratch)*,
# Manning, chapter 3 ([code](https://github.com/rasbt/LLMs-from-scratch)), for causal
# masks and dropout on the weights; Rush, A. (2018), *The Annotated Transformer*
# ([nlp.seas.harvard.edu/annotated-transformer](https://nlp.seas.harvard.edu/annotated-transformer/)),
# whose `attention` function fills masked scores with `-1e9`; and Cho, A. et al. (2024),
# *Transformer Explainer*
# ([poloclub.github.io/transformer-explainer](https://poloclub.github.io/transformer-explainer/)),
# to see the masked, scaled scores of a real GPT-2.
#
# ---
# Next: [03_splitting_heads.ipynb](03_splitting_heads.ipynb) cuts the model width into
# several narrow heads that attend side by side, all with the function of this notebook.
