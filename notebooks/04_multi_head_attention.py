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
# # 4. Multi-head attention: the whole module
#
# One attention head gives every query a single set of weights over the keys
# (non-negative, adding up to 1), and so a single weighted average of the values. This
# notebook puts several heads side by side and wraps them into the module that every
# Transformer layer contains.
#
# **In this notebook you will learn**
#
# - why a layer runs several narrow heads instead of one wide one, and what each head
#   sees;
# - how `MultiHeadAttention` turns a `(batch, seq_len, d_model)` input into an output of
#   the same shape, with the shape after every step;
# - why one fused matrix `W_qkv` *is* three projections, and `3 * num_heads` small ones;
# - why the layer has `4 * d_model**2` parameters whatever the number of heads;
# - how to read every head's weights as a heatmap, and what they do not mean before
#   training;
# - three bugs that give the right shapes and the wrong numbers.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import mhattn
from mhattn import (
    MultiHeadAttention,
    combine_heads,
    scaled_dot_product_attention,
    split_heads,
)
from mhattn.pictures import exercise, not_yet, plot_heads, save_figure, show_source

np.set_printoptions(precision=3, suppress=True)
# the notebooks run with notebooks/ as the working directory
FIGURES = Path("..") / "figures"

# %% [markdown]
# ## 1. Why more than one head
#
# A token often needs several kinds of information at once. In *"the keys that the
# manager lost were found"*, the verb *were* needs its subject (*keys*, far away) and
# also the words next to it. A single head has one row of weights per query: to gather
# both it must split its weight between them, and its output becomes a blur of the two.
#
# Multi-head attention runs $H$ = `num_heads` attentions in parallel. Each head `h` has
# its own projections into a smaller space of width `d_k = d_model // num_heads`, so
# each can put its weight somewhere else; the heads' outputs are laid side by side and
# mixed by one more matrix, $W_o$:
#
# $$
# \text{head}_h = \operatorname{Attention}\!\left(X W^Q_h,\; X W^K_h,\; X W^V_h\right),
# \qquad W^Q_h, W^K_h, W^V_h \in \mathbb{R}^{d_\text{model} \times d_k}
# $$
#
# $$
# \operatorname{MultiHead}(X) = \left[\,\text{head}_0 \mid \text{head}_1 \mid
# \cdots \mid \text{head}_{H-1}\,\right] W_o,
# \qquad W_o \in \mathbb{R}^{d_\text{model} \times d_\text{model}}
# $$
#
# Note what is split and what is not: every head reads **all** `d_model` features of
# every token. Only the projected space is divided among the heads. Because each head is
# `num_heads` times narrower, the projections of all heads together cost exactly what
# one head of full width costs (`W_qkv` is `(d_model, 3 * d_model)` either way), and so
# do the products $QK^\top$ and (weights)$\,V$: $2 n^2 d_k$ FLOPs per head for $n$
# tokens, $2 n^2 d_\text{model}$ in all. What grows with the number of heads is the
# rest: every head has its own $n \times n$ scores, so the number of scores, the
# softmax's work and the memory of the weights are `num_heads` times those of one
# full-width head (notebook 12 counts them).

# %% [markdown]
# ## 2. The module
#
# Here is the package's whole class. `__init__` makes the weights; `forward`, the code
# that runs when you call the module, is the five steps of the formula, one line each.
#
# 1. one matrix product with `W_qkv` makes the queries, keys and values of every token,
#    and `np.split` cuts the result into `Q`, `K` and `V`;
# 2. `split_heads` (notebook 03) gives each head its `d_k` columns of each;
# 3. attention runs in all heads at once, because the head axis is just another leading
#    axis for the matrix products (`scaled_dot_product_attention`, notebook 02);
# 4. `combine_heads` puts the heads side by side again;
# 5. `W_o` mixes them into one vector per token.
#
# Before the body runs, the module checks its arguments (shapes, dtypes, the layout of
# the mask, the weights) and stops a mistake with an error that names the argument; the
# checks live in `mhattn/checks/`, out of the way, and `MultiHeadAttention.forward?`
# shows what they accept.

# %%
show_source(MultiHeadAttention)

