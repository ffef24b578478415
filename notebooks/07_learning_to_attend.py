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
# # 7. How does attention learn? The backward pass and training
#
# Every weight in notebooks 01-06 was random or built by hand, and notebook 04 warned
# more than once that its heatmaps "mean nothing yet". This notebook answers one
# question: how does attention *learn* its weights? It derives the backward pass of
# multi-head attention by hand, checks it against finite differences, and uses it to
# train a small attention-only model in NumPy on a task that needs two layers. Training
# then shows a pattern seen in large language models too: a long slow start, a quiet
# precursor, and a sudden jump.
#
# **In this notebook you will learn**
#
# - what a vector-Jacobian product is, and the backward pass of the softmax, of
#   attention (masks included), of the head reshapes and of the projections;
# - how to check a gradient with central differences, and how small the error can be;
# - the induction task, which one attention layer cannot solve and two can, and why;
# - how one training step runs the chain rule through a whole model, and what Adam does;
# - what the training curve shows: a slow ramp, a precursor, then a phase change, and
#   two ways to measure in-context learning.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import (
    MultiHeadAttention,
    attention_vjp,
    causal_mask,
    linear_vjp,
    multihead_vjp,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
    softmax_vjp,
)
from mhattn.learn import (
    Adam,
    decode_tokens,
    determined_positions,
    induction_batch,
    load_trained,
    loss_report,
    measure,
    repeated_positions,
    train,
    training_record,
)
from mhattn.learn import training_step as step  # the listings of section 4
from mhattn.pictures import exercise, not_yet, save_figure, show_source

np.set_printoptions(precision=2, suppress=True)
plt.rcParams.update({"font.size": 12, "legend.fontsize": 11})  # legible on a phone
FIGURES = Path("../figures")  # the notebooks run in notebooks/

# %% [markdown]
# ## 1. The backward pass, one step at a time
#
# Training needs the gradient of a scalar loss $L$ with respect to every weight. The
# chain rule computes it backwards through the forward steps. Each step $y = f(x)$
# receives $\bar y = \partial L / \partial y$, an array of the same shape as $y$, and
# must return $\bar x = \partial L / \partial x$, of the shape of $x$:
#
# $$
# \bar x_j = \sum_i \bar y_i \, \frac{\partial y_i}{\partial x_j}
# \qquad\text{that is}\qquad \bar x = J^\top \bar y .
# $$
#
# This map $\bar y \mapsto \bar x$ is the step's **vector-Jacobian product** (vjp). We
# never build the Jacobian $J$: for one softmax row of length $n$ it has $n^2$ entries,
# while the vjp costs $O(n)$. `mhattn.core.grad` has one vjp for each forward function,
# to read side by side with it, in the style of CS231n's `layer_forward` /
# `layer_backward` pairs.
#
# ### The softmax
#
# With $p = \operatorname{softmax}(s)$, $\partial p_i / \partial s_j = p_i(\delta_{ij} -
# p_j)$. Multiply by $\bar p_i$ and sum over $i$:
#
# $$
# \bar s_j = p_j \Big(\bar p_j - \sum_i \bar p_i\, p_i\Big).
# $$
#
# Two things follow. Each row of $\bar s$ sums to zero: adding the same number to every
# score leaves the softmax unchanged, so the gradient has no component in that
# direction. And where $p_j = 0$, a masked key, the gradient is **exactly** zero, not
# merely small.

# %%
show_source(softmax_vjp)

# %% [markdown]
# ### Attention
#
# The forward pass is $S = QK^\top / \sqrt{d_k}$, $P = \operatorname{softmax}(S)$, $O =
# PV$. Every step is a matrix product or the softmax, and the vjp of $C = AB$ is $\bar A
# = \bar C B^\top$, $\bar B = A^\top \bar C$ (check the shapes: that is the only way
# they fit). Backwards, one line per step:
#
# $$
# \bar P = \bar O V^\top,\quad \bar V = P^\top \bar O,\quad
# \bar S = \operatorname{softmax\_vjp}(P, \bar P),\quad
# \bar Q = \bar S K / \sqrt{d_k},\quad \bar K = \bar S^\top Q / \sqrt{d_k}.
# $$
#
# The masks need no code of their own. A masked key has $P_{ij} = 0$, so $\bar S_{ij} =
# 0$: it neither sends nor receives gradient through that entry. A query whose keys are
# all masked has a row of zeros in $P$ and gets $\bar Q_i = 0$ exactly.

# %%
show_source(attention_vjp)

