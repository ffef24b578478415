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
# [Notebook 04](04_multi_head_attention.ipynb) looked at the attention *weights*. This
# one looks at the token *vectors*: each position goes into the layer as a
# 64-dimensional vector and comes out as another. We draw both in one plane and then
# ask, honestly, how much of what we see is attention.
#
# **In this notebook you will learn**
#
# - how to draw 64-dimensional vectors in 2-D with PCA, and why inputs and outputs must
#   share one PCA;
# - how to read the picture: hollow circles, filled circles, arrows;
# - why every arrow in it points the same way: a shift that all tokens share, and what
#   the picture looks like once it is taken out;
# - how much a 2-D picture of 64-D vectors leaves out;
# - how to tell what attention does from what the layer's linear maps do, with two
#   baselines: every token attending only to itself, and every token replaced by the
#   mean input vector;
# - what the picture of an untrained layer does *not* show.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA

from mhattn import MultiHeadAttention
from mhattn.pictures import (
    embedding_shift_2d,
    exercise,
    not_yet,
    plot_embedding_shift,
    save_figure,
    show_source,
)

np.set_printoptions(precision=3, suppress=True)
# the notebooks run with notebooks/ as the working directory
FIGURES = Path("..") / "figures"

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
# varies the most. Projecting onto the first two gives the 2-D picture that keeps as
# much of the spread as any flat picture can.
#
# We want to draw an arrow from each token's input to its output, so both ends must be
# in the **same** coordinates. We therefore stack the 6 inputs and 6 outputs into one
# cloud of 12 points and fit a single PCA to it. `embedding_shift_2d` does that with
# one SVD: centre the cloud, and the top two right singular vectors are PCA's two
# directions (the squared singular values are the variance along each). It also fixes
# the sign of each axis, so that every run draws the same picture:

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
print(
    "same as scikit-learn up to each axis's sign:",
    np.allclose(ours_2d, sklearn_2d * signs),
)

# %% [markdown]
# ## 3. The picture
#
# Each position gets its own colour. Its empty ring marks the vector that enters the
# layer, its solid dot the vector that leaves it, and the arrow points from the first to
# the second. Don't read much into the arrows yet: section 4 finds a part of them that
# every token shares, and section 6 measures how much of their length is just the
# layer's linear map.

