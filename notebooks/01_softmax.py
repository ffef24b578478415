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
# # 1. Softmax: from scores to weights
#
# Attention is built from one small function used over and over: the softmax. Before we
# can trust an attention layer we have to trust this function, including on the inputs
# where a textbook formula quietly returns `nan`.
#
# **In this notebook you will learn**
#
# - why attention turns its scores into weights with a softmax, and not by dividing by
#   the sum or by picking the largest score;
# - why the formula as written overflows on large scores, and the one-line fix (subtract
#   the maximum) that the package uses;
# - three properties you can check with numbers: the weights are non-negative, they sum
#   to one, and adding a constant to every score changes nothing;
# - the most common softmax bug (normalising over the wrong axis), and how to spot it;
# - how multiplying the scores by a factor makes the weights sharper or flatter, which
#   is exactly what the $\sqrt{d_k}$ in the next notebook controls.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import softmax
from mhattn.pictures import exercise, not_yet, save_figure, show_source

np.set_printoptions(precision=3, suppress=True)
# the notebooks run with the notebooks/ folder as working directory
FIGURES = Path("../figures")

# %% [markdown]
# ## Why attention needs a softmax
#
# In attention, one query is compared with every key and each comparison gives a score
# $s_j$: a real number, large when key $j$ matches the query well, and possibly
# negative. The query's output is then a mix of the values, $\sum_j w_j v_j$. For that
# mix to behave, the weights $w_j$ must
#
# 1. be **non-negative** and **sum to one**, so the output is a weighted *average* of
#    the values: it stays on the same scale however many keys there are;
# 2. **keep the order** of the scores: a better match never gets less weight;
# 3. **change smoothly** with every score, so that training can nudge any score and see
#    an effect.
#
# Two obvious ideas fail. **Dividing the scores by their sum** fails in two ways. When
# the scores have mixed signs, some weights come out negative and others above one,
# which breaks rule 1 (and when the scores cancel, it divides by zero). When every score
# is negative, the weights are valid but in *reversed* order: `[-1, -2]` gives
# `[1/3, 2/3]`, so the worse key gets more weight, which breaks rule 2. **Picking the
# best key**, a one-hot `argmax`, breaks rule 3: a small change to a score changes
# nothing, so there is nothing to learn from. The softmax makes every score positive
# with an exponential, then divides by the total:
#
# $$\operatorname{softmax}(s)_i = \frac{e^{s_i}}{\sum_j e^{s_j}}.$$

# %%
scores = np.array([3.0, 1.0, -0.5, -1.5])  # one query against four keys

# mixed signs: a weight of 1.5 and two negative weights
print("divide by the sum:", scores / scores.sum())
# all or nothing, no gradient
print("one-hot argmax:   ", np.eye(len(scores))[scores.argmax()])
print("softmax:          ", softmax(scores))

negative = np.array([-1.0, -2.0])  # key 0 is the better match
print(
    "\nall negative, divide by the sum:",
    negative / negative.sum(),
    "<- valid weights, wrong order",
)
print("all negative, softmax:         ", softmax(negative))

# %% [markdown]
# Only the softmax gives a proper set of weights both times: none negative, in the same
# order as the scores, summing to one. Most of the weight goes to the best key, but the
# others still get a share that grows or shrinks smoothly with their scores.
#
# ## The formula as written overflows
#
# Here is the formula typed in directly. This naive version is **not** the package's
# code; we write it to watch it fail.


# %%
def naive_softmax(x):
    """The textbook formula, typed in literally. Do not use: it overflows."""
    e = np.exp(x)
    return e / e.sum()


print(naive_softmax(np.array([3.0, 1.0, -0.5, -1.5])))  # fine on small scores

# %% [markdown]
# The exponential grows fast. In float64 the largest number is about
# $1.8 \times 10^{308}$, so $e^{x}$ is `inf` for any $x > 709.78$; in float32, the
# precision models usually run in, the limit is $x > 88.7$. Scores that large do occur:
# in the next notebook, unscaled dot products of random 1024-wide vectors have a
# standard deviation of 32, so scores of ±100 are routine. Then the naive softmax
# divides `inf` by `inf`, which is `nan`. At the other end, very negative scores all
# underflow to zero and we divide `0` by `0`, again `nan`.
#
# NumPy warns about each of these with a `RuntimeWarning`; we silence the warnings on
# purpose here (`np.errstate`) so that only the broken results are printed.