# %% [markdown]
# The weights are standard normal numbers from a seeded generator (the same `seed`
# gives the same layer on every machine), multiplied by $\sqrt{2 / d_\text{model}}$.
# That is the "He" scale, made for layers followed by a ReLU, which throws away half of
# the variance. There is no ReLU here, so each entry of `x @ W_qkv` sums `d_model`
# products of variance $2 / d_\text{model}$ and ends up with about **twice** the
# variance of the input. Section 6 shows what that does to the attention weights.
#
# Let us run the steps one by one on a small batch and print every shape. Every axis
# gets a different size (batch 2, 5 tokens, `d_model` 64, 4 heads of `d_k` 16), so no
# two axes can be confused.

# %%
mha = MultiHeadAttention(d_model=64, num_heads=4)
x = np.random.default_rng(0).normal(size=(2, 5, 64))

qkv = x @ mha.W_qkv
Q, K, V = np.split(qkv, 3, axis=-1)
Q_heads, K_heads, V_heads = (split_heads(t, mha.num_heads) for t in (Q, K, V))
heads, weights = scaled_dot_product_attention(Q_heads, K_heads, V_heads)
concatenated = combine_heads(heads)
output = concatenated @ mha.W_o

steps = [
    ("x", x, "(batch, seq_len, d_model)"),
    ("qkv = x @ W_qkv", qkv, "(batch, seq_len, 3 * d_model)"),
    ("Q (also K, V)", Q, "(batch, seq_len, d_model)"),
    ("split_heads(Q)", Q_heads, "(batch, num_heads, seq_len, d_k)"),
    ("weights", weights, "(batch, num_heads, seq_len, seq_len)"),
    ("heads = weights @ V", heads, "(batch, num_heads, seq_len, d_k)"),
    ("combine_heads(heads)", concatenated, "(batch, seq_len, d_model)"),
    ("output = ... @ W_o", output, "(batch, seq_len, d_model)"),
]
for name, array, axes in steps:
    print(f"{name:<22} {str(array.shape):<16} {axes}")

module_output, module_weights = mha(x)
print(
    "\nsame as mha(x):",
    np.allclose(output, module_output) and np.allclose(weights, module_weights),
)

# %% [markdown]
# What comes out is again one `d_model`-wide vector per token, exactly like what went
# in. So the layer can be applied to its own output, a Transformer can stack dozens of
# them, and `x + mha(x)[0]` is a valid sum (notebook 05 comes back to that sum).

# %% [markdown]
# ## 3. One fused matrix is three projections
#
# The formula has three matrices per head; the module stores a single `W_qkv` of shape
# `(d_model, 3 * d_model)`. Its first `d_model` columns make the queries, the next
# `d_model` the keys, the last `d_model` the values. Multiplying by the whole
# matrix and splitting the result gives exactly what three separate products give,
# because each output column depends on its own column of the matrix only.

# %%
W_q, W_k, W_v = np.split(mha.W_qkv, 3, axis=1)  # each (d_model, d_model)
for name, fused, separate in [("Q", Q, x @ W_q), ("K", K, x @ W_k), ("V", V, x @ W_v)]:
    print(
        f"{name}: x @ W_qkv, split  ==  x @ W_{name.lower()}   "
        f"{np.allclose(fused, separate)}"
    )

# %% [markdown]
# The per-head matrices $W^Q_h$ are in there too: `split_heads` hands head `h` columns
# `h * d_k` to `(h + 1) * d_k - 1` of `Q`, so $W^Q_h$ is that block of columns of `W_q`.
# For head 2:

# %%
d_k = mha.d_k
W_q_head2 = W_q[:, 2 * d_k : 3 * d_k]  # (d_model, d_k)
print("W_q_head2:", W_q_head2.shape)
print(
    "x @ W_q_head2 == split_heads(Q)[:, 2]:", np.allclose(x @ W_q_head2, Q_heads[:, 2])
)

# %% [markdown]
# So the `3 * num_heads` small matrices of the formula are blocks of one big matrix, and
# one large matrix product replaces `3 * num_heads` small ones. The result is the same;
# one big product keeps the processor busier than many small calls, which is why real
# implementations (PyTorch's `nn.MultiheadAttention`, nanoGPT's `c_attn`) fuse them too.
# Exercise 2 asks you to take the blocks apart again.

# %% [markdown]
# ## 4. Parameters: `4 * d_model**2`, whatever the number of heads
#
# `W_qkv` holds $3 d_\text{model}^2$ numbers and `W_o` another $d_\text{model}^2$. The
# number of heads does not appear: more heads cut the same projection into more,
# narrower pieces.