# %%
ax = plot_embedding_shift(
    inputs_2d,
    outputs_2d,
    explained,
    title="Inputs and outputs of an untrained layer, one PCA",
)
save_figure(ax.figure, FIGURES / "embedding_shift_pca.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** Where an untrained layer moves each token, in the one 2-D plane that keeps
# the most variance of inputs and outputs together (40% here): the arrows are the whole
# layer's doing, not attention's alone.
#
# <!-- alt: Scatter plot of six hollow circles labelled pos 0 to pos 5, each joined by a
# coloured arrow to a filled circle of the same colour. Most arrows point to the right,
# from inputs spread over the left half to outputs bunched between x = 0 and x = 7. -->

# %%
print(
    f"explained variance: component 1 {explained[0]:.1%}, component 2 "
    f"{explained[1]:.1%}"
)
print(f"the plane keeps {explained.sum():.1%} of the variance of the 12 vectors")

# %% [markdown]
# ## 4. A shift that every token shares
#
# Every arrow in the picture points to the right: all hollow circles sit on the left,
# all filled ones on the right. Before reading anything into single arrows, we should
# find out why. Compare the centre (the mean) of the six inputs with the centre of the
# six outputs, in the plane and in 64-D:

# %%
# (d_model,) each
input_centre, output_centre = inputs.mean(axis=0), outputs.mean(axis=0)
common_shift = output_centre - input_centre  # (d_model,): the mean of the six arrows
print("centre of the inputs in the plane: ", inputs_2d.mean(axis=0))
print("centre of the outputs in the plane:", outputs_2d.mean(axis=0))
print(
    f"length in 64-D: input centre {np.linalg.norm(input_centre):.2f}, output centre "
    f"{np.linalg.norm(output_centre):.2f}, common shift "
    f"{np.linalg.norm(common_shift):.2f}"
)

# %% [markdown]
# The two centres are mirror images in the plane because PCA puts the origin at the mean
# of all 12 points, halfway between them. They are far apart because neither cloud is
# centred at zero. Six random vectors do not average to zero: the mean of six standard
# normal vectors in 64-D has an expected squared length of $64/6$, a length of about 3.3
# (3.22 here). The layer sends that mean input somewhere else, and the **common shift**,
# the mean of the six arrows, takes it there. Every arrow is this common shift plus a
# part of its own.
#
# How much of the picture is the common shift? Write each 64-D arrow as $a_i = \bar a +
# (a_i - \bar a)$, with $\bar a$ the common shift. The cross terms cancel when summed
# over the tokens (the parts of their own add up to zero), so the squared lengths split
# exactly:
#
# $$
# \sum_i \lVert a_i \rVert^2 = n\,\lVert \bar a \rVert^2 + \sum_i \lVert a_i - \bar a
# \rVert^2 .
# $$

# %%
arrows = outputs - inputs  # (seq_len, d_model)
shared = seq_len * np.sum(common_shift**2)
own = np.sum((arrows - common_shift) ** 2)
print(
    f"squared arrow length, summed over tokens: {np.sum(arrows**2):.1f} = {shared:.1f} "
    f"shared + {own:.1f} own"
)
print(f"share of the common shift: {shared / np.sum(arrows**2):.0%}")

pca_axes = PCA(n_components=2).fit(stacked).components_  # (2, d_model), unit rows
print(
    "|cosine| between the common shift and component 1, 2:",
    np.abs(pca_axes @ common_shift) / np.linalg.norm(common_shift),
)

# %% [markdown]
# A third of all the motion is one shift that every token makes alike, and the first
# principal component lies almost along it (|cosine| 0.94). So component 1 mostly tells
# inputs from outputs; that is why all arrows point right. It says nothing about how the
# tokens differ from each other.
#
# To see that, take the shift out: centre the inputs on their own mean and the outputs
# on theirs, then fit one PCA to the 12 centred vectors. Each arrow then shows
# $a_i - \bar a$, how a token moves *relative to the others*. The bottom panel below
# does that; the top one repeats the picture of section 3 for comparison (the plotting
# code is in the collapsed cell).

# %%
centred_in_2d, centred_out_2d, explained_centred = embedding_shift_2d(
    inputs - input_centre, outputs - output_centre
)
print(
    f"the centred plane keeps {explained_centred.sum():.1%} of the variance of the 12 "
    "centred vectors"
)

# %% jupyter={"source_hidden": true}
fig, (ax_raw, ax_centred) = plt.subplots(2, 1, figsize=(7.5, 12), layout="constrained")
plot_embedding_shift(
    inputs_2d,
    outputs_2d,
    explained,
    ax=ax_raw,
    title="As the layer moves them (section 3)",
)
plot_embedding_shift(
    centred_in_2d,
    centred_out_2d,
    explained_centred,
    ax=ax_centred,
    title="With the common shift taken out (each cloud centred)",
    centre=(0.0, 0.0),
    centre_label="both centres",
)
save_figure(fig, FIGURES / "05_common_shift.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** Much of what the layer does is one shift shared by all tokens: with each
# cloud centred, the arrows that remain are what differs from token to token.
#
# <!-- alt: Two stacked scatter plots. Top: the same six arrows as before, most pointing
# right. Bottom, after centring: the arrows point in many directions around a black star
# where both centres lie, some long (pos 0 up, pos 5 down-left) and some short (pos 4).
# -->

# %% [markdown]
# Without the shift, the arrows point every which way, and both clouds sit around the
# same point (the star). What is left is each token's own motion, and it is no smaller
# than before: the parts of their own carry two thirds of the squared length. Trained
# models show the same effect, more strongly: their token vectors share a large common
# direction, and analyses of them remove the mean before a PCA for this reason (Mu and
# Viswanath 2018, in the references).
#
# The rest of this notebook measures in 64-D, where the common shift is simply part of
# each arrow.

# %% [markdown]
# ## 5. What the picture leaves out
#
# The two axes keep only about 40% of the variance: most of how these vectors differ
# happens in directions the plane does not show (exercise 1 asks how many directions
# there are). Distances in the plane are therefore only a rough guide. Every arrow, for
# example, is shorter in the picture than in 64-D (a projection can only shorten), and
# by a different factor for each token:

# %%
length_2d = np.linalg.norm(outputs_2d - inputs_2d, axis=1)
length_64d = np.linalg.norm(outputs - inputs, axis=1)
print("position            ", np.arange(seq_len))
print("arrow length in 2-D ", length_2d)
print("arrow length in 64-D", length_64d)
print("share that shows    ", length_2d / length_64d)

# %% [markdown]
# ## 6. What is attention, and what is just the projection?
#
# It is tempting to read the arrows as "each token moves toward the tokens it attends
# to". But the layer does two different things to a token:
#
# 1. **mixing**: each head replaces the token's value vector by a weighted average of
#    the value vectors of all tokens (this is attention);
# 2. **projecting**: the values are made by `W_qkv` and the heads are mixed by `W_o`,
#    two linear maps that act on every token alike.
#
# And there is no residual connection here: the output is not "the input plus
# something", it is a new vector. How related is it to the input? The cosine similarity
# of each token's input and output:


# %%
def cosine(a, b):
    return (a * b).sum(axis=-1) / (
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    )


print("cosine(input, output) per position:", cosine(inputs, outputs))

# %% [markdown]
# All close to zero: each output points in a direction almost unrelated to its input.
# Is that attention's doing, or the random linear maps'?
#
# To separate the two, we compute two baselines with the same layer:
#
# - **Projection only.** With the identity matrix as mask, every token may attend only
#   to itself, so its weights are 1 on itself and the layer is just the linear map
#   $x \mapsto x\, W_v W_o$ (with $W_v$ the value third of `W_qkv`): no mixing at all.
# - **Mixing only.** If every token were the mean input vector, attention would average
#   identical values, whatever the weights, and every token would get the same output.
#   That point is also where uniform attention (weight $1/6$ on every token, in every
#   head) would send each token: the most mixing possible.

# %%
# each token attends to itself only
projection_only, _ = mha(x, mask=np.eye(seq_len, dtype=bool))
W_v = np.split(mha.W_qkv, 3, axis=1)[2]  # (d_model, d_model): the value third
print(
    "projection only == x @ W_v @ W_o:", np.allclose(projection_only, x @ W_v @ mha.W_o)
)

# every token = the mean vector
mean_input = np.broadcast_to(x.mean(axis=1, keepdims=True), x.shape)
all_mixed, _ = mha(mean_input)
print("every token gets the same output:", np.allclose(all_mixed, all_mixed[:, :1]))
print(
    "it is the mean of the projections:",
    np.allclose(all_mixed[0, 0], projection_only[0].mean(axis=0)),
)
print(
    "cosine(input, projection only) per position:", cosine(inputs, projection_only[0])
)

# %% [markdown]
# The linear map alone already turns every input into a nearly unrelated vector (the
# last line). What does the mixing add? Not a slide along the straight line from a
# token's own projection to the common point. In each head, a token's output is a
# weighted average of *all* tokens' values, with that head's own weights, and `W_o` adds
# the heads up. With a single head the output would be a weighted average of the
# projection-only points, inside the region they enclose (their convex hull), pulled
# toward the tokens with most weight; with four heads it is a sum of four such averages,
# each with different weights.
#
# Averaging still pulls toward the middle. The next cell measures each token's distance
# to the centre of the projections (the complete-mixing point) before and after the
# mixing, then one number for a whole set of vectors, its spread: their mean distance to
# their own centre.

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
# closer, some (pos 3, which starts nearest the centre) only a little. The linear map
# alone doubles the spread of the inputs (its random weights have a gain of about 2);
# the mixing then roughly halves it again. That pull is the part of the picture that is
# attention.
#
# The two panels below draw each step in its own shared PCA plane. Top: input to
# projection only, the linear map with no attention. Bottom: projection only to the real
# output, what mixing adds; the star is the "complete mixing" point (the plotting code
# is in the collapsed cell).

# %%
map_2d = embedding_shift_2d(inputs, projection_only[0])  # top panel
start_2d, end_2d, explained_mix = embedding_shift_2d(projection_only[0], outputs)

# %% jupyter={"source_hidden": true}
fig, (ax_map, ax_mix) = plt.subplots(2, 1, figsize=(7.5, 12), layout="constrained")
plot_embedding_shift(
    *map_2d,
    ax=ax_map,
    title="The linear map alone (each token attends only to itself)",
    output_label="projection only",
    label_at="outputs",  # the inputs are bunched up in the middle
)
plot_embedding_shift(
    start_2d,
    end_2d,
    explained_mix,
    ax=ax_mix,
    title="What attention adds: mixing the tokens",
    input_label="projection only",
    output_label="output",
    centre=start_2d.mean(axis=0),
    centre_label="complete mixing",
)
save_figure(fig, FIGURES / "05_map_and_mixing.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The layer's two parts taken apart: the linear maps alone already scatter
# the tokens, and attention's mixing then pulls every token towards a common average.
#
# <!-- alt: Two stacked scatter plots. Top: arrows from six inputs near the middle to
# six projections flung far out, from x = -17 (pos 1) to x = 13 (pos 5) and y = -12 to
# 14. Bottom: arrows from those projections back inwards to six outputs gathered near a
# black star marking complete mixing. -->

# %% [markdown]
# (The star sits at the mean of the hollow circles: a PCA projection is a shift followed
# by a linear map, so the projection of a mean is the mean of the projections.)
#
# In 64-D every token ended closer to the centre. Does the bottom panel show that?
# Measure the same distances to the star in the plane:

# %%
star = start_2d.mean(axis=0)  # (2,): the complete-mixing point in the plane
before_2d = np.linalg.norm(start_2d - star, axis=1)
after_2d = np.linalg.norm(end_2d - star, axis=1)
print("distance to the star in the plane, projection only:", before_2d)
print("distance to the star in the plane, output:         ", after_2d)
print(
    "positions that move away from the star in the picture:",
    np.flatnonzero(after_2d > before_2d),
)

# %% [markdown]
# Not for pos 3. In 64-D it starts nearest the centre (10.2) and moves only a little
# closer (to 9.8). Its offset from the centre lies almost entirely in directions the
# plane does not show, so in the picture it starts right next to the star (1.2); the
# plane keeps more of where it ends, 3.4 from the star. A projection shrinks each
# distance by its own factor, so the picture can even reverse which of two distances is
# larger.
#
# The two panels use two different planes, so their arrows cannot be compared by eye.
# Compare the lengths in 64-D instead: how far the linear map alone moves each token,
# and how far the whole layer moves it.

# %%
moved_by_map = np.linalg.norm(projection_only[0] - inputs, axis=1)
moved_by_layer = np.linalg.norm(outputs - inputs, axis=1)
print("position                        ", np.arange(seq_len))
print("input -> projection only (64-D) ", moved_by_map)
print("input -> output (64-D)          ", moved_by_layer)
print(
    f"mean: linear map alone {moved_by_map.mean():.2f}, whole layer "
    f"{moved_by_layer.mean():.2f}"
)
print(
    "positions the map alone moves further:",
    np.flatnonzero(moved_by_map > moved_by_layer),
)

# %% [markdown]
# **An honest reading of these pictures.**
#
# - Nothing here is about meaning. The input is random numbers and the weights are
#   untrained, so which token ends up near which is an accident of two seeds. In a
#   trained model the same picture can show tokens gathering information from related
#   words; this one cannot.
# - A third of the arrows' squared length in the first picture is one shift shared by
#   all tokens, between the centre of the inputs and the centre of the outputs; its
#   first axis mostly separates the two clouds.
# - The long arrows come mostly from the random linear map: the map alone already sends
#   each input to a nearly orthogonal vector, and on average it moves a token further
#   than the whole layer does (about 18 against 13 in 64-D). That holds for every token
#   but pos 3, where the two distances are almost equal.
# - What attention does is the pull toward the centre, measured in 64-D: every token
#   ends closer to the complete-mixing point than its own projection, without reaching
#   it. In the bottom panel most arrows run toward the star, not always straight at it
#   (pos 0 passes beside it), because each output is a sum of the heads' weighted
#   averages, not a point on the line to the star; and pos 3, which moves least, even
#   appears to move away. Averaging pulls tokens together; the weights decide how far,
#   and toward whom.
# - Each plane keeps well under two thirds of the variance; read distances as hints, not
#   measurements.
#
# In a real Transformer the output is added back to the input (a residual connection),
# so the next layer still sees the input as one term of the sum; exercise 3 measures
# how far that sum turns each token.

# %% [markdown]
# ## 7. Common bug: one PCA for the inputs and another for the outputs
#
# Fitting a PCA to the inputs and a separate one to the outputs gives each cloud its own
# axes. Both pictures look fine on their own, but an arrow from one to the other joins
# coordinates of two unrelated systems. Here are the absolute cosines between the axes
# of the two fits; the same axes would give 1 on the diagonal:

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
# - To draw inputs and outputs in one 2-D picture, fit one PCA to both together;
#   separate fits give unrelated axes.
# - Look for a shift that all tokens share before reading single arrows. Here it is a
#   third of the squared arrow length, and the first axis mostly separates inputs from
#   outputs; centring each cloud on its own mean takes it out.
# - The picture keeps about 40% of the variance here: a sketch, not a map. It can even
#   reverse which of two distances is larger.
# - Without a residual connection and with random weights, the outputs are nearly
#   orthogonal to the inputs; the long input-to-output arrows come mostly from the
#   linear map $W_v W_o$ (alone, it moves the tokens further on average than the whole
#   layer), not from attention.
# - Attention's own effect is mixing: in each head, a token's output is a weighted
#   average of all tokens' values, so the outputs crowd together (here every token ends
#   closer to the centre than its own projection, in 64-D). Two baselines make it
#   visible: the identity mask (no mixing) and the mean input vector (complete mixing).
# - An untrained layer shows the mechanics, never meaning.

# %% [markdown]
# ## Exercises
#
# As in the earlier notebooks: a cell for your answer (replace the `...`), a collapsed
# cell that checks it (run it without opening it), and a collapsed solution below.
#
# **Exercise 1 (predict, then compute).** Section 3's plane keeps 40% of the variance of
# the 12 stacked vectors. First predict: what is the largest number of principal
# components these 12 vectors can have with nonzero variance, and do you expect 90% of
# the variance to need few of them or most? Then compute `components_for_90`, the
# smallest number of components that keeps at least 90%. (Fit a `PCA` without
# `n_components` to `stacked` and look at its `explained_variance_ratio_`.)

# %%
components_for_90 = ...  # your answer: an int


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint="components_for_90 should be a whole number.")
def check_exercise_1(answer):
    centred = stacked - stacked.mean(axis=0)
    # variance along each principal axis, unnormalised
    variance = np.linalg.svd(centred, compute_uv=False) ** 2
    # kept[k - 1]: share kept by the first k components
    kept = np.cumsum(variance) / variance.sum()
    assert isinstance(answer, (int, np.integer)) and 1 <= answer <= len(kept), (
        "give a whole number of components"
    )
    assert kept[answer - 1] >= 0.9, (
        f"{answer} components keep only {kept[answer - 1]:.1%}: you need more"
    )
    assert answer == 1 or kept[answer - 2] < 0.9, (
        "fewer components already keep 90%: the smallest number?"
    )


print(check_exercise_1(components_for_90))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: at most 11. PCA centres the 12 points on their mean, and 12 centred
# vectors add up to zero, so they span at most 11 directions, however wide the space.
# And most of the 11 are needed: the inputs are random and the layer is random, so no
# direction stands out, and each component keeps only a little more than the next
# (26%, 14%, 13%, 11%, ...). Eight components are needed for 90%.
solution_components_for_90 = (
    int(np.argmax(np.cumsum(PCA().fit(stacked).explained_variance_ratio_) >= 0.9)) + 1
)
print(check_exercise_1(solution_components_for_90))

# %% [markdown]
# **Exercise 2 (predict, then write).** Section 6 imagined *uniform* attention, every
# token giving weight $1/6$ to every token in every head, but never built it. You can,
# by changing the layer's weights only: zero one block of columns of `W_qkv`. First
# predict: which block, and why that one? Then write `uniform_layer(mha)`, which
# returns a **new** `MultiHeadAttention` whose weights are uniform on every input,
# leaving `mha` unchanged. (Section 3 of notebook 04 gives the layout of `W_qkv`.)


# %%
def uniform_layer(mha):
    """A new layer like mha whose attention weights are all 1 / seq_len."""
    return ...  # your code here


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint=(
    "uniform_layer(mha) returns a MultiHeadAttention of the same size as mha."
))
def check_exercise_2(function):
    W_qkv_before, W_o_before = mha.W_qkv.copy(), mha.W_o.copy()
    layer = not_yet(function(mha))
    assert layer is not mha, (
        "return a new MultiHeadAttention and leave mha as it is"
    )
    assert np.array_equal(mha.W_qkv, W_qkv_before) and np.array_equal(
        mha.W_o, W_o_before
    ), (
        "mha's own weights changed: edit a copy (mha.W_qkv.copy()), not mha.W_qkv "
        "itself"
    )
    new_output, new_weights = layer(x)
    assert np.allclose(new_weights, 1 / seq_len), (
        "the weights are not uniform: when does a softmax give every key the same "
        "weight?"
    )
    assert np.allclose(new_output, all_mixed), (
        "the weights are uniform, but the outputs are not what mha's own values "
        "give under uniform weights: change only what the weights depend on"
    )


print(check_exercise_2(uniform_layer))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: zero the query columns (the first d_model columns of W_qkv); zeroing
# the key columns works as well. Then every score is a dot product with a zero vector,
# every row of scores is all zeros, and the softmax of equal numbers is uniform. Each
# head's output is then the plain mean of its values, and means pass through the linear
# maps: every token gets mean(x) @ W_v @ W_o, the mean of the projection-only points.
# All six outputs land on the star, and their spread is 0.
def solution_uniform_layer(mha):
    layer = MultiHeadAttention(mha.d_model, mha.num_heads)
    W_qkv = mha.W_qkv.copy()  # (d_model, 3 * d_model)
    W_qkv[:, : mha.d_model] = 0.0  # the query columns: every score becomes 0
    layer.W_qkv, layer.W_o = W_qkv, mha.W_o.copy()
    return layer


print(check_exercise_2(solution_uniform_layer))

# %% [markdown]
# **Exercise 3 (predict, then compute).** A Transformer block adds the layer's input to
# its output: the next layer sees `input + output`. Section 6 found
# cosine(input, output) near 0 for every token. First predict cosine(input,
# input + output): near 0, near 1, or in between, and what sets it? Then compute
# `residual_cosine`, one cosine per token (shape `(6,)`), and draw
# `embedding_shift_2d(inputs, inputs + outputs)` with `plot_embedding_shift`: what
# happens to the arrows?

# %%
residual_cosine = ...  # your answer: an array of shape (6,)


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint="residual_cosine should hold one number per position.")
def check_exercise_3(answer):
    after = inputs + outputs
    unit_in = inputs / np.linalg.norm(inputs, axis=1, keepdims=True)
    unit_after = after / np.linalg.norm(after, axis=1, keepdims=True)
    # cos = 1 - |u - v|^2 / 2 for unit u, v
    expected = 1 - np.linalg.norm(unit_in - unit_after, axis=1) ** 2 / 2
    assert np.shape(answer) == (seq_len,), (
        f"one cosine per position: shape ({seq_len},); got {np.shape(answer)}"
    )
    assert np.allclose(answer, expected), (
        "not the cosine of each input with input + output (row by row?)"
    )