# %%
with np.errstate(over="ignore", invalid="ignore"):  # we *want* to see the bad results
    print("exp(1000.0)              =", np.exp(1000.0))
    print("naive, scores near 1000  :", naive_softmax(np.array([1000.0, 999.0, 998.0])))
    print(
        "naive, float32 near 90   :",
        naive_softmax(np.array([90.0, 89.0, 88.0], dtype=np.float32)),
    )
    print(
        "naive, scores near -1000 :",
        naive_softmax(np.array([-1000.0, -1001.0, -1002.0])),
    )

# %% [markdown]
# ## The fix: subtract the maximum first
#
# Multiply the top and the bottom of the fraction by the same number $e^{-m}$:
#
# $$\frac{e^{s_i}}{\sum_j e^{s_j}} = \frac{e^{s_i - m}}{\sum_j e^{s_j - m}}.$$
#
# The result is the same for any $m$. Choosing $m = \max_j s_j$ has two effects:
#
# - every exponent is $\le 0$, so every exponential is at most 1: **no overflow**;
# - the largest score gives exactly $e^0 = 1$, so the denominator is at least 1:
#   **no division by zero**, however negative the scores.
#
# Here is the package's `softmax` (its documentation is one `softmax?` away). The body
# is the formula above, one line per step, with the shape of the result in a comment.
# The `mhattn.softmax` you call checks the argument before this body runs (a list
# becomes an array, `nan` is refused with a clear message, float16 is computed in
# float32), so that the body itself holds nothing but the idea.
#
# Two details go beyond the formula. `initial=-np.inf` gives an empty slice a maximum
# instead of an error. And the two `np.where` lines handle a slice that is entirely
# `-inf`: subtracting its maximum would give `-inf - (-inf) = nan`, so it subtracts 0
# instead, every `exp` is 0, and the slice comes back as zeros rather than `nan`. That
# case matters for masked attention; notebook 02 comes back to it.

# %%
show_source(softmax)

# %%
print("scores near 1000  :", softmax(np.array([1000.0, 999.0, 998.0])))
print("scores near -1000 :", softmax(np.array([-1000.0, -1001.0, -1002.0])))
print("scores 0, -1, -2  :", softmax(np.array([0.0, -1.0, -2.0])))
print(
    "float32 near 90   :",
    softmax(np.array([90.0, 89.0, 88.0], dtype=np.float32)),
    "(dtype stays float32)",
)

# %% [markdown]
# All four rows are identical: the scores differ only by a constant, and the constant
# cancels. (Back in the naive float32 row, $e^{90}$ and $e^{89}$ overflowed to `inf`,
# while $e^{88} \approx 1.7 \times 10^{38}$ still fitted below float32's limit of about
# $3.4 \times 10^{38}$. The sum was then `inf`: the first two weights became
# `inf / inf = nan`, and the last became a finite number divided by `inf`, a confident
# and wrong `0`.)
#
# ## Three properties, checked with numbers
#
# For any scores $s$: the weights are non-negative, they sum to one, and adding the same
# constant $c$ to every score leaves them unchanged (the *shift invariance* we just
# used). *Multiplying* the scores is different: it changes the weights, though a
# positive factor never changes their order (a negative one reverses it).
#
# Why "non-negative" and not "positive"? On paper $e^{s_i}$ is never zero. In floating
# point it can be: $e^{-800}$ is far below the smallest float64 (about $e^{-745}$), so
# it rounds to exactly 0. The last line below shows such a weight.

# %%
rng = np.random.default_rng(0)
s = rng.normal(size=6)
p = softmax(s)

