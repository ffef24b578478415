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
# # 5. What the layer does to each token: a 2-D picture
#
# [Notebook 04](04_multi_head_attention.ipynb) looked at the attention *weights*. This one looks at the token *vectors*:
# each position goes into the layer as a 64-dimensional vector and comes out as another.
# We draw both in one plane and then ask, honestly, how much of what we see is attention.
#
# **In this notebook you will learn**
#
# - how to draw 64-dimensional vectors in 2-D with PCA, and why inputs and outputs must
#   share one PCA;
# - how to read the picture: hollow circles, filled circles, arrows;
# - how much a 2-D picture of 64-D vectors leaves out;
# - how to tell what attention does from what the layer's linear maps do, with two
#   baselines: every token attending only to itself, and every token replaced by the mean
#   input vector;
# - what the picture of an untrained layer does *not* show.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA

from mhattn import MultiHeadAttention
from mhattn.embedding_shift import embedding_shift_2d
from mhattn.plots import plot_embedding_shift
from mhattn.source import show_source

np.set_printoptions(precision=3, suppress=True)
FIGURES = Path("..") / "figures"  # the notebooks run with notebooks/ as the working directory
FIGURES.mkdir(exist_ok=True)

# %% [markdown]
# ## 1. The worked example
#
# The same layer and input as in notebook 04: 6 tokens of width 64 drawn with seed 123,
# and a 4-head layer with its default weights (seed 42).

# %%
np.random.seed(123)
x = np.random.randn(1, 6, 64)  # (batch, seq_len, d_model)
seq_len = x.shape[1]
mha = MultiHeadAttention(d_model=64, num_heads=4)
output, weights = mha(x)
inputs, outputs = x[0], output[0]  # one sequence: (seq_len, d_model) each
print("inputs:", inputs.shape, " outputs:", outputs.shape)

# %% [markdown]
# ## 2. One PCA for inputs and outputs together
#
# Principal component analysis (PCA) finds the directions along which a cloud of points
# varies the most. Projecting onto the first two gives the 2-D picture that keeps as much
# of the spread as any flat picture can.
#
# We want to draw an arrow from each token's input to its output, so both ends must be in
# the **same** coordinates. We therefore stack the 6 inputs and 6 outputs into one cloud of
# 12 points and fit a single PCA to it. `embedding_shift_2d` does that, and fixes the sign
# of each axis (scikit-learn's own choice of sign has changed between releases):

# %%
show_source(embedding_shift_2d)

# %% [markdown]
# The result should be scikit-learn's `PCA(n_components=2)` projection of the stacked
# vectors, up to the sign of each axis. Let us check that rather than trust it:

# %%
inputs_2d, outputs_2d, explained = embedding_shift_2d(inputs, outputs)

stacked = np.vstack([inputs, outputs])  # (12, 64): 6 inputs, then 6 outputs
sklearn_2d = PCA(n_components=2).fit_transform(stacked)  # (12, 2)
ours_2d = np.vstack([inputs_2d, outputs_2d])
signs = np.sign((ours_2d * sklearn_2d).sum(axis=0))  # +1 or -1 per axis
print("same as scikit-learn up to each axis's sign:", np.allclose(ours_2d, sklearn_2d * signs))

# %% [markdown]
# ## 3. The picture
#
# Each position gets its own colour. Its empty ring marks the vector that enters the layer,
# its solid dot the vector that leaves it, and the arrow points from the first to the second.
# Don't read much into the arrows yet: section 5 measures how much of their length is just
# the layer's linear map.

# %%
ax = plot_embedding_shift(inputs_2d, outputs_2d, explained, title="Inputs and outputs of an untrained layer, one PCA")
ax.figure.savefig(FIGURES / "embedding_shift_pca.png", dpi=100, metadata={"Software": None})

# %%
print(f"explained variance: component 1 {explained[0]:.1%}, component 2 {explained[1]:.1%}")
print(f"the plane keeps {explained.sum():.1%} of the variance of the 12 vectors")

# %% [markdown]
# ## 4. What the picture leaves out
#
# The two axes keep only about 40% of the variance: most of how these vectors differ
# happens in directions the plane does not show. Twelve points in 64 dimensions span up
# to 11 directions, and here the variance is spread over many of them. Distances in the
# plane are therefore only a rough guide. Every arrow, for example, is shorter in the
# picture than in 64-D (a projection can only shorten), and by a different factor for
# each token:

# %%
length_2d = np.linalg.norm(outputs_2d - inputs_2d, axis=1)
length_64d = np.linalg.norm(outputs - inputs, axis=1)
print("position            ", np.arange(seq_len))
print("arrow length in 2-D ", length_2d)
print("arrow length in 64-D", length_64d)
print("share that shows    ", length_2d / length_64d)