print(check_exercise_3(residual_cosine))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# The prediction: in between, set by how long the output is next to the input.
# cos(input, input + output) = (|in|^2 + in.out) / (|in| |in + out|). With in.out near
# 0 (section 6) that is about 1 / sqrt(1 + r^2), where r = |out| / |in|: input, output
# and their sum form a near-right triangle. Here r runs from 0.93 to 1.46: the untrained
# layer's output is as long as its input. So the cosines run from 0.43 to 0.76, and the
# sum turns each token by 40 to 65 degrees. Pos 3 is lowest (0.43): its output is among
# the longest relative to its input and points a little against it (cosine -0.23).
# So the residual does not keep the tokens near their inputs here; what it keeps is the
# input itself, one term of the sum, which the next layer can still read. The arrows
# get shorter, but not short: in 64-D each is now the output alone, 7.2 to 11.6 long
# (section 3's arrows were 10.1 to 14.5), as long as the inputs (6.9 to 9.4). The
# plane shortens each by its own factor: pos 5's looks tiny (1.5), yet it is 7.2.
solution_residual_cosine = cosine(inputs, inputs + outputs)
print(check_exercise_3(solution_residual_cosine))
ax = plot_embedding_shift(
    *embedding_shift_2d(inputs, inputs + outputs),
    title="With the residual connection",
    output_label="input + output",
)
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The picture exercise 3 asks for, drawn by its solution: each token's
# input and its input + output, in one PCA plane fitted to both.
#
# <!-- alt: Scatter plot of six hollow circles, each with a coloured arrow to a filled
# circle labelled input + output; the arrows point up and to the right for pos 1, 3 and
# 4, left for pos 2, right for pos 0, and pos 5's is the shortest. -->

