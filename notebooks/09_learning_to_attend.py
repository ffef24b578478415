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
# Every weight in notebooks 01-06 was random, and notebook 04 warned more than once that its
# heatmaps "mean nothing yet". This notebook trains the module. It derives the backward pass
# of multi-head attention by hand, checks it against finite differences, and uses it to train
# a two-layer, attention-only model in NumPy. Two heads then discover a small algorithm of
# their own: a **previous-token head** and an **induction head**, the circuit that Olsson et
# al. (2022) found in every Transformer they trained.
#
# **In this notebook you will learn**
#
# - what a vector-Jacobian product is, and the backward pass of the softmax, of attention
#   (masks included), of the head reshapes and of the projections;
# - how to check a gradient with central differences, and how small the error should be;
# - a task that one attention layer cannot solve and two can, and why;
# - how training turns random heatmaps into two readable patterns, and how to measure them;
# - how to test what a head does by switching it off (ablation);
# - where a Transformer's sense of order comes from: attention alone has none.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import matplotlib.pyplot as plt
import numpy as np

from mhattn import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention, softmax
from mhattn.grad import attention_vjp, linear_vjp, multihead_vjp, softmax_vjp
from mhattn.model import (
    accuracy,
    decode_tokens,
    encode_letters,
    induction_batch,
    load_trained,
    measure,
    targets,
)
from mhattn.plots import plot_heads
from mhattn.source import show_source
from mhattn.train import Adam, initial_model, loss_and_grads, train

np.set_printoptions(precision=2, suppress=True)

# %% [markdown]
# ## 1. The backward pass, one step at a time
#
# Training needs the gradient of a scalar loss $L$ with respect to every weight. The chain
# rule computes it backwards through the forward steps. Each step $y = f(x)$ receives
# $\bar y = \partial L / \partial y$, an array of the same shape as $y$, and must return
# $\bar x = \partial L / \partial x$, of the shape of $x$:
#
# $$
# \bar x_j = \sum_i \bar y_i \, \frac{\partial y_i}{\partial x_j}
# \qquad\text{that is}\qquad \bar x = J^\top \bar y .
# $$
#
# This map $\bar y \mapsto \bar x$ is the step's **vector-Jacobian product** (vjp). We never
# build the Jacobian $J$: for one softmax row of length $n$ it has $n^2$ entries, while the
# vjp costs $O(n)$. `mhattn.grad` has one vjp for each forward function, to read side by side
# with it, in the style of CS231n's `layer_forward` / `layer_backward` pairs.
#
# ### The softmax
#
# With $p = \operatorname{softmax}(s)$, $\partial p_i / \partial s_j = p_i(\delta_{ij} - p_j)$.
# Multiply by $\bar p_i$ and sum over $i$:
#
# $$
# \bar s_j = p_j \Big(\bar p_j - \sum_i \bar p_i\, p_i\Big).
# $$
#
# Two things follow. Each row of $\bar s$ sums to zero: adding the same number to every
# score leaves the softmax unchanged, so the gradient has no component in that direction.
# And where $p_j = 0$, a masked key, the gradient is **exactly** zero, not merely small.

# %%
show_source(softmax_vjp)

# %% [markdown]
# ### Attention
#
# The forward pass is $S = QK^\top / \sqrt{d_k}$, $P = \operatorname{softmax}(S)$, $O = PV$.
# Every step is a matrix product or the softmax, and the vjp of $C = AB$ is
# $\bar A = \bar C B^\top$, $\bar B = A^\top \bar C$ (check the shapes: that is the only way
# they fit). Backwards, one line per step:
#
# $$
# \bar P = \bar O V^\top,\quad \bar V = P^\top \bar O,\quad
# \bar S = \operatorname{softmax\_vjp}(P, \bar P),\quad
# \bar Q = \bar S K / \sqrt{d_k},\quad \bar K = \bar S^\top Q / \sqrt{d_k}.
# $$
#
# The masks need no code of their own. A masked key has $P_{ij} = 0$, so $\bar S_{ij} = 0$:
# it neither sends nor receives gradient through that entry. A query whose keys are all masked
# has a row of zeros in $P$ and gets $\bar Q_i = 0$ exactly.

# %%
show_source(attention_vjp)