print("weights               :", p)
print("all non-negative      :", bool((p >= 0).all()))
print("sum                   :", round(float(p.sum()), 12))
print(
    "shift by +100 and -100:",
    np.allclose(softmax(s + 100), p),
    np.allclose(softmax(s - 100), p),
)
print(
    "scale by 2 changes it :",
    not np.allclose(softmax(2 * s), p),
    "| same order:",
    np.array_equal(np.argsort(softmax(2 * s)), np.argsort(p)),
)
print(
    "scores 0 and -800     :",
    softmax(np.array([0.0, -800.0])),
    "<- e^-800 rounds to exactly 0",
)

# %% [markdown]
# ## Common bug: softmax over the wrong axis
#
# In attention the scores form a matrix with one row per query and one column per key.
# Each **query** distributes its attention over the keys, so each *row* must sum to one:
# the softmax runs over the last axis, `axis=-1`. Over `axis=0` every *column* sums to
# one instead, which means "each key hands out one unit of attention over the queries".
# That is a different and meaningless model, and nothing crashes.

# %%
scores = rng.normal(size=(3, 5))  # 3 queries, 5 keys

right = softmax(scores, axis=-1)
wrong = softmax(scores, axis=0)
print("axis=-1, row sums   :", right.sum(axis=-1), "<- one per query, as it should be")
print("axis=0,  row sums   :", wrong.sum(axis=-1))
print("axis=0,  column sums:", wrong.sum(axis=0))

square = rng.normal(size=(4, 4))  # self-attention: as many queries as keys
print(
    "square scores: right and wrong shapes",
    softmax(square, axis=-1).shape,
    softmax(square, axis=0).shape,
)

# %% [markdown]
# In self-attention the score matrix is square, so the wrong axis even gives an array of
# the right shape. Shapes cannot catch this bug; the row sums can. Checking
# `weights.sum(axis=-1)` is one cheap line worth keeping in every test.
#
# ## Scaling the scores: from uniform to one-hot
#
# Multiplying every score by a factor $\beta$ before the softmax (dividing by a
# "temperature" $T = 1/\beta$) changes how decisive the weights are. With $\beta$ near
# zero all scores look alike and the weights approach the uniform $1/n$. With a large
# $\beta$ the gaps between scores are magnified, and the weights approach a one-hot
# vector on the best key, the `argmax` we rejected above, with its flat, gradient-free
# behaviour. (Scores that go into a softmax are often called *logits*; here we keep
# calling them scores.)

# %%
scores = np.array([2.0, 1.0, 0.5, 0.0, -1.0])  # one query against five keys
keys = np.arange(len(scores))
betas_shown = [0.25, 1.0, 4.0]
betas = np.logspace(-2, 2, 200)
curves = softmax(betas[:, None] * scores, axis=-1)  # (200 betas, 5 keys)

shades = ["#969696", "#525252", "#000000"]  # mid to dark grey: small to large β

fig, (ax_bars, ax_curves) = plt.subplots(2, 1, figsize=(7.5, 8))
width = 0.27
for k, (beta, shade) in enumerate(zip(betas_shown, shades, strict=True)):
    ax_bars.bar(
        keys + (k - 1) * width,
        softmax(beta * scores),
        width,
        color=shade,
        label=f"β = {beta:g}",
    )
ax_bars.axhline(
    1 / len(scores), color="gray", linestyle="--", linewidth=1, label="uniform, 1/5"
)
ax_bars.set_xticks(
    keys, [f"key {j}\nscore {v:g}" for j, v in zip(keys, scores, strict=True)]
)
ax_bars.set_xlabel("key")
ax_bars.set_ylabel("weight")
ax_bars.set_ylim(0, 1)
ax_bars.set_title("softmax(β · scores) for three values of β")
ax_bars.legend()

for j in keys:
    ax_curves.plot(betas, curves[:, j], label=f"key {j} (score {scores[j]:g})")
ax_curves.axhline(1 / len(scores), color="gray", linestyle="--", linewidth=1)
for beta, shade in zip(betas_shown, shades, strict=True):
    # the β values of the top panel
    ax_curves.axvline(beta, color=shade, linestyle=":", linewidth=2)
    ax_curves.text(
        beta / 1.05,
        0.7,
        f"β = {beta:g}",
        color=shade,
        rotation=90,
        ha="right",
        va="center",
    )
