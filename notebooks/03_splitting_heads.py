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
# # 3. Splitting into heads, and back
#
# One attention head gives each query a single set of weights: it can look mostly at one
# place, or spread itself thin. Multi-head attention runs several heads side by side, so
# one token can look at the previous word *and* at the subject of the sentence at the same
# time. It does this with about as much arithmetic as one big head: the `d_model` numbers
# of each token are cut into `num_heads` slices, and each head works on its own narrow
# slice (each head does compute its own score matrix and softmax, though). This notebook is
# about that cut. It is only a reshape and a transpose, and it is the place where the
# quietest bug of the chapter lives.
#
# **In this notebook you will learn**
#
# - how `(batch, seq_len, d_model)` becomes `(batch, num_heads, seq_len, d_k)`, and why the
#   heads axis has to move in front of the tokens;
# - exactly which columns of each token feed which head, in a picture;
# - the classic bug, a reshape without the transpose, which scrambles tokens across heads
#   without any error and passes a round-trip test, and two tests that do catch it (one
#   of them shows a variant of the bug leaking the future through a causal mask);
# - how `combine_heads` undoes the split exactly.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import causal_mask, combine_heads, scaled_dot_product_attention, split_heads
from mhattn.source import show_source

np.set_printoptions(precision=3, suppress=True)
FIGURES = Path("../figures")  # the notebooks run with the notebooks/ folder as working directory
FIGURES.mkdir(exist_ok=True)
rng = np.random.default_rng(0)

# %% [markdown]
# ## From one wide head to many narrow ones
#
# With `d_model = 8` and `num_heads = 2`, each head gets `d_k = d_model // num_heads = 4`
# numbers per token: head 0 gets columns 0 to 3, head 1 gets columns 4 to 7. Two steps
# put them where attention wants them:
#
# 1. **reshape** `(batch, seq_len, d_model)` to `(batch, seq_len, num_heads, d_k)`: cut
#    each token's row into `num_heads` pieces. Nothing moves in memory; the last axis is
#    just read as two.
# 2. **transpose** to `(batch, num_heads, seq_len, d_k)`: move the heads axis in front of
#    the tokens. Attention (notebook 02) multiplies the last two axes, `(seq_len, d_k)`,
#    and treats every axis before them as "one more independent problem", so the heads
#    must sit there, next to the batch.
#
# To see where every number goes, we fill `x` with readable numbers: the entry for token
# `t` and column `c` is `10 * t + c`.

# %%
batch, seq_len, d_model, num_heads = 1, 3, 8, 2
t = np.arange(seq_len)[:, None]  # token index, down the rows
c = np.arange(d_model)[None, :]  # column index, across
x = (10 * t + c)[None].astype(float)  # (batch, seq_len, d_model) = (1, 3, 8)
print("x[0], one row per token:\n", x[0])

heads = split_heads(x, num_heads)  # (batch, num_heads, seq_len, d_k) = (1, 2, 3, 4)
print("\nsplit_heads(x, 2) has shape", heads.shape)
for h in range(num_heads):
    print(f"head {h}, one row per token:\n", heads[0, h])

# %% [markdown]
# Each head still has one row per token (the tens digit runs 0, 1, 2 down the rows in both
# heads), but only its own four columns. Here is the package's code; the shape comments
# follow each step:

# %%
show_source(split_heads)

# %% [markdown]
# `combine_heads` does the same two steps backwards: move the tokens in front of the heads
# again, then glue each token's `num_heads` pieces back into one row of width `d_model`.

# %%
show_source(combine_heads)

# %% [markdown]
# ## Checking the split against its specification
#
# The specification fits in one line: **head `h` sees columns `h * d_k` to
# `(h + 1) * d_k - 1` of every token**, in the original token order. Let us check it with
# shapes in which every axis has a different length, together with two more facts: the
# split is a *view* of `x` (no numbers are copied), and `combine_heads` undoes it exactly.

# %%
x = rng.normal(size=(2, 5, 12))  # batch 2, seq_len 5, d_model 12
num_heads = 3
d_k = x.shape[-1] // num_heads  # 4
heads = split_heads(x, num_heads)  # (2, 3, 5, 4)

print("shape:", x.shape, "->", heads.shape)
print("head h == columns h*d_k:(h+1)*d_k, for every h:",
      all(np.array_equal(heads[:, h], x[:, :, h * d_k:(h + 1) * d_k]) for h in range(num_heads)))
print("a view of x, no copy:", np.shares_memory(heads, x))
print("combine_heads(split_heads(x)) == x exactly:", np.array_equal(combine_heads(heads), x))

