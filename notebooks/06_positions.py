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
# # 6. Where does order come from? Positions
#
# *The dog bit the man* and *the man bit the dog* hold the same tokens. Every layer of
# notebooks 01 to 05 computed its scores from the vectors it was given, and nothing in
# those vectors said where a token *stands*. This notebook shows, with numbers, that
# attention alone cannot tell the two sentences apart, and then the three ways a
# Transformer is told where each token is.
#
# **In this notebook you will learn**
#
# - why attention without a mask is *permutation-equivariant*: shuffle the tokens and
#   the outputs shuffle the same way, and why a causal mask breaks that;
# - the sinusoidal encodings of the original Transformer, and their key property: moving
#   every position by the same offset is one linear map (a rotation);
# - learned position embeddings, and their limit: no row for a position beyond the
#   trained length;
# - rotary embeddings (RoPE), used by Llama, Mistral, Qwen and Gemma: rotate queries and
#   keys by their positions, and every score depends only on the *distance* $i - j$;
# - the two pairing conventions of RoPE, and the fixed column permutation between them;
# - what a causal mask can tell a model without any positions, and what it cannot.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
import matplotlib.pyplot as plt
import numpy as np

from mhattn import (
    MultiHeadAttention,
    RotaryMultiHeadAttention,
    apply_rope,
    apply_rope_interleaved,
    causal_mask,
    interleaved_to_half_split,
    rope_angles,
    sinusoidal_encoding,
)
from mhattn.pictures import exercise, not_yet, show_source

np.set_printoptions(precision=3, suppress=True)
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Attention does not see order
#
# Shuffle the rows of the input with a permutation matrix $P$. The queries, keys and
# values are computed row by row, so they shuffle too: $Q' = PQ$, $K' = PK$, $V' = PV$.
# The scores become
#
# $$S' = \frac{Q' K'^\top}{\sqrt{d_k}} = P\, S\, P^\top,$$
#
# the same numbers with rows *and* columns shuffled. A row-wise softmax does not care in
# which order a row's entries come, so the weights are $P A P^\top$, and the output is
# $P A P^\top P V = P\,(AV)$: the old output, shuffled. Nothing in the layer depends on
# where a token stands, only on which tokens are there. Check it on a random layer:

# %%
mha = MultiHeadAttention(d_model=16, num_heads=4, seed=0)
x = rng.standard_normal((1, 6, 16))  # 6 tokens, no positions
perm = np.array([3, 0, 5, 1, 4, 2])  # a shuffle
output, weights = mha(x)
shuffled_output, shuffled_weights = mha(x[:, perm])
print("outputs shuffled the same way:",
      np.allclose(shuffled_output, output[:, perm], rtol=0, atol=1e-12))
shuffled_back = weights[:, :, perm][:, :, :, perm]  # rows and columns shuffled
print("weights shuffled on both axes: ",
      np.allclose(shuffled_weights, shuffled_back, rtol=0, atol=1e-12))

# %% [markdown]
# So for this layer, *the dog bit the man* is *the man bit the dog*, shuffled: every
# token gets the same vector in both sentences. Stacking such layers changes nothing,
# since each one commutes with the shuffle.
#
# A **causal mask** is different: it is tied to the positions (query $i$ may see keys
# $j \le i$), and shuffling the tokens does not shuffle the mask. The outputs are no
# longer a shuffle of the old ones:

# %%
mask = causal_mask(6)
difference = mha(x[:, perm], mask)[0] - mha(x, mask)[0][:, perm]
print("with a causal mask, outputs shuffled the same way:",
      np.allclose(difference, 0, rtol=0, atol=1e-12))

# %% [markdown]
# Section 6 asks how much order that mask really gives. First, the usual remedy: tell
# the model each token's position.
#
# ## 2. Sinusoidal encodings
#
# Vaswani et al. (2017) add to each token's vector a fixed vector that depends only on
# its position $pos$: pairs of a sine and a cosine at $d_\text{model}/2$ frequencies,
#
# $$PE_{pos,\,2i} = \sin(pos\,\theta_i), \qquad PE_{pos,\,2i+1} = \cos(pos\,\theta_i),
# \qquad \theta_i = 10000^{-2i/d_\text{model}}.$$
#
# The first pair turns by one radian per position, the last by nearly $1/10000$: like
# the hands of a clock that runs at $d_\text{model}/2$ speeds. The angles are computed
# once, and RoPE (section 4) uses the same ones:

# %%
show_source(rope_angles)

# %%
show_source(sinusoidal_encoding)

# %% [markdown]
# Each row below is one position's vector. Fast columns on the left alternate quickly;
# slow columns on the right barely change over 64 positions: the slow sine columns stay
# near 0 (white) and the cosine columns near 1 (red), the stripes on the right. Together
# the columns give every position a different pattern.

# %%
encoding = sinusoidal_encoding(64, 64)  # (seq_len, d_model)
fig, (left, right) = plt.subplots(1, 2, figsize=(7.5, 3.2), width_ratios=[1.2, 1])
image = left.imshow(encoding, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
left.set(xlabel="column", ylabel="position", title="sinusoidal_encoding(64, 64)")
fig.colorbar(image, ax=left)
for column in (0, 10, 30):
    right.plot(encoding[:, column], label=f"column {column}")
right.set(xlabel="position", ylabel="value", title="three columns")
right.legend(fontsize=10, loc="lower left")
fig.tight_layout()
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The sinusoidal encoding gives each position a unique pattern: early
# columns oscillate fast with position, later columns slowly, so near positions look
# alike and far ones differ.
#
# <!-- alt: Left: a 64-by-64 red-and-blue heatmap of sinusoidal_encoding, position down
# and column across; the left columns change colour rapidly from row to row, the right
# columns form solid vertical stripes. Right: three columns against position: column 0
# oscillates fast between -1 and 1, column 10 about twice over 64 positions, column 30
# rises slowly from 0 to 0.75. -->

# %% [markdown]
# **A fixed offset is a linear map.** The sine and cosine of $pos\,\theta_i$ are a point
# on a circle; moving $k$ positions on turns it by the angle $k\,\theta_i$, whatever
# $pos$ is. So there is one matrix $M_k$ with $PE_{pos+k} = PE_{pos}\, M_k$ for *every*
# position. Vaswani et al. chose these functions because they hypothesised that this
# would let a model easily learn to attend by relative position: "the token $k$ places
# back" is one linear map away. Check it without knowing $M_k$: fit it by
# least squares on positions 0 to 63, and test it on positions 64 to 199, which it never
# saw. (With `d_model = 8`: with many more columns, the slowest ones barely move over 64
# positions, and the fit cannot pin them down.)

# %%
offset = 3
table = sinusoidal_encoding(200 + offset, 8)  # (seq_len, d_model)
M, *_ = np.linalg.lstsq(table[:64], table[offset : 64 + offset], rcond=None)
unseen_error = np.abs(table[64:200] @ M - table[64 + offset : 200 + offset]).max()
print(f"the same M moves positions 64..199 by {offset}: error below 1e-9:",
      unseen_error < 1e-9)
block = M[:2, :2]  # the first pair: a rotation by offset * theta_0 = 3 radians
print("first 2 x 2 block of M:\n", block)
print("off the 2 x 2 blocks, M is zero:",
      np.allclose(M - np.kron(np.eye(4), np.ones((2, 2))) * M, 0, atol=1e-9))

# %% [markdown]
# The dot product of two positions' vectors is $\sum_i \cos((p - q)\,\theta_i)$: it
# depends only on the distance $p - q$. Keep that in mind for RoPE. (Exercise 1 asks for
# $M_k$ in closed form.)
#
# ## 3. Learned encodings, and their limit
#
# The other choice in Vaswani et al. (and the one of GPT-2, and of the small models that
# notebooks 07 and 08 train) is a table with one *learned* row per position, `pos[t]`,
# added to token $t$. Training sets its numbers like any other weight; here they are
# random, since only the table's shape matters. Vaswani et al. report nearly identical
# results for the two kinds. A table has one limit that no training removes: it has
# `max_len` rows, and position `max_len` has none.

# %%
max_len, d_model = 32, 16
table_rng = np.random.default_rng(1)  # its own generator: rng's draws stay as they were
pos = table_rng.standard_normal((max_len, d_model))  # (max_len, d_model): row t for t
tokens = table_rng.standard_normal((max_len + 1, d_model))  # one token too many
try:
    tokens + pos[np.arange(max_len + 1)]  # position t gets row t
except IndexError as error:
    print(f"{max_len + 1} tokens:", error)

# %% [markdown]
# Sinusoidal encodings can be computed for any position, but that does not make a model
# work there: Press et al. (2022) measured that sinusoidal models degrade quickly beyond
# the length they were trained on. Both kinds also share a design choice that section 4
# revisits: the position is *added* to the token's vector, once, at the bottom, and
# every later layer must dig it out of the sum.
#
# ## 4. Rotary position embeddings (RoPE)
#
# Su et al. (2021) put the position where attention uses it: in the scores. Split a
# query (or key) of width $d_k$ into $d_k/2$ pairs of coordinates, and turn pair $i$ of
# the vector at position $p$ by the angle $p\,\theta_i$:
#
# $$\begin{pmatrix} y_i \\ y_{i + d_k/2} \end{pmatrix} =
# R(p\,\theta_i) \begin{pmatrix} x_i \\ x_{i + d_k/2} \end{pmatrix}, \qquad
# R(\alpha) = \begin{pmatrix} \cos\alpha & -\sin\alpha \\ \sin\alpha & \cos\alpha
# \end{pmatrix}.$$
#
# A rotation keeps lengths, and two rotations compose: $R(a)^\top R(b) = R(b - a)$. So
# for a query $q$ at position $i$ and a key $k$ at position $j$,
#
# $$\big(R(i\theta)\,q\big) \cdot \big(R(j\theta)\,k\big)
# = q^\top R\big((j - i)\,\theta\big)\,k:$$
#
# the score depends on the positions only through $i - j$. Values are not rotated: the
# position changes *where* a query looks, not *what* it takes.
#
# Which coordinates form a pair is a convention. `mhattn` pairs coordinate $i$ with
# $i + d_k/2$ ("half-split"), as GPT-NeoX and Hugging Face's Llama do:

# %%
show_source(apply_rope)

# %% [markdown]
# Check the claim: rotate one query and one key to every position from 0 to 39, and
# compute all $40 \times 40$ scores. If only $i - j$ matters, each diagonal of the
# picture holds one value.

# %%
d_k, n = 16, 40
q, k = rng.standard_normal((2, d_k))
positions = np.arange(n)
queries = apply_rope(np.tile(q, (n, 1)), positions)  # (n, d_k): q at each position
keys = apply_rope(np.tile(k, (n, 1)), positions)  # (n, d_k): k at each position
scores = queries @ keys.T  # (n, n): scores[i, j] = q at i . k at j
spread = max(np.ptp(np.diagonal(scores, o)) for o in range(-(n - 1), n))
print("largest spread along any diagonal below 1e-12:", spread < 1e-12)
print("lengths kept:", np.allclose(np.linalg.norm(queries, axis=1), np.linalg.norm(q)))

fig, (left, right) = plt.subplots(1, 2, figsize=(7.5, 3.2), width_ratios=[1, 1.2])
limit = np.abs(scores).max()  # symmetric limits: white is a score of 0
image = left.imshow(scores, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="equal")
left.set(xlabel="key position j", ylabel="query position i", title="rotated q . k")
fig.colorbar(image, ax=left)
right.plot(np.arange(-(n - 1), n), [scores[max(0, -o), max(0, o)]
           for o in range(-(n - 1), n)], marker=".")
right.axhline(q @ k, color="gray", linestyle=":", label="q . k without rotation")
right.set(xlabel="offset j - i", ylabel="score",
          title="the score is a function of j - i")
right.legend(fontsize=10)
fig.tight_layout()
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** With RoPE, the score between a rotated query and key depends only on their
# offset j - i, not on where the pair sits: every diagonal of the score matrix is
# constant.
#
# <!-- alt: Left: a 40-by-40 heatmap of rotated q·k, query position down and key
# position across, made of red and blue stripes parallel to the diagonal. Right: the
# score against the offset j - i from -40 to 40, a wavy line falling from about 6 to -2,
# against a dotted level line near -0.4 for q·k without rotation. -->

# %% [markdown]
# <!-- live-figure: rope -->
#
# **The other convention.** RoFormer, and Meta's original Llama code, pair neighbours:
# coordinate $2i$ with $2i + 1$. The rotations are the same; only the pairing differs.

# %%
show_source(apply_rope_interleaved)

# %% [markdown]
# Reordering the columns turns one into the other: take the first coordinates of all
# pairs, then the second ones.

# %%
show_source(interleaved_to_half_split)

# %%
x_heads = rng.standard_normal((2, 3, 7, 8))  # (batch, heads, seq_len, d_k)
order = interleaved_to_half_split(8)
print("order:", order)
print("interleaved, then reordered == reordered, then half-split:",
      np.allclose(apply_rope_interleaved(x_heads, np.arange(7))[..., order],
                  apply_rope(x_heads[..., order], np.arange(7))))

# %% [markdown]
# A score sums over all coordinates, so reordering the query and key columns of every
# head in the same way changes no score. That is how a checkpoint written for one
# convention runs in code written for the other: Hugging Face's conversion script for
# Meta's Llama weights reorders the output features of the query and key projections in
# this way, head by head. Mixing the two conventions without reordering gives a model
# that runs, and outputs nonsense.
#
# ## 5. RoPE in the module
#
# `RotaryMultiHeadAttention` is notebook 04's module with one more line: after the
# heads are split, every query and key turns by its position (`rotate` applies
# `apply_rope`, or `apply_rope_interleaved` for `rope="interleaved"`). The weights are
# drawn as in notebook 04, so the same seed gives the same `W_qkv` and `W_o`.

# %%
show_source(RotaryMultiHeadAttention.forward)

# %% [markdown]
# Only the differences of the positions reach the scores. Moving every token by the same
# offset changes no output, and with every token at position 0 nothing turns at all, so
# the layer is notebook 04's module:

# %%
x = rng.standard_normal((2, 12, 32))
layer = RotaryMultiHeadAttention(d_model=32, num_heads=4, seed=1)
output, _ = layer(x, causal_mask(12))  # positions 0, 1, ..., 11
moved, _ = layer(x, causal_mask(12), positions=np.arange(12) + 100)
print(
    "positions moved by 100 give the same output:",
    np.allclose(output, moved, rtol=0, atol=1e-12),
)
unturned, _ = layer(x, causal_mask(12), positions=np.zeros(12, dtype=int))
plain, _ = MultiHeadAttention(d_model=32, num_heads=4, seed=1)(x, causal_mask(12))
print(
    "every position 0 == MultiHeadAttention with the same seed:",
    np.allclose(unturned, plain, rtol=0, atol=1e-12),
)

# %% [markdown]
# Cross-attention is refused with `rope=True`: its queries and keys come from two
# different sequences, so "the distance between query $i$ and key $j$" has no meaning.
#
# ## 6. Without positions: what the causal mask gives
#
# A causal model trained with *no* positional encoding at all ("NoPos" in Haviv et al.,
# "NoPE" in Kazemnejad et al.) can still do
# well: Haviv et al. (2022) found such language models competitive with those that have
# positions, and probes could read the absolute position from their hidden states. Where
# does that come from? Not from one layer alone. Query $t$'s output is
#
# $$o_t = \sum_{j \le t} \operatorname{softmax}_j\!
# \Big(\tfrac{q_t \cdot k_j}{\sqrt{d_k}}\Big)\, v_j,$$
#
# a sum over the tokens up to $t$. Reorder the earlier tokens and the terms of the sum
# are reordered, nothing else: one causal layer sees the current token and the *set* of
# tokens before it, not their order.

# %%
layers = [MultiHeadAttention(16, 2, seed=s) for s in (3, 4)]
x = rng.standard_normal((1, 8, 16))  # 8 tokens, no positions
earlier = np.r_[rng.permutation(7), 7]  # shuffle tokens 0..6, keep token 7 last


def causal_stack(layers, h):
    """Residual layers without positions: h = h + attention(h), causal."""
    for layer in layers:
        h = h + layer(h, causal_mask(h.shape[1]))[0]
    return h


for depth in (1, 2):
    last = causal_stack(layers[:depth], x)[0, -1]
    last_shuffled = causal_stack(layers[:depth], x[:, earlier])[0, -1]
    print(f"{depth} causal layer(s): the last output ignores the order before it:",
          np.allclose(last, last_shuffled, rtol=0, atol=1e-12))

# %% [markdown]
# One layer cannot order the earlier tokens; two can tell orders apart. Why? After the
# first layer, token $j$ carries something computed from the tokens $0, \dots, j$, and
# which tokens those are depends on the order: the earlier tokens are no longer
# interchangeable for the second layer. The clearest such signal is a *count*. Give the
# sequence a first token that is always the same, like a beginning-of-sequence token,
# marked by a 1 in one coordinate. A head with zero queries gives every visible key the
# same weight, $1/(t + 1)$ at position $t$; if its value reads the marker, its output at
# position $t$ is exactly $1/(t+1)$:

# %%
counter = MultiHeadAttention(d_model=4, num_heads=1)
counter.W_qkv = np.zeros((4, 12))  # queries 0: every score 0, uniform weights
counter.W_qkv[0, 8] = 1.0  # the value is coordinate 0: the marker
counter.W_o = np.eye(4)
tokens = np.c_[np.r_[1.0, np.zeros(9)], rng.standard_normal((10, 3))]  # marker, content
count = counter(tokens[None], causal_mask(10))[0][0, :, 0]  # (10,)
print("output at t == 1 / (t + 1):", np.allclose(count, 1 / np.arange(1, 11)))

fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(np.arange(10), count, "o-")
ax.set(xlabel="position t", ylabel="output, coordinate 0",
       title="a causal head that counts: 1 / (t + 1)")
fig.tight_layout()
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** A causal head with equal scores averages over what it can see, so its
# output is 1/(t + 1) at position t: it can tell how far into the sequence it is, with
# no positional encoding.
#
# <!-- alt: Line chart of output coordinate 0 against position t from 0 to 9: dots at 1,
# 0.5, 0.33, 0.25 and on down to 0.1, a curve falling quickly and then flattening. -->

# %% [markdown]
# After this layer, every position carries a number that differs from its neighbours': a
# position signal, made by the mask. A second layer can use it like a positional
# encoding, and the order of the earlier tokens can then matter, as the two-layer check
# above found with random weights.
# Kazemnejad et al. (2023, Theorem 1) build exactly this: a first layer that, from a
# beginning-of-sequence token and the causal mask, writes each token's absolute position
# into the hidden state (with the help of the layer's feed-forward network); their
# Theorem 2 then builds relative positions from it.
#
# Be careful with what this shows. It shows what *can* be computed, with weights chosen
# by hand; it does not show that a trained model does it that way. Haviv et al.
# conjecture that trained models without positions count their predecessors; the probes
# are evidence, not proof. And without a mask nothing helps: every layer is then
# permutation-equivariant (section 1), and so is any stack of them. Haviv et al. saw
# this too: masked language models (no causal mask) trained without positions did much
# worse than those with positions.

# %% [markdown]
# ## Summary
#
# - Attention without a mask is permutation-equivariant: shuffling the tokens shuffles
#   the outputs, so a model needs to be told where each token stands.
# - Sinusoidal encodings add $\sin$ and $\cos$ of $pos\,\theta_i$; moving all positions
#   by $k$ is one fixed rotation $M_k$. Learned encodings are a table: nothing beyond
#   its last row.
# - RoPE rotates each pair of query and key coordinates by $p\,\theta_i$. Rotations keep
#   lengths and compose, so every score depends only on $i - j$. `mhattn` pairs $i$ with
#   $i + d_k/2$ (GPT-NeoX, Hugging Face's Llama); RoFormer pairs $2i$ with $2i + 1$; a
#   fixed reordering of the query and key columns turns one into the other.
# - `RotaryMultiHeadAttention` is notebook 04's module with queries and keys turned by
#   their positions right after the heads are split; moving every position by the same
#   offset changes nothing.
# - One causal layer sees the earlier tokens as a set but can count them; two causal
#   layers can tell orders apart. Without a mask, no depth can.
#
# ## Exercises
#
# Each exercise has a cell for your answer, holding `...` where the answer goes, and a
# cell that checks it. Replace the `...`, run your cell, then run the check: it prints
# "not yet" while the `...` is still there, "correct." when your answer passes, and
# otherwise stops with a message that says what to look at. Below each check is a
# collapsed cell with a solution, run through the same check; open it only after trying.
#
# **Exercise 1 (the offset matrix in closed form).** Section 2 found $M_k$ by least
# squares. Write `offset_matrix(k, d_model)`, which builds it from sines and cosines: a
# `(d_model, d_model)` array with `encoding[pos + k] == encoding[pos] @ M` for every
# `pos`, where `encoding = sinusoidal_encoding(seq_len, d_model)` and `d_model` is even.
# Hint: $\sin(a + b)$ and $\cos(a + b)$ in terms of $\sin a$, $\cos a$.


# %%
def offset_matrix(k, d_model):
    """M with sinusoidal_encoding(...)[pos + k] == sinusoidal_encoding(...)[pos] @ M."""
    return ...  # your code here


# %%
@exercise(1, crash_hint="offset_matrix(k, d_model) returns a (d_model, d_model) array.")
def check_exercise_1(offset_matrix):
    not_yet(offset_matrix(1, 8))
    for k, d_model in ((1, 8), (5, 16), (12, 6)):
        table = sinusoidal_encoding(40 + k, d_model)
        M = np.asarray(offset_matrix(k, d_model))
        assert M.shape == (d_model, d_model), (
            f"offset_matrix({k}, {d_model}) should have shape ({d_model}, {d_model}); "
            f"got {M.shape}"
        )
        if np.allclose(table[:-k], table[k:] @ M):
            raise AssertionError(
                "your matrix moves positions backwards, by -k: transpose each "
                "2 x 2 block"
            )
        assert np.allclose(table[k:], table[:-k] @ M, atol=1e-10), (
            f"encoding[pos + {k}] != encoding[pos] @ M (d_model = {d_model}): "
            "each pair (sin, cos) of frequency theta_i turns by k * theta_i; row 2i "
            "of M reads sin, row 2i + 1 reads cos"
        )


print(check_exercise_1(offset_matrix))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# With a = pos * theta_i and b = k * theta_i:
#   sin(a + b) = sin a cos b + cos a sin b,  cos(a + b) = cos a cos b - sin a sin b.
# In row form (row vector times M), column 2i of M holds (cos b, sin b) and column
# 2i + 1 holds (-sin b, cos b): one 2 x 2 rotation block per frequency, zeros elsewhere.
def solution_offset_matrix(k, d_model):
    M = np.zeros((d_model, d_model))
    for i, b in enumerate(rope_angles(np.array([k]), d_model)[0]):
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [
            [np.cos(b), -np.sin(b)],
            [np.sin(b), np.cos(b)],
        ]
    return M


print(check_exercise_1(solution_offset_matrix))

# %% [markdown]
# **Exercise 2 (RoPE with complex numbers).** A pair $(a, b)$ is the complex number
# $a + ib$, and turning it by the angle $\alpha$ is multiplying by $e^{i\alpha}$. Write
# `rope_complex(x, positions)`, RoPE in the half-split convention with `base = 10000`,
# using complex numbers instead of `cos` and `sin` arrays: make the complex numbers
# $x_i + i\,x_{i + d_k/2}$, multiply, and take the parts back. It must equal
# `apply_rope` for any shape `(..., seq_len, d_k)`.


# %%
def rope_complex(x, positions):
    """apply_rope(x, positions), by complex multiplication."""
    return ...  # your code here


# %%
@exercise(2, crash_hint=(
    "rope_complex(x, positions) returns a real array of x's shape (..., seq_len, d_k)."
))
def check_exercise_2(rope_complex):
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 8))
    positions = np.array([0, 1, 2, 9, 100, 2000])
    answer = not_yet(rope_complex(x, positions))
    answer = np.asarray(answer)
    assert answer.shape == x.shape and np.isrealobj(answer), (
        f"return a real array of x's shape {x.shape}; got {answer.dtype} of shape "
        f"{answer.shape}: concatenate the real and imaginary parts"
    )
    expected = apply_rope(x, positions)
    if np.allclose(answer, apply_rope(x, -positions)):
        raise AssertionError("your rotation runs backwards: multiply by exp(+i angle)")
    if np.allclose(answer, apply_rope_interleaved(x, positions)):
        raise AssertionError(
            "that is the interleaved convention: pair coordinate i with i + d_k / 2"
        )
    assert np.allclose(answer, expected, atol=1e-10), (
        "not apply_rope's numbers: the angles are positions[:, None] * theta_i with "
        "theta_i = 10000 ** (-2 i / d_k)"
    )


