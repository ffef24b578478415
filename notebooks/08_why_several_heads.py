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
# # 8. Why several heads?
#
# Notebooks 03 and 04 split one attention layer into heads and said that the heads
# "attend to different things". Nothing so far showed what one head *struggles* to do
# that several do at once. This notebook shows such a task: with a few seconds of
# training, a one-layer model with one head fails it, and the same model with two or
# four heads, and exactly the same number of parameters, solves it. The training is
# notebook 07's: its backward pass, its cross-entropy and its Adam, on a smaller model
# with a learned position table (notebook 06).
#
# **In this notebook you will learn**
#
# - why one head gives every query one weighted average of the values, and what a
#   linear readout cannot get back from that average;
# - a small task that needs two positions at once: report the previous token *and* the
#   token two back;
# - that one head, trained as long as the others, gets one of the two and mostly misses
#   the other, while two or four heads, with the same `W_qkv` and `W_o`, get both;
# - how to read what each trained head does from its attention weights;
# - the other side of the story: trained models often keep working after losing heads.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn.learn import (
    TwoSlotModel,
    evaluation_batch,
    experiment,
    head_probes,  # the listings below show their code
    logits_with_weights,
    mean_weights,
    offset_profile,
    slot_accuracy,
    slot_loss_and_grads,
    two_slot_batch,
    without_heads,
)
from mhattn.learn import several_heads as sh
from mhattn.pictures import exercise, not_yet, plot_attention, save_figure, show_source

np.set_printoptions(precision=2, suppress=True)
FIGURES = Path("..") / "figures"  # the notebooks run in notebooks/

# %% [markdown]
# ## 1. One head, one average
#
# Vaswani et al. (2017) give the reason for several heads in one sentence: "Multi-head
# attention allows the model to jointly attend to information from different
# representation subspaces at different positions. With a single attention head,
# averaging inhibits this." Here is what the averaging is. One head turns the scores of
# query $t$ into one row of weights $p_{t,0}, \dots, p_{t,t}$ with a softmax, and its
# output is
#
# $$
# o_t = \sum_j p_{t,j}\, v_j, \qquad p_{t,j} \ge 0, \qquad \sum_j p_{t,j} = 1 .
# $$
#
# That is a *convex combination* of the values: a point between them, never more than
# one mixture. Suppose position $t$ must report two tokens, $a$ at $t - 1$ and $b$ at
# $t - 2$. If the row puts all its weight on $t - 1$, the output holds $a$ and nothing
# of $b$. If it splits the weight, the output is close to
# $\alpha\, v(a) + \beta\, v(b)$: with equal shares that sum is the same for $(a, b)$
# as for $(b, a)$, so nothing in it says which token came first (each value also
# carries its position, but the positions are $t - 1$ and $t - 2$ whichever token sits
# where). With unequal shares that are the same for every sequence, a *linear* readout
# (ours) can name the token with the larger share, but it cannot reliably name the one
# with the smaller share: whatever its weights, some sequences defeat it. A nonlinear
# readout could decode the mixture, and so could a head whose weights depend on the
# tokens.
#
# Why not the smaller share? Say $\alpha > \beta$. Whatever the linear readout, its
# preference for token $a$ over token $b$ (its logit for $a$ minus its logit for $b$) is
# $\alpha\, d(x) + \beta\, d(y) + e$, where $x$ and $y$ are the tokens at $t - 1$ and
# $t - 2$, $d$ gives one number per token, and $e$ collects the rest, which the three
# sequences below share. To name the token two back, the preference must be positive
# for $(x, y) = (a, a)$ and negative for $(a, b)$: changing $y$ from $b$ to $a$ adds
# $\beta\,(d(a) - d(b))$, so $d(a) > d(b)$. It must also be positive for $(b, a)$: the
# swap from $(a, b)$ adds $(\alpha - \beta)(d(b) - d(a))$, so $d(b) > d(a)$. Both cannot
# hold: on one of the three sequences the readout names the wrong token. It can still be
# right on many sequences, just not on all.
#
# With $H$ heads, each query gets $H$ rows, one per head, and the outputs are laid side
# by side before $W_o$ mixes them:
#
# $$
# o_t = \Big[\, \textstyle\sum_j p^{(0)}_{t,j}\, v^{(0)}_j \;\Big|\; \cdots \;\Big|\;
# \sum_j p^{(H-1)}_{t,j}\, v^{(H-1)}_j \,\Big]\, W_o .
# $$
#
# Head 0 can put all its weight on $t - 1$ and head 1 all of its on $t - 2$: two clean
# copies, in two separate blocks of columns. And it costs nothing: `W_qkv` is
# `(d_model, 3 * d_model)` and `W_o` is `(d_model, d_model)` whatever `num_heads` is
# (notebook 04, section 4). More heads cut the same columns into narrower groups, each
# with its own softmax.