ax_curves.set_xscale("log")
ax_curves.set_xlabel("β (log scale)")
ax_curves.set_ylabel("weight")
ax_curves.set_ylim(0, 1)
ax_curves.set_title("Small β: uniform.  Large β: one-hot on the best key")
ax_curves.legend(loc="center right")
fig.tight_layout()
save_figure(fig, FIGURES / "01_softmax_temperature.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The temperature β decides how peaked the softmax is: small β spreads the
# weight almost evenly over the keys, large β gives nearly all of it to the best-scoring
# key, and the order of the weights never changes.
#
# <!-- alt: Top: bar chart of the weights of five keys with scores 2, 1, 0.5, 0 and -1
# for β = 0.25, 1 and 4; at β = 0.25 all bars are near the dashed uniform line at 0.2,
# at β = 4 key 0 takes about 0.98. Bottom: each key's weight against β on a log axis
# from 0.01 to 100; all five curves start at 0.2, key 0's rises to 1 and the others fall
# to 0. -->

# %% [markdown]
# The top panel shows the same five scores at three values of $\beta$; the bottom panel
# follows every key's weight as $\beta$ grows a hundredfold each way (the dotted lines
# mark the three values of the top panel). Attention wants to live in the middle of the
# bottom panel, where the weights are decisive but still respond to every score.
# Notebook 02 shows that dot products of wide vectors act like a large $\beta$, pushing
# the weights far to the right of this panel, unless we divide them by $\sqrt{d_k}$.
#
# ## Summary
#
# - Attention needs weights that are non-negative, sum to one, keep the scores' order
#   and vary smoothly. The softmax, $e^{s_i} / \sum_j e^{s_j}$, is the standard choice.
# - Typed in literally, it overflows (`inf / inf = nan`) for scores above about 710 in
#   float64 or 89 in float32, and gives `0 / 0 = nan` for very negative scores.
# - Subtracting the row maximum first changes nothing mathematically and fixes both.
# - In attention the softmax runs over the keys, `axis=-1`; the wrong axis keeps the
#   shape, so check that rows sum to one.
# - Scaling the scores moves the weights between uniform and one-hot.
#
# ## Exercises
#
# Each exercise has a cell for your answer, holding `...` where the answer goes, and a
# collapsed cell that checks it (run it without opening it: its code knows the answer).
# Replace the `...`, run your cell, then run the check: it prints "not yet" while the
# `...` is still there, "correct." when your answer passes, and otherwise stops with a
# message that says what to look at. Below each check is a collapsed cell with a
# solution, run through the same check; open it only after trying.
#
# **Exercise 1 (predict).** A colleague's softmax subtracts the maximum of the *whole
# array* instead of the maximum of each row:
#
# ```python
# e = np.exp(x - x.max())                   # one maximum for the whole array
# weights = e / e.sum(axis=-1, keepdims=True)
# ```
#
# For `x = np.array([[2.0, 1.0], [-1000.0, -1001.0]])`, predict the 2 x 2 array of
# weights it returns, without running it. Two decimals are enough; write `np.nan` for
# "not a number".

# %%
global_max_prediction = ...  # e.g. np.array([[0.5, 0.5], [0.5, 0.5]])


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint=(
    "Write it as np.array([[a, b], [c, d]]), with np.nan where needed."
))
def check_exercise_1(prediction):
    x = np.array([[2.0, 1.0], [-1000.0, -1001.0]])
    with np.errstate(all="ignore"):  # the nan is the point: no warning
        e = np.exp(x - x.max())
        truth = e / e.sum(axis=-1, keepdims=True)
    prediction = np.asarray(prediction, dtype=float)
    assert prediction.shape == (2, 2), (
        "the answer should be a 2 x 2 array (one row per row of x); got "
        f"{prediction.shape}"
    )
    assert np.allclose(prediction[0], truth[0], atol=0.01), (
        "row 0 is off: what is the maximum of the whole array, and what is row "
        "0's own?"
    )
    assert np.isnan(prediction[1]).all(), (
        "row 1 is off: what is x - x.max() in row 1, and what does exp make of "
        "such numbers in float64?"
    )