# %% [markdown]
# ### Heads and projections
#
# `split_heads` and `combine_heads` only move numbers around, so their vjps move the
# gradients back: the vjp of `split_heads` is `combine_heads`, and the other way round.
# A projection $y = xW$ with one $W$ shared by every token has $\bar x = \bar y W^\top$
# and $\bar W = \sum_t x_t^\top \bar y_t$, a sum over all tokens of the batch, which is
# one matrix product once the tokens are laid out as rows:

# %%
show_source(linear_vjp)

# %% [markdown]
# The whole module is the forward pass of notebook 04, with every intermediate kept, and
# a `backward` function that runs the steps in reverse. One detail saves a copy: the
# fused projection's columns are `num_heads + 2 * num_kv_heads` heads side by side, so
# the three gradients $\bar Q, \bar K, \bar V$ are joined along the head axis and put
# back into columns with a single `split_heads_vjp`.

# %%
show_source(multihead_vjp)

# %% [markdown]
# Called with a module's weights, `multihead_vjp(x, mha.W_qkv, mha.W_o, mha.num_heads,
# mask)` returns `output, weights, backward`, and `backward(d_output)` returns a dict of
# gradients for `"x"`, `"W_qkv"` and `"W_o"`, each of the shape of what it
# differentiates. Nothing is stored on the module, so several threads may train through
# it at once.


# %% [markdown]
# ## 2. Check it: central differences
#
# A hand-written gradient is a claim; a numerical derivative is an independent check.
# For one entry $\theta$ of a weight, the central difference
#
# $$
# \frac{L(\theta + h) - L(\theta - h)}{2h} = \frac{\partial L}{\partial \theta}
# + \frac{h^2}{6}\frac{\partial^3 L}{\partial \theta^3} + \dots
# $$
#
# has two errors. The truncated Taylor series leaves about $\frac{h^2}{6}|L'''|$, which
# shrinks with $h$. Each evaluation of $L$ is rounded to float64, off by up to about
# $\epsilon |L|$ with $\epsilon \approx 2.2 \times 10^{-16}$; the difference divides
# that by $2h$, leaving about $\epsilon |L| / h$, which grows as $h$ shrinks. The sum is
# smallest near $h \approx \epsilon^{1/3} \approx 6 \times 10^{-6}$, where both are of
# order $\epsilon^{2/3} \approx 4 \times 10^{-11}$ (times the scale of $L$ and its
# derivatives). At $h = 10^{-6}$ the rounding term dominates, at about $2 \times
# 10^{-10}|L|$; the truncation term is a thousand times smaller. Any bug in the formulas
# shows up far above either: a wrong axis, a forgotten $1/\sqrt{d_k}$ or a missing
# transpose all give errors of order 1.
#
# The check below takes the loss $L = \sum \text{output} \odot G$ for a random $G$, so
# that $\partial L / \partial\,\text{output} = G$, and compares `backward(G)` with
# central differences of the module's **forward** (not of anything in
# `mhattn.core.grad`) at random entries of `x`, `W_qkv` and `W_o`. The mask is causal
# and also hides the last two tokens of the second sequence, as queries and as keys, so
# two rows see nothing at all.