# %%
d_model = 64
print(
    f"{'num_heads':>9} {'d_k':>4} {'W_qkv':>7} {'W_o':>6} {'total':>7}   4 * "
    f"d_model**2 = {4 * d_model**2}"
)
for num_heads in [1, 2, 4, 8, 16, 64]:
    layer = MultiHeadAttention(d_model, num_heads)
    total = layer.W_qkv.size + layer.W_o.size
    assert total == 4 * d_model**2
    print(
        f"{num_heads:>9} {layer.d_k:>4} {layer.W_qkv.size:>7} {layer.W_o.size:>6} "
        f"{total:>7}"
    )

# %% [markdown]
# The choice of `num_heads` is a trade-off, not a cost: more heads can look in more
# places at once, but each compares queries and keys in fewer dimensions. With 64 heads
# of `d_k = 1`, every score is the product of two single numbers. (PyTorch's
# `nn.MultiheadAttention` adds a bias vector to each of the four projections by default:
# $4 d_\text{model}^2 + 4 d_\text{model}$. Our module has no biases.)

# %% [markdown]
# ## 5. A worked example
#
# The example the rest of the chapter keeps coming back to: a batch holding one sequence
# of 6 tokens, `d_model = 64`, 4 heads. The tokens come from NumPy's global generator
# seeded with 123; the layer makes its own weights from its default `seed=42`.

# %%
batch, seq_len, d_model, num_heads = 1, 6, 64, 4
np.random.seed(123)
x = np.random.randn(batch, seq_len, d_model)

mha = MultiHeadAttention(d_model, num_heads)
output, weights = mha.forward(x)

print(f"input shape:             {x.shape}")
print(f"output shape:            {output.shape}")
print(f"attention weights shape: {weights.shape}")
print(f"head width d_k:          {mha.d_k}")
print(f"number of heads:         {mha.num_heads}")

# %% [markdown]
# `weights` holds one `6 x 6` matrix per head: row `i` of head `h` says how query `i`
# shares out its attention among the 6 keys. The softmax makes those shares non-negative
# and makes them add up to exactly 1, in each head separately. Adding up each row checks
# it:

# %%
print("sum over the keys, one row per head, one column per query:")
print(weights[0].sum(axis=-1))
assert np.allclose(weights.sum(axis=-1), 1.0)

# %% [markdown]
# ## 6. Every head at a glance
#
# Each panel below is one head: a row per query, a column per key, darker for more
# weight. All panels share one colour scale from 0 to 1, so a dark cell means the same
# in each.