print(check_exercise_2(rope_complex))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*


# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# exp(i a) (x1 + i x2) = (x1 cos a - x2 sin a) + i (x1 sin a + x2 cos a): the rotation.
def solution_rope_complex(x, positions):
    half = x.shape[-1] // 2
    z = x[..., :half] + 1j * x[..., half:]  # (..., seq_len, d_k / 2)
    turned = z * np.exp(1j * rope_angles(positions, x.shape[-1]))
    return np.concatenate([turned.real, turned.imag], axis=-1)  # (..., seq_len, d_k)


print(check_exercise_2(solution_rope_complex))

# %% [markdown]
# **Exercise 3 (predict).** Eight tokens go through *one* causal attention layer without
# positions. Now swap the tokens at positions 2 and 5 and run the layer again. At which
# positions $t$ does the output row change (compare row $t$ before and after the swap)?
# Answer with a set of positions, e.g. `{0, 7}`. Section 6's formula for $o_t$ is all
# you need.

# %%
changed_positions = ...  # a set of positions between 0 and 7


# %% jupyter={"source_hidden": true}
@exercise(3, crash_hint="Answer with a set of positions between 0 and 7, e.g. {0, 7}.")
def check_exercise_3(prediction):
    layer = MultiHeadAttention(16, 4, seed=7)
    x = np.random.default_rng(7).standard_normal((1, 8, 16))
    swapped = x[:, [0, 1, 5, 3, 4, 2, 6, 7]]
    mask = causal_mask(8)
    moved = np.abs(layer(swapped, mask)[0] - layer(x, mask)[0]).max(axis=-1)[0]  # (8,)
    truth = {int(t) for t in np.flatnonzero(moved > 1e-9)}
    prediction = {int(t) for t in prediction}
    missing, extra = sorted(truth - prediction), sorted(prediction - truth)
    assert not extra, (
        f"row(s) {extra} do not change: which tokens does row t see, and does it see "
        "their order?"
    )
    assert not missing, (
        f"{len(missing)} more row(s) change: a row changes when its own token, or the "
        "set of tokens it sees, changes"
    )