# %%
def gradient_check(mha, x, mask, entries=30, h=1e-6, seed=0):
    """Worst error of backward's gradients against central differences (relative)."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal(x.shape)  # (batch, seq_len, d_model): dL/d output
    # one gradient per array, of its shape:
    grads = multihead_vjp(x, mha.W_qkv, mha.W_o, mha.num_heads, mask)[2](G)
    arrays = {"x": x, "W_qkv": mha.W_qkv, "W_o": mha.W_o}  # perturbed, then restored
    errors = {}
    for name, array in arrays.items():
        worst = 0.0
        for _ in range(entries):
            index = tuple(rng.integers(0, size) for size in array.shape)  # one entry
            old = array[index]  # a scalar
            array[index] = old + h
            up = np.sum(mha(x, mask)[0] * G)
            array[index] = old - h
            down = np.sum(mha(x, mask)[0] * G)
            array[index] = old
            numeric = (up - down) / (2 * h)
            error = abs(numeric - grads[name][index]) / np.abs(grads[name]).max()
            worst = max(worst, error)
        errors[name] = worst
    return errors


mha = MultiHeadAttention(d_model=16, num_heads=4, seed=0)
x = np.random.default_rng(1).standard_normal((2, 6, 16))  # (batch, seq_len, d_model)
keep = padding_mask([6, 4], 6)  # (2, 1, 1, 6): the second sequence has 4 real tokens
mask = causal_mask(6) & keep & keep.transpose(0, 1, 3, 2)  # (2, 1, 6, 6)
for name, error in gradient_check(mha, x, mask).items():
    print(f"{name:6s} relative error below 1e-8: {error < 1e-8}")

# %% [markdown]
# The two error terms can be seen directly: repeat the check for a range of $h$ and draw
# the error against $h$ on log-log axes. Read from the right, where $h$ is large: the
# error falls along a slope of 2 as $h$ shrinks, the truncation term $h^2$, down to a
# floor; left of the floor it climbs again along a slope of -1, the rounding term $1/h$.
# The floor lies within an order of magnitude of the dotted line $h = \epsilon^{1/3}$,
# not on it: the estimate drops the constants, the scale of $L'''$ against that of $L$,
# which move the crossing point. We draw the curve but print no digits, because the
# rounding part depends on the BLAS library.

# %%
steps_h = np.logspace(-9, -2, 15)  # (15,)
errors_h = np.array(  # (15,): the worst error at each step
    [max(gradient_check(mha, x, mask, entries=8, h=h).values()) for h in steps_h]
)
fig, ax = plt.subplots(figsize=(5, 3.6), layout="constrained")
ax.loglog(steps_h, errors_h, "o-", label="worst of 24 entries")
eps = np.finfo(float).eps
ax.axvline(eps ** (1 / 3), color="gray", linestyle=":", label=r"$h = \epsilon^{1/3}$")
ax.set(xlabel="step h", ylabel="relative error", title="Truncation vs rounding")
ax.legend()
plt.show()
save_figure(fig, FIGURES / "07_central_differences.png")
best_h = steps_h[errors_h.argmin()]
print(
    "the best h is within a factor 10 of eps^(1/3):", 0.1 < best_h / eps ** (1 / 3) < 10
)
print("h = 1e-2 is 1000 times worse:", errors_h[-1] > 1000 * errors_h.min())

# %% [markdown] tags=["figure-caption"]
# **Figure.** The central-difference check is only as good as its step: too small and
# rounding dominates, too large and truncation does. The error is smallest within a
# factor of ten of h = ε^(1/3), the dotted line.
#
# <!-- alt: A log-log curve of the worst relative error of 24 gradient entries against
# the step h, from 1e-9 to 1e-2: it falls from the left, reaches its minimum in the
# middle near a dotted vertical line at the cube root of machine epsilon, and rises
# again to the right. -->


# %% [markdown]
# The masks give exact zeros, as derived. The two padded tokens of the second sequence
# can neither see nor be seen, so no gradient reaches them:

# %%
output, weights, backward = multihead_vjp(x, mha.W_qkv, mha.W_o, mha.num_heads, mask)
d_x = backward(np.ones_like(output))["x"]  # (2, 6, 16)
print("gradient reaching the two padded tokens is exactly 0:", np.all(d_x[1, 4:] == 0))
print("gradient reaching every real token is non-zero:      ", np.all(d_x[1, :4] != 0))

# %% [markdown]
# ## 3. A task for attention: induction
#
# Each training sequence has 32 tokens from a vocabulary of 32. It holds a *block* of
# $n$ distinct tokens twice, with $n$ between 4 and 16. The block starts at a random
# *offset*; in half of the sequences a random *gap* of tokens separates the two copies.
# Everything else is uniform random, independent of the rest:
#
# | | drawn for each sequence |
# |---|---|
# | block length $n$ | on $[4, 16]$, with $P(n) \propto 1/(n-1)$ |
# | room $r = 32 - 2n$ | the tokens outside the copies |
# | gap $g$ | 0 with probability 1/2, else uniform on $[1, r]$ |
# | offset $o$ | uniform on $[0, r - g]$ |
# | layout | $o$ random tokens, block, $g$ random tokens, block, random to 32 |
#
# (Training also moves about one sequence in ten to the ends of the offset range:
# section 4 says why.)
#
# A block of $n$ tokens gives $n - 1$ tokens to copy, so short blocks are drawn more
# often: every length then offers the same number of copyable tokens, and the shortest
# blocks, which fit at the most offsets, are not starved of training. Because the
# offset, the gap and $n$ all vary, no fixed position and no fixed distance finds the
# earlier copy: only the token itself does. Here is one sequence, written with
# letters (`decode_tokens`; ids 26-31 have no letter and show as `<id>`):

# %%
# tokens (1, 32); n, offset, gap (1,) each:
tokens, n, offset, gap = induction_batch(np.random.default_rng(3), 1)
n0, o0, g0 = n[0], offset[0], gap[0]
print(f"n = {n0}, offset = {o0}, gap = {g0}")
print("before:     ", decode_tokens(tokens[0, :o0]))
print("first copy: ", decode_tokens(tokens[0, o0 : o0 + n0]))
print("gap:        ", decode_tokens(tokens[0, o0 + n0 : o0 + n0 + g0]))
print("second copy:", decode_tokens(tokens[0, o0 + n0 + g0 : o0 + 2 * n0 + g0]))
print("the rest:   ", decode_tokens(tokens[0, o0 + 2 * n0 + g0 :]))

# %% [markdown]
# In the second copy, at its positions but the last, the next token is usually
# "whatever followed the current token the first time". Not always: a random token
# before it can equal one of the block's tokens with a different successor, and then
# the rule has two answers. We count a position as **determined**
# only when every earlier occurrence of its token was followed by the same token:

# %%
show_source(determined_positions)

# %%
# what measure() scores:
tokens, n, offset, gap = induction_batch(np.random.default_rng(2024), 512)  # (512, 32)
second_copy = repeated_positions(n, 32, offset, gap)  # (512, 32): 2nd copy but its last
determined = determined_positions(tokens, n, offset, gap)  # (512, 32)
print(f"second-copy positions: {second_copy.sum()}; determined: {determined.sum()}")
print(f"ambiguous: {1 - determined.sum() / second_copy.sum():.2f}")


# %% [markdown]
# About one position in five is ambiguous: the random tokens before the second copy,
# up to 24 of them drawn from 32, often repeat a block token. We score next-token
# accuracy on the determined positions only. The training loss is a language model's:
# the cross-entropy of **every** next token, predictable or not.
#
# **The model** is the smallest Transformer that can hold the algorithm: token and
# position embeddings (the learned table of notebook 06), attention layers added to a
# residual stream, and an unembedding. No MLP, no LayerNorm, no biases, and every layer
# is the chapter's own `MultiHeadAttention` (`d_model = 64`, 4 heads, causal mask):
#
# ```
# h = embed[tokens] + pos[:seq_len]                      # (batch, seq_len, d_model)
# for each layer: h = h + MultiHeadAttention(h, causal_mask)[0]
# logits = h @ unembed                                   # (batch, seq_len, vocab)
# ```
#
# **Why one layer cannot do it.** Take a position $t$ in the second copy. Its token
# first appeared $n + g$ positions earlier, at $t - n - g$, so the answer sits at
# $j = t - n - g + 1$, the token *after* the earlier copy. Since $n$ and $g$ change from
# sequence to sequence, no fixed distance finds $j$. But the key at $j$ holds token $j$
# and position $j$ only, and neither says "my predecessor was token $t$". A single layer
# can find the earlier copy itself (same token), but its value is the copy, the one
# token we already know. The information that identifies $j$ sits one position to the
# left of $j$, and attention moves information between positions one layer at a time.
#
# **Why two layers can.** Layer 0 copies each token's predecessor into its position (a
# *previous-token head*). Now the key at $j$ does say "my predecessor was token $t$",
# and a layer-1 head whose query asks "whose predecessor is my token?" lands on $j$ and
# copies its token: an *induction head*. Elhage et al. (2021) call this
# **K-composition**: the layer-1 head's keys read what a layer-0 head wrote. A one-layer
# model trained exactly the same way ships with the package; here is what it manages on
# the same 512 sequences:

# %%
one_layer_model = load_trained(num_layers=1)
guess = one_layer_model.predict(tokens)  # (512, 32): its most likely next token
rows, columns = np.nonzero(determined)  # the determined positions, one (b, t) each
seen, first, drawn = [], [], []
for b, t in zip(rows, columns, strict=True):
    block = tokens[b, offset[b] : offset[b] + n[b]]  # (n,): the first copy
    earlier = tokens[b, :t]  # (t,): the tokens before position t
    seen.append(guess[b, t] in earlier)
    first.append(guess[b, t] in block)
    drawn.append(np.isin(earlier, block).mean())  # a token of a random earlier position
print(f"one layer: accuracy {measure(one_layer_model)['accuracy']:.2f}")
print(f"its guesses that are a token seen earlier: {np.mean(seen):.2f}")
print(f"its guesses that are a token of the first copy: {np.mean(first):.2f}")
print(f"a token drawn from a random earlier position: {np.mean(drawn):.2f}")

# %% [markdown]
# About one in five right, where a uniform guess would score 1/32. Nearly all its
# guesses (98 %) are tokens seen earlier in the sequence, where a uniform guess over the
# 32 tokens would land on one less than half the time: one layer has learned to copy
# *some* earlier token. But not the block's: 72 % of its guesses are tokens of the first
# copy, a little *fewer* than the 77 % that picking the token at a random earlier
# position would give. One layer can copy what it has seen, but not tell which token
# comes next.


# %% [markdown]
# ## 4. Training
#
# One training step runs the model forward through each layer's vjp, keeping every
# layer's `backward`:

# %%
show_source(step.forward_pass)

# %% [markdown]
# The loss is the cross-entropy of every next token; its gradient with respect to the
# logits is the softmax minus a one-hot row, divided by the number of tokens scored:

# %%
show_source(step.next_token_loss)

# %% [markdown]
# Then the chain rule runs back through the layers. The residual connection $h
# \leftarrow h + \text{layer}(h)$ means the gradient reaching a layer's input is the
# gradient of its output *plus* what flows back through the layer:

# %%
show_source(step.backward_pass)

# %% [markdown]
# The embedding lookup is a product with one-hot rows, so its gradient sums the
# gradients of every position that looked a token up:

# %%
show_source(step.embedding_grads)

# %% [markdown]
# `loss_and_grads(model, tokens, n)` is these four in a row. Adam (Kingma and Ba, 2015)
# then moves every weight. It divides a running mean of the gradient by the square root
# of a running mean of its square, so every weight takes steps of about the learning
# rate, whatever the scale of its gradient:

# %%
show_source(Adam.step)

# %% [markdown]
# `python -m mhattn.train --layers 2 --seed 0 --out induction.npz` runs 3500 such steps,
# with a step size that rises over the first 100 steps to $10^{-2}$ and then falls along
# a cosine to a tenth of that. The first 1000 steps draw 64 sequences each, the later
# ones 32, at half the cost a step. In every batch, on average one sequence in ten sits
# at an end of the offset range (the first copy at position 0, or the second copy ending
# the context), which uniform offsets reach least often. The trained model ships with
# the package, so this notebook loads it, with the time the command measured and the
# machine it ran on. Set `RETRAIN = True` to train it here instead: the run is seeded,
# but BLAS libraries round differently on different machines and training amplifies
# that, so a retrain can differ a little from the stored weights.

# %%
RETRAIN = False  # True: train here (under a minute of one core); False: load it

if RETRAIN:
    model = train(num_layers=2, seed=0, progress=True)
else:
    model = load_trained()
print(model)
record = training_record(2)
print(
    f"{record['steps']} steps: {record['cpu_seconds']:.0f} s of CPU time, "
    f"{record['seconds']:.0f} s of wall time, on {record['machine']} "
    f"(1-minute load average up to {record['load_average']:.1f})"
)

# %% [markdown]
# On a busy machine, where several processes take turns on each core, the wall time
# includes the waits for a free core; the CPU time counts only the training's own work
# (it rises a little too, as the other processes evict its data from the caches).
#
# The checkpoint stores its training history: every 5 steps the loss and the accuracy
# of that step's batch, and at the steps `history["probe_step"]` the losses of chosen
# tokens on 256 fixed sequences. The grey lines are chance (a uniform guess: loss
# $\log 32$, accuracy $1/32$); the orange lines are the one-layer model at the end of
# its training. The curves leave out step 1, where the weights are random and their
# losses say only how large the random logits are.

# %%
history, one_history = model.history, one_layer_model.history
after_1 = history["step"] > 1  # step 1: the random initial weights
steps = history["step"][after_1]  # (700,): every 5 steps
fig, axes = plt.subplots(1, 2, figsize=(5.5, 3.2), layout="constrained", sharex=True)
for ax, key, chance in [(axes[0], "loss", np.log(32)), (axes[1], "accuracy", 1 / 32)]:
    ax.plot(steps, history[key][after_1], lw=1)
    ax.axhline(chance, color="gray", linestyle=":")
    ax.axhline(one_history[key][-20:].mean(), color="tab:orange", linestyle="--")
    ax.set(xlabel="step", title=key)
axes[1].set_ylim(0, 1.02)
plt.show()
save_figure(fig, FIGURES / "07_training_curve.png")


def mean_accuracy(first_step, last_step):
    """The batch accuracy, averaged over the history's steps in [first, last]."""
    chosen = (history["step"] >= first_step) & (history["step"] <= last_step)
    return history["accuracy"][chosen].mean()