# %%
fig = plot_heads(
    weights[0],
    title="Attention weights of the worked example, per head (untrained layer)",
)
save_figure(fig, FIGURES / "04_attention_heads.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** Each head of one untrained layer attends in its own way to the same six
# tokens: the heads share the input but not their weights.
#
# <!-- alt: Four 6-by-6 heatmaps, heads 0 to 3, each cell printed with its weight to two
# decimals. Head 0 puts most weight on keys 4 and 5, head 1 on key 2 (0.82 and 0.91 in
# rows 0 and 3), head 2 on key 2 in row 2 (0.88), head 3 on key 2 in rows 1 and 3 (0.95,
# 0.99). -->

# %% [markdown]
# <!-- live-figure: heads -->
#
# How to read it, honestly:
#
# - **The heads disagree.** The same six tokens give four different patterns. Query 0,
#   for example, puts most of its weight on key 5 in head 0, on key 2 in head 1 and on
#   key 3 in head 3, and spreads it over three keys in head 2. For each token the module
#   hands four different averages of the values to `W_o`: that is the point of having
#   heads.
# - **The patterns mean nothing yet.** The weights of this layer are random, and so is
#   the input. Which key a head favours is an accident of the seed. A trained layer
#   learns projections that make these patterns useful (a head that follows the previous
#   token, one that finds the subject of a verb); nothing here was learned.
# - **The rows are already peaked.** Many rows give more than half their weight to one
#   key. That comes from the scale of the random weights. With weights of variance
#   $2 / d_\text{model}$ and a standard normal input, each entry of a query or key sums
#   $d_\text{model}$ such products and has variance 2; a score sums $d_k$ products of
#   two such entries, variance $4 d_k$, and dividing by $\sqrt{d_k}$ leaves variance 4:
#   a standard deviation of about 2, as the next cell checks. A softmax over six numbers
#   that far apart is dominated by the largest. So the peaking comes from the
#   $\sqrt{2 / d_\text{model}}$ initialisation, not from attention itself: a smaller
#   scale, such as the Xavier initialisation PyTorch's `nn.MultiheadAttention` gives its
#   query, key and value projections, gives flatter rows (the last line of the cell).

# %%
Q, K, V = np.split(x @ mha.W_qkv, 3, axis=-1)
scores = (
    split_heads(Q, num_heads)
    @ np.swapaxes(split_heads(K, num_heads), -1, -2)
    / np.sqrt(mha.d_k)
)
print(f"standard deviation of the scaled scores: {scores.std():.2f}")
print(
    f"mean of each row's largest weight:       {weights.max(axis=-1).mean():.2f}   "
    f"(uniform would be {1 / seq_len:.2f})"
)

# The same random numbers rescaled to Xavier's standard deviation sqrt(2 / (fan_in +
# fan_out)), with fan_in = d_model and fan_out = 3 * d_model for PyTorch's (3 * d_model,
# d_model) in_proj_weight.
xavier = MultiHeadAttention(d_model, num_heads)
xavier.W_qkv = mha.W_qkv * np.sqrt(2 / (d_model + 3 * d_model)) / np.sqrt(2 / d_model)
print(
    f"the same with Xavier's smaller scale:    {xavier(x)[1].max(axis=-1).mean():.2f}"
)

# %% [markdown]
# ## 7. Three bugs with the right shapes
#
# Each of these runs without an error and returns arrays of the right shapes. A test
# that only checks shapes passes all three.
#
# ### Bug 1: splitting before projecting
#
# It is tempting to cut each token's *input* vector into `num_heads` slices and give
# each head a small `(d_k, d_k)` projection of its own slice. Then head 0 only ever sees
# input features 0 to 15, head 1 features 16 to 31, and so on: the heads can no longer
# combine information from all features. The function below does that (using the
# diagonal blocks of the real `W_qkv`, so it is otherwise the same layer). To see the
# difference, we change one input feature of one token and ask which heads' weights
# react.


# %%
def weights_split_before_projecting(x, mha):
    """BUG: cut x into heads first, then project each slice with a (d_k, d_k) block."""
    d_k = mha.d_k
    W_q, W_k, _ = np.split(mha.W_qkv, 3, axis=1)
    # (batch, num_heads, seq_len, d_k): head h sees features h*d_k ...
    x_heads = split_heads(x, mha.num_heads)
    blocks = [slice(h * d_k, (h + 1) * d_k) for h in range(mha.num_heads)]
    Q = np.stack([x_heads[:, h] @ W_q[b, b] for h, b in enumerate(blocks)], axis=1)
    K = np.stack([x_heads[:, h] @ W_k[b, b] for h, b in enumerate(blocks)], axis=1)
    return mhattn.softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k), axis=-1)


def heads_that_changed(before, after):
    return [
        h for h in range(before.shape[1]) if not np.allclose(before[:, h], after[:, h])
    ]


nudged = x.copy()
nudged[0, 2, 0] += 1.0  # change input feature 0 of token 2, nothing else

print("heads whose weights change when feature 0 of token 2 changes")
print("  project, then split (correct):", heads_that_changed(mha(x)[1], mha(nudged)[1]))
buggy_before, buggy_after = (
    weights_split_before_projecting(x, mha),
    weights_split_before_projecting(nudged, mha),
)
print("  split, then project (bug):    ", heads_that_changed(buggy_before, buggy_after))

# %% [markdown]
# In the correct module one input feature reaches every head. With the bug it reaches
# only the head that owns its slice, and the layer also has `num_heads` times fewer
# projection parameters than the formula says.
#
# ### Bug 2: reading `W_qkv` in the wrong layout
#
# Our `W_qkv` is laid out `[all queries | all keys | all values]`: head `h` finds its
# query columns in the first third. PyTorch's `in_proj_weight` uses the same order, but
# transposed: it has shape `(3 * d_model, d_model)` and is applied as
# `x @ in_proj_weight.T`, so its *rows* come in that order, and `W_qkv` is its
# transpose. Other code stores the same numbers per head,
# `[q_0 k_0 v_0 | q_1 k_1 v_1 | ...]`. The layout is a convention between the code that
# writes the matrix and the code that reads it, and reading ours as if it were per head
# raises no error: every slice has the right width.