# %% [markdown]
# ---
# ## Try it yourself
#
# The same picture, live: change `seq_len`, the number of heads, the mask or the seed,
# and watch the arrows move next to the heatmaps of every head. The explorer draws its
# own random tokens and weights from its seed, so its pictures differ from the ones
# above. Switch its weights to the model trained in notebook 07 to see the same picture
# for a layer that has learned something. (Where no Python runs, on GitHub for instance,
# you see a still picture of the first frame; open the notebook in JupyterLab or on
# Binder to move the controls.)

# %%
# NBVAL_IGNORE_OUTPUT
from mhattn.explorer import explorer

explorer(d_model=64, num_heads=4, seq_len=6)

# %% [markdown] tags=["figure-caption"]
# **Figure.** The explorer's first frame without a mask: every head of an untrained
# layer and the PCA plane of where it moves six tokens.
#
# <!-- alt: Left: four small 6-by-6 heatmaps with no grey cells, head 2 strongest at row
# 0 key 3 and row 4 key 1. Right: a PCA plane whose six hollow input circles sit in the
# upper right and whose arrows cross to filled outputs on the left and at the bottom.
# -->

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). The layer, and the residual
#   connection around it.
# - Pearson, K. (1901). *On lines and planes of closest fit to systems of points in
#   space.* Philosophical Magazine 2(11), 559-572. Principal component analysis: the
#   plane that keeps the most variance.
# - He, K., Zhang, X., Ren, S. and Sun, J. (2016). *Deep Residual Learning for Image
#   Recognition.* CVPR 2016. [arXiv:1512.03385](https://arxiv.org/abs/1512.03385). The
#   residual connection of exercise 3.
# - Mu, J. and Viswanath, P. (2018). *All-but-the-Top: Simple and Effective
#   Postprocessing for Word Representations.* ICLR 2018.
#   [arXiv:1702.01417](https://arxiv.org/abs/1702.01417). Word vectors share a large
#   common mean; removing it (section 4) is a standard first step.
# - Ethayarajh, K. (2019). *How Contextual are Contextualized Word Representations?*
#   EMNLP 2019. [arXiv:1909.00512](https://arxiv.org/abs/1909.00512). In trained
#   Transformers the token vectors of a layer crowd into a narrow cone.
#
# **Read next.** Elhage, N. et al. (2021), *A Mathematical Framework for Transformer
# Circuits*
# ([transformer-circuits.pub](https://transformer-circuits.pub/2021/framework/index.html)):
# the residual stream, and each head as a read from it and a write back into it. In its
# terms, the linear map $W_v W_o$ of section 6 is the sum of the heads' "OV circuits",
# and the weights that do the mixing come from their "QK circuits".
#
# ---
# Next: [06_positions.ipynb](06_positions.ipynb). Nothing in this layer knows which
# token came first: shuffle the tokens and the outputs are shuffled the same way. The
# next notebook gives attention a sense of order. The explorer also runs on its own, as
# an app ([explore.ipynb](explore.ipynb)): `voila notebooks/explore.ipynb`.
