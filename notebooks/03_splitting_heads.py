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
# one token can look at the previous word *and* at the subject of the sentence at the
# same time. It does this with about as much arithmetic as one big head. The model first
# computes every token's query, key and value with three projections, `Q = x @ W_q`,
# `K = x @ W_k` and `V = x @ W_v`, each `d_model` numbers wide. Then it cuts each of
# `Q`, `K` and `V` into `num_heads` slices of width `d_k`, and head `h` attends with its
# own slice of all three (each head computes its own score matrix and softmax). This
# notebook is about that cut. It is only a reshape and a transpose, and it is the place
# where the quietest bug of the chapter lives.
#
# **In this notebook you will learn**
#
# - how the queries, keys and values, each `(batch, seq_len, d_model)`, become
#   `(batch, num_heads, seq_len, d_k)`, and why the heads axis has to move in front of
#   the tokens;
# - why we split the *projections* and not the input, and which columns feed which head,
#   in a picture;
# - the classic bug, a reshape without the transpose, which scrambles tokens across
#   heads without any error and passes a round-trip test, and two tests that do catch it
#   (one of them shows a variant of the bug leaking the future through a causal mask);
# - how `combine_heads` undoes the split exactly.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import causal_mask, combine_heads, scaled_dot_product_attention, split_heads
from mhattn.pictures import exercise, not_yet, save_figure, show_source

np.set_printoptions(precision=3, suppress=True)
# the notebooks run with the notebooks/ folder as working directory
FIGURES = Path("../figures")
rng = np.random.default_rng(0)

# %% [markdown]
# ## From one wide head to many narrow ones
#
# Take the queries. With `d_model = 8` and `num_heads = 2`, each head gets
# `d_k = d_model // num_heads = 4` numbers of every token's query: head 0 gets columns 0
# to 3 of `Q`, head 1 gets columns 4 to 7. Two steps put them where attention wants
# them:
#
# 1. **reshape** `(batch, seq_len, d_model)` to `(batch, seq_len, num_heads, d_k)`: cut
#    each token's row into `num_heads` pieces. Nothing moves in memory; the last axis is
#    just read as two.
# 2. **transpose** to `(batch, num_heads, seq_len, d_k)`: move the heads axis in front
#    of the tokens. Attention (notebook 02) multiplies the last two axes,
#    `(seq_len, d_k)`, and treats every axis before them as "one more independent
#    problem", so the heads must sit there, next to the batch.
#
# The keys and values are split in exactly the same way. To see where every number goes,
# we fill `Q` with readable numbers instead of a real projection: the entry for token
# `t` and column `c` is `10 * t + c`.

# %%
batch, seq_len, d_model, num_heads = 1, 3, 8, 2
t = np.arange(seq_len)[:, None]  # token index, down the rows
c = np.arange(d_model)[None, :]  # column index, across
# (batch, seq_len, d_model) = (1, 3, 8): stands in for x @ W_q
Q = (10 * t + c)[None].astype(float)
print("Q[0], one row per token:\n", Q[0])

Q_heads = split_heads(Q, num_heads)  # (batch, num_heads, seq_len, d_k) = (1, 2, 3, 4)
print("\nsplit_heads(Q, 2) has shape", Q_heads.shape)
for h in range(num_heads):
    print(f"head {h}, one row per token:\n", Q_heads[0, h])

# %% [markdown]
# Each head still has one row per token (the tens digit runs 0, 1, 2 down the rows in
# both heads), but only its own four columns. Here is the package's code. The line above
# the `def` checks the arguments (a 3-D array whose last axis `num_heads` divides)
# before the body runs; the body is the two steps, with the shape after each in a
# comment:

# %%
show_source(split_heads)

# %% [markdown]
# `combine_heads` does the same two steps backwards: move the tokens in front of the
# heads again, then glue each token's `num_heads` pieces back into one row of width
# `d_model`. In the module (notebook 04) it runs once, on the heads' outputs.

# %%
show_source(combine_heads)