# %%
qkv = x @ mha.W_qkv  # (1, 6, 192)
# BUG: assumes [q_0 k_0 v_0 | q_1 k_1 v_1 | ...]
per_head = qkv.reshape(batch, seq_len, num_heads, 3, mha.d_k)
# each (batch, num_heads, seq_len, d_k)
Q_bad, K_bad, V_bad = per_head.transpose(3, 0, 2, 1, 4)
heads_bad, weights_bad = scaled_dot_product_attention(Q_bad, K_bad, V_bad)
output_bad = combine_heads(heads_bad) @ mha.W_o

print(
    "shapes:",
    output_bad.shape,
    weights_bad.shape,
    "  rows sum to one:",
    np.allclose(weights_bad.sum(-1), 1),
)
print("same output as the module:", np.allclose(output_bad, output))
print(f"largest difference: {np.abs(output_bad - output).max():.2f}")

# %% [markdown]
# With random weights, either reading gives a perfectly valid layer, just not the same
# one. The bug shows up only against a trusted reference: the module itself here,
# PyTorch in this project's tests, or pretrained weights that suddenly produce nonsense.
#
# ### Bug 3: forgetting `W_o`
#
# After `combine_heads` the array already has the right shape,
# `(batch, seq_len, d_model)`, so returning it looks finished. But then output features
# 0-15 are head 0's output alone, features 16-31 head 1's, and so on: the heads are side
# by side, never mixed. To see it, double the value columns of head 2 only and ask which
# output features react.


# %%
def output_without_W_o(x, mha):
    """BUG: the heads are concatenated but never mixed by W_o."""
    Q, K, V = (
        split_heads(t, mha.num_heads) for t in np.split(x @ mha.W_qkv, 3, axis=-1)
    )
    return combine_heads(scaled_dot_product_attention(Q, K, V)[0])


def features_that_changed(before, after):
    changed = np.flatnonzero(~np.isclose(before, after).all(axis=(0, 1)))
    return f"{len(changed)} of {before.shape[-1]}: {changed.min()} ... {changed.max()}"


# head 2's columns in the value third
head2_values = slice(2 * d_model + 2 * mha.d_k, 2 * d_model + 3 * mha.d_k)
column_scale = np.ones(3 * d_model)
column_scale[head2_values] = 2.0
louder = MultiHeadAttention(d_model, num_heads)  # the same layer (seed 42) ...
louder.W_qkv = mha.W_qkv * column_scale  # ... with head 2's value columns doubled

print("output features that change when head 2's values double")
print("  with W_o (correct):   ", features_that_changed(mha(x)[0], louder(x)[0]))
print(
    "  without W_o (bug):    ",
    features_that_changed(output_without_W_o(x, mha), output_without_W_o(x, louder)),
)

# %% [markdown]
# `W_o` is what lets every output feature draw on every head. Without it, the next layer
# receives each head's findings in a fixed slot, and `4 * d_model**2` parameters become
# `3 * d_model**2`.
#
# Two more bugs with the right shapes come from the earlier notebooks, and a multi-head
# layer makes them more likely: reshaping without the transpose in `split_heads`
# (notebook 03) and dividing the scores by $\sqrt{d_\text{model}}$ instead of
# $\sqrt{d_k}$ (notebook 02). With `num_heads = 1` neither changes a single number, so
# test with several heads.

# %% [markdown]
# ## Summary
#
# - Multi-head attention runs `num_heads` scaled dot-product attentions side by side,
#   each on its own `d_k = d_model // num_heads` wide projection of **all** input
#   features, then concatenates the heads and mixes them with `W_o`.
# - The fused `W_qkv` is the query, key and value projections side by side; head `h`
#   uses columns `h * d_k` to `(h + 1) * d_k - 1` of each.
# - The layer has `4 * d_model**2` parameters for any number of heads.
# - Input and output have the same shape `(batch, seq_len, d_model)`; the weights have
#   shape `(batch, num_heads, seq_len, seq_len)` with rows that sum to one.
# - Before training, the heads' patterns are different from each other but mean nothing.
# - Shape checks cannot catch the three bugs above; compare with an independent
#   computation instead, as the exercises do.

# %% [markdown]
# ## Exercises
#
# As in the earlier notebooks: a cell for your answer (replace the `...`), a collapsed
# cell that checks it (run it without opening it), and a collapsed solution below. Use
# NumPy, `split_heads` and `scaled_dot_product_attention`; the point is to take the
# weight matrices apart yourself.
#
# **Exercise 1 (predict, then write): heads that cannot disagree.** Section 6 showed
# four heads with four different patterns. They differ only because each head has its
# own block of columns in `W_qkv`. Suppose every head got a copy of head 2's query, key
# and value columns. First predict: what would the four heatmaps look like, and how many
# heads would the layer really have? Then write `tied_heads(mha, source)`, which returns
# a **new** `MultiHeadAttention` in which every head uses head `source`'s columns
# (queries, keys and values), with the same `W_o`, and leaves `mha` unchanged.