print(check_exercise_3(changed_positions))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Row t depends on its own token and on the set of tokens 0..t. Rows 0 and 1 see
# neither swapped token. Rows 2, 3 and 4 see the token from 5 instead of the one from
# 2: another set. Row 5 sees the same set as before, but its own token is now the old
# token 2. Rows 6 and 7 see the same set and keep their token: unchanged, although the
# order before them changed.
solution_changed_positions = {2, 3, 4, 5}
print(check_exercise_3(solution_changed_positions))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). Section 3.5: the sinusoidal
#   encodings, the linear map for a fixed offset, and learned embeddings giving nearly
#   identical results (Table 3, row E).
# - Su, J., Lu, Y., Pan, S., Murtadha, A., Wen, B. and Liu, Y. (2021). *RoFormer:
#   Enhanced Transformer with Rotary Position Embedding.*
#   [arXiv:2104.09864](https://arxiv.org/abs/2104.09864). Rotary embeddings, with the
#   interleaved pairing, derived in the complex-number form.
# - Black, S. et al. (2022). *GPT-NeoX-20B: An Open-Source Autoregressive Language
#   Model.* [arXiv:2204.06745](https://arxiv.org/abs/2204.06745). RoPE with the
#   half-split pairing used here.
# - Haviv, A., Ram, O., Press, O., Izsak, P. and Levy, O. (2022). *Transformer Language
#   Models without Positional Encodings Still Learn Positional Information.* Findings of
#   EMNLP 2022. [arXiv:2203.16634](https://arxiv.org/abs/2203.16634). Causal language
#   models without positions ("NoPos") are competitive, masked ones are not; probes
#   recover absolute positions.
# - Kazemnejad, A., Padhi, I., Natesan Ramamurthy, K., Das, P. and Reddy, S. (2023).
#   *The Impact of Positional Encoding on Length Generalization in Transformers.*
#   NeurIPS 2023. [arXiv:2305.19466](https://arxiv.org/abs/2305.19466). Theorems 1 and
#   2: a causal model without positions can write absolute, then relative, positions.
# - Press, O., Smith, N. A. and Lewis, M. (2022). *Train Short, Test Long: Attention
#   with Linear Biases Enables Input Length Extrapolation.* ICLR 2022.
#   [arXiv:2108.12409](https://arxiv.org/abs/2108.12409). How sinusoidal, rotary and
#   other encodings fare beyond the training length, and ALiBi.
#
# ---
# Next: [07_learning_to_attend.ipynb](07_learning_to_attend.ipynb) derives the layer's
# backward pass, checks it, and trains a small two-layer model, with a learned position
# table, to continue a sequence that repeats.