# %% [markdown]
# In the full model (notebook 04) the arrays we split are the queries, keys and values,
# for example `Q = x @ W_q`. Column `j` of `Q` is made by column `j` of `W_q`, so head `h`'s
# queries come from columns `h * d_k` to `(h + 1) * d_k - 1` of `W_q`: each head has its
# own slice of the projection matrices, learned separately. That is what lets heads
# specialise.
#
# ## A picture of the split
#
# To draw the split, we run `split_heads` on two arrays shaped like `x`: one holding each
# entry's token index, one holding its column index. Colour shows the token an entry
# came from, the number shows its column in `x`. We will draw the same picture for the
# buggy version below, so the drawing lives in a small function.

# %%
seq_len, d_model, num_heads = 4, 8, 2
token_of = np.broadcast_to(np.arange(seq_len)[None, :, None], (1, seq_len, d_model))  # (1, 4, 8)
column_of = np.broadcast_to(np.arange(d_model)[None, None, :], (1, seq_len, d_model))  # (1, 4, 8)
token_colours = plt.get_cmap("Pastel1").colors[:seq_len]


def draw_split(split, title):
    """Draw token_of/column_of before and after `split`; return the figure."""
    tokens, columns = split(token_of), split(column_of)  # each (1, num_heads, rows, d_k)
    panels = [("x[0] before the split", token_of[0], column_of[0])]
    panels += [(f"head {h}", tokens[0, h], columns[0, h]) for h in range(num_heads)]
    fig, axes = plt.subplots(1, 1 + num_heads, figsize=(11, 3.2),
                             gridspec_kw={"width_ratios": [d_model] + [d_model // num_heads] * num_heads})
    for ax, (name, tok, col) in zip(axes, panels, strict=True):
        ax.imshow(np.array(token_colours)[tok])  # (rows, columns, RGB): colour = token
        for (i, j), value in np.ndenumerate(col):
            ax.text(j, i, str(value), ha="center", va="center", fontsize=11)
        ax.set_xticks(range(col.shape[1]))
        ax.set_yticks(range(col.shape[0]))
        ax.set_xlabel("column of x" if col.shape[1] == d_model else "position within the head")
        ax.set_ylabel("row = token" if col.shape[1] == d_model else "row = sequence position")
        ax.set_title(name)
    axes[0].axvline(d_model // num_heads - 0.5, color="black", linewidth=3)  # where the heads are cut
    handles = [plt.Rectangle((0, 0), 1, 1, color=token_colours[i]) for i in range(seq_len)]
    fig.legend(handles, [f"token {i}" for i in range(seq_len)], loc="center right",
               title="colour = token\nnumber = column of x")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 0.84, 1))
    return fig


fig = draw_split(lambda a: split_heads(a, num_heads),
                 "split_heads: each head gets every token (colour) and its own columns of x (number)")
fig.savefig(FIGURES / "03_split_heads.png", dpi=100, metadata={"Software": None})
plt.show()

# %% [markdown]
# Left of the thick line are columns 0 to 3, which go to head 0; right of it are columns
# 4 to 7, for head 1. In each head the four rows are still the four tokens in order.
#
# ## The classic bug: reshape without the transpose
#
# The target shape is `(batch, num_heads, seq_len, d_k)`, so why not reshape straight to
# it? NumPy will happily do so, since the number of entries matches. But `reshape` never
# reorders anything: it reads the entries in memory order (token 0's row, then token 1's,
# and so on) and pours them into the new shape. Below, the buggy version (written here to
# show the bug; it is not package code) on the readable `10 * t + c` numbers:

# %%
def split_heads_buggy(x, num_heads):
    """WRONG: the right shape, but tokens are scrambled across heads."""
    batch, seq_len, d_model = x.shape
    return x.reshape(batch, num_heads, seq_len, d_model // num_heads)  # no transpose!


def combine_heads_buggy(x):
    """WRONG: the exact inverse of split_heads_buggy, which is why it hides so well."""
    batch, num_heads, seq_len, d_k = x.shape
    return x.reshape(batch, seq_len, num_heads * d_k)


x_small = (10 * np.arange(3)[:, None] + np.arange(8))[None].astype(float)  # (1, 3, 8) as before
wrong = split_heads_buggy(x_small, 2)
print("same shape as the right split:", wrong.shape == split_heads(x_small, 2).shape)
for h in range(2):
    print(f"buggy head {h}, 'one row per token':\n", wrong[0, h])

# %% [markdown]
# Look at the tens digits. Buggy head 0's "three tokens" are token 0's first half, token
# 0's second half and token 1's first half; buggy head 1 gets the rest of token 1 and all
# of token 2. The rows are no longer tokens, and each head sees only part of the sentence.
# The picture makes it plain:

# %%
fig = draw_split(lambda a: split_heads_buggy(a, num_heads),
                 "Reshape without transpose: rows are no longer tokens, heads see different tokens")
fig.savefig(FIGURES / "03_reshape_bug.png", dpi=100, metadata={"Software": None})
plt.show()

# %% [markdown]
# ## Why the bug survives testing
#
# Nothing crashes, the shapes are right, and the model even trains (worse). A round-trip
# test does not help either: the buggy combine is an exact inverse of the buggy split, so
# the pair gives back its input perfectly.

# %%
x = rng.normal(size=(2, 5, 12))
print("buggy round trip gives x back:", np.array_equal(combine_heads_buggy(split_heads_buggy(x, 3)), x))
print("correct round trip gives x back:", np.array_equal(combine_heads(split_heads(x, 3)), x))

# %% [markdown]
# A test that catches it must check what the heads *mean*. Without a mask every token
# may look at every other, so changing only the **last** token must change the output of
# **every** token. With a causal mask a token may look only at itself and earlier ones,
# so the same change must move the last token's output and nothing else.
#
# Below, each variant splits `x` into heads, runs attention in every head (with
# `Q = K = V` to keep it short) and combines the heads again. Besides the correct pair and
# the buggy pair, we try the mix that appears when only one of the two functions is
# fixed: a buggy split with the correct combine.

# %%
def attention_in_heads(x, split, combine, num_heads, mask=None):
    """Split into heads, run self-attention in every head, combine."""
    parts = split(x, num_heads)  # (batch, num_heads, seq_len, d_k), if the split is right
    out, _ = scaled_dot_product_attention(parts, parts, parts, mask=mask)
    return combine(out)  # (batch, seq_len, d_model)


def tokens_that_change(x, split, combine, mask):
    """Which tokens' outputs move when only the last token of x changes?"""
    x_changed = x.copy()
    x_changed[:, -1] += 1.0  # change the last token (token 4) only
    before = attention_in_heads(x, split, combine, 3, mask)
    after = attention_in_heads(x_changed, split, combine, 3, mask)
    return np.flatnonzero(~np.isclose(before, after).all(axis=(0, 2)))  # token indices


print(f"{'':30} {'no mask':15} causal mask")
print(f"{'should change':30} {'every token':15} token 4 only")
for name, split, combine in [("correct split and combine", split_heads, combine_heads),
                             ("buggy split and combine", split_heads_buggy, combine_heads_buggy),
                             ("buggy split, correct combine", split_heads_buggy, combine_heads)]:
    free = tokens_that_change(x, split, combine, mask=None)
    causal = tokens_that_change(x, split, combine, mask=causal_mask(5))
    print(f"{name:30} {str(free):15} {causal}")

# %% [markdown]
# - The **buggy pair** passes the causal test, but fails the first: tokens 0 to 2 never see
#   token 4 at all. Each head holds a short stretch of the sentence (the picture above), so
#   attention can only mix tokens that happen to share a stretch.
# - The **mixed** version fails the causal test: tokens 2 and 3 react to token 4, which comes
#   after them. A language model with this bug peeks at the word it is supposed to predict
#   during training, reaches a suspiciously good loss, and then fails when it has to
#   generate.
#
# The transpose matters in `combine_heads` too: reshaping `(batch, num_heads, seq_len,
# d_k)` straight to `(batch, seq_len, d_model)` glues together rows of *different tokens*
# of the same head. Exercise 1 checks both directions.
#
# ## Summary
#
# - Splitting into heads is `reshape(batch, seq_len, num_heads, d_k)` followed by
#   `transpose(0, 2, 1, 3)`, giving `(batch, num_heads, seq_len, d_k)`; it copies nothing.
# - Head `h` sees columns `h * d_k` to `(h + 1) * d_k - 1` of every token, tokens in order.
# - The heads axis goes before the tokens so that attention's matmuls, which act on the last
#   two axes, run over all heads at once.
# - A reshape without the transpose has the right shape, raises no error and survives a
#   round-trip test, but scrambles tokens across heads. Test the meaning instead: compare
#   each head with its column slice, check that every token can see every other, and that
#   under a causal mask none can see the future.
# - `combine_heads` transposes back, then reshapes: an exact inverse of the split.
#
# ## Exercises
#
# As in notebooks 01 and 02, each exercise has a cell to fill in, pre-filled with a
# placeholder that goes through the helper `placeholder` below, and a cell that checks
# your answer. Replace the lines between the `YOUR CODE` markers, run the cell, then run
# the check; while your function still calls `placeholder`, the check reports it as not
# answered yet.

# %%
placeholder_calls = []  # placeholder() notes each call here; the checks look at it


def placeholder(package_function, *args, **kwargs):
    """Stand in for an answer not written yet: call the package's version, and note that we did."""
    placeholder_calls.append(package_function.__name__)
    return package_function(*args, **kwargs)


# %% [markdown]
# **Exercise 1.** Write `my_split_heads(x, num_heads)` and `my_combine_heads(x)` with NumPy
# only. The check tests them against the specification and with the two attention tests
# above.

# %%
def my_split_heads(x, num_heads):
    # ---- YOUR CODE: replace the placeholder line below ----
    return placeholder(split_heads, x, num_heads)  # calls the package
    # ---- END OF YOUR CODE ----


def my_combine_heads(x):
    # ---- YOUR CODE: replace the placeholder line below ----
    return placeholder(combine_heads, x)  # calls the package
    # ---- END OF YOUR CODE ----


# %%
def check_exercise_1(functions):
    """``functions`` is the pair (split, combine)."""
    split, combine = functions
    placeholder_calls.clear()
    x = np.random.default_rng(5).normal(size=(2, 7, 12))  # batch 2, seq_len 7, d_model 12
    for num_heads in (1, 3, 4):
        d_k = 12 // num_heads
        heads = np.asarray(split(x, num_heads))
        assert heads.shape == (2, num_heads, 7, d_k), (
            f"num_heads={num_heads}: expected shape (batch, num_heads, seq_len, d_k) = {(2, num_heads, 7, d_k)}; "
            f"got {heads.shape}"
        )
        for h in range(num_heads):
            assert np.array_equal(heads[:, h], x[:, :, h * d_k:(h + 1) * d_k]), (
                f"num_heads={num_heads}: head {h} should hold columns {h * d_k}..{(h + 1) * d_k - 1} of every token, "
                "tokens in order. Did you reshape without moving the heads axis?"
            )
        assert np.array_equal(combine(split_heads(x, num_heads)), x), (
            f"num_heads={num_heads}: combining a correct split should give x back (move the heads axis back first?)"
        )
        assert np.array_equal(combine(heads), x), f"num_heads={num_heads}: combine(split(x)) should give x back"
    x_changed = x.copy()
    x_changed[:, -1] += 1.0  # change the last token only
    for mask, should, problem in [(None, list(range(7)), "some tokens cannot see the last one"),
                                  (causal_mask(7), [6], "earlier tokens see the last one: heads see the future")]:
        before = attention_in_heads(x, split, combine, 3, mask)
        after = attention_in_heads(x_changed, split, combine, 3, mask)
        moved = np.flatnonzero(~np.isclose(before, after).all(axis=(0, 2)))
        assert moved.tolist() == should, f"changing the last token moved the outputs of tokens {moved}: {problem}"
    if placeholder_calls:
        return "Exercise 1: a placeholder still calls the package: not answered yet."
    return "Exercise 1: correct."


print(check_exercise_1((my_split_heads, my_combine_heads)))

# %% [markdown]
# **Exercise 2.** The full model computes the queries, keys and values of all heads with
# one matrix product, `qkv = x @ W_qkv`, of shape `(batch, seq_len, 3 * d_model)`: first
# the `d_model` query columns, then the keys, then the values. Write `split_qkv(qkv,
# num_heads)` that returns an array of shape `(3, batch, num_heads, seq_len, d_k)` (so
# `Q, K, V = split_qkv(qkv, num_heads)` works) using **one** `reshape` and **one**
# `transpose`, instead of three separate splits.

# %%
def split_qkv(qkv, num_heads):
    # ---- YOUR CODE: replace the placeholder lines below ----
    Q, K, V = np.split(qkv, 3, axis=-1)  # placeholder: three separate splits with the package
    return np.stack([placeholder(split_heads, part, num_heads) for part in (Q, K, V)])
    # ---- END OF YOUR CODE ----


# %%
def check_exercise_2(function):
    placeholder_calls.clear()
    qkv = np.random.default_rng(6).normal(size=(2, 5, 3 * 12))  # batch 2, seq_len 5, d_model 12
    for num_heads in (2, 3):
        got = np.asarray(function(qkv, num_heads))
        expected_shape = (3, 2, num_heads, 5, 12 // num_heads)  # (3, batch, num_heads, seq_len, d_k)
        assert got.shape == expected_shape, f"num_heads={num_heads}: expected shape {expected_shape}; got {got.shape}"
        for n, name in enumerate("QKV"):
            block = qkv[..., n * 12:(n + 1) * 12]  # the d_model columns of Q, K or V
            assert np.array_equal(got[n], split_heads(block, num_heads)), (
                f"num_heads={num_heads}: {name} is wrong. Its columns are {n * 12}..{(n + 1) * 12 - 1} of qkv; "
                "name all five axes in the reshape, then check which axis each one must end up on"
            )
    if placeholder_calls:
        return "Exercise 2: the placeholder still calls the package: not answered yet."
    return "Exercise 2: correct."


print(check_exercise_2(split_qkv))

# %% [markdown]
# ---
# Next: [04_multi_head_attention.ipynb](04_multi_head_attention.ipynb) puts the pieces
# together: projections, heads, attention and the output matrix, in one module.