jump = history["step"][np.argmax(history["accuracy"] > 0.9)]
print(f"accuracy, steps 200-400: {mean_accuracy(200, 400):.3f}")
print(f"accuracy, steps 1400-1500: {mean_accuracy(1400, 1500):.3f}")
print(f"first step with batch accuracy above 0.9: {jump}")
one_accuracy = one_history["accuracy"][-20:].mean()  # its last 100 steps
print(f"one layer at the end of its training: {one_accuracy:.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Training the two-layer model, step 1 left out. The accuracy creeps up for
# more than a thousand steps, then jumps above 0.9 within about a hundred, and the loss
# drops with it. Dotted: chance; dashed: the one-layer model at the end of its training.
#
# <!-- alt: Two panels against the training step. Left, the loss falls from about 5
# to near 3.5 within the first 50 steps, stays there until about step 1500, then falls
# to about 3; right, the accuracy creeps up slowly from near zero, then rises steeply
# to nearly 1 around step 1550. A dotted line marks chance and a dashed orange line the
# one-layer model's level. -->

# %% [markdown]
# For more than a thousand steps the loss stays within a few hundredths of $\log 32$,
# and the accuracy is not flat but a slow ramp: from about 0.045 at steps 200-400 to
# 0.15 at steps 1400-1500, still below the one-layer model's 0.17. Then, within about a
# hundred steps, the accuracy jumps above 0.9 and the loss drops: the *phase change*
# that Olsson et al. (2022) saw in large models at the moment their induction heads
# formed. The loss stays far above zero because most tokens of a sequence are random
# and cannot be predicted at all.
#
# **In-context learning score.** Olsson et al. (2022) define it on the training
# distribution: the loss of the 500th token of a 512-token context minus the loss of the
# 50th, negative when the model predicts late tokens better than early ones because it
# uses what it has seen. Our context is 32 tokens, so we take the same fractions, token
# 31 minus token 3, on 256 fixed sequences of the training task; we also draw a
# mid-context token, 16. `loss_report` calls it `icl_score`, and the same difference on
# repeated random tokens `repeated_icl_score`. Beside them we draw a different probe,
# the **induction loss**: the mean loss of the second half of 16 random tokens repeated
# once, all but its first token, each of which can be copied. The ICL score is a
# difference of two positions of ordinary training text, where most tokens cannot be
# predicted, so it stays a fraction of a nat. The induction loss asks only about tokens
# that a perfect copier gets right, so it can fall from $\log 32$ towards zero.

# %%
probe_step = history["probe_step"]  # (probes,): the steps the probes ran at
later = probe_step > 1
fig, ax = plt.subplots(figsize=(5, 3.6), layout="constrained")
for column, label in enumerate(["token 3", "token 16", "token 31"]):
    ax.plot(probe_step[later], history["token_loss"][later, column], lw=1, label=label)
induction = history["induction_loss"]  # (probes,)
ax.plot(probe_step[later], induction[later], color="black", label="induction loss")
ax.axvspan(700, jump, color="gray", alpha=0.15, label="precursor")
ax.set(xlabel="step", ylabel="loss (nats)", title="Losses through training")
ax.legend(loc="center right")  # between the token losses and the induction loss
plt.show()
save_figure(fig, FIGURES / "07_icl_score.png")
for s in (700, 900, 1300):
    print(f"induction loss at step {s}: {induction[probe_step == s][0]:.2f}")
report, one_report = loss_report(model), loss_report(one_layer_model)
print(f"tokens 3, 16, 31: {np.round(report['token_loss'], 2)} nats")
for name in ("icl_score", "induction_loss"):
    print(f"{name}: {report[name]:.2f} nats; one layer: {one_report[name]:.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** The losses of tokens 3, 16 and 31 of the training task, and the induction
# loss on repeated random tokens, through training. The induction loss starts to fall
# around step 700, long before the jump (shaded: the precursor); token 3 cannot be
# copied and stays near log 32; tokens 16 and 31 drop at the phase change.
#
# <!-- alt: Four loss curves against the training step: token 3 stays near 3.5
# nats; tokens 16 and 31 fall together by about a third of a nat at the phase change
# near step 1550; the black induction loss bends down from about step 700 inside a grey
# shaded band, then falls steeply to about half a nat. -->

# %% [markdown]
# The slow ramp is not idle. From about step 700 the induction loss falls, from 3.44 to
# 3.1 by step 1300, while the accuracy on the training task only creeps (0.06 to 0.11):
# the model is already learning to copy where every token can be copied, a precursor of
# the induction heads, and the phase change follows. Token 3 can never be copied, since
# no block has been repeated by then, and its loss stays near $\log 32$. Tokens 16 and
# 31 drop with the phase change. The ICL score on the training task ends near -0.3 nats,
# the induction loss near half a nat: the same circuit, measured on text where copying
# is sometimes possible, or always. (The induction loss does not go to zero: the model
# hedges its copies, and notebook 09 shows why.)
#
# Notebook 09 opens the trained model and reads what each head does.

# %% [markdown]
# ## Summary
#
# - The backward pass of attention is four matrix-product vjps and one softmax vjp;
#   masks need no code, because a zero weight passes no gradient. Central differences
#   check it to about $10^{-10}$, the floor set by rounding and truncation.
# - One layer cannot copy "what followed my token last time"; two can, by K-composition:
#   a previous-token head in layer 0 writes each token's predecessor, and an induction
#   head in layer 1 matches its query against it and copies the key's token.
# - A training step is the forward pass through each layer's vjp, the cross-entropy,
#   and the chain rule back, the residual stream carrying the gradient around every
#   layer; Adam scales each weight's step.
# - Training finds the circuit after a slow ramp with a precursor (the induction loss
#   falls first), in a sudden phase change.

# %% [markdown]
# ## Exercises
#
# **Exercise 1 (write): the softmax's vjp, your way.** Write `my_softmax_vjp(weights,
# d_weights)` for rows of any length, without `mhattn.core.grad`. One route: build each
# row's Jacobian $J = \operatorname{diag}(p) - p p^\top$ and multiply, $\bar s = J^\top
# \bar p$. The checker compares your function with central differences of
# `mhattn.softmax`.


# %%
def my_softmax_vjp(weights, d_weights):
    """weights = softmax(scores), shape (..., n); d_weights alike; return d_scores."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(
    1,
    crash_hint="my_softmax_vjp gets two arrays of shape (3, 2, 5) and returns one "
    "of that shape",
)
def check_exercise_1(function):
    rng = np.random.default_rng(10)
    scores = rng.standard_normal((3, 2, 5)) * 2
    scores[0, 1, [1, 3]] = -np.inf  # a masked row: two keys hidden
    d_weights = rng.standard_normal((3, 2, 5))
    got = np.asarray(not_yet(function(softmax(scores), d_weights)), dtype=float)
    assert got.shape == scores.shape, f"return shape {scores.shape}; got {got.shape}"
    h = 1e-6
    numeric = np.zeros_like(scores)
    for index in zip(*np.nonzero(np.isfinite(scores)), strict=True):
        up, down = scores.copy(), scores.copy()
        up[index] += h
        down[index] -= h
        numeric[index] = np.sum((softmax(up) - softmax(down)) * d_weights) / (2 * h)
    assert np.allclose(got.sum(axis=-1), 0.0, atol=1e-12), (
        "each row of d_scores must sum to zero (a constant added to every score "
        "changes nothing): did you subtract the weighted mean sum_i d_weights_i p_i?"
    )
    assert np.allclose(got, numeric, rtol=0, atol=1e-7), (
        "the rows sum to zero, but the values are off: each entry is p_j times "
        "(d_weights_j minus the weighted mean); check the factor p_j"
    )


print(check_exercise_1(my_softmax_vjp))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The Jacobian route: n x n per row, O(n^2), fine for checking and wasteful for
# training. J[i, j] = d p_i / d s_j = p_i (delta_ij - p_j); d_scores_j = sum_i
# d_weights_i J[i, j]. J is symmetric, so J^T d_weights = J d_weights.
# mhattn.core.grad.softmax_vjp does it in O(n):
# d_scores = p (d_weights - sum(d_weights p));
# masked keys have p = 0, so exactly 0.
def solution_softmax_vjp(weights, d_weights):
    p = weights[..., :, None]  # (..., n, 1)
    jacobian = np.eye(weights.shape[-1]) * p - p * weights[..., None, :]  # diag(p)-pp^T
    return np.einsum("...i,...ij->...j", d_weights, jacobian)  # (..., n): J^T d_weights


print(check_exercise_1(solution_softmax_vjp))

# %% [markdown]
# **Exercise 2 (predict): a forgotten scale.** A common bug: the backward pass forgets
# the $1/\sqrt{d_k}$ that the forward pass applied to the scores. `buggy_attention_vjp`
# below has exactly that bug. Before running anything, predict: which of its three
# gradients, `"dQ"`, `"dK"`, `"dV"`, fail a gradient check? Write them as a set, e.g.
# `{"dV"}`.


# %%
def buggy_attention_vjp(Q, K, V, weights, d_output):
    d_weights = d_output @ V.swapaxes(-1, -2)
    dV = weights.swapaxes(-1, -2) @ d_output
    d_scores = softmax_vjp(weights, d_weights)
    dQ = d_scores @ K
    dK = d_scores.swapaxes(-1, -2) @ Q
    return dQ, dK, dV


prediction = ...  # a set of names, e.g. {"dV"}


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint='answer with a set of names, e.g. {"dV"}')
def check_exercise_2(answer):
    names = {answer} if isinstance(answer, str) else set(answer)
    assert names <= {"dQ", "dK", "dV"}, f'a set of "dQ", "dK", "dV"; got {answer!r}'
    rng = np.random.default_rng(11)
    Q, K, V, G = (rng.standard_normal((2, 5, 4)) for _ in range(4))
    _, weights = scaled_dot_product_attention(Q, K, V, causal_mask(5))
    grads = buggy_attention_vjp(Q, K, V, weights, G)
    buggy = dict(zip(("dQ", "dK", "dV"), grads, strict=True))
    failing = set()
    for name, array in (("dQ", Q), ("dK", K), ("dV", V)):
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            old = array[index]
            array[index] = old + 1e-6
            up = np.sum(scaled_dot_product_attention(Q, K, V, causal_mask(5))[0] * G)
            array[index] = old - 1e-6
            down = np.sum(scaled_dot_product_attention(Q, K, V, causal_mask(5))[0] * G)
            array[index] = old
            numeric[index] = (up - down) / 2e-6
        if not np.allclose(buggy[name], numeric, rtol=0, atol=1e-7):
            failing.add(name)
    assert names == failing, (
        "not quite. Which gradients pass through the scores S = QK^T / sqrt(d_k) "
        "on their way back from the output, and which do not?"
    )


print(check_exercise_2(prediction))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# dQ and dK: the scale sits between them and the loss (S = Q K^T / sqrt(d_k)), so both
# are sqrt(d_k) = 2 times too large. dV = P^T dO never goes through the scores, so it is
# right. Would training notice? Adam divides each weight's step by that weight's own
# gradient scale, so a factor of 2 on the gradients of W_q and W_k alone would barely
# matter. But the gradient that reaches x is dQ W_q^T + dK W_k^T + dV W_v^T: two of its
# three terms doubled and one not, which changes its direction, not just its size. Every
# earlier layer and the embeddings then train on a wrong gradient, and no optimiser can
# undo that.
solution_prediction = {"dQ", "dK"}
print(check_exercise_2(solution_prediction))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, L. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). The layer this notebook
#   trains.
# - Olsson, C., Elhage, N., Nanda, N., Joseph, N., DasSarma, N., Henighan, T., Mann, B.,
#   Askell, A., Bai, Y., Chen, A., et al. (2022). *In-context Learning and Induction
#   Heads.* Transformer Circuits Thread.
#   [arXiv:2209.11895](https://arxiv.org/abs/2209.11895). Induction heads, the
#   in-context learning score and the phase change.
# - Elhage, N., Nanda, N., Olsson, C., Henighan, T., Joseph, N., Mann, B., Askell, A.,
#   Bai, Y., Chen, A., Conerly, T., et al. (2021). *A Mathematical Framework for
#   Transformer Circuits.* Transformer Circuits Thread.
#   [transformer-circuits.pub/2021/framework](https://transformer-circuits.pub/2021/framework/index.html).
#   Attention-only transformers and K-composition.
# - Kingma, D. P. and Ba, J. (2015). *Adam: A Method for Stochastic Optimization.* ICLR
#   2015. [arXiv:1412.6980](https://arxiv.org/abs/1412.6980). Algorithm 1 is
#   `Adam.step`.
# - CS231n: Convolutional Neural Networks for Visual Recognition, Stanford.
#   *Backpropagation, Intuitions* and *Neural Networks Part 3: gradient checks*
#   ([cs231n.github.io/optimization-2](https://cs231n.github.io/optimization-2/),
#   [cs231n.github.io/neural-networks-3](https://cs231n.github.io/neural-networks-3/#gradcheck)).
#   Forward/backward pairs, central differences, and relative errors.
#
# ---
# Previous: [06_positions.ipynb](06_positions.ipynb), where tokens get their positions.
# Next: [08_why_several_heads.ipynb](08_why_several_heads.ipynb) trains models with what
# this notebook built, to ask why attention has several heads.