# %%
def tied_heads(mha, source):
    """A new layer like mha in which every head is a copy of head `source`."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint=(
    "tied_heads(mha, source) returns a MultiHeadAttention of the same size, W_qkv"
    " of shape (d_model, 3 * d_model)."
))
def check_exercise_1(function):
    source = 2
    W_qkv_before, W_o_before = mha.W_qkv.copy(), mha.W_o.copy()
    tied = not_yet(function(mha, source))
    assert tied is not mha, "return a new MultiHeadAttention and leave mha as it is"
    assert np.array_equal(mha.W_qkv, W_qkv_before) and np.array_equal(
        mha.W_o, W_o_before
    ), (
        "mha's own weights changed: edit a copy (mha.W_qkv.copy()), not mha.W_qkv "
        "itself"
    )
    tied_output, tied_weights = tied(x)
    _, old_weights = mha(x)
    for h in range(mha.num_heads):
        assert np.allclose(tied_weights[:, h], old_weights[:, source]), (
            f"head {h}'s weights are not head {source}'s: which columns of W_qkv "
            "make a head's scores?"
        )
    # What a layer whose heads are all head `source` must compute: one head, then
    # every row block of W_o.
    Q, K, V = (
        split_heads(t, mha.num_heads) for t in np.split(x @ mha.W_qkv, 3, axis=-1)
    )
    # (batch, seq_len, d_k)
    one_head, _ = scaled_dot_product_attention(
        Q[:, source], K[:, source], V[:, source]
    )
    # row block h reads head h
    W_o_blocks = mha.W_o.reshape(mha.num_heads, mha.d_k, mha.d_model)
    assert np.allclose(tied_output, one_head @ W_o_blocks.sum(axis=0)), (
        "the weights are right but the output is not: what else does a head "
        "take from W_qkv, and what did your layer do to W_o?"
    )


print(check_exercise_1(tied_heads))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: four identical heatmaps, each head 2's. And one head: every head
# computes the same (batch, seq_len, d_k) output, so combine_heads lays four copies side
# by side and W_o adds up its four row blocks applied to that one output. The layer is a
# single head with the output matrix W_o[0:16] + W_o[16:32] + W_o[32:48] + W_o[48:64],
# and W_qkv holds one head's 3 * d_model * d_k distinct numbers, four times over. That
# is also one reason the weights start random: heads that start fully identical (the
# same columns, and the same rows of W_o) get identical gradients and stay identical, so
# training never separates them.
def solution_tied_heads(mha, source):
    d_model, d_k = mha.d_model, mha.d_k
    # head `source`'s columns within a third
    columns = np.arange(source * d_k, (source + 1) * d_k)
    # (d_model,): the same d_k columns for every head
    tiled = np.tile(columns, mha.num_heads)
    tied = MultiHeadAttention(d_model, mha.num_heads)
    # (d_model, 3 * d_model)
    tied.W_qkv = mha.W_qkv[
        :, np.concatenate([tiled, tiled + d_model, tiled + 2 * d_model])
    ]
    tied.W_o = mha.W_o.copy()
    return tied


print(check_exercise_1(solution_tied_heads))

# %% [markdown]
# **Exercise 2 (predict, then write): one head at a time.** Write
# `multi_head_loop(x, mha)` that computes the module's output and weights with a Python
# loop over the heads: for each head, cut its three `(d_model, d_k)` matrices out of
# `mha.W_qkv`, call `scaled_dot_product_attention` on `(batch, seq_len, d_k)` arrays,
# and collect the results. Concatenate the heads' outputs along the last axis and apply
# `mha.W_o`. Do not use `split_heads` or `combine_heads`. Before you write it, predict
# the shapes each call of `scaled_dot_product_attention` returns, and how the heads'
# weights then become one array of shape `(batch, num_heads, seq_len, seq_len)`.


# %%
def multi_head_loop(x, mha):
    """Return (output, weights) like mha(x), one head at a time."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "multi_head_loop(x, mha) returns (output, weights) of shapes (batch, seq_len,"
    " d_model) and (batch, num_heads, seq_len, seq_len)."
))
def check_exercise_2(function):
    # a new shape: batch 2, 3 tokens, d_model 12
    test_x = np.random.default_rng(7).normal(size=(2, 3, 12))
    test_mha = MultiHeadAttention(12, 3, seed=1)
    answer = not_yet(function(test_x, test_mha))
    expected_output, expected_weights = test_mha(test_x)
    output, weights = answer
    assert np.shape(weights) == expected_weights.shape, (
        "weights should have shape (batch, num_heads, seq_len, seq_len) = "
        f"{expected_weights.shape}; got {np.shape(weights)}: where does the axis "
        "of the heads go?"
    )
    assert np.allclose(weights, expected_weights), (
        "the weights differ: check which columns each head's Q and K use"
    )
    assert np.allclose(output, expected_output), (
        "the weights match but the output does not: check the value columns, the "
        "concatenation order and W_o"
    )