# %% [markdown]
# ## 5. What is attention, and what is just the projection?
#
# It is tempting to read the arrows as "each token moves toward the tokens it attends to".
# But the layer does two different things to a token:
#
# 1. **mixing**: each head replaces the token's value vector by a weighted average of the
#    value vectors of all tokens (this is attention);
# 2. **projecting**: the values are made by `W_qkv` and the heads are mixed by `W_o`, two
#    linear maps that act on every token alike.
#
# And there is no residual connection here: the output is not "the input plus something",
# it is a new vector. How related is it to the input? The cosine similarity of each
# token's input and output:

# %%
def cosine(a, b):
    return (a * b).sum(axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


print("cosine(input, output) per position:", cosine(inputs, outputs))

# %% [markdown]
# All close to zero: each output points in a direction almost unrelated to its input.
# Is that attention's doing, or the random linear maps'?
#
# To separate the two, we compute two baselines with the same layer:
#
# - **Projection only.** With the identity matrix as mask, every token may attend only to
#   itself, so its weights are 1 on itself and the layer is just the linear map
#   $x \mapsto x\, W_v W_o$ (with $W_v$ the value third of `W_qkv`): no mixing at all.
# - **Mixing only.** If every token were the mean input vector, attention would average
#   identical values, whatever the weights, and every token would get the same output. That
#   point is also where uniform attention (weight $1/6$ on every token, in every head) would
#   send each token: the most mixing possible.

# %%
projection_only, _ = mha(x, mask=np.eye(seq_len, dtype=bool))  # each token attends to itself only
W_v = np.split(mha.W_qkv, 3, axis=1)[2]  # (d_model, d_model): the value third
print("projection only == x @ W_v @ W_o:", np.allclose(projection_only, x @ W_v @ mha.W_o))

mean_input = np.broadcast_to(x.mean(axis=1, keepdims=True), x.shape)  # every token = the mean vector
all_mixed, _ = mha(mean_input)
print("every token gets the same output:", np.allclose(all_mixed, all_mixed[:, :1]))
print("it is the mean of the projections:", np.allclose(all_mixed[0, 0], projection_only[0].mean(axis=0)))
print("cosine(input, projection only) per position:", cosine(inputs, projection_only[0]))

# %% [markdown]
# The linear map alone already turns every input into a nearly unrelated vector (the last
# line). What does the mixing add? Not a slide along the straight line from a token's own
# projection to the common point. In each head, a token's output is a weighted average of
# *all* tokens' values, with that head's own weights, and `W_o` adds the heads up. With a
# single head the output would be a weighted average of the projection-only points, inside
# the region they enclose (their convex hull), pulled toward the tokens with most weight;
# with four heads it is a sum of four such averages, each with different weights.
#
# Averaging still pulls toward the middle. The next cell measures each token's distance to
# the centre of the projections (the complete-mixing point) before and after the mixing,
# then one number for a whole set of vectors, its spread: their mean distance to their
# own centre.

# %%
centre = projection_only[0].mean(axis=0)  # (d_model,): the complete-mixing point
before = np.linalg.norm(projection_only[0] - centre, axis=1)
after = np.linalg.norm(outputs - centre, axis=1)
print("distance to the centre, projection only:", before)
print("distance to the centre, output:         ", after)
print("every token ends closer to the centre:", (after < before).all())
print()


def spread(vectors):
    return np.linalg.norm(vectors - vectors.mean(axis=0), axis=-1).mean()


for name, vectors in [
    ("inputs", inputs),
    ("projection only (no mixing)", projection_only[0]),
    ("outputs (with mixing)", outputs),
    ("mean input (complete mixing)", all_mixed[0]),
]:
    print(f"spread of {name:<30} {spread(vectors):6.2f}")

# %% [markdown]
# For this seed every token ends closer to the centre than its own projection, some much
# closer, some (pos 3, which starts near the centre) only a little. The linear map alone
# doubles the spread of the inputs (its random weights have a gain of about 2); the mixing
# then roughly halves it again. That pull is the part of the picture that is attention.
#
# The two panels below draw each step in its own shared PCA plane. Left: input to
# projection only, the linear map with no attention. Right: projection only to the real
# output, what mixing adds; the star is the "complete mixing" point.

# %%
fig, (ax_map, ax_mix) = plt.subplots(1, 2, figsize=(13, 6), layout="constrained")
plot_embedding_shift(
    *embedding_shift_2d(inputs, projection_only[0]),
    ax=ax_map,
    title="The linear map alone (each token attends only to itself)",
    output_label="projection only",
    label_at="outputs",  # the inputs are bunched up in the middle
)
start_2d, end_2d, explained_mix = embedding_shift_2d(projection_only[0], outputs)
plot_embedding_shift(
    start_2d,
    end_2d,
    explained_mix,
    ax=ax_mix,
    title="What attention adds: mixing the tokens",
    input_label="projection only",
    output_label="output",
)
ax_mix.scatter(*start_2d.mean(axis=0), marker="*", s=300, color="black", zorder=4, label="complete mixing")
ax_mix.legend(handles=ax_mix.get_legend().legend_handles + [ax_mix.collections[-1]], loc="best")
fig.savefig(FIGURES / "05_map_and_mixing.png", dpi=100, metadata={"Software": None})
plt.show()

# %% [markdown]
# (The star sits at the mean of the hollow circles: a PCA projection is a shift followed by
# a linear map, so the projection of a mean is the mean of the projections.)
#
# The two panels use two different planes, so their arrows cannot be compared by eye.
# Compare the lengths in 64-D instead: how far the linear map alone moves each token, and how
# far the whole layer moves it.

# %%
moved_by_map = np.linalg.norm(projection_only[0] - inputs, axis=1)
moved_by_layer = np.linalg.norm(outputs - inputs, axis=1)
print("position                        ", np.arange(seq_len))
print("input -> projection only (64-D) ", moved_by_map)
print("input -> output (64-D)          ", moved_by_layer)
print(f"mean: linear map alone {moved_by_map.mean():.2f}, whole layer {moved_by_layer.mean():.2f}")
print("positions the map alone moves further:", np.flatnonzero(moved_by_map > moved_by_layer))

# %% [markdown]
# **An honest reading of these pictures.**
#
# - Nothing here is about meaning. The input is random numbers and the weights are
#   untrained, so which token ends up near which is an accident of two seeds. In a trained
#   model the same picture can show tokens gathering information from related words; this
#   one cannot.
# - The long arrows of the first picture come mostly from the random linear map: the map
#   alone already sends each input to a nearly orthogonal vector, and on average it moves a
#   token further than the whole layer does (about 18 against 13 in 64-D). That holds for
#   every token but pos 3, where the two distances are almost equal.
# - What attention does is visible on the right: the arrows run from each token's own
#   projection into the middle of the cloud, without reaching the "complete mixing" star
#   and not always straight at it (pos 0 passes beside it): each output is a sum of the
#   heads' weighted averages, not a point on the line to the star. Still, in 64-D every
#   token ends closer to the centre (pos 3, which starts nearest, only a little). Averaging
#   pulls tokens together; the weights decide how far, and toward whom.
# - Each plane keeps well under two thirds of the variance; read distances as hints, not
#   measurements.
#
# In a real Transformer the output is added back to the input (a residual connection),
# which keeps each token close to where it was; exercise 3 looks at that.

# %% [markdown]
# ## 6. Common bug: one PCA for the inputs and another for the outputs
#
# Fitting a PCA to the inputs and a separate one to the outputs gives each cloud its own
# axes. Both pictures look fine on their own, but an arrow from one to the other joins
# coordinates of two unrelated systems. Here are the absolute cosines between the axes of
# the two fits; the same axes would give 1 on the diagonal:

# %%
input_axes = PCA(n_components=2).fit(inputs).components_  # (2, 64)
output_axes = PCA(n_components=2).fit(outputs).components_  # (2, 64)
print("|cosine| between input-PCA axes (rows) and output-PCA axes (columns):")
print(np.abs(input_axes @ output_axes.T))

# %% [markdown]
# The "component 1" of one fit and the "component 1" of the other are nearly orthogonal
# directions in 64-D. One PCA fitted on both clouds together is the fix.

# %% [markdown]
# ## Summary
#
# - To draw inputs and outputs in one 2-D picture, fit one PCA to both together; separate
#   fits give unrelated axes.
# - The picture keeps about 40% of the variance here: a sketch, not a map.
# - Without a residual connection and with random weights, the outputs are nearly
#   orthogonal to the inputs; the long input-to-output arrows come mostly from the linear
#   map $W_v W_o$ (alone, it moves the tokens further on average than the whole layer),
#   not from attention.
# - Attention's own effect is mixing: in each head, a token's output is a weighted average
#   of all tokens' values, so the outputs crowd together (here every token ends closer to
#   the centre than its own projection). Two baselines make it visible: the identity mask
#   (no mixing) and the mean input vector (complete mixing).
# - An untrained layer shows the mechanics, never meaning.

# %% [markdown]
# ## Exercises
#
# Each exercise has a cell to fill in and a cell that checks your answer. As in notebook 04,
# the cell to fill in starts as `None` (or a function that returns `None`): until you
# answer, the check only says "not answered yet", and the notebook still runs from top to
# bottom.
#
# **Exercise 1: how many components?** How many principal components of the 12 stacked
# vectors are needed to keep at least 90% of their variance? (Fit a `PCA` without
# `n_components` and look at its `explained_variance_ratio_`.)

# %%
components_for_90 = None  # your answer: an int

# %%
def check_exercise_1(answer):
    if answer is None:
        return "Exercise 1: not answered yet."
    centred = stacked - stacked.mean(axis=0)
    variance = np.linalg.svd(centred, compute_uv=False) ** 2  # variance along each principal axis, unnormalised
    kept = np.cumsum(variance) / variance.sum()  # kept[k - 1]: share kept by the first k components
    assert isinstance(answer, (int, np.integer)) and 1 <= answer <= len(kept), "give a whole number of components"
    assert kept[answer - 1] >= 0.9, f"{answer} components keep only {kept[answer - 1]:.1%}: you need more"
    assert answer == 1 or kept[answer - 2] < 0.9, f"{answer - 1} components already keep 90%: the smallest number?"
    return "Exercise 1: correct."


print(check_exercise_1(components_for_90))

# %% [markdown]
# **Exercise 2: a causal layer.** Write `causal_output(x)`, the output of `mha` on `x`
# (shape `(1, seq_len, 64)`) when no token may attend to a later one. Before you run the
# check, predict: which position's output equals its "projection only" point, and why?

# %%
def causal_output(x):
    """The output of mha on x under a causal mask, shape (1, seq_len, 64)."""
    return None  # your code here


# %%
def check_exercise_2(function):
    test_x = np.random.default_rng(5).normal(size=(1, 5, 64))
    answer = function(test_x)
    if answer is None:
        return "Exercise 2: not answered yet."
    assert np.shape(answer) == test_x.shape, f"the output should have shape {test_x.shape}; got {np.shape(answer)}"
    only_itself, _ = mha(test_x, mask=np.eye(5, dtype=bool))
    assert np.allclose(answer[0, 0], only_itself[0, 0]), "position 0 can see only itself: it should get its own projection"
    assert np.allclose(answer[0, -1], mha(test_x)[0][0, -1]), "the last position may see every token, as without a mask"
    for t in range(4):
        changed = test_x.copy()
        changed[0, t + 1 :] = np.random.default_rng(t).normal(size=changed[0, t + 1 :].shape)
        assert np.allclose(function(changed)[0, : t + 1], answer[0, : t + 1]), (
            f"changing the tokens after position {t} changed the output at or before {t}: something sees the future"
        )
    return "Exercise 2: correct."


print(check_exercise_2(causal_output))

# %% [markdown]
# **Exercise 3: the residual connection.** A Transformer block adds the layer's input to
# its output. Compute `residual_cosine`, the cosine similarity between each token's input
# and `input + output` (an array of shape `(6,)`). Compare it with the cosines of
# section 5, then draw `embedding_shift_2d(inputs, inputs + outputs)` with
# `plot_embedding_shift`: what happens to the arrows?

# %%
residual_cosine = None  # your answer: an array of shape (6,)

# %%
def check_exercise_3(answer):
    if answer is None:
        return "Exercise 3: not answered yet."
    after = inputs + outputs
    unit_in = inputs / np.linalg.norm(inputs, axis=1, keepdims=True)
    unit_after = after / np.linalg.norm(after, axis=1, keepdims=True)
    expected = 1 - np.linalg.norm(unit_in - unit_after, axis=1) ** 2 / 2  # cos = 1 - |u - v|^2 / 2 for unit u, v
    assert np.shape(answer) == (seq_len,), f"one cosine per position: shape ({seq_len},); got {np.shape(answer)}"
    assert np.allclose(answer, expected), "not the cosine of each input with input + output (row by row?)"
    return "Exercise 3: correct."


print(check_exercise_3(residual_cosine))

# %% [markdown]
# ---
# ## Try it yourself
#
# The same picture, live: change `seq_len`, the number of heads, the mask or the seed, and watch
# the arrows move next to the heatmaps of every head. The explorer draws its own random tokens
# and weights from its seed, so its pictures differ from the ones above. (On GitHub the widget
# does not render; open the notebook in JupyterLab or on Binder.)

# %%
# NBVAL_IGNORE_OUTPUT
from mhattn.widgets import explorer

explorer(d_model=64, num_heads=4, seq_len=6)

# %% [markdown]
# Next: [06_efficiency.ipynb](06_efficiency.ipynb) measures what makes this code fast, and
# runs attention in memory that grows linearly with the sequence. The explorer also runs on
# its own, as an app ([explore.ipynb](explore.ipynb)): `voila notebooks/explore.ipynb`.