# %% [markdown]
# ## Split the projections, not the input
#
# Why split `Q`, `K` and `V` and not the input `x` itself? Column `j` of `Q = x @ W_q`
# is made from *all* `d_model` numbers of the token, through column `j` of `W_q`. So
# head `h`'s slice of `Q` is `x @ W_q[:, h * d_k:(h + 1) * d_k]`: a projection of the
# whole token through the head's own columns of `W_q` (and likewise of `W_k` and `W_v`),
# learned separately for each head. That is what lets heads specialise. Splitting `x`
# instead would hand each head a fixed slice of the raw token, the same one forever;
# notebook 04 shows this bug ("splitting before projecting").
#
# The specification of the split fits in one line: **head `h` sees columns `h * d_k` to
# `(h + 1) * d_k - 1` of every token**, in the original token order. Let us check it on
# a real projection, with shapes in which every axis has a different length, together
# with the column-slice reading above and two more facts: the split is a *view* (no
# numbers are copied), and `combine_heads` undoes it exactly.

# %%
x = rng.normal(size=(2, 5, 12))  # (batch, seq_len, d_model) = (2, 5, 12)
W_q = rng.normal(size=(12, 12)) / np.sqrt(12)  # (d_model, d_model)
num_heads = 3
d_k = x.shape[-1] // num_heads  # 4
Q = x @ W_q  # (2, 5, 12): every column made from the whole token
Q_heads = split_heads(Q, num_heads)  # (2, 3, 5, 4)

print("shape:", Q.shape, "->", Q_heads.shape)
print(
    "head h == columns h*d_k:(h+1)*d_k of Q, for every h:",
    all(
        np.array_equal(Q_heads[:, h], Q[:, :, h * d_k : (h + 1) * d_k])
        for h in range(num_heads)
    ),
)
print(
    "head h == x @ (head h's columns of W_q), for every h:",
    all(
        np.allclose(Q_heads[:, h], x @ W_q[:, h * d_k : (h + 1) * d_k])
        for h in range(num_heads)
    ),
)
print("a view of Q, no copy:", np.shares_memory(Q_heads, Q))
print(
    "combine_heads(split_heads(Q)) == Q exactly:",
    np.array_equal(combine_heads(Q_heads), Q),
)

# %% [markdown]
# ## A picture of the split
#
# To draw the split, we run `split_heads` on two arrays shaped like `Q`: one holding
# each entry's token index, one holding its column index. Colour shows the token an
# entry came from, the number shows its column in `Q`. We will draw the same picture for
# the buggy version below, so the drawing lives in a small function, `draw_split` (in
# the collapsed cell: it is only matplotlib).

# %%
seq_len, d_model, num_heads = 4, 8, 2
# (1, 4, 8)
token_of = np.broadcast_to(np.arange(seq_len)[None, :, None], (1, seq_len, d_model))
# (1, 4, 8)
column_of = np.broadcast_to(np.arange(d_model)[None, None, :], (1, seq_len, d_model))


# %% jupyter={"source_hidden": true}
token_colours = plt.get_cmap("Pastel1").colors[:seq_len]