print(check_exercise_2(multi_head_loop))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: each call of scaled_dot_product_attention returns an output of shape
# (batch, seq_len, d_k) and weights of shape (batch, seq_len, seq_len): no head axis,
# which np.stack(..., axis=1) then adds, after the batch. (The loop also makes
# 3 * num_heads products with x, 12 for 4 heads; the module makes one, as section 3
# showed.)
def solution_multi_head_loop(x, mha):
    d_model, d_k = mha.d_model, mha.d_k
    outputs, weights = [], []
    for h in range(mha.num_heads):
        columns = slice(h * d_k, (h + 1) * d_k)  # head h's columns within each third
        W_q_h = mha.W_qkv[:, :d_model][:, columns]  # (d_model, d_k)
        W_k_h = mha.W_qkv[:, d_model : 2 * d_model][:, columns]  # (d_model, d_k)
        W_v_h = mha.W_qkv[:, 2 * d_model :][:, columns]  # (d_model, d_k)
        # (batch, seq_len, d_k), (..., seq_len)
        out, w = scaled_dot_product_attention(x @ W_q_h, x @ W_k_h, x @ W_v_h)
        outputs.append(out)
        weights.append(w)
    concatenated = np.concatenate(outputs, axis=-1)  # (batch, seq_len, d_model)
    # (batch, seq_len, d_model), (batch, heads, seq, seq)
    return concatenated @ mha.W_o, np.stack(weights, axis=1)


print(check_exercise_2(solution_multi_head_loop))

# %% [markdown]
# **Exercise 3 (predict, then write): heads have no order.** Write
# `permute_heads(mha, order)` that returns a new `MultiHeadAttention` whose head `i` is
# the old head `order[i]`: its weights `new_weights[:, i]` equal
# `old_weights[:, order[i]]`, and its output is exactly the old output. First predict:
# which columns of `W_qkv` must move, which rows or columns of `W_o`, and why the output
# can stay exactly the same. (Assign new arrays to the new layer's `W_qkv` and `W_o`.)