# %% [markdown]
# ### Heads and projections
#
# `split_heads` and `combine_heads` only move numbers around, so their vjps move the
# gradients back: the vjp of `split_heads` is `combine_heads`, and the other way round. A
# projection $y = xW$ with one $W$ shared by every token has $\bar x = \bar y W^\top$ and
# $\bar W = \sum_t x_t^\top \bar y_t$, a sum over all tokens of the batch, which is one matrix
# product once the tokens are laid out as rows:

# %%
show_source(linear_vjp)

# %% [markdown]
# The whole module is the forward pass of notebook 04, with every intermediate kept, and a
# `backward` function that runs the steps in reverse. One detail saves a copy: the fused
# projection's columns are `num_heads + 2 * num_kv_heads` heads side by side, so the three
# gradients $\bar Q, \bar K, \bar V$ are joined along the head axis and put back into columns
# with a single `split_heads_vjp`. Grouped-query attention (notebook 04's `num_kv_heads`)
# adds one more step: a key head shared by several query heads collects the sum of their
# gradients.

# %%
show_source(multihead_vjp)

# %% [markdown]
# `MultiHeadAttention.vjp(x, mask)` wraps it with the module's argument checks: it returns
# `output, weights, backward`, and `backward(d_output)` returns a dict of gradients for
# `"x"`, `"W_qkv"` and `"W_o"`, each of the shape and dtype of what it differentiates.
# Nothing is stored on the module, so several threads may train through it at once.

# %% [markdown]
# ## 2. Check it: central differences
#
# A hand-written gradient is a claim; a numerical derivative is an independent check. For
# one entry $\theta$ of a weight, the central difference
#
# $$
# \frac{L(\theta + h) - L(\theta - h)}{2h} = \frac{\partial L}{\partial \theta}
# + \frac{h^2}{6}\frac{\partial^3 L}{\partial \theta^3} + \dots
# $$
#
# errs by about $h^2$ (the truncated Taylor series) plus $\epsilon |L| / h$ (each $L$ is
# rounded to float64, $\epsilon \approx 2.2 \times 10^{-16}$). With $h = 10^{-6}$ both are near
# $10^{-10}$ of the gradient's scale. Any bug in the formulas shows up far above that: a
# wrong axis, a forgotten $1/\sqrt{d_k}$ or a missing transpose all give errors of order 1.
#
# The check below takes the loss $L = \sum \text{output} \odot G$ for a random $G$, so that
# $\partial L / \partial\,\text{output} = G$, and compares `backward(G)` with central
# differences of the module's **forward** (not of anything in `mhattn.grad`) at random
# entries of `x`, `W_qkv` and `W_o`. The mask is causal and also hides the last two tokens of
# the second sequence, as queries and as keys, so two rows see nothing at all.