# %% [markdown]
# ## 2. A task that needs two positions at once
#
# Sequences of 16 random tokens from a vocabulary of 16. At every position $t \ge 2$ the
# model must name two tokens: the previous one, `tokens[t - 1]`, and the one two back,
# `tokens[t - 2]`. The two answers are the *slots*; each has its own readout.

# %%
show_source(sh.two_slot_batch)

# %% [markdown]
# One short sequence, with its two answers under each position (positions 0 and 1 have
# no token two back, so they are never scored):

# %%
tokens, targets = two_slot_batch(np.random.default_rng(0), 1, seq_len=8)
scored = np.arange(8) >= sh.FIRST_SCORED
print("position   ", np.arange(8))
print("token      ", tokens[0])
print("previous   ", np.where(scored, targets[0, 0], -1), "  (-1: not scored)")
print("two back   ", np.where(scored, targets[1, 0], -1))

# %% [markdown]
# ## 3. The model: one layer, two readouts
#
# The model is as small as the task allows:
#
# - each token becomes its embedding plus a learned **position embedding** (one row per
#   position, added: notebook 06, section 3, and the model of notebook 07; without
#   positions no head could tell $t - 1$ from $t - 2$);
# - one `MultiHeadAttention` with a causal mask, the module of notebook 04, unchanged;
# - two linear **readouts** of its output, one per slot, each giving 16 logits.
#
# There is no residual connection: the readouts see only what attention brought to the
# position. The current token would not help anyway, since neither answer is the token
# itself.

# %%
show_source(sh.TwoSlotModel.forward)

# %% [markdown]
# The parameter count, for 1, 2 and 4 heads of the same `d_model = 32`:

# %%
names = ["embed", "pos", "W_qkv", "W_o", "readouts"]
header = " ".join(f"{name:>8}" for name in names)
print(f"{'num_heads':>9} {'d_k':>4} {header}    total")
for num_heads in [1, 2, 4]:
    model = TwoSlotModel(num_heads)
    sizes = [model.parameters()[n].size for n in names]
    row = " ".join(f"{size:>8}" for size in sizes)
    print(f"{num_heads:>9} {model.attention.d_k:>4} {row} {model.parameter_count():>8}")

# %% [markdown]
# Identical. The same seed even gives the same initial numbers for every head count
# (the shapes do not depend on it), so the three models below start from the same point
# and differ in how the 32 columns of each projection are grouped into softmaxes, and
# with it in each softmax's scale: the scores are divided by $\sqrt{d_k}$, and $d_k$ is
# 32 divided by the number of heads.

# %% [markdown]
# ## 4. Training with notebook 07's backward pass
#
# A training step is notebook 07's, on a smaller model. The layer's gradients come from
# notebook 07's `multihead_vjp`, called with the module's weights. The loss is the
# cross-entropy of both slots at every position
# $t \ge 2$, added, and its gradient is softmax minus one-hot, slot by slot. The
# embedding lookup sums the gradients of every position that looked a token up, and
# Adam (Kingma and Ba 2015) moves every weight.

# %%
show_source(sh.loss_and_grads)

# %% [markdown]
# Notebook 07 checked the layer's backward pass with central differences; the readouts
# and the embeddings are new here, so check the whole model the same way. On a tiny
# model (vocabulary 5, 5 positions, `d_model = 4`), move all the weights a little along
# a random direction $d$ and compare the change of the loss with what the gradient
# predicts:
#
# $$
# \frac{L(\theta + \epsilon d) - L(\theta - \epsilon d)}{2\epsilon}
# \approx \nabla L \cdot d .
# $$
#
# The loss below is computed from the module's *forward* and a log-softmax written out
# in the cell, not from the code that made the gradient.