def draw_split(split, title, cut="columns", head_rows="row = token"):
    """Draw token_of/column_of before and after `split`; return the figure.

    `cut` is where the thick line in Q marks the first head's share: after its first
    d_k columns ("columns") or after its first rows ("rows"); `head_rows` names what a
    row of a head holds.
    """
    # each (1, num_heads, rows, d_k)
    tokens, columns = split(token_of), split(column_of)
    panels = [("Q[0] before the split", token_of[0], column_of[0])]
    panels += [(f"head {h}", tokens[0, h], columns[0, h]) for h in range(num_heads)]
    fig, axes = plt.subplots(
        1,
        1 + num_heads,
        figsize=(7.5, 3.8),
        gridspec_kw={"width_ratios": [d_model] + [d_model // num_heads] * num_heads},
    )
    for ax, (name, tok, col) in zip(axes, panels, strict=True):
        ax.imshow(np.array(token_colours)[tok])  # (rows, columns, RGB): colour = token
        for (i, j), value in np.ndenumerate(col):
            ax.text(j, i, str(value), ha="center", va="center", fontsize=11)
        ax.set_xticks(range(col.shape[1]))
        ax.set_yticks(range(col.shape[0]))
        is_q = col.shape[1] == d_model
        ax.set_xlabel("column of Q" if is_q else "column of the head")
        ax.set_ylabel("row = token" if is_q else head_rows)
        ax.set_title(name)
    if cut == "columns":  # head 0 takes the first d_k columns of every token
        axes[0].axvline(d_model // num_heads - 0.5, color="black", linewidth=3)
    else:  # head 0 takes the first entries in memory order: whole rows
        axes[0].axhline(seq_len // num_heads - 0.5, color="black", linewidth=3)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=token_colours[i]) for i in range(seq_len)
    ]
    fig.legend(
        handles,
        [f"token {i}" for i in range(seq_len)],
        loc="lower center",
        ncol=seq_len,
        title="colour = token, number = column of Q",
    )
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    return fig


# %%
fig = draw_split(
    lambda a: split_heads(a, num_heads),
    "split_heads(Q): each head gets every token (colour)\nand its own columns of Q "
    "(number)",
)
save_figure(fig, FIGURES / "03_split_heads.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** split_heads done right: each head keeps all four tokens and takes its own
# half of the columns of Q.
#
# <!-- alt: A 4-by-8 grid Q[0] whose rows are coloured by token (red, blue, green,
# purple) and whose cells are numbered 0 to 7 by column, cut by a thick vertical line
# after column 3. Head 0 is a 4-by-4 grid with all four token colours and columns 0 to
# 3; head 1 has the same four colours and columns 4 to 7. -->

# %% [markdown]
# Left of the thick line are columns 0 to 3, which go to head 0; right of it are columns
# 4 to 7, for head 1. In each head the four rows are still the four tokens in order.
#
# ## The classic bug: reshape without the transpose
#
# The target shape is `(batch, num_heads, seq_len, d_k)`, so why not reshape straight to
# it? NumPy will happily do so, since the number of entries matches. But `reshape` never
# reorders anything: it reads the entries in memory order (token 0's row, then token
# 1's, and so on) and pours them into the new shape. Below, the buggy version (written
# here to show the bug; it is not package code) on the readable `10 * t + c` queries:


# %%
def split_heads_buggy(x, num_heads):
    """WRONG: the right shape, but tokens are scrambled across heads."""
    batch, seq_len, d_model = x.shape
    return x.reshape(batch, num_heads, seq_len, d_model // num_heads)  # no transpose!


def combine_heads_buggy(x):
    """WRONG: the exact inverse of split_heads_buggy, which is why it hides so well."""
    batch, num_heads, seq_len, d_k = x.shape
    return x.reshape(batch, seq_len, num_heads * d_k)


# (1, 3, 8) as before
Q_small = (10 * np.arange(3)[:, None] + np.arange(8))[None].astype(float)
wrong = split_heads_buggy(Q_small, 2)
print("same shape as the right split:", wrong.shape == split_heads(Q_small, 2).shape)
for h in range(2):
    print(f"buggy head {h}, 'one row per token':\n", wrong[0, h])

# %% [markdown]
# Look at the tens digits. Buggy head 0's "three tokens" are token 0's first half, token
# 0's second half and token 1's first half; buggy head 1 gets the rest of token 1 and
# all of token 2. The rows are no longer tokens, and each head sees only part of the
# sentence. The picture makes it plain:

# %%
fig = draw_split(
    lambda a: split_heads_buggy(a, num_heads),
    "Reshape without transpose: head 0 gets tokens 0 and 1, head 1\ngets tokens 2 and "
    "3, and a row of a head is half a token",
    cut="rows",
    head_rows="row = half a token",
)
save_figure(fig, FIGURES / "03_reshape_bug.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** A reshape without the transpose scrambles the tokens: each head gets two
# whole tokens cut into halves instead of every token's own slice of the columns.
#
# <!-- alt: The same 4-by-8 grid Q[0], now cut by a thick horizontal line between tokens
# 1 and 2. Head 0's rows are red, red, blue, blue with columns 0-3 and 4-7 alternating;
# head 1's rows are green, green, purple, purple. -->

# %% [markdown]
# The thick line in `Q` now runs across instead of down: the reshape cuts `Q` in memory
# order, so head 0 takes all of tokens 0 and 1 and head 1 all of tokens 2 and 3. Each
# head sees half of the sentence, and each of its rows holds half a token.
#
# ## Why the bug survives testing
#
# Nothing crashes, the shapes are right, and the model even trains (worse). A round-trip
# test does not help either: the buggy combine is an exact inverse of the buggy split,
# so the pair gives back its input perfectly.

# %%
Q = rng.normal(size=(2, 5, 12))  # (batch, seq_len, d_model)
print(
    "buggy round trip gives Q back:",
    np.array_equal(combine_heads_buggy(split_heads_buggy(Q, 3)), Q),
)
print(
    "correct round trip gives Q back:",
    np.array_equal(combine_heads(split_heads(Q, 3)), Q),
)

# %% [markdown]
# A test that catches it must check what the heads *mean*. Without a mask every token
# may look at every other, so changing only the **last** token must change the output of
# **every** token. With a causal mask a token may look only at itself and earlier ones,
# so the same change must move the last token's output and nothing else.
#
# Below, each variant runs the heads' part of the model: project the tokens to queries,
# keys and values with three random matrices, split each into heads, run attention in
# every head, and combine the heads again (notebook 04 adds one more projection at the
# end, which does not change which tokens move). Besides the correct pair and the buggy
# pair, we try the mix that appears when only one of the two functions is fixed: a buggy
# split with the correct combine.


# %%
def attention_in_heads(x, W_q, W_k, W_v, split, combine, num_heads, mask=None):
    """Project x to Q, K, V; split each into heads; attend in every head; combine."""
    Q, K, V = x @ W_q, x @ W_k, x @ W_v  # each (batch, seq_len, d_model)
    # each (batch, num_heads, seq_len, d_k), if the split is right
    Q, K, V = (split(a, num_heads) for a in (Q, K, V))
    # (batch, num_heads, seq_len, d_k)
    out, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    return combine(out)  # (batch, seq_len, d_model)


# three (d_model, d_model) projections
W_q, W_k, W_v = rng.normal(size=(3, 12, 12)) / np.sqrt(12)
x = rng.normal(size=(2, 5, 12))  # (batch, seq_len, d_model)


def tokens_that_change(x, split, combine, mask):
    """Which tokens' outputs move when only the last token of x changes?"""
    x_changed = x.copy()
    x_changed[:, -1] += 1.0  # change the last token (token 4) only
    before = attention_in_heads(x, W_q, W_k, W_v, split, combine, 3, mask)
    after = attention_in_heads(x_changed, W_q, W_k, W_v, split, combine, 3, mask)
    return np.flatnonzero(~np.isclose(before, after).all(axis=(0, 2)))  # token indices


print(f"{'':30} {'no mask':15} causal mask")
print(f"{'should change':30} {'every token':15} token 4 only")
for name, split, combine in [
    ("correct split and combine", split_heads, combine_heads),
    ("buggy split and combine", split_heads_buggy, combine_heads_buggy),
    ("buggy split, correct combine", split_heads_buggy, combine_heads),
]:
    free = tokens_that_change(x, split, combine, mask=None)
    causal = tokens_that_change(x, split, combine, mask=causal_mask(5))
    print(f"{name:30} {str(free):15} {causal}")

# %% [markdown]
# - The **buggy pair** passes the causal test, but fails the first: tokens 0 to 2 never
#   see token 4 at all. Each head holds a short stretch of the sentence (the picture
#   above), so attention can only mix tokens that happen to share a stretch.
# - The **mixed** version fails the causal test: tokens 2 and 3 react to token 4, which
#   comes after them. A language model with this bug peeks at the word it is supposed to
#   predict during training, reaches a suspiciously good loss, and then fails when it
#   has to generate.
#
# The transpose matters in `combine_heads` too: reshaping
# `(batch, num_heads, seq_len, d_k)` straight to `(batch, seq_len, d_model)` glues
# together rows of *different tokens* of the same head. Exercise 2 checks both
# directions.
#
# ## Summary
#
# - Each token's queries, keys and values are computed from the whole token first
#   (`Q = x @ W_q`, ...); then each of them is split into heads. Head `h` sees columns
#   `h * d_k` to `(h + 1) * d_k - 1` of `Q`, `K` and `V`, made by its own columns of
#   `W_q`, `W_k` and `W_v`, for every token, tokens in order.
# - Splitting is `reshape(batch, seq_len, num_heads, d_k)` followed by
#   `transpose(0, 2, 1, 3)`, giving `(batch, num_heads, seq_len, d_k)`; it copies
#   nothing.
# - The heads axis goes before the tokens so that attention's matmuls, which act on the
#   last two axes, run over all heads at once.
# - A reshape without the transpose has the right shape, raises no error and survives a
#   round-trip test, but scrambles tokens across heads. Test the meaning instead:
#   compare each head with its column slice, check that every token can see every other,
#   and that under a causal mask none can see the future.
# - `combine_heads` transposes back, then reshapes: an exact inverse of the split.
#
# ## Exercises
#
# As in notebooks 01 and 02: a cell for your answer (replace the `...`), a collapsed
# cell that checks it (run it without opening it), and a collapsed solution below.
#
# **Exercise 1 (predict).** Fill queries of shape `(1, 4, 6)` (four tokens,
# `d_model = 6`) with the readable numbers `10 * t + c`, and split them into
# `num_heads = 3` heads of width `d_k = 2`. Without running anything, predict row 1 of
# head 2 (`heads[0, 2, 1]`), two numbers, once for `split_heads` and once for
# `split_heads_buggy`. Write them as a 2 x 2 array: the correct split's row first, the
# buggy one's second.

# %%
row_prediction = ...  # e.g. np.array([[0, 1], [0, 1]])


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint="row_prediction should be a 2 x 2 array of numbers.")
def check_exercise_1(prediction):
    # (1, 4, 6)
    Q_readable = (10 * np.arange(4)[:, None] + np.arange(6))[None].astype(float)
    right, buggy = (
        split_heads(Q_readable, 3)[0, 2, 1],
        split_heads_buggy(Q_readable, 3)[0, 2, 1],
    )
    prediction = np.asarray(prediction, dtype=float)
    assert prediction.shape == (2, 2), (
        "the answer should be a 2 x 2 array (two rows of d_k = 2); got "
        f"{prediction.shape}"
    )
    assert np.array_equal(prediction[0], right), (
        "the correct split's row is off: which token is row 1 of a head, and which "
        "columns of Q does head 2 hold?"
    )
    assert np.array_equal(prediction[1], buggy), (
        "the buggy row is off: the reshape reads the 24 numbers in memory order "
        "(token 0's six, then token 1's, ...). Which of them land in head 2, row 1?"
    )


print(check_exercise_1(row_prediction))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Correct split: row 1 is token 1, and head 2 gets columns 4 and 5: [14, 15].
# Buggy split: the reshape pours the numbers in memory order, 8 per head (4 rows of 2).
# Head 2 gets numbers 16 to 23; its row 1 is numbers 18 and 19. Number 18 is token 3
# (18 // 6), column 0 (18 % 6): [30, 31]. The buggy "row 1" of head 2 is not token 1 at
# all.
solution_row_prediction = np.array([[14, 15], [30, 31]])
print(check_exercise_1(solution_row_prediction))

# %% [markdown]
# **Exercise 2 (write).** Write `my_split_heads(x, num_heads)` and `my_combine_heads(x)`
# with NumPy only. The check tests them against the specification, and with the two
# attention tests above on projected queries, keys and values. Before you run it,
# predict which of its tests a split without the transpose would fail, and which a
# combine without it would fail.


# %%
def my_split_heads(x, num_heads):
    """(batch, seq_len, d_model) -> (batch, num_heads, seq_len, d_k), with NumPy
    only.
    """
    return ...  # your code here


def my_combine_heads(x):
    """(batch, num_heads, seq_len, d_k) -> (batch, seq_len, num_heads * d_k), with
    NumPy only.
    """
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "Split: reshape to (batch, seq_len, num_heads, d_k), then move the heads "
    "forward; combine: the reverse."
))
def check_exercise_2(functions):
    """``functions`` is the pair (split, combine)."""
    split, combine = functions
    # (batch, seq_len, d_model) = (2, 7, 12)
    x = np.random.default_rng(5).normal(size=(2, 7, 12))
    not_yet(split(x, 3))
    not_yet(combine(split_heads(x, 3)))
    for num_heads in (1, 3, 4):
        d_k = 12 // num_heads
        heads = np.asarray(split(x, num_heads))
        assert heads.shape == (2, num_heads, 7, d_k), (
            f"num_heads={num_heads}: expected shape (batch, num_heads, seq_len, "
            f"d_k) = {(2, num_heads, 7, d_k)}; got {heads.shape}"
        )
        for h in range(num_heads):
            assert np.array_equal(heads[:, h], x[:, :, h * d_k : (h + 1) * d_k]), (
                f"num_heads={num_heads}: head {h} should hold columns "
                f"{h * d_k}..{(h + 1) * d_k - 1} of every token, tokens in order. "
                "Did you reshape without moving the heads axis?"
            )
        assert np.array_equal(combine(split_heads(x, num_heads)), x), (
            f"num_heads={num_heads}: combining a correct split should give x back "
            "(move the heads axis back first?)"
        )
        assert np.array_equal(combine(heads), x), (
            f"num_heads={num_heads}: combine(split(x)) should give x back"
        )
    # (d_model, d_model) each
    W_q, W_k, W_v = np.random.default_rng(6).normal(size=(3, 12, 12)) / np.sqrt(12)
    x_changed = x.copy()
    x_changed[:, -1] += 1.0  # change the last token only
    for mask, should, problem in [
        (None, list(range(7)), "some tokens cannot see the last one"),
        (
            causal_mask(7),
            [6],
            "earlier tokens see the last one: heads see the future",
        ),
    ]:
        before = attention_in_heads(x, W_q, W_k, W_v, split, combine, 3, mask)
        after = attention_in_heads(
            x_changed, W_q, W_k, W_v, split, combine, 3, mask
        )
        moved = np.flatnonzero(~np.isclose(before, after).all(axis=(0, 2)))
        assert moved.tolist() == should, (
            f"changing the last token moved the outputs of tokens {moved}: "
            f"{problem}"
        )


print(check_exercise_2((my_split_heads, my_combine_heads)))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Without the transpose in the split, the first test fails: head h is no longer the
# column slice h of every token. Without it in the combine only, the split passes, and
# the round trip from a correct split fails: tokens of one head are glued into one row.
def solution_split_heads(x, num_heads):
    batch, seq_len, d_model = x.shape
    # (batch, seq_len, num_heads, d_k)
    x = x.reshape(batch, seq_len, num_heads, d_model // num_heads)
    return x.transpose(0, 2, 1, 3)  # (batch, num_heads, seq_len, d_k)


def solution_combine_heads(x):
    batch, num_heads, seq_len, d_k = x.shape
    x = x.transpose(0, 2, 1, 3)  # (batch, seq_len, num_heads, d_k)
    return x.reshape(batch, seq_len, num_heads * d_k)  # (batch, seq_len, d_model)


print(check_exercise_2((solution_split_heads, solution_combine_heads)))

# %% [markdown]
# **Exercise 3 (write).** The full model computes the queries, keys and values of all
# heads with one matrix product, `qkv = x @ W_qkv`, of shape
# `(batch, seq_len, 3 * d_model)`: first the `d_model` query columns, then the keys,
# then the values. Write `split_qkv(qkv, num_heads)` that returns an array of shape
# `(3, batch, num_heads, seq_len, d_k)` (so `Q, K, V = split_qkv(qkv, num_heads)` works)
# using **one** `reshape` and **one** `transpose`, instead of three separate splits.
# First predict, on paper, the five-axis shape to reshape to (name each axis) and the
# transpose order; then write it.


# %%
def split_qkv(qkv, num_heads):
    """(batch, seq_len, 3 * d_model) -> (3, batch, num_heads, seq_len, d_k): one
    reshape, one transpose.
    """
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint=(
    "Reshape qkv to five named axes first, then transpose them into (3, batch, "
    "num_heads, seq_len, d_k)."
))
def check_exercise_3(function):
    # batch 2, seq_len 5, d_model 12
    qkv = np.random.default_rng(6).normal(size=(2, 5, 3 * 12))
    not_yet(function(qkv, 2))
    for num_heads in (2, 3):
        got = np.asarray(function(qkv, num_heads))
        # (3, batch, num_heads, seq_len, d_k)
        expected_shape = (3, 2, num_heads, 5, 12 // num_heads)
        assert got.shape == expected_shape, (
            f"num_heads={num_heads}: expected shape {expected_shape}; got "
            f"{got.shape}"
        )
        for n, name in enumerate("QKV"):
            block = qkv[
                ..., n * 12 : (n + 1) * 12
            ]  # the d_model columns of Q, K or V
            assert np.array_equal(got[n], split_heads(block, num_heads)), (
                f"num_heads={num_heads}: {name} is wrong. Its columns are "
                f"{n * 12}..{(n + 1) * 12 - 1} of qkv; name all five axes in the "
                "reshape, then check which axis each one must end up on"
            )


print(check_exercise_3(split_qkv))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The columns of qkv run: which of Q, K, V (3), then which head (num_heads), then the
# position inside the head (d_k). So the reshape is (batch, seq_len, 3, num_heads, d_k),
# axes numbered 0 to 4, and the result wants them in the order 3, batch, num_heads,
# seq_len, d_k: transpose(2, 0, 3, 1, 4). Reshaping to (..., num_heads, 3, d_k) instead
# reads the columns as if each head's q, k and v sat side by side, which W_qkv's layout
# does not say.
def solution_split_qkv(qkv, num_heads):
    batch, seq_len, width = qkv.shape
    d_k = width // 3 // num_heads
    # (batch, seq_len, 3, num_heads, d_k)
    qkv = qkv.reshape(batch, seq_len, 3, num_heads, d_k)
    return qkv.transpose(2, 0, 3, 1, 4)  # (3, batch, num_heads, seq_len, d_k)


print(check_exercise_3(solution_split_qkv))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Section 3.2.2: each head $i$
#   has its own $W_i^Q, W_i^K, W_i^V$ of width $d_k = d_\text{model} / h$, so that, in
#   the paper's words, the total cost is similar to that of one full-width head. That
#   holds for the projections and the matrix products; every head has its own
#   $n \times n$ scores, so the number of scores, the softmax and their memory grow
#   $h$-fold (notebook 12 counts them).
# - Karpathy, A. *nanoGPT*, `model.py`, class `CausalSelfAttention`
#   ([github.com/karpathy/nanoGPT](https://github.com/karpathy/nanoGPT)): the same split
#   as `view(B, T, nh, hs).transpose(1, 2)` in PyTorch, one line per tensor.
#
# **Read next.** Raschka, S. (2024), *Build a Large Language Model (From Scratch)*,
# Manning, chapter 3 ([code](https://github.com/rasbt/LLMs-from-scratch)), which goes
# from a loop over heads to split weights, each step checked against the last; Zhang,
# Lipton, Li and Smola, *Dive into Deep Learning*, section "Multi-Head Attention"
# ([d2l.ai](https://d2l.ai)), whose `transpose_qkv` folds the heads into the batch axis
# instead; Rush, A. (2018), *The Annotated Transformer*
# ([nlp.seas.harvard.edu/annotated-transformer](https://nlp.seas.harvard.edu/annotated-transformer/));
# and Cho, A. et al. (2024), *Transformer Explainer*
# ([poloclub.github.io/transformer-explainer](https://poloclub.github.io/transformer-explainer/)),
# which shows the heads of a real GPT-2 at work.
#
# ---
# Next: [04_multi_head_attention.ipynb](04_multi_head_attention.ipynb) puts the pieces
# together: projections, heads, attention and the output matrix, in one module.