# %%
def gradient_check(mha, x, mask, entries=30, h=1e-6, seed=0):
    """Largest error of backward's gradients against central differences, relative to the gradient's scale."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal(x.shape)
    grads = mha.vjp(x, mask)[2](G)
    arrays = {"x": x, "W_qkv": mha.W_qkv, "W_o": mha.W_o}  # perturbed in place, then restored
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
            worst = max(worst, abs(numeric - grads[name][index]) / np.abs(grads[name]).max())
        errors[name] = worst
    return errors


mha = MultiHeadAttention(d_model=16, num_heads=4, seed=0)
x = np.random.default_rng(1).standard_normal((2, 6, 16))
keep = padding_mask([6, 4], 6)  # (2, 1, 1, 6): the second sequence has 4 real tokens
mask = causal_mask(6) & keep & keep.transpose(0, 1, 3, 2)  # (2, 1, 6, 6): padded queries see nothing
for name, error in gradient_check(mha, x, mask).items():
    print(f"{name:6s} relative error below 1e-7: {error < 1e-7}")

# %% [markdown]
# The errors are around $10^{-10}$ on every machine we tried; we print only the verdict,
# because the last digits depend on the BLAS library. The tests go further
# (`tests/test_grad.py`): every entry, several shapes and masks, grouped queries, and PyTorch's
# autograd with the same weights, which agrees to $10^{-10}$ in float64.
#
# The masks give exact zeros, as derived. The two padded tokens of the second sequence can
# neither see nor be seen, so no gradient reaches them:

# %%
output, weights, backward = mha.vjp(x, mask)
d_x = backward(np.ones_like(output))["x"]
print("gradient reaching the two padded tokens is exactly zero:", np.all(d_x[1, 4:] == 0.0))
print("gradient reaching every real token is non-zero:        ", np.all(d_x[1, :4] != 0.0))

# %% [markdown]
# ## 3. A task for attention: induction
#
# Each training sequence has 32 tokens from a vocabulary of 32. Its first $n$ tokens are
# random, with $n$ drawn between 8 and 16 for each sequence; the next $n$ repeat them; the
# rest are random again. On the repeated half, the next token is predictable: it is whatever
# followed the current token the first time. Here is one sequence, written with letters
# (`decode_tokens`; ids 26-31 have no letter and show as `<id>`):

# %%
tokens, n = induction_batch(np.random.default_rng(3), 1)
print(f"n = {n[0]}")
print("first copy: ", decode_tokens(tokens[0, : n[0]]))
print("second copy:", decode_tokens(tokens[0, n[0] : 2 * n[0]]))
print("the rest:   ", decode_tokens(tokens[0, 2 * n[0] :]))

# %% [markdown]
# We score next-token accuracy at positions $t$ from $n$ to $2n-2$, each predicting token
# $t+1$, and train with the cross-entropy at the same positions. Because $n$ changes from
# sequence to sequence, no fixed offset finds the earlier copy: the model must find it by
# content.
#
# **The model** is the smallest Transformer that can hold the algorithm: token and position
# embeddings, attention layers added to a residual stream, and an unembedding. No MLP, no
# LayerNorm, no biases, and every layer is the chapter's own `MultiHeadAttention`
# (`d_model = 64`, 4 heads, causal mask):
#
# ```
# h = embed[tokens] + pos[:seq_len]
# for each layer: h = h + MultiHeadAttention(h, causal_mask)[0]
# logits = h @ unembed
# ```
#
# **Why one layer cannot do it.** To predict token $t+1$, position $t$ must find the key
# $j = t - n + 1$, the token *after* the earlier copy of token $t$. But the key at $j$ holds
# token $j$ and position $j$ only, and neither says "my predecessor was token $t$". A single
# layer can find the earlier copy itself (same token), but its value is the copy, the one
# token we already know. The information that identifies $j$ sits one position to the left of
# $j$, and attention can only move information between positions, one layer at a time.
#
# **Why two layers can.** Layer 0 copies each token's predecessor into its position (a
# previous-token head). Now the key at $j$ does say "my predecessor was token $t$", and a
# layer-1 head whose query asks "whose predecessor is my token?" lands on $j$ and copies its
# token: an induction head. A one-layer model trained exactly the same way ships with the
# package:

# %%
one_layer = measure(load_trained(num_layers=1))
print(f"one layer, accuracy on the repeated half: {one_layer['accuracy']:.2f}")

# %% [markdown]
# Less than half right. It learns what one layer can: the answer is one of the tokens seen
# earlier in the sequence, and a position-based guess at where. Chance would be 1/32.
#
# ## 4. Training
#
# One training step runs the model forward through each layer's `vjp`, takes the
# cross-entropy and its gradient (softmax minus one-hot), and runs the chain rule back
# through the layers. The residual connection $h \leftarrow h + \text{layer}(h)$ means the
# gradient reaching a layer's input is the gradient of its output *plus* what flows back
# through the layer. The embedding lookup is a product with one-hot rows, so its gradient
# sums the gradients of every position that looked a token up:

# %%
show_source(loss_and_grads)

# %% [markdown]
# Adam (Kingma and Ba, 2015) then moves every weight. It divides a running mean of the
# gradient by the square root of a running mean of its square, so every weight takes steps of
# about the learning rate, whatever the scale of its gradient:

# %%
show_source(Adam.step)

# %% [markdown]
# `python -m mhattn.train --layers 2 --seed 0 --out induction.npz` runs 1500 such steps with a
# progress bar: about 20 seconds on a 2-core laptop, and every target is met after about 250.
# The trained model ships with the package, so this notebook loads it. Set `RETRAIN = True` to train it here instead. The run is seeded, but
# BLAS libraries round differently on different machines and training amplifies that, so
# your numbers may differ a little from the stored ones; the targets below should still pass.

# %%
RETRAIN = False  # True: train from scratch here (about 20 s); False: load the shipped model

if RETRAIN:
    model = train(num_layers=2, seed=0, progress=True)
else:
    model = load_trained()
print(model)

# %% [markdown]
# The checkpoint stores its training history, so the curve below is the one it was trained
# with. Note the shape of the accuracy: for 100 steps it creeps up to about a quarter, then
# within the next 100 it jumps above 0.9. Olsson et al. saw the same sudden phase change in
# large models, at the moment their induction heads formed. (The first loss is above
# $\log 32$: the random model is confidently wrong.)

# %%
history = model.history
fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
ax_loss.plot(history["step"], history["loss"])
ax_loss.set(xlabel="step", ylabel="cross-entropy (one batch)", title="loss")
ax_loss.axhline(np.log(32), color="gray", linestyle=":", label="uniform guess, log 32")
ax_loss.legend()
ax_acc.plot(history["step"], history["accuracy"])
ax_acc.set(xlabel="step", ylabel="accuracy (one batch)", title="accuracy on the repeated half", ylim=(0, 1))
plt.show()

# %% [markdown]
# ## 5. Before and after: every head
#
# Here are all eight heads on one sequence, before training (the random weights that
# `train(seed=0)` starts from) and after. The sequence repeats its first 8 tokens
# (letters only, so that every label is a letter).

# %%
rng = np.random.default_rng(5)
first = rng.integers(0, 26, size=8)
sequence = np.concatenate([first, first, rng.integers(0, 26, size=4)])  # 8 random, the same 8, 4 more
labels = decode_tokens(sequence).split()
before = initial_model(num_layers=2, seed=0)
_, weights_before = before.forward(sequence)
_, weights_after = model.forward(sequence)

for layer in (0, 1):
    plot_heads(weights_before[layer], labels, title=f"layer {layer}, before training", annotate=False,
               figsize=(13, 3.6))
    plt.show()
    plot_heads(weights_after[layer], labels, title=f"layer {layer}, after training", annotate=False,
               figsize=(13, 3.6))
    plt.show()

# %% [markdown]
# Before training, every head scatters its weight over the past at random. After training,
# two layer-0 heads (0 and 1) are sharp lines just below the diagonal: each query attends to
# the token **one step back**. These are previous-token heads; heads 2 and 3 do a blurred
# version of the same. In layer 1, from the second copy on (rows 8-15), heads 0, 1 and 3
# light up a diagonal 7 columns left of the main one: the query at $t$ attends to $t - 8 + 1$,
# the position **after** the earlier copy of its own token. Those are the induction heads.
# In the first 8 rows there is no earlier copy, and they look elsewhere. Head 2 of layer 1
# does something else.
#
# ## 6. Measuring the heads
#
# Pictures of one sequence can mislead, so we measure on 512 fresh sequences (a seed the
# training never saw):
#
# - **previous-token score** of a head: its average weight on key $t-1$, over first-half
#   queries $t$ from 1 to $n-1$ (the keys an induction head will read);
# - **induction score**: its average weight on key $t-n+1$, over queries $t$ from $n$ to
#   $2n-2$;
# - **duplicate-token score**: its average weight on key $t-n$, the earlier copy of the same
#   token. A duplicate-token head in layer 0 would be another way to build the circuit.

# %%
result = measure(model)
print(f"accuracy on the repeated half: {result['accuracy']:.2f}")
for layer in (0, 1):
    print(f"layer {layer}  previous-token {result['previous_token'][layer]}  "
          f"induction {result['induction'][layer]}  duplicate-token {result['duplicate_token'][layer]}")

# %% [markdown]
# Layer 0 built previous-token heads, not duplicate-token heads: the duplicate-token scores
# are near zero. Why these? A previous-token head's pattern is purely positional ("attend
# one step back"), the same in every sequence whatever $n$ and whatever the tokens, so its
# gradient adds up across every sequence and position from the first step. And the loss,
# counted on the second copy only, rewards whatever helps the induction head's *keys*, which
# sit in the first copy, where a duplicate-token head has nothing to find (no token there has
# appeared before). A duplicate-token route would work from the query side instead, and would
# also have to learn not to attend to itself, since the best match for a token is the token.
# Every seed we trained chose the previous-token route.
#
# ## 7. Ablation: switch heads off
#
# A head reaches the residual stream only through its `d_k` rows of $W_o$ (notebook 04).
# Zeroing those rows removes the head and nothing else. `model.forward(tokens, ablate=[(layer,
# head), ...])` does that on copies; `head=None` silences a whole layer.

# %%
tokens, n = induction_batch(np.random.default_rng(2024), 512)  # the sequences measure() used
previous_heads = [int(head) for head in np.flatnonzero(result["previous_token"][0] >= 0.6)]
ablations = {"nothing": []}
for head in previous_heads:
    ablations[f"layer 0, head {head} (previous token)"] = [(0, head)]
ablations["every layer-0 previous-token head"] = [(0, head) for head in previous_heads]
ablations["all of layer 0"] = [(0, None)]
for head in range(4):
    ablations[f"layer 1, head {head}"] = [(1, head)]
ablations["every layer-1 induction head"] = [(1, head) for head in result["induction_heads"]]
accuracies = {name: accuracy(model.forward(tokens, ablate=heads)[0], tokens, n) for name, heads in ablations.items()}

fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
ax.barh(list(accuracies), list(accuracies.values()), color="tab:blue")
ax.invert_yaxis()
ax.set(xlabel="accuracy on the repeated half", xlim=(0, 1), title="accuracy with heads switched off")
plt.show()
for name, value in accuracies.items():
    print(f"{name:40s} {value:.2f}")

# %% [markdown]
# Either previous-token head alone can be spared: the other still copies each token's
# predecessor. Both together cost about half the accuracy, and all of layer 0 even more: with
# no predecessors to match, the model falls below the one-layer model, because its layer 1
# was trained to rely on layer 0. In layer 1, zeroing any *one* head barely matters: three
# heads do the same job, and any two of them suffice. Zeroing all three induction heads
# destroys the accuracy. Redundancy like this is common in trained models (Michel et al.
# 2019), and it is why single-head ablations can understate what heads do.
#
# The issue this notebook answers set targets for the shipped model and for any retrain; they
# are checked here and, with every seed's numbers, in `tests/test_model.py`:

# %%
for name, passed in targets(result).items():
    print(f"{'pass' if passed else 'FAIL'}  {name}")

# %% [markdown]
# **What it learned, and what it did not.** Type a repeat with letters (`encode_letters`), and
# the model continues it. But every training sequence had its first copy at the start, and
# the model learned that too: put a few other letters in front and the same repeat fails.

# %%
for text in ["a b c d x a b c", "q w e r t y u i a b c d x a b c"]:
    tokens_typed = encode_letters(text)
    predicted = model.predict(tokens_typed)
    print(f"{text:34s} -> after the last token it predicts {decode_tokens(predicted[-1:])!r}")

# %% [markdown]
# After `a b c`, the first copy says `d`. The model finds it when the copy starts at position
# 0, as in every training sequence, and misses it eight positions later: its induction heads
# look for the earlier copy where they always found it. A model learns its training
# distribution, not the rule we had in mind; training on repeats that start anywhere would
# teach it more.
#
# ## 8. Where does order come from?
#
# Attention compares every query with every key by content. Nothing in
# $\operatorname{softmax}(QK^\top/\sqrt{d_k})V$ knows which token came first. So shuffling
# the tokens only shuffles the outputs: attention without a mask is **permutation
# equivariant**. Check it on the trained layer 0, fed token embeddings without positions:

# %%
letters = encode_letters("a b c d x a b c")
shuffle = np.random.default_rng(0).permutation(len(letters))
x_tokens = model.embed[letters][None]  # (1, 8, d_model): no positional embeddings
layer0 = model.layers[0]
out, _ = layer0(x_tokens)
out_shuffled, _ = layer0(x_tokens[:, shuffle])
print("shuffle, then attend == attend, then shuffle:", np.allclose(out_shuffled, out[:, shuffle]))
with_positions = x_tokens + model.pos[:8]
out_positions, _ = layer0(with_positions)
out_positions_shuffled, _ = layer0(x_tokens[:, shuffle] + model.pos[:8])
print("the same with positions added:              ", np.allclose(out_positions_shuffled, out_positions[:, shuffle]))

# %% [markdown]
# The order comes from two places only: the positional embeddings, and the causal mask (a
# token sees the tokens before it, but not in which order they came). Take the positions
# away from the trained model and the previous-token head cannot find "one step back" any
# more; the whole circuit fails:

# %%
print(f"accuracy with positions:    {accuracy(model.forward(tokens)[0], tokens, n):.2f}")
print(f"accuracy without positions: {accuracy(model.forward(tokens, use_positions=False)[0], tokens, n):.2f}")

# %% [markdown]
# ## Exercises
#
# **Exercise 1 (write): the softmax's vjp, your way.** Write `my_softmax_vjp(weights,
# d_weights)` for rows of any length, without `mhattn.grad`. One route: build each row's
# Jacobian $J = \operatorname{diag}(p) - p p^\top$ and multiply, $\bar s = J^\top \bar p$. The
# checker compares your function with central differences of `mhattn.softmax`.


# %%
def my_softmax_vjp(weights, d_weights):
    """weights = softmax(scores) of shape (..., n); d_weights the same shape; return d_scores."""
    return ...  # your code here


# %%
def check_exercise_1(function):
    rng = np.random.default_rng(10)
    scores = rng.standard_normal((3, 2, 5)) * 2
    scores[0, 1, [1, 3]] = -np.inf  # a masked row: two keys hidden
    d_weights = rng.standard_normal((3, 2, 5))
    got = function(softmax(scores), d_weights)
    if got is ...:
        return "Exercise 1: not yet. Replace the ... with your answer and run the cell again."
    got = np.asarray(got)
    assert got.shape == scores.shape, f"return an array of the scores' shape {scores.shape}; got {got.shape}"
    h = 1e-6
    numeric = np.zeros_like(scores)
    for index in zip(*np.nonzero(np.isfinite(scores)), strict=True):
        up, down = scores.copy(), scores.copy()
        up[index] += h
        down[index] -= h
        numeric[index] = np.sum((softmax(up) - softmax(down)) * d_weights) / (2 * h)
    assert np.allclose(got.sum(axis=-1), 0.0, atol=1e-12), (
        "each row of d_scores must sum to zero: subtract the weighted mean sum_i d_weights_i p_i"
    )
    assert np.allclose(got, numeric, rtol=0, atol=1e-7), (
        "close, but not the derivative: the Jacobian is p_i (delta_ij - p_j); check which axis you sum over"
    )
    return "Exercise 1: d_scores = p (d_weights - sum(d_weights p)), masked keys exactly 0. correct."


print(check_exercise_1(my_softmax_vjp))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true}
# The Jacobian route: n x n per row, O(n^2), fine for checking and wasteful for training.
# J[i, j] = d p_i / d s_j = p_i (delta_ij - p_j); d_scores_j = sum_i d_weights_i J[i, j].
def solution_softmax_vjp(weights, d_weights):
    p = weights[..., :, None]  # (..., n, 1)
    jacobian = np.eye(weights.shape[-1]) * p - p * weights[..., None, :]  # (..., n, n): diag(p) - p p^T
    return np.einsum("...i,...ij->...j", d_weights, jacobian)  # (..., n): J^T d_weights


print(check_exercise_1(solution_softmax_vjp))

# %% [markdown]
# **Exercise 2 (predict): a forgotten scale.** A common bug: the backward pass forgets the
# $1/\sqrt{d_k}$ that the forward pass applied to the scores. `buggy_attention_vjp` below has
# exactly that bug. Before running anything, predict: which of its three gradients, `"dQ"`,
# `"dK"`, `"dV"`, fail a gradient check? Write them as a set, e.g. `{"dV"}`.


# %%
def buggy_attention_vjp(Q, K, V, weights, d_output):
    d_weights = d_output @ V.swapaxes(-1, -2)
    dV = weights.swapaxes(-1, -2) @ d_output
    d_scores = softmax_vjp(weights, d_weights)
    dQ = d_scores @ K  # the bug: no / sqrt(d_k)
    dK = d_scores.swapaxes(-1, -2) @ Q  # the bug: no / sqrt(d_k)
    return dQ, dK, dV


prediction = ...  # a set of names, e.g. {"dV"}


# %%
def check_exercise_2(answer):
    if answer is ...:
        return "Exercise 2: not yet. Replace the ... with your answer and run the cell again."
    rng = np.random.default_rng(11)
    Q, K, V, G = (rng.standard_normal((2, 5, 4)) for _ in range(4))
    _, weights = scaled_dot_product_attention(Q, K, V, causal_mask(5))
    buggy = dict(zip(("dQ", "dK", "dV"), buggy_attention_vjp(Q, K, V, weights, G), strict=True))
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
    assert set(answer) == failing, (
        f"not quite: the check fails for {sorted(failing)}. Which gradients pass through the scores S = QK^T / sqrt(d_k)?"
    )
    return f"Exercise 2: {sorted(failing)} fail, each too large by sqrt(d_k) = 2; dV never meets the scale. correct."


print(check_exercise_2(prediction))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true}
# dQ and dK: the scale sits between them and the loss (S = Q K^T / sqrt(d_k)), so both are
# sqrt(d_k) times too large. dV = P^T dO never goes through the scores, so it is right. A
# gradient check catches the bug at once; the training might not: Adam divides every step by
# the gradient's own scale, so a constant factor of 2 would barely change what it learns.
solution_prediction = {"dQ", "dK"}
print(check_exercise_2(solution_prediction))

# %% [markdown]
# **Exercise 3 (predict, then measure): one induction head left.** Switch off every layer-1
# induction head but the last one, `result["induction_heads"][-1]`. One head alone did not
# matter; does one head alone suffice? Predict the accuracy on the repeated half: `"above
# 0.9"`, `"between 0.4 and 0.9"` or `"below 0.4"`. Then check it with
# `accuracy(model.forward(tokens, ablate=...)[0], tokens, n)`.

# %%
prediction_3 = ...  # "above 0.9", "between 0.4 and 0.9" or "below 0.4"


# %%
def check_exercise_3(answer):
    if answer is ...:
        return "Exercise 3: not yet. Replace the ... with your answer and run the cell again."
    others = [(1, head) for head in result["induction_heads"][:-1]]
    measured = accuracy(model.forward(tokens, ablate=others)[0], tokens, n)
    truth = "above 0.9" if measured > 0.9 else "below 0.4" if measured < 0.4 else "between 0.4 and 0.9"
    assert answer == truth, f"not quite: the measured accuracy is {measured:.2f}, {truth}"
    return f"Exercise 3: {truth} ({measured:.2f}): one head does most of the job, but not all of it. correct."


print(check_exercise_3(prediction_3))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true}
# Between: about 0.8. The last induction head still finds the token after the earlier copy
# most of the time, but alone its weight on that key is not always decisive; the heads were
# trained together, and each learned on the assumption that the others help. Removing one
# head costs almost nothing, removing all costs everything, and the curve in between is not
# a straight line.
solution_prediction_3 = "between 0.4 and 0.9"
print(check_exercise_3(solution_prediction_3))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, L.
#   and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). The layer this notebook trains.
# - Olsson, C., Elhage, N., Nanda, N., Joseph, N., DasSarma, N., Henighan, T., Mann, B.,
#   Askell, A., Bai, Y., Chen, A., et al. (2022). *In-context Learning and Induction Heads.*
#   Transformer Circuits Thread.
#   [transformer-circuits.pub/2022/in-context-learning-and-induction-heads](https://transformer-circuits.pub/2022/in-context-learning-and-induction-heads/index.html).
#   Induction heads, the phase change in the loss curve, and the ablations this notebook
#   repeats at toy scale.
# - Elhage, N., Nanda, N., Olsson, C., Henighan, T., Joseph, N., Mann, B., Askell, A., Bai, Y.,
#   Chen, A., Conerly, T., et al. (2021). *A Mathematical Framework for Transformer Circuits.*
#   Transformer Circuits Thread.
#   [transformer-circuits.pub/2021/framework](https://transformer-circuits.pub/2021/framework/index.html).
#   Attention-only transformers, the residual stream, and why two layers (K-composition) can
#   do what one cannot.
# - Kingma, D. P. and Ba, J. (2015). *Adam: A Method for Stochastic Optimization.* ICLR 2015.
#   [arXiv:1412.6980](https://arxiv.org/abs/1412.6980). Algorithm 1 is `Adam.step`.
# - CS231n: Convolutional Neural Networks for Visual Recognition, Stanford. *Backpropagation,
#   Intuitions* and *Neural Networks Part 3: gradient checks*
#   ([cs231n.github.io/optimization-2](https://cs231n.github.io/optimization-2/),
#   [cs231n.github.io/neural-networks-3](https://cs231n.github.io/neural-networks-3/#gradcheck)).
#   Forward/backward pairs, central differences, and relative errors.
# - Michel, P., Levy, O. and Neubig, G. (2019). *Are Sixteen Heads Really Better than One?*
#   NeurIPS 2019. [arXiv:1905.10650](https://arxiv.org/abs/1905.10650). Trained heads are
#   often redundant, as the single-head ablations here are.
#
# ---
# The explorer ([explore.ipynb](explore.ipynb)) can switch to the trained weights: type
# `a b c d x a b c` and watch layer 1 light up on the repeat.