# %%
def loss_from_forward(model, tokens, targets):
    logits, _ = model(tokens)  # (2, batch, seq_len, vocab)
    rows = logits[:, :, sh.FIRST_SCORED :]  # (2, batch, scored, vocab)
    labels = targets[:, :, sh.FIRST_SCORED :, None]  # (2, batch, scored, 1)
    top = rows.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(rows - top).sum(axis=-1, keepdims=True)) + top
    nll = (log_z - np.take_along_axis(rows, labels, axis=-1))[..., 0]  # (2, b, scored)
    return nll.mean(axis=(1, 2)).sum()  # each slot's mean, added


tiny = TwoSlotModel(2, vocab=5, seq_len=5, d_model=4, seed=3)
tiny_tokens, tiny_targets = two_slot_batch(
    np.random.default_rng(1), 3, vocab=5, seq_len=5
)
_, grads = slot_loss_and_grads(tiny, tiny_tokens, tiny_targets)
rng, eps = np.random.default_rng(2), 1e-6
for trial in range(3):
    direction = {n: rng.standard_normal(p.shape) for n, p in tiny.parameters().items()}
    predicted = sum(np.sum(grads[name] * d) for name, d in direction.items())
    losses = []
    for sign in (1, -1):
        for name, p in tiny.parameters().items():
            p += sign * eps * direction[name]
        losses.append(loss_from_forward(tiny, tiny_tokens, tiny_targets))
        for name, p in tiny.parameters().items():
            p -= sign * eps * direction[name]
    measured = (losses[0] - losses[1]) / (2 * eps)
    error = abs(measured - predicted) / abs(predicted)
    print(f"direction {trial}: relative difference below 1e-6: {error < 1e-6}")

# %% [markdown]
# The training loop itself is short. One seed gives three independent random streams
# (`np.random.SeedSequence(seed).spawn(3)`): one for the initial weights, one for the
# training batches, one for the evaluation sequences. So every accuracy below is
# measured on sequences the model never saw.

# %%
show_source(sh.train)

# %% [markdown]
# ## 5. The experiment
#
# One, two and four heads; three seeds each; 300 steps of 32 sequences; the same
# `d_model`, the same learning rate, the same parameter count. Each model takes about
# two seconds of one core's time to train (1.6 to 2.4 s measured, the more heads the
# longer), so the cell below takes some twenty seconds, more on a busy machine. Then
# each is tested on 1024 fresh sequences (14 scored positions each), and we print each
# slot's accuracy. Chance is $1/16 \approx 0.06$.

# %%
models, accuracy = experiment(head_counts=(1, 2, 4), seeds=(0, 1, 2))

print(f"{'heads':>5} {'seed':>4} {'parameters':>10} {'previous':>9} {'two back':>9}")
for (num_heads, seed), (previous, two_back) in accuracy.items():
    count = models[num_heads, seed].parameter_count()
    print(f"{num_heads:>5} {seed:>4} {count:>10} {previous:>9.2f} {two_back:>9.2f}")

# %% [markdown]
# The one-head model gets one slot right and the other 0.20 to 0.25 of the time, in
# every seed: three to four times chance (0.06), since some sequences let a fixed
# mixture point the right way, but far from reliable. Two heads and four heads get both
# right, in every seed, with the same parameters. (Which slot the single head wins
# depends on the seed: here it is always the previous token, but with seed 5, for one,
# it is the token two back.)
#
# One head is not strictly incapable. Trained ten times longer
# (`sh.train(1, seed=0, steps=3000)`), seed 0's single head gets both slots right most
# of the time, by making its mixture depend on which tokens it sees, while seed 1's
# still misses the token two back. Several heads make the task easy; one head makes it
# hard.

# %% [markdown]
# ## 6. What each head learned
#
# The attention weights say what each head does. For every head, the table gives the
# average weight that query $t$ puts on key $t$, $t - 1$, $t - 2$ and $t - 3$, over the
# 1024 test sequences (a head with most of its weight on $t - 1$ is a *previous-token
# head*, in the terms of Olsson et al., 2022). Seed 0 of each model:

# %%
test_tokens, test_targets = evaluation_batch(0)
keys = " ".join(f"{key:>6}" for key in ["t", "t - 1", "t - 2", "t - 3"])
print(f"{'heads':>5} {'head':>4} {keys}")
for num_heads in [1, 2, 4]:
    _, weights = models[num_heads, 0](test_tokens)
    for head, row in enumerate(offset_profile(weights, max_offset=3)):
        shares = " ".join(f"{w:6.2f}" for w in row)
        print(f"{num_heads:>5} {head:>4} {shares}")

# %% [markdown]
# The picture says the same. Each panel is one head's weights averaged over the test
# sequences: a row per query, a column per key, the causal mask leaving the upper
# triangle empty. The single head spreads each row over two diagonals; the two heads of
# the two-head model each take one.

# %%
one_head = mean_weights(models[1, 0], test_tokens)  # (1, seq_len, seq_len)
two_heads = mean_weights(models[2, 0], test_tokens)  # (2, seq_len, seq_len)
panels = [(one_head[0], "1 head: head 0"), (two_heads[0], "2 heads: head 0"),
          (two_heads[1], "2 heads: head 1")]
fig, axes = plt.subplots(1, 3, figsize=(7.5, 3.0), layout="constrained")
for ax, (average, title) in zip(axes, panels, strict=True):
    image = plot_attention(average, ax=ax, title=title, annotate=False)
    ax.set_xticks(range(0, 16, 5), [str(i) for i in range(0, 16, 5)])
    ax.set_yticks(range(0, 16, 5), [str(i) for i in range(0, 16, 5)])
for ax in axes[1:]:
    ax.set_ylabel("")