# %%
def permute_heads(mha, order):
    """Return a new layer computing the same output, with its heads reordered."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint=(
    "permute_heads(mha, order) returns a MultiHeadAttention of the same size as "
    "mha."
))
def check_exercise_3(function):
    order = [2, 0, 3, 1]
    new = not_yet(function(mha, order))
    assert new is not mha, "return a new layer and leave mha unchanged"
    old_output, old_weights = mha(x)
    new_output, new_weights = new(x)
    assert np.allclose(new_weights, old_weights[:, order]), (
        "new head i should compute old head order[i]'s weights: where in W_qkv "
        "does a head find what makes its scores?"
    )
    assert np.allclose(new_output, old_output), (
        "the heads are reordered but the output changed: what else reads or "
        "writes a head's numbers?"
    )


print(check_exercise_3(permute_heads))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: in each third of W_qkv (queries, keys, values), head order[i]'s d_k
# columns move to head i's place; in W_o, the d_k *rows* that read head order[i] move
# with them, because row block h of W_o multiplies head h's output; W_o's columns (the
# output features) stay. The output is a sum over heads of (head h's output) @ (row
# block h of W_o), and a sum does not depend on the order of its terms.
def solution_permute_heads(mha, order):
    d_model, d_k = mha.d_model, mha.d_k
    # (d_model,)
    columns = np.concatenate([np.arange(h * d_k, (h + 1) * d_k) for h in order])
    new = MultiHeadAttention(d_model, mha.num_heads)
    new.W_qkv = mha.W_qkv[
        :, np.concatenate([columns, columns + d_model, columns + 2 * d_model])
    ]
    new.W_o = mha.W_o[columns]  # the rows follow their heads
    return new


print(check_exercise_3(solution_permute_heads))

# %% [markdown]
# ---
# ## Try it yourself
#
# Every setting of this notebook in one widget: move `seq_len`, pick another number of
# heads (only the counts that divide `d_model` are offered), switch the mask between
# none, causal and padding, and watch the heatmaps and the readout of row sums redraw.
# The explorer draws its own random tokens and weights from its seed, so its pictures
# differ from the ones above. Its `weights` switch also shows the two-layer model
# trained in notebook 07, whose heads do mean something (notebook 09 reads them).
# (Where no Python runs, on GitHub for instance, you see a still picture of the first
# frame; open the notebook in JupyterLab or on Binder to move the controls.)

# %%
# NBVAL_IGNORE_OUTPUT
from mhattn.explorer import explorer

explorer(d_model=64, num_heads=4, seq_len=6, mask="causal")

# %% [markdown] tags=["figure-caption"]
# **Figure.** The explorer's first frame: four causal heads of an untrained layer, and
# where the layer moves each of six tokens in a 2-D PCA plane.
#
# <!-- alt: Left: four small 6-by-6 causal heatmaps, the upper right triangles grey,
# head 0 strongest in column 0. Right: a PCA plane with six hollow circles (inputs)
# clustered on the left and arrows to six filled circles (outputs) spread to the right,
# labelled 0 to 5. -->

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Section 3.2.2 defines
#   multi-head attention, $\operatorname{MultiHead}(Q, K, V)$
#   $= \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h) W^O$, with 8 heads of
#   $d_k = 64$ in a $d_\text{model} = 512$ layer.
# - Glorot, X. and Bengio, Y. (2010). *Understanding the difficulty of training deep
#   feedforward neural networks.* AISTATS 2010, PMLR 9, 249-256. The "Xavier" scale
#   $\sqrt{2 / (\text{fan}_\text{in} + \text{fan}_\text{out})}$ of section 6, which
#   PyTorch's `nn.MultiheadAttention` uses for its input projection `in_proj_weight`
#   (Xavier-uniform, zero bias). Its output projection `out_proj` is not
#   Xavier-initialised: it keeps `nn.Linear`'s default, uniform within
#   $\pm 1/\sqrt{d_\text{model}}$, and its bias is set to zero.
# - He, K., Zhang, X., Ren, S. and Sun, J. (2015). *Delving Deep into Rectifiers:
#   Surpassing Human-Level Performance on ImageNet Classification.* ICCV 2015.
#   [arXiv:1502.01852](https://arxiv.org/abs/1502.01852). The
#   $\sqrt{2 / \text{fan}_\text{in}}$ scale this module uses, derived for layers
#   followed by a ReLU.
# - Michel, P., Levy, O. and Neubig, G. (2019). *Are Sixteen Heads Really Better than
#   One?* NeurIPS 2019. [arXiv:1905.10650](https://arxiv.org/abs/1905.10650). In trained
#   models many heads can be removed after training with little loss: what heads are for
#   is an empirical question.
# - Voita, E., Talbot, D., Moiseev, F., Sennrich, R. and Titov, I. (2019). *Analyzing
#   Multi-Head Self-Attention: Specialized Heads Do the Heavy Lifting, the Rest Can Be
#   Pruned.* ACL 2019. [arXiv:1905.09418](https://arxiv.org/abs/1905.09418). Trained
#   heads that follow positions, syntax and rare words: the useful patterns this
#   untrained layer does not have.
#
# **Read next.** Raschka, S. (2024), *Build a Large Language Model (From Scratch)*,
# Manning, chapter 3 ([code](https://github.com/rasbt/LLMs-from-scratch)), goes from a
# loop over heads to one fused projection, as exercise 2 and section 3 do here;
# Karpathy's nanoGPT
# ([model.py](https://github.com/karpathy/nanoGPT/blob/master/model.py)) writes the same
# module in PyTorch in about twenty lines; Rush, A. (2018), *The Annotated Transformer*
# ([nlp.seas.harvard.edu/annotated-transformer](https://nlp.seas.harvard.edu/annotated-transformer/))
# puts it inside a whole Transformer.
#
# ---
# Next: [05_embedding_shift.ipynb](05_embedding_shift.ipynb) looks at what the layer
# does to the token vectors themselves. The explorer also runs on its own, as an app
# ([explore.ipynb](explore.ipynb)): `voila notebooks/explore.ipynb`.