print(check_exercise_1(global_max_prediction))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Row 0: the whole array's maximum, 2.0, is also row 0's maximum, so row 0 gets the
# right answer, softmax([2, 1]) = [e / (e + 1), 1 / (e + 1)] = [0.731, 0.269].
# Row 1: x - 2 = [-1002, -1003]. Both exponentials underflow to exactly 0 (float64 stops
# at about e^-745), so the row is 0 / 0 = [nan, nan]. Subtracting each row's own maximum
# gives every row an exponent of exactly 0, hence a sum of at least 1.
solution_global_max_prediction = np.array([[0.731, 0.269], [np.nan, np.nan]])
print(check_exercise_1(solution_global_max_prediction))

# %% [markdown]
# **Exercise 2 (write).** Write a numerically stable `my_softmax(x, axis=-1)` with NumPy
# only (`np.exp`, `.max`, `.sum`, ...), not `mhattn`. It must work along any axis of an
# array of any shape, give finite weights for the array of exercise 1 and for scores in
# the thousands, and keep float32 as float32. Before you run the check, decide which of
# the three `axis` values it tries (-1, 0 and 1 on a `(2, 3, 4)` array) would expose a
# function that always reduces over the last axis, and why the other two cannot.


# %%
def my_softmax(x, axis=-1):
    """Softmax of the array x along axis, with NumPy only."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "Did every reduction keep its axis (keepdims=True), so that it broadcasts "
    "against x?"
))
def check_exercise_2(function):
    small = np.random.default_rng(1).normal(size=(2, 3, 4))
    not_yet(function(small))
    for axis in (-1, 0, 1):
        got = np.asarray(function(small, axis=axis))
        assert got.shape == small.shape, (
            f"axis={axis}: the shape changed from {small.shape} to {got.shape}"
        )
        assert np.allclose(got.sum(axis=axis), 1.0), (
            f"axis={axis}: the weights along axis {axis} do not sum to one. Does "
            "every reduction use the same axis, with keepdims=True?"
        )
        # safe on small scores
        naive = np.exp(small) / np.exp(small).sum(axis=axis, keepdims=True)
        assert np.allclose(got, naive), (
            f"axis={axis}: the values differ from the softmax formula"
        )
    with np.errstate(
        all="ignore"
    ):  # let the asserts, not warnings, report an overflow
        rows = np.asarray(function(np.array([[2.0, 1.0], [-1000.0, -1001.0]])))
        huge = np.asarray(function(small * 1000 + 5000))
    assert np.isfinite(rows).all() and np.allclose(rows[1], rows[0]), (
        f"exercise 1's array gave {rows.tolist()}: subtract the maximum of each "
        "slice (along axis), not of the whole array"
    )
    assert np.isfinite(huge).all(), (
        "scores in the thousands gave inf or nan: did an exp overflow?"
    )
    assert np.allclose(huge, function(small * 1000)), (
        "adding a constant to every score changed the weights"
    )
    assert np.asarray(function(small.astype(np.float32))).dtype == np.float32, (
        "float32 scores must give float32 weights"
    )


print(check_exercise_2(my_softmax))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Only axis=0 and axis=1 expose a function that ignores `axis`: with axis=-1 it does the
# right thing by accident. (That is why the check tries three axes, and why a test that
# only ever uses the default axis proves little.)
def solution_softmax(x, axis=-1):
    x = np.asarray(x)  # float32 stays float32: no dtype= here
    # each slice's own maximum: exponents <= 0
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)  # each sum >= 1: no division by zero


print(check_exercise_2(solution_softmax))

# %% [markdown]
# **Exercise 3 (predict, then write).** The *log-sum-exp* $\operatorname{lse}(x) = \log
# \sum_j e^{x_j}$ is the logarithm of the softmax's denominator; language models use it
# to turn scores into log-probabilities, $\log \operatorname{softmax}(x)_i = x_i -
# \operatorname{lse}(x)$. First predict, on paper: what is $\operatorname{lse}$ of five
# scores that all equal $-1000$? (The naive `np.log(np.sum(np.exp(x)))` says `-inf`.)
# Then write `my_logsumexp(x)` for a 1-D array, with NumPy only, that returns a finite,
# correct number for scores near $+1000$ and near $-1000$ alike. *Hint:* the trick of
# this notebook works here too, but you must add something back.


# %%
def my_logsumexp(x):
    """log(sum(exp(x))) of a 1-D array x, without overflow or underflow."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint="my_logsumexp takes a 1-D array and returns one number.")
