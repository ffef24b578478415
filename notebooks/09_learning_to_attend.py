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
# # 9. Learning to attend
#
# Every weight in notebooks 01-08 was random or built by hand, and notebook 04 warned
# more than once that its heatmaps "mean nothing yet". This notebook trains the module.
# It derives the backward pass of multi-head attention by hand, checks it against finite
# differences, and uses it to train a two-layer, attention-only model in NumPy. Its
# heads then discover a small algorithm of their own: **previous-token heads** and
# **induction heads**, the circuit that Olsson et al. (2022) found in every model with
# two or more layers that they trained. We measure what the heads do with the scores
# that paper and Elhage et al. (2021) define, so that the numbers mean here what they
# mean in the literature.
#
# **In this notebook you will learn**
#
# - what a vector-Jacobian product is, and the backward pass of the softmax, of
#   attention (masks included), of the head reshapes and of the projections;
# - how to check a gradient with central differences, and how small the error can be;
# - a task that one attention layer cannot solve and two can, and why;
# - how training turns random heatmaps into readable patterns, with a sudden phase
#   change;
# - the standard measurements of a head: previous-token and prefix-matching scores, the
#   OV circuit and its copying score, the QK circuit, K-composition, and the in-context
#   learning score;
# - how to test what a head does by switching it off (ablation).

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
)
from mhattn.core.grad import attention_vjp, linear_vjp, multihead_vjp, softmax_vjp
from mhattn.learn.circuits import (
    claims,
    copying_score,
    k_composition_scores,
    measure,
    ov_circuit,
    prefix_matching_score,
    previous_token_score,
    qk_circuit,
)
from mhattn.learn.model import decode_tokens, encode_letters, load_trained
from mhattn.learn.optim import Adam
from mhattn.learn.task import (
    accuracy,
    determined_positions,
    induction_batch,
    repeated_positions,
)
from mhattn.learn.train import initial_model, loss_and_grads, train
from mhattn.pictures.figures import save_figure
from mhattn.pictures.source import show_source

np.set_printoptions(precision=2, suppress=True)
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
# back into columns with a single `split_heads_vjp`. Grouped-query attention (notebook
# 04's `num_kv_heads`) adds one more step: a key head shared by several query heads
# collects the sum of their gradients.

# %%
show_source(multihead_vjp)

# %% [markdown]
# `MultiHeadAttention.vjp(x, mask)` wraps it with the module's argument checks: it
# returns `output, weights, backward`, and `backward(d_output)` returns a dict of
# gradients for `"x"`, `"W_qkv"` and `"W_o"`, each of the shape and dtype of what it
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
    G = rng.standard_normal(x.shape)
    grads = mha.vjp(x, mask)[2](G)
    arrays = {"x": x, "W_qkv": mha.W_qkv, "W_o": mha.W_o}  # perturbed, then restored
    errors = {}
    for name, array in arrays.items():
        worst = 0.0
        for _ in range(entries):
            index = tuple(rng.integers(0, size) for size in array.shape)
            old = array[index]
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
x = np.random.default_rng(1).standard_normal((2, 6, 16))
keep = padding_mask([6, 4], 6)  # (2, 1, 1, 6): the second sequence has 4 real tokens
mask = causal_mask(6) & keep & keep.transpose(0, 1, 3, 2)  # (2, 1, 6, 6)
for name, error in gradient_check(mha, x, mask).items():
    print(f"{name:6s} relative error below 1e-8: {error < 1e-8}")

# %% [markdown]
# The two error terms can be seen directly: repeat the check for a range of $h$. The
# error falls as $h^2$ (slope 2 on log-log axes) while truncation dominates, reaches its
# floor near $\epsilon^{1/3}$, and rises as $1/h$ (slope -1) once rounding takes over.
# We draw the curve but print no digits, because the rounding part depends on the BLAS
# library.

# %%
steps_h = np.logspace(-9, -2, 15)
errors_h = np.array(
    [max(gradient_check(mha, x, mask, entries=8, h=h).values()) for h in steps_h]
)
fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
ax.loglog(steps_h, errors_h, "o-", label="measured, worst of 24 entries")
eps = np.finfo(float).eps
ax.axvline(eps ** (1 / 3), color="gray", linestyle=":", label=r"$h = \epsilon^{1/3}$")
ax.set(xlabel="step h", ylabel="relative error", title="Truncation vs rounding")
ax.legend(fontsize=10)
plt.show()
save_figure(fig, FIGURES / "09_central_differences.png")
best_h = steps_h[errors_h.argmin()]
print("the best h lies between 1e-7 and 1e-4:", 1e-7 <= best_h <= 1e-4)
print("h = 1e-2 is 1000 times worse:", errors_h[-1] > 1000 * errors_h.min())