fig.colorbar(image, ax=axes.tolist(), label="mean weight", fraction=0.03, pad=0.02)
save_figure(fig, FIGURES / "08_why_several_heads.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** One head must split each row between the two keys the task needs (t - 1
# and t - 2) and so averages their values; two heads of half the width each take one of
# them.
#
# <!-- alt: Three 16-by-16 heatmaps of mean weights, lower triangles only. 1 head: two
# medium-blue bands, one and two steps below the diagonal, each about half strength. 2
# heads: head 0 shows one dark band one step below the diagonal, head 1 one dark band
# two steps below it. -->

# %% [markdown]
# ## 7. Why one head fails here, in numbers
#
# After this short training, the single head is in the case of section 1. Its weights on
# $t - 1$ and on $t - 2$ are nearly the same (0.47 and 0.41 in the table), so its output
# is close to the average of the two tokens' values. And its row hardly depends on the
# tokens. `logits_with_weights` runs a trained model with attention weights we choose
# instead of those its softmax computes:

# %%
show_source(head_probes.logits_with_weights)

# %% [markdown]
# Give the single head, for every sequence, the same row: its mean over the 1024 test
# sequences. If the head's weights depended on the tokens, this would cost accuracy:


# %%
def accuracy_with(model, weights):
    """Each slot's accuracy on the test sequences when the model uses these weights."""
    logits = logits_with_weights(model, test_tokens, weights)  # (2, b, s, vocab)
    hits = (logits.argmax(axis=-1) == test_targets)[:, :, sh.FIRST_SCORED :]
    return hits.mean(axis=(1, 2))  # (2,): previous, two back


_, weights = models[1, 0](test_tokens)  # (batch, 1, seq_len, seq_len)
spread = weights.std(axis=0).max()  # the most any weight moves between sequences
mean_row = np.broadcast_to(weights.mean(axis=0), weights.shape)  # same for all
print(f"largest standard deviation of a weight across sequences: {spread:.2f}")
for name, rows in [("its own rows", weights), ("the mean rows", mean_row)]:
    previous, two_back = accuracy_with(models[1, 0], rows)
    print(f"one-head model, {name:<13}: previous {previous:.2f}, "
          f"two back {two_back:.2f}")

# %% [markdown]
# Almost nothing changes: the head's row is, in effect, the same for every sequence, and
# section 1 showed what a linear readout can then do. The larger share wins: the readout
# for the previous token is right 0.93 of the time, the one for the token two back 0.25
# (chance is 0.06): right on some sequences, as section 1 allows, not on most.
#
# The same failure can be built into the *two*-head model. Give both heads the same
# row, the average of their own two rows, and the two-head model becomes an averaging
# model too, with all its other weights unchanged:

# %%
_, weights = models[2, 0](test_tokens)  # (batch, 2, seq_len, seq_len)
shared = np.broadcast_to(weights.mean(axis=1, keepdims=True), weights.shape)  # 1 row
for name, rows in [("its own two rows", weights), ("one shared row", shared)]:
    previous, two_back = accuracy_with(models[2, 0], rows)
    print(f"two-head model, {name:<16}: previous {previous:.2f}, "
          f"two back {two_back:.2f}")

# %% [markdown]
# With its own rows it is perfect; with one shared row, half and half, the average of
# two tokens: each readout now has both tokens in front of it, equally loud, and no way
# to know which came first, so it picks the right one about half of the time.

# %% [markdown]
# ## 8. The other side: heads that can go
#
# Several heads make this task easy. That does not mean every head of a trained model
# matters. The four-head model of seed 0 put two heads on each slot (section 6's table).
# Switch off one head at a time, by zeroing its rows of `W_o` (its output then reaches
# nothing), and measure again:

# %%
show_source(head_probes.without_heads)

# %%
four = models[4, 0]
print(f"{'removed':>8} {'previous':>9} {'two back':>9}")
for removed in [None, 0, 1, 2, 3]:
    kept = four if removed is None else without_heads(four, [removed])
    previous, two_back = slot_accuracy(kept, test_tokens, test_targets)
    name = "none" if removed is None else f"head {removed}"
    print(f"{name:>8} {previous:>9.2f} {two_back:>9.2f}")

# %% [markdown]
# One of the four heads can go with both slots still at 0.95 or better, and no single
# removal drops a slot to chance: the other head on the same slot carries most of it.
# Large trained models show the same at scale. Michel et al. (2019) removed heads from
# a trained translation Transformer and from BERT at test time: a large share of the
# heads could go with little loss, and some layers could even be cut to a single head.
# Voita et al. (2019) found that a few specialised heads (positional, syntactic,
# rare-word) do most of the work and the rest can be pruned with little loss. Both
# findings fit this notebook: one softmax row gives one mixture, so a layer that must
# gather from several places at once learns it far more easily with several heads; a
# trained model also tends to end up with more heads than it strictly needs.

# %% [markdown]
# ## Summary
#
# - One head gives each query one softmax row, one convex combination of the values. If
#   that row does not depend on the tokens, a linear readout can name the token with the
#   larger share but cannot reliably name the other. Trained as long as the others, the
#   single head got one slot and mostly missed the other.
# - Several heads give each query several rows, side by side in separate columns, at no
#   extra cost: `W_qkv` and `W_o` keep their shapes for any `num_heads`.
# - On the task "report the previous token and the token two back", one head got one
#   slot right and the other 0.20 to 0.25 (chance is 0.06), in every seed; two and four
#   heads got both, in every seed. Each trained head of the two-head model attends to
#   one offset. Trained ten times longer, one head can sometimes get both, by making its
#   weights depend on the tokens: several heads make the task easy; one head makes it
#   hard.
# - Forcing the two-head model to share one row brings back the failure: about half on
#   each slot.
# - Heads can still be redundant: one of the four heads could be removed with little
#   loss, as Michel et al. and Voita et al. found in large models.

# %% [markdown]
# ## Exercises
#
# Each exercise has a cell for your answer, holding `...` where the answer goes, and a
# cell that checks it. Replace the `...`, run your cell, then run the check: it prints
# "not yet" while the `...` is still there, "correct." when your answer passes, and
# otherwise stops with a message that says what to look at. Below each check is a
# collapsed cell with a solution, run through the same check; open it only after trying.
#
# **Exercise 1 (write): the parameter count.** Write
# `parameter_count(vocab, seq_len, d_model, num_heads)` that returns the number of
# trainable numbers in `sh.TwoSlotModel(num_heads, vocab=vocab, seq_len=seq_len,
# d_model=d_model)`, from the shapes alone (do not build the model).


# %%
def parameter_count(vocab, seq_len, d_model, num_heads):
    """Trainable numbers of a TwoSlotModel with these sizes."""
    return ...  # your code here


# %%
@exercise(1, crash_hint="parameter_count(...) returns one whole number.")
def check_exercise_1(function):
    sizes = [(16, 16, 32, 1), (16, 16, 32, 4), (7, 5, 12, 3), (3, 9, 8, 8)]
    not_yet(function(*sizes[0]))
    for vocab, seq_len, d_model, heads in sizes:
        model = TwoSlotModel(heads, vocab=vocab, seq_len=seq_len, d_model=d_model)
        expected = model.parameter_count()
        answer = function(vocab, seq_len, d_model, heads)
        assert answer == expected, (
            f"vocab {vocab}, seq_len {seq_len}, d_model {d_model}, {heads} heads: "
            f"{answer} instead of {expected}. Count embed, pos, W_qkv, W_o and both "
            "readouts"
        )


print(check_exercise_1(parameter_count))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# num_heads does not appear (section 3's table). The token and position embeddings are
# (vocab, d_model) and (seq_len, d_model); W_qkv is (d_model, 3 * d_model) and W_o is
# (d_model, d_model) for any number of heads; the two readouts are (d_model, vocab)
# each.
def solution_parameter_count(vocab, seq_len, d_model, num_heads):
    embeddings = vocab * d_model + seq_len * d_model
    attention = 3 * d_model * d_model + d_model * d_model
    readouts = 2 * d_model * vocab
    return embeddings + attention + readouts


print(check_exercise_1(solution_parameter_count))

# %% [markdown]
# **Exercise 2 (write, then predict): silence a head another way.** Section 8 removed a
# head by zeroing its rows of `W_o`. A head's output is also zero when all its
# attention weights are zero. Write `silenced_logits(model, tokens, head)` that returns
# both slots' logits, shape `(2, batch, seq_len, vocab)`, of `model` with head `head`
# silenced that way: compute the model's attention weights, set that head's to zero,
# and pass them to `sh.logits_with_weights`. Leave the model unchanged. Then predict:
# should the result equal the logits of `sh.without_heads(model, [head])`, exactly or
# only nearly?


# %%
def silenced_logits(model, tokens, head):
    """Both slots' logits with head `head`'s attention weights set to zero."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "silenced_logits(model, tokens, head) returns an array of shape (2, batch, "
    "seq_len, vocab)."
))
def check_exercise_2(function):
    model, check_tokens = models[4, 0], test_tokens[:64]
    W_o_before = model.attention.W_o.copy()
    not_yet(function(model, check_tokens, 1))
    for head in range(model.num_heads):
        answer = function(model, check_tokens, head)
        assert np.array_equal(model.attention.W_o, W_o_before), (
            "leave the model's weights unchanged"
        )
        assert np.shape(answer) == (2, 64, model.seq_len, model.vocab), (
            f"expected shape (2, batch, seq_len, vocab); got {np.shape(answer)}"
        )
        expected, _ = without_heads(model, [head])(check_tokens)
        assert np.allclose(answer, expected), (
            f"head {head}: not the logits of the model without that head. Zero "
            f"weights[:, {head}] only, on a copy of the weights, and keep the others"
        )


print(check_exercise_2(silenced_logits))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: equal, up to rounding. One way makes the head's block of
# combine_heads(...) zero, the other zeroes the rows of W_o that read that block; either
# way the head adds nothing to the output. But logits_with_weights computes the values
# with a different matrix product (the value columns of W_qkv alone), and BLAS may round
# a product of another shape differently in the last bits: compare with np.allclose.
def solution_silenced_logits(model, tokens, head):
    _, weights = model(tokens)  # (batch, num_heads, seq_len, seq_len): a new array
    weights[:, head] = 0.0  # this head takes nothing from any key
    return logits_with_weights(model, tokens, weights)  # (2, batch, seq_len, vocab)


print(check_exercise_2(solution_silenced_logits))

# %% [markdown]
# **Exercise 3 (predict, then measure): two heads on the same offset.** In the trained
# two-head model (`models[2, 0]`), head 0 reads the previous token and head 1 the token
# two back. Give head 1 a copy of head 0's rows of weights, so both heads attend to
# $t - 1$, and run the model with `sh.logits_with_weights`. Before you run it, predict
# each slot's accuracy: about 1, about one half, or near chance (1/16)? Then write
# `copied_row_accuracy`: the two accuracies you measure, as an array
# `[previous, two back]`, on `test_tokens`, `test_targets`.

# %%
copied_row_accuracy = ...  # your measurement: np.array([previous, two_back])


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint="Give the two accuracies as np.array([previous, two_back]).")
def check_exercise_3(answer):
    model = models[2, 0]
    _, weights = model(test_tokens)
    weights[:, 1] = weights[:, 0]
    logits = logits_with_weights(model, test_tokens, weights)
    hits = (logits.argmax(axis=-1) == test_targets)[:, :, sh.FIRST_SCORED :]
    expected = hits.mean(axis=(1, 2))
    assert np.shape(answer) == (2,), (
        f"give two numbers, [previous, two back]; got shape {np.shape(answer)}"
    )
    assert np.allclose(answer, expected, atol=0.005), (
        "not what the model gives: copy weights[:, 0] into weights[:, 1] (head 0 keeps "
        "its own), then score positions t >= 2 of both slots"
    )


print(check_exercise_3(copied_row_accuracy))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: the previous token stays right (head 0 is untouched, and head 1 adds
# the same token through its own values), and the token two back falls to about chance:
# no head looks at t - 2 any more, so nothing in the output says what was there. The
# readout for the token two back was trained to read head 1's block as "the token at
# t - 2"; it now holds the token at t - 1, which is the right answer only by accident.
_, copied = models[2, 0](test_tokens)  # (batch, 2, seq_len, seq_len)
copied[:, 1] = copied[:, 0]  # head 1 now attends where head 0 does
copied_logits = logits_with_weights(models[2, 0], test_tokens, copied)
copied_hits = (copied_logits.argmax(axis=-1) == test_targets)[:, :, sh.FIRST_SCORED :]
solution_copied_row_accuracy = copied_hits.mean(axis=(1, 2))
print(check_exercise_3(solution_copied_row_accuracy))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Section 3.2.2: "With a single
#   attention head, averaging inhibits this."
# - Michel, P., Levy, O. and Neubig, G. (2019). *Are Sixteen Heads Really Better than
#   One?* NeurIPS 2019. [arXiv:1905.10650](https://arxiv.org/abs/1905.10650).
#   Heads masked at test time: one at a time, all but one per layer, then pruned
#   iteratively by importance. Many layers keep working with one head.
# - Voita, E., Talbot, D., Moiseev, F., Sennrich, R. and Titov, I. (2019). *Analyzing
#   Multi-Head Self-Attention: Specialized Heads Do the Heavy Lifting, the Rest Can Be
#   Pruned.* ACL 2019. [arXiv:1905.09418](https://arxiv.org/abs/1905.09418). Positional,
#   syntactic and rare-word heads, and pruning the others.
# - Olsson, C., Elhage, N., Nanda, N., Joseph, N., DasSarma, N., Henighan, T., Mann, B.,
#   Askell, A., Bai, Y., Chen, A., et al. (2022). *In-context Learning and Induction
#   Heads.* Transformer Circuits Thread.
#   [transformer-circuits.pub/2022/in-context-learning-and-induction-heads](https://transformer-circuits.pub/2022/in-context-learning-and-induction-heads/index.html).
#   Previous-token heads (section 6).
# - Kingma, D. P. and Ba, J. (2015). *Adam: A Method for Stochastic Optimization.*
#   ICLR 2015. [arXiv:1412.6980](https://arxiv.org/abs/1412.6980). The optimiser of
#   section 4 (and of notebook 07).
#
# ---
# Next: [09_induction_heads.ipynb](09_induction_heads.ipynb) reads the heads of the
# model that notebook 07 trained: two layers whose heads work together, an induction
# circuit.