def check_exercise_3(function):
    x = np.random.default_rng(2).normal(size=7)
    not_yet(function(x))
    assert np.isclose(function(x), np.log(np.sum(np.exp(x)))), (
        "wrong value on small scores"
    )
    with np.errstate(
        all="ignore"
    ):  # let the asserts, not warnings, report an overflow
        high, low = function(x + 1000), function(np.full(5, -1000.0))
    assert np.isfinite(high), "scores near +1000 gave inf or nan: exp overflowed"
    assert np.isclose(high, function(x) + 1000), (
        "lse(x + c) should equal lse(x) + c: did you add the maximum back?"
    )
    assert np.isfinite(low), (
        "scores near -1000 gave -inf or nan: every exp underflowed to zero"
    )
    assert np.isclose(low, np.logaddexp.reduce(np.full(5, -1000.0))), (
        "scores near -1000 gave a finite but wrong number: work lse out on paper "
        "for five equal scores and compare"
    )
    assert np.allclose(np.exp(x - function(x)), softmax(x)), (
        "exp(x - lse(x)) should be the softmax"
    )


print(check_exercise_3(my_logsumexp))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: the sum is 5 e^-1000, so lse = log 5 - 1000 = -998.39 (about). Not
# -inf: only the naive computation underflows, the number itself is ordinary.
# The code: with m = max(x), log sum_j e^{x_j} = m + log sum_j e^{x_j - m}. The shifted
# sum is between 1 and len(x), so its log is harmless; forgetting to add m back is the
# usual slip.
def solution_logsumexp(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return m + np.log(np.sum(np.exp(x - m)))


print(check_exercise_3(solution_logsumexp))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). The softmax inside scaled
#   dot-product attention.
# - Goodfellow, I., Bengio, Y. and Courville, A. (2016). *Deep Learning.* MIT Press,
#   section 4.1, "Overflow and Underflow". The softmax that subtracts the maximum, and
#   why.
# - Blanchard, P., Higham, D. J. and Higham, N. J. (2021). *Accurately computing the
#   log-sum-exp and softmax functions.* IMA Journal of Numerical Analysis 41(4),
#   2311-2330. [doi:10.1093/imanum/draa038](https://doi.org/10.1093/imanum/draa038). A
#   rounding-error analysis of the shifted softmax and log-sum-exp of this notebook.
# - Milakov, M. and Gimelshein, N. (2018). *Online normalizer calculation for softmax.*
#   [arXiv:1805.02867](https://arxiv.org/abs/1805.02867). The maximum and the sum in a
#   single pass, rescaling the running sum whenever the maximum grows: the idea behind
#   FlashAttention, derived from this notebook's trick in [notebook
#   11](11_production.ipynb).
#
# **Read next.** Each of these builds the same layer with different emphasis:
# Zhang, Lipton, Li and Smola, *Dive into Deep Learning*, chapter "Attention Mechanisms
# and Transformers" ([d2l.ai](https://d2l.ai)); Raschka, S. (2024), *Build a Large
# Language Model (From Scratch)*, Manning, chapter 3
# ([code](https://github.com/rasbt/LLMs-from-scratch)); Rush, A. (2018), *The Annotated
# Transformer* ([website](https://nlp.seas.harvard.edu/annotated-transformer/));
# and, to watch a softmax temperature act on a real model, Cho, A. et al. (2024),
# *Transformer Explainer*
# ([website](https://poloclub.github.io/transformer-explainer/)).
#
# ---
# Next: [02_scaled_dot_product_attention.ipynb](02_scaled_dot_product_attention.ipynb)
# puts the softmax to work, turning the dot products of queries and keys into attention
# weights, and measures why those dot products must be divided by $\sqrt{d_k}$ first.