# %% [markdown] tags=["figure-caption"]
# **Figure.** The finite-difference check is only as good as its step: too small and
# rounding dominates, too large and truncation does; the error is smallest near h =
# ε^(1/3).
#
# <!-- alt: Log-log V-shaped line of the worst relative error of 24 entries against step
# h from 1e-9 to 1e-2: it falls from about 7e-7 to a minimum near 5e-11 at h = 3e-5,
# just right of a dotted line at ε^(1/3), and rises again to 5e-6. -->

# %% [markdown]
# The tests go further (`tests/test_grad.py`): every entry, several shapes and masks,
# grouped queries, and PyTorch's autograd with the same weights, which agrees to
# $10^{-10}$ in float64.
#
# The masks give exact zeros, as derived. The two padded tokens of the second sequence
# can neither see nor be seen, so no gradient reaches them:

# %%
output, weights, backward = mha.vjp(x, mask)
d_x = backward(np.ones_like(output))["x"]
print("gradient reaching the two padded tokens is exactly 0:", np.all(d_x[1, 4:] == 0))
print("gradient reaching every real token is non-zero:      ", np.all(d_x[1, :4] != 0))

# %% [markdown]
# ## 3. A task for attention: induction
#
# Each training sequence has 32 tokens from a vocabulary of 32. It holds a *block* of
# $n$ distinct tokens twice, with $n$ uniform between 4 and 16. The block starts at a
# random *offset*; in half of the sequences a random *gap* of tokens separates the two
# copies. Everything else is uniform random, independent of the rest:
#
# | | drawn for each sequence |
# |---|---|
# | block length $n$ | uniform on $[4, 16]$ |
# | room $r = 32 - 2n$ | the tokens outside the copies |
# | gap $g$ | 0 with probability 1/2, else uniform on $[1, r]$ |
# | offset $o$ | uniform on $[0, r - g]$ |
# | layout | $o$ random tokens, block, $g$ random tokens, block, random to 32 |
#
# Because the offset, the gap and $n$ all vary, no fixed position and no fixed distance
# finds the earlier copy: only the token itself does. Here is one sequence, written with
# letters (`decode_tokens`; ids 26-31 have no letter and show as `<id>`):

# %%
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
tokens, n, offset, gap = induction_batch(np.random.default_rng(2024), 512)
# (512, 32): the second copy but its last position
second_copy = repeated_positions(n, 32, offset, gap)
determined = determined_positions(tokens, n, offset, gap)  # (512, 32)
print(f"positions in [n, 2n - 2]: {second_copy.sum()}; determined: {determined.sum()}")
print(f"ambiguous: {1 - determined.sum() / second_copy.sum():.2f}")

# %% [markdown]
# More than a quarter of the second copy is ambiguous: with up to 16 tokens drawn from
# 32, repeats in the first copy are common. We score next-token accuracy on the
# determined positions only. The training loss is a language model's: the cross-entropy
# of **every** next token, predictable or not. Because $n$ changes from sequence to
# sequence, no fixed offset finds the earlier copy: the model must find it by content.
#
# **The model** is the smallest Transformer that can hold the algorithm: token and
# position embeddings, attention layers added to a residual stream, and an unembedding.
# No MLP, no LayerNorm, no biases, and every layer is the chapter's own
# `MultiHeadAttention` (`d_model = 64`, 4 heads, causal mask):
#
# ```
# h = embed[tokens] + pos[:seq_len]
# for each layer: h = h + MultiHeadAttention(h, causal_mask)[0]
# logits = h @ unembed
# ```
#
# **Why one layer cannot do it.** To predict token $t+1$, position $t$ must find the key
# $j = t - n + 1$, the token *after* the earlier copy of token $t$. But the key at $j$
# holds token $j$ and position $j$ only, and neither says "my predecessor was token
# $t$". A single layer can find the earlier copy itself (same token), but its value is
# the copy, the one token we already know. The information that identifies $j$ sits one
# position to the left of $j$, and attention can only move information between
# positions, one layer at a time.
#
# **Why two layers can.** Layer 0 copies each token's predecessor into its position (a
# previous-token head). Now the key at $j$ does say "my predecessor was token $t$", and
# a layer-1 head whose query asks "whose predecessor is my token?" lands on $j$ and
# copies its token: an induction head. Elhage et al. (2021) call this **K-composition**:
# the layer-1 head's keys read what a layer-0 head wrote. A one-layer model trained
# exactly the same way ships with the package; here is what it manages on the same 512
# sequences:

# %%
one_layer_model = load_trained(num_layers=1)
one_layer = measure(one_layer_model)
guess = one_layer_model.predict(tokens)  # (512, 32)
rows, columns = np.nonzero(determined)
pairs = zip(rows, columns, strict=True)
in_first_copy = [guess[b, t] in tokens[b, : n[b]] for b, t in pairs]
print(f"one layer: accuracy {one_layer['accuracy']:.2f}")
print(f"its guesses that are a token of the first copy: {np.mean(in_first_copy):.2f}")

# %% [markdown]
# Less than a third right, where a uniform guess would score 1/32. Every one of its
# guesses at a determined position is a token of the first copy: one layer can find the
# tokens seen before and copy one of them, but not tell which of them comes next.

# %% [markdown]
# ## 4. Training
#
# One training step runs the model forward through each layer's `vjp`, takes the
# cross-entropy and its gradient (softmax minus one-hot), and runs the chain rule back
# through the layers. The residual connection $h \leftarrow h + \text{layer}(h)$ means
# the gradient reaching a layer's input is the gradient of its output *plus* what flows
# back through the layer. The embedding lookup is a product with one-hot rows, so its
# gradient sums the gradients of every position that looked a token up:

# %%
show_source(loss_and_grads)

# %% [markdown]
# Adam (Kingma and Ba, 2015) then moves every weight. It divides a running mean of the
# gradient by the square root of a running mean of its square, so every weight takes
# steps of about the learning rate, whatever the scale of its gradient:

# %%
show_source(Adam.step)

# %% [markdown]
# `python -m mhattn.train --layers 2 --seed 0 --out induction.npz` runs 1500 such steps
# with a progress bar, in well under a minute on a laptop. The trained model ships with
# the package, so this notebook loads it. Set `RETRAIN = True` to train it here instead.
# The run is seeded, but BLAS libraries round differently on different machines and
# training amplifies that, so a retrain can differ a little from the stored weights; the
# measurements below should come out close.

# %%
RETRAIN = False  # True: train here (under a minute); False: load the shipped model

if RETRAIN:
    model = train(num_layers=2, seed=0, progress=True)
else:
    model = load_trained()
print(model)

# %% [markdown]
# The checkpoint stores its training history, recorded every 5 steps: the loss and the
# accuracy of each training batch, and the **in-context learning score** of Olsson et
# al. (2022). They define it as the loss of the 500th token of a 512-token context minus
# the loss of the 50th: negative when the model predicts late tokens better than early
# ones, because it uses what it has seen. Our context is 32 tokens, so we take the same
# fractions, token 31 minus token 3, on 64 fixed sequences of 16 random tokens repeated
# once (`mhattn.learn.circuits.in_context_learning_score`). Token 31 can be copied from
# the first half; token 3 cannot be known from anything before it.
#
# The grey lines are chance (a uniform guess: loss $\log 32$, accuracy $1/32$); the
# orange lines are the one-layer model at the end of its training.

# %%
history, one_history = model.history, one_layer_model.history
fig, axes = plt.subplots(1, 3, figsize=(7.5, 2.8), layout="constrained", sharex=True)
panels = [("loss", "cross-entropy", np.log(32)), ("accuracy", "accuracy", 1 / 32),
          ("icl_score", "ICL score (nats)", 0.0)]
for ax, (key, label, chance) in zip(axes, panels, strict=True):
    ax.plot(history["step"], history[key], lw=1)
    ax.axhline(chance, color="gray", linestyle=":")
    ax.axhline(one_history[key][-20:].mean(), color="tab:orange", linestyle="--")
    ax.set(xlabel="step", title=label, xlim=(0, 1200))
axes[1].set_ylim(0, 1.02)
plt.show()
save_figure(fig, FIGURES / "09_training_curve.png")
steps, acc = history["step"], history["accuracy"]
print(f"history entries: {len(steps)}, every {steps[2] - steps[1]} steps")
print(f"first step with batch accuracy above 0.25: {steps[np.argmax(acc > 0.25)]}")
print(f"first step with batch accuracy above 0.9:  {steps[np.argmax(acc > 0.9)]}")
icl, one_icl = history["icl_score"], one_history["icl_score"]
print(f"ICL score at step 500: {icl[steps == 500][0]:.1f}; over the last 100 steps: "
      f"{icl[-20:].mean():.1f}; one layer: {one_icl[-20:].mean():.1f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Training the two-layer model: after about 350 steps a phase change, the
# accuracy jumps above 0.9 as the induction heads form, and the in-context learning
# score follows a few hundred steps later.
#
# <!-- alt: Three line charts against training step 0 to 1200. Cross-entropy falls from
# above 5 to about 3.4, then drops again near step 450 to about 2.75. Accuracy creeps to
# 0.25, then jumps to 1 between steps 400 and 550. ICL score stays near -0.1 until step
# 750, then falls to about -2.6. Grey dotted lines mark chance, orange dashed lines the
# one-layer model. -->

# %% [markdown]
# For about 350 steps the model does what one layer can: the loss creeps below $\log 32$
# and the accuracy up to about a quarter. Then, within 150 steps, the accuracy jumps
# above 0.9 and the loss drops: the phase change that Olsson et al. saw in large models
# at the moment their induction heads formed. The loss stays far above zero because most
# tokens of a sequence are random and cannot be predicted at all. (The first loss is
# above $\log 32$: the random model is confidently wrong.)
#
# The in-context learning score follows a few hundred steps later. Token 31 is the last
# of the context, where a second copy occurs only in the longest repeats ($n = 16$), so
# the model learns to copy there last; in the end it predicts token 31 about 2.6 nats
# better than token 3. The one-layer model's score is not zero either: copying *some*
# token of the first half already helps at token 31, without knowing which one comes
# next.

# %% [markdown]
# ## 5. Before and after: every head
#
# Here are the heads on one training-like sequence with $n = 11$: 11 tokens, their
# repeat, and 10 random tokens. Rows are queries, columns keys, both labelled by
# position. The red lines mark where the second copy and the rest begin; the dotted
# orange line is the key $t - n + 1$ for each query $t$ of the second copy, the token
# after the earlier occurrence. A previous-token head is the line just below the main
# diagonal.


# %%
def draw_heads(weights, n, title):
    """One layer's heads on one sequence: positions, copy boundaries, t - n + 1."""
    fig, axes = plt.subplots(1, len(weights), figsize=(7.5, 2.6), layout="constrained",
                             sharey=True)
    seq_len = weights.shape[-1]
    second = np.arange(n, 2 * n)  # queries of the second copy
    for head, ax in enumerate(axes):
        image = ax.imshow(weights[head], cmap="Blues", vmin=0, vmax=1)
        for edge in (n, 2 * n):
            ax.axhline(edge - 0.5, color="tab:red", lw=0.7)
            ax.axvline(edge - 0.5, color="tab:red", lw=0.7)
        ax.plot(second - n + 1, second, ":", color="tab:orange", lw=1.5)
        ticks = range(0, seq_len, 8)
        ax.set(title=f"head {head}", xticks=ticks, yticks=ticks)
        ax.set_xlabel("key position")
    axes[0].set_ylabel("query position")
    fig.colorbar(image, ax=axes, shrink=0.8, label="weight")
    fig.suptitle(title)
    return fig


rng = np.random.default_rng(5)
n_example = 11
first = rng.permutation(32)[:n_example]
sequence = np.concatenate([first, first, rng.integers(0, 32, size=32 - 2 * n_example)])
_, weights_before = initial_model(num_layers=2, seed=0).forward(sequence)
_, weights_after = model.forward(sequence)
for layer in (0, 1):
    draw_heads(weights_before[layer], n_example, f"layer {layer}, before training")
    plt.show()
for layer in (0, 1):
    fig = draw_heads(weights_after[layer], n_example, f"layer {layer}, after training")
    plt.show()
    save_figure(fig, FIGURES / f"09_heads_layer{layer}.png")

# %% [markdown] tags=["figure-caption"]
# **Figure 1 of 4.** Layer 0 before training: the random heads attend mostly to the
# first few tokens, with no structure that follows the repeated sequence.
#
# <!-- alt: Four 32-by-32 lower-triangular heatmaps titled layer 0, before training,
# heads 0 to 3, with red lines at positions 11 and 22 and an orange dotted diagonal in
# the second block; the weight is scattered, darkest in the top-left corner. -->
#
# **Figure 2 of 4.** Layer 1 before training looks the same: no head follows the orange
# line where an induction head would look.
#
# <!-- alt: Four 32-by-32 lower-triangular heatmaps titled layer 1, before training,
# heads 0 to 3; scattered pale blue cells, a few dark ones near the top-left, none along
# the orange dotted line. -->
#
# **Figure 3 of 4.** Layer 0 after training: heads 0, 2 and 3 have become previous-token
# heads, each query looking at the token just before it, while head 1 looks mostly at
# the current token.
#
# <!-- alt: Four 32-by-32 heatmaps titled layer 0, after training; each head shows one
# dark line along or just below the main diagonal, clear in the first block and blurred
# after it, and nothing along the orange dotted line. -->
#
# **Figure 4 of 4.** Layer 1 after training holds induction heads: in the second copy
# each query looks at the position after the earlier occurrence of its own token, along
# the orange line.
#
# <!-- alt: Four 32-by-32 heatmaps titled layer 1, after training; in the middle block
# between the red lines, dark cells follow the orange dotted diagonal in all four heads,
# most sharply in heads 0 and 3. -->

# %% [markdown]
# Before training, every head spreads its weight over the past. After training, three
# layer-0 heads (0, 2 and 3) put their weight one step back, the line just below the
# diagonal, but only in the first copy; after it the line blurs. Head 1 puts much of its
# weight on the current token itself. In layer 1, all four heads follow the orange line
# through the second copy: the query at $t$ attends to $t - n + 1$, the position
# **after** the earlier occurrence of its own token. Those are induction heads. In the
# first copy there is no earlier occurrence, and they look elsewhere.

# %% [markdown]
# ## 6. Measuring the heads
#
# Pictures of one sequence can mislead, so we measure on 512 fresh sequences (a seed the
# training never saw), with the definitions of the literature. `measure` collects them
# all; each is a short function in `mhattn.learn.circuits`.
#
# ### Previous-token score
#
# A head's **previous-token score** is its average weight on key $t - 1$ over queries
# $t$. A head that always looks one step back scores 1; a head that spreads its weight
# evenly over the past scores 0.10 on 32 tokens. Averaged over all positions, and over
# each part of the sequence separately:

# %%
show_source(previous_token_score)

# %%
result = measure(model)
print(f"accuracy on the determined positions: {result['accuracy']:.2f}")
uniform = np.tri(32)[None, None] / np.arange(1, 33)[:, None]  # (1, 1, 32, 32)
print(f"a head with even weights scores {previous_token_score(uniform)[0]:.2f}")
parts = {"all positions": result["previous_token"][0]}
parts.update(result["previous_token_by_segment"][0])
for name, scores in parts.items():
    print(f"layer 0, {name:13s} {scores}")
print("previous-token heads (>= 0.25, all positions):", result["previous_token_heads"])

# %% [markdown]
# The previous-token heads are sharp in the first copy and blur after it: in the second
# copy their score falls to less than half, and in the rest to about 0.1. This is not
# noise but what the loss asks for. An induction head at query $t$ reads the keys of the
# **first copy**, where the token after the earlier occurrence sits; the loss therefore
# rewards previous-token information only at first-copy positions. At positions of the
# second copy and the rest nothing reads it, so nothing shapes it, and averaged over all
# positions the previous-token heads score well below 1. A score averaged only over the
# first copy would hide this. Below, a layer-0 head counts as a previous-token head when
# its score over all positions is at least 0.25, more than twice what even weights give.
#
# ### Prefix-matching score
#
# Olsson et al. (2022) test for induction heads on sequences of random tokens repeated
# once. A head's **prefix-matching score** is the weight each query puts on the tokens
# that followed earlier occurrences of its own token, summed over those tokens and
# averaged over the queries that have one; an ideal induction head scores 1. We use 16
# different random tokens repeated once, 32 tokens in all, so each query of the second
# half has exactly one such key:

# %%
show_source(prefix_matching_score)

# %%
for layer in (0, 1):
    print(f"layer {layer} prefix-matching score: {result['prefix_matching'][layer]}")
print("induction heads (layer 1, prefix-matching >= 0.3):", result["induction_heads"])

# %% [markdown]
# ### The OV circuit: what a head writes
#
# Attention decides *where* a head looks; the value and output matrices decide *what* it
# writes. Follow one token from the embedding, through head $h$'s values and output, to
# the unembedding: $W_E W_V^h W_O^h W_U$, a vocab $\times$ vocab matrix that Elhage et
# al. (2021) call the head's **OV circuit**. Row $i$ says how attending to token $i$
# changes each logit. A head that copies raises the logit of the token it attends to: a
# large positive diagonal. Their **copying score** summarises it with the eigenvalues
# $\lambda$ of the matrix, $\sum \lambda / \sum |\lambda|$: 1 for a pure copier, -1 for
# a head that pushes down exactly the tokens it sees. Olsson et al. call a head an
# induction head only if it both prefix-matches and copies.

# %%
show_source(copying_score)

# %%
for layer in (0, 1):
    print(f"layer {layer} copying score: {result['copying'][layer]}")

# %% [markdown]
# Every layer-1 head copies, with a score of at least 0.97: together with prefix
# matching, that makes them induction heads in Olsson et al.'s sense. The layer-0 heads
# score near -1: read directly through the unembedding, what they write lowers the
# logits of the tokens they attend to. That is not their main job, though: what they
# write is read by layer 1's keys, not by the unembedding, and the next measurement
# looks at that path.

# %% [markdown]
# ### The QK circuit, and K-composition: what a head looks for
#
# The scores of head $h$ between a query of token $a$ and a key of token $b$ are $W_E
# W_Q^h W_K^{h\top} W_E^\top / \sqrt{d_k}$, its **QK circuit**. An induction head does
# not look for a token, though, but for what a previous-token head wrote into the key:
# replace the keys' embedding $W_E$ by what layer-0 head $h_0$ writes for each token,
# $W_E W_V^{h_0} W_O^{h_0}$. If the induction head looks for "my token was the one
# before you", this matrix has a bright diagonal. Below, for the strongest induction
# head, its OV circuit and this QK circuit, keys read through the layer-0 head it
# composes with most:

# %%
best = int(np.argmax(result["prefix_matching"][1]))
partner = int(np.argmax(result["k_composition"][:, best]))
ov = ov_circuit(model, 1, best)
qk = qk_circuit(model, 1, best, key_through=(0, partner))
fig, (ax_ov, ax_qk) = plt.subplots(1, 2, figsize=(7.5, 3.6), layout="constrained")
for ax, matrix, title, xlabel, ylabel in [
    (ax_ov, ov, f"OV circuit, layer 1 head {best}", "logit of token", "attended token"),
    (ax_qk, qk, f"QK via layer-0 head {partner}", "token before the key", "query"),
]:
    limit = np.abs(matrix).max()
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set(xticks=range(0, 32, 8), yticks=range(0, 32, 8))
    fig.colorbar(image, ax=ax, shrink=0.8)
plt.show()
save_figure(fig, FIGURES / "09_ov_qk_circuits.png")
diagonal_wins = lambda m: np.mean(m.argmax(axis=1) == np.arange(32))  # noqa: E731
print(f"on the diagonal: OV {diagonal_wins(ov):.2f}, QK {diagonal_wins(qk):.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** The induction head's two circuits: its OV circuit copies (attending to a
# token raises that token's logit) and its QK circuit, read through a previous-token
# head, matches a query with the key right after an earlier copy of it.
#
# <!-- alt: Two 32-by-32 red-and-blue heatmaps. Left, OV circuit of layer 1 head 0,
# attended token against logit of token: a dark red main diagonal on a pale speckled
# background. Right, QK via layer-0 head 3, query against token before the key: also a
# dark red diagonal, on a noisier background with blue cells. -->

# %% [markdown]
# Both diagonals are bright. The OV circuit copies: attending to a token raises that
# token's logit. The QK circuit matches: a query of token $a$ scores highest the key
# whose previous-token head wrote $a$, the key right after an earlier $a$.
#
# How much of what a layer-0 head writes does a layer-1 head's keys read? Elhage et al.
# (2021) measure it with the **K-composition score** $\|W_{QK}^{h_1} W_{OV}^{h_0}\|_F /
# (\|W_{QK}^{h_1}\|_F \|W_{OV}^{h_0}\|_F)$, a number between 0 (the keys ignore
# everything the head writes) and 1. Unrelated random matrices of our sizes score around
# 0.1, so the untrained model is printed too:

# %%
show_source(k_composition_scores)

# %%
print("K-composition, rows: layer-0 heads, columns: layer-1 heads")
print("trained:\n", result["k_composition"])
print("before training:\n", k_composition_scores(initial_model(num_layers=2, seed=0)))
for head in result["induction_heads"]:
    print(f"induction head {head} composes most with layer-0 head "
          f"{int(np.argmax(result['k_composition'][:, head]))}")

# %% [markdown]
# After training, the previous-token heads 2 and 3 compose with every induction head at
# 0.15-0.17, more than any pair before training (0.11-0.14); head 0 stays where it
# began, and head 1, which attends to its own token, falls to about 0.08. The
# differences are small, because the Frobenius norms average over all 64 directions of
# the residual stream, most of which a head does not use; but every induction head reads
# most from head 3, the sharpest previous-token head.

# %% [markdown]
# ## 7. Ablation: switch heads off
#
# A head reaches the residual stream only through its `d_k` rows of $W_o$ (notebook 04).
# Zeroing those rows removes the head and nothing else. `model.forward(tokens,
# ablate=[(layer, head), ...])` does that on copies; `head=None` silences a whole layer.
# The grey line is chance, the orange line the one-layer model.

# %%
# what measure() used:
tokens, n, offset, gap = induction_batch(np.random.default_rng(2024), 512)
previous_heads = result["previous_token_heads"]
induction_heads = result["induction_heads"]
ablations = {"nothing": []}
for head in range(4):
    ablations[f"layer 0, head {head}"] = [(0, head)]
ablations["the previous-token heads"] = [(0, head) for head in previous_heads]
ablations["all of layer 0"] = [(0, None)]
for head in range(4):
    ablations[f"layer 1, head {head}"] = [(1, head)]
ablations["the induction heads"] = [(1, head) for head in induction_heads]
accuracies = {
    name: accuracy(model.forward(tokens, ablate=heads)[0], tokens, n, offset, gap)
    for name, heads in ablations.items()
}

fig, ax = plt.subplots(figsize=(7, 4.6), layout="constrained")
ax.barh(list(accuracies), list(accuracies.values()), color="tab:blue")
ax.axvline(1 / 32, color="gray", linestyle=":", label="chance, 1/32")
ax.axvline(one_layer["accuracy"], color="tab:orange", linestyle="--", label="one layer")
ax.invert_yaxis()
ax.set(xlabel="accuracy on the determined positions", xlim=(0, 1),
       title="Accuracy with heads switched off")
ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.14), ncol=2, fontsize=10)
plt.show()
save_figure(fig, FIGURES / "09_ablation.png")
for name, value in accuracies.items():
    print(f"{name:26s} {value:.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Ablation: switching off one head costs little because the heads back each
# other up, but switching off all previous-token heads, or all induction heads, breaks
# the model.
#
# <!-- alt: Horizontal bar chart of accuracy with heads switched off: nothing, and each
# single head, reach 0.93 to 1.0; the previous-token heads together 0.21 and all of
# layer 0 0.20, left of the orange dashed one-layer line at 0.31; the induction heads
# together 0.02, at the dotted chance line. -->

# %% [markdown]
# Switching off any single head costs little: the previous-token heads back each other
# up, and so do the induction heads. Redundancy like this is common in trained models
# (Michel et al. 2019), and it is why single-head ablations can understate what heads
# do. Switching off the three previous-token heads together drops the accuracy to 0.21,
# as low as silencing all of layer 0 and below the one-layer model, because layer 1 was
# trained to rely on them. Switching off the four induction heads drops it to 0.02,
# chance.
#
# Everything measured so far, as claims about the model, each True or False (the tests
# check the same claims for the shipped model and for a model retrained with another
# seed):

# %%
for name, holds in claims(result).items():
    print(f"{str(holds):5s}  {name}")

# %% [markdown]
# **What it learned, and what it did not.** Type a repeat with letters
# (`encode_letters`), and the model continues it. But every training sequence had its
# first copy at the start, and the model learned that too: put a few other letters in
# front and the same repeat fails.

# %%
for text in ["a b c d x a b c", "q w e r t y u i a b c d x a b c"]:
    predicted = model.predict(encode_letters(text))
    print(f"{text:34s} -> next: {decode_tokens(predicted[-1:])!r}")

# %% [markdown]
# After `a b c`, the first copy says `d`. The model finds it when the copy starts at
# position 0, as in every training sequence, and misses it eight positions later: its
# induction heads look for the earlier copy where they always found it. A model learns
# its training distribution, not the rule we had in mind; training on repeats that start
# anywhere would teach it more.
#
# ## 8. Where does this model's order come from?
#
# Attention alone compares queries with keys by content, and notebook
# [08_positions.ipynb](08_positions.ipynb) shows what follows: without positional
# information, one attention layer cannot tell the order of the tokens it sees, except
# through the causal mask, and with two or more causal layers a model can recover
# positions from the mask alone (Haviv et al. 2022). This model was trained *with*
# positional embeddings, and its previous-token heads use them to find "one step back".
# Take them away (`use_positions=False`) and the circuit breaks:

# %%
print(f"accuracy with positions:    {result['accuracy']:.2f}")
print(f"accuracy without positions: {result['accuracy_without_positions']:.2f}")
_, weights_no_positions = model.forward(tokens, use_positions=False)
print("previous-token scores:", previous_token_score(weights_no_positions[0]))

# %% [markdown]
# Without positions, the layer-0 heads score about 0.1 on the previous token, what even
# weights give: this model never learned to find "one step back" from the mask alone,
# and it had no reason to, since its positional embeddings gave it the answer.

# %% [markdown]
# ## Summary
#
# - The backward pass of attention is four matrix-product vjps and one softmax vjp;
#   masks need no code, because a zero weight passes no gradient. Central differences
#   check it to about $10^{-10}$, the floor set by rounding and truncation.
# - One layer cannot copy "what followed my token last time"; two can, by K-composition:
#   a previous-token head in layer 0 writes each token's predecessor, and an induction
#   head in layer 1 matches its query against it and copies the key's token.
# - Training finds this circuit after a plateau, in a sudden phase change.
# - The field's measurements say the same thing in numbers: prefix matching and copying
#   for the induction heads, previous-token scores that are sharp only where the loss
#   needs them, K-composition pointing from each induction head to a previous-token
#   head, and ablations that break the model when either kind of head is removed.

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


# %%
def check_exercise_1(function):
    rng = np.random.default_rng(10)
    scores = rng.standard_normal((3, 2, 5)) * 2
    scores[0, 1, [1, 3]] = -np.inf  # a masked row: two keys hidden
    d_weights = rng.standard_normal((3, 2, 5))
    try:
        got = function(softmax(scores), d_weights)
    except Exception as error:  # a near miss should get a hint, not a traceback
        hint = f"your function raised {error!r}; it gets arrays of shape (3, 2, 5)"
        raise AssertionError(hint) from None
    if got is ...:
        return "Exercise 1: not yet. Replace the ... and run the cell again."
    got = np.asarray(got, dtype=float)
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
    return "Exercise 1: correct."


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


# %%
def check_exercise_2(answer):
    if answer is ...:
        return "Exercise 2: not yet. Replace the ... and run the cell again."
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
    return "Exercise 2: correct."


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
# **Exercise 3 (predict, then measure): one induction head left.** Switch off every
# layer-1 induction head but the last one, `result["induction_heads"][-1]`. One head
# alone did not matter; does one head alone suffice? Predict the accuracy on the
# determined positions: `"above 0.9"`, `"between 0.4 and 0.9"` or `"below 0.4"`. Then
# check it with
# `accuracy(model.forward(tokens, ablate=...)[0], tokens, n, offset, gap)`.

# %%
prediction_3 = ...  # "above 0.9", "between 0.4 and 0.9" or "below 0.4"


# %%
def check_exercise_3(answer):
    if answer is ...:
        return "Exercise 3: not yet. Replace the ... and run the cell again."
    choices = ("above 0.9", "between 0.4 and 0.9", "below 0.4")
    assert answer in choices, f"answer with one of {choices}; got {answer!r}"
    others = [(1, head) for head in result["induction_heads"][:-1]]
    measured = accuracy(model.forward(tokens, ablate=others)[0], tokens, n, offset, gap)
    truth = "between 0.4 and 0.9"
    truth = "above 0.9" if measured > 0.9 else "below 0.4" if measured < 0.4 else truth
    assert answer == truth, (
        "not quite: measure it with accuracy(model.forward(tokens, ablate=...)[0], ...)"
    )
    return "Exercise 3: correct."


print(check_exercise_3(prediction_3))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Between: about one half. One induction head alone still finds the token after the
# earlier copy, but its weight there is not always decisive; the heads were trained
# together, and each learned on the assumption that the others help. Which head you keep
# matters: try each in turn. Removing one head costs almost nothing, removing all costs
# everything, and the curve in between is not a straight line.
solution_prediction_3 = "between 0.4 and 0.9"
print(check_exercise_3(solution_prediction_3))

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
#   prefix-matching score, the in-context learning score, the phase change, and the
#   ablations this notebook repeats at toy scale.
# - Elhage, N., Nanda, N., Olsson, C., Henighan, T., Joseph, N., Mann, B., Askell, A.,
#   Bai, Y., Chen, A., Conerly, T., et al. (2021). *A Mathematical Framework for
#   Transformer Circuits.* Transformer Circuits Thread.
#   [transformer-circuits.pub/2021/framework](https://transformer-circuits.pub/2021/framework/index.html).
#   Attention-only transformers, the QK and OV circuits, the copying score and
#   K-composition.
# - Haviv, A., Ram, O., Press, O., Izsak, P. and Levy, O. (2022). *Transformer Language
#   Models without Positional Encodings Still Learn Positional Information.* Findings of
#   EMNLP 2022. [arXiv:2203.16634](https://arxiv.org/abs/2203.16634). Causal models of
#   several layers recover positions from the mask alone.
# - Kingma, D. P. and Ba, J. (2015). *Adam: A Method for Stochastic Optimization.* ICLR
#   2015. [arXiv:1412.6980](https://arxiv.org/abs/1412.6980). Algorithm 1 is
#   `Adam.step`.
# - CS231n: Convolutional Neural Networks for Visual Recognition, Stanford.
#   *Backpropagation, Intuitions* and *Neural Networks Part 3: gradient checks*
#   ([cs231n.github.io/optimization-2](https://cs231n.github.io/optimization-2/),
#   [cs231n.github.io/neural-networks-3](https://cs231n.github.io/neural-networks-3/#gradcheck)).
#   Forward/backward pairs, central differences, and relative errors.
# - Michel, P., Levy, O. and Neubig, G. (2019). *Are Sixteen Heads Really Better than
#   One?* NeurIPS 2019. [arXiv:1905.10650](https://arxiv.org/abs/1905.10650). Trained
#   heads are often redundant, as the single-head ablations here are.
#
# ---
# The explorer ([explore.ipynb](explore.ipynb)) can switch to the trained weights: type
# `a b c d x a b c` and watch layer 1 light up on the repeat.
