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
# # 9. Reading the trained heads: the induction circuit
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
# - how to tell a circuit from a shortcut: a model trained on repeats at one place
#   copies only there, and its previous-token heads show why;
# - how to test what a head does by switching it off (ablation), and a path ablation
#   that cuts only what layer 1's keys read;
# - how the trained model continues a prompt token by token through a KV cache.

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
    accuracy,
    claims,
    composition_baseline,
    composition_scores,
    copying_score,
    decode_tokens,
    determined_positions,
    encode_letters,
    forward_without_key_path,
    generate,
    induction_batch,
    initial_model,
    k_composition_scores,
    load_shortcut,
    load_trained,
    loss_and_grads,
    loss_report,
    measure,
    offset_accuracy,
    ov_circuit,
    prefix_matching_by_offset,
    prefix_matching_score,
    previous_token_profile,
    previous_token_score,
    qk_circuit,
    repeated_positions,
    train,
    training_record,
)
from mhattn.pictures import exercise, not_yet, save_figure, show_source

np.set_printoptions(precision=2, suppress=True)
plt.rcParams.update({"font.size": 12, "legend.fontsize": 11})  # legible on a phone
FIGURES = Path("../figures")  # the notebooks run in notebooks/

# %% [markdown]
# %% [markdown]
# ## 1. The trained model, again
#
# (Set-up: the model that notebook 08 trained, and the batches it is measured on.)

# ## 5. Circuit or shortcut?
#
# A model can do well on its training data without learning the rule we had in mind.
# The package ships a second two-layer model to show it (`load_shortcut`): the same
# architecture, trained for 1500 steps on a narrower task, in which every first copy
# starts at position 0 and the second copy follows it at once. Both models copy well on
# repeats at the start. Here is the accuracy on the second copy against the offset of
# the repeat, for blocks of 4, 8 and 12 tokens, with 256 fresh sequences for each point
# (`offset_accuracy`):

# %%
shortcut = load_shortcut()
lengths = [4, 8, 12]
tables = {
    "shortcut": offset_accuracy(shortcut, lengths, per_cell=256, seed=11),
    "trained": offset_accuracy(model, lengths, per_cell=256, seed=11),
}
fig, axes = plt.subplots(1, 2, figsize=(5.5, 3.6), layout="constrained", sharey=True)
for ax, (name, table) in zip(axes, tables.items(), strict=True):
    for row, n_block in zip(table, lengths, strict=True):
        ax.plot(np.arange(len(row)), row, "o-", ms=3, lw=1, label=f"n = {n_block}")
    ax.set(title=f"{name} model", xlabel="offset", ylim=(0, 1.02))
axes[0].set_ylabel("accuracy")
axes[0].legend()
plt.show()
save_figure(fig, FIGURES / "09_circuit_or_shortcut.png")
for name, table in tables.items():
    print(
        f"{name:8s} offset 0: {np.round(table[:, 0], 2)}; "
        f"worst over offsets: {np.round(np.nanmin(table, axis=1), 2)}"
    )

# %% [markdown] tags=["figure-caption"]
# **Figure.** Circuit or shortcut. Accuracy on the second copy against the offset of the
# repeat, for blocks of 4, 8 and 12 tokens: the shortcut model, trained only on repeats
# at the start, falls towards chance as the repeat moves; the trained model copies at
# every offset.
#
# <!-- alt: Two panels of accuracy against offset. Left, the shortcut model: three lines
# start near 1 at offset 0 and fall towards 0 within a few offsets, the 12-token line
# last. Right, the trained model: three lines stay near 1 at every offset. -->

# %% [markdown]
# The shortcut model copies almost perfectly at offset 0 and falls towards chance as the
# repeat moves right; the trained model copies at every offset. Both have two layers and
# the same heads. What did the shortcut learn? Its previous-token heads tell. Below,
# for each model's best layer-0 head (the one with the highest weight on $t - 1$ on
# average), the weight on $t - 1$ against the query position $t$, averaged over 1024
# sequences of the training task (`previous_token_profile`). The grey band marks
# positions 1-15, where the shortcut's first copies sat during its training.

# %%
profiles = {
    name: previous_token_profile(m, num_sequences=1024, seed=13)
    for name, m in [("shortcut", shortcut), ("trained", model)]
}
fig, ax = plt.subplots(figsize=(5, 3.6), layout="constrained")
ax.axvspan(1, 15, color="0.9")
for name, profile in profiles.items():
    head = int(np.nanargmax(np.nanmean(profile, axis=1)))
    ax.plot(
        np.arange(32), profile[head], "o-", ms=3, lw=1, label=f"{name}, head {head}"
    )
ax.set(
    xlabel="query position t",
    ylabel="weight on t - 1",
    ylim=(0, 1.02),
    title="Layer 0's best previous-token head",
)
ax.legend(loc="lower left")
plt.show()
save_figure(fig, FIGURES / "09_previous_token_by_position.png")
for name, profile in profiles.items():
    best_row = profile[int(np.nanargmax(np.nanmean(profile, axis=1)))]
    print(
        f"{name:8s} weight on t - 1: positions 1-15 {np.nanmean(best_row[1:16]):.2f}, "
        f"16-31 {np.nanmean(best_row[16:]):.2f}; "
        f"lowest at 1-27 {np.nanmin(best_row[1:28]):.2f}"
    )

# %% [markdown] tags=["figure-caption"]
# **Figure.** Why the shortcut fails: its best previous-token head looks one step back
# only at the positions where its training put first copies (grey band, 1-15). The
# trained model's head looks back at every position.
#
# <!-- alt: The weight on the previous token against the query position, for each
# model's best layer-0 head. The shortcut's line is high inside a grey band from 1 to 15
# and low after it; the trained model's line stays high across all positions. -->

# %% [markdown]
# The shortcut's previous-token head looks one step back only where its training put a
# first copy, positions 1-15; from position 16 on its weight on $t - 1$ collapses. It
# learned "one step back" as a table of positions, not as a rule. A first copy that
# starts later leaves no trace of its tokens' predecessors in the keys, and its
# induction heads find nothing to match. The trained model's head looks one step back
# at every position a first copy can reach (1-27), because its training put first
# copies there. A shortcut and a circuit can score the same on the data they were
# trained on; only data that moves the pattern tells them apart.

# %% [markdown]
# ## 6. Before and after: where the heads look
#
# Here are the heads of both layers before and after training, on 512 fresh sequences
# of the task. For layer 0 we draw the average weight a query $t$ puts on key $t - d$,
# against the distance $d$: a previous-token head peaks at $d = 1$. For layer 1 we take
# the queries of the second copy and draw the weight on keys around the **target**, the
# key right after the earlier occurrence of the query's token ($t - n - g + 1$): an
# induction head peaks at 0.


# %%
def weight_by_distance(weights, distances):
    """Layer weights (batch, heads, T, T) -> mean weight on key t - d, per head, d."""
    T = weights.shape[-1]
    return np.array(
        [
            [weights[:, h, np.arange(d, T), np.arange(T - d)].mean() for d in distances]
            for h in range(weights.shape[1])
        ]
    )


def weight_around_target(weights, n, offset, gap, shifts):
    """Layer weights on keys target + shift, for the queries of the second copy."""
    rows, queries = np.nonzero(repeated_positions(n, weights.shape[-1], offset, gap))
    target = queries - (n + gap)[rows] + 1  # the key after the earlier occurrence
    table = np.zeros((weights.shape[1], len(shifts)))
    for i, shift in enumerate(shifts):
        keys = target + shift
        ok = (keys >= 0) & (keys <= queries)
        table[:, i] = weights[rows[ok], :, queries[ok], keys[ok]].mean(axis=0)
    return table


tokens, n, offset, gap = induction_batch(np.random.default_rng(2024), 512)
distances, shifts = np.arange(7), np.arange(-3, 4)
for layer, xs, xlabel, draw in [
    (0, distances, "distance d (key t - d)", weight_by_distance),
    (1, shifts, "key minus target", None),
]:
    fig, axes = plt.subplots(
        1, 2, figsize=(5.5, 3.2), layout="constrained", sharey=True
    )
    for ax, (when, m) in zip(
        axes, [("before", initial_model(2, seed=0)), ("after", model)], strict=True
    ):
        weights = m.forward(tokens)[1][layer]
        table = (
            draw(weights, xs)
            if draw
            else weight_around_target(weights, n, offset, gap, xs)
        )
        for head, row in enumerate(table):
            ax.plot(xs, row, "o-", ms=3, lw=1, label=f"head {head}")
        ax.set(title=f"layer {layer}, {when}", xlabel=xlabel, ylim=(0, 1))
    axes[0].set_ylabel("mean weight")
    axes[1].legend()
    plt.show()
    save_figure(fig, FIGURES / f"09_heads_layer{layer}.png")

# %% [markdown] tags=["figure-caption"]
# **Figure 1 of 2.** Layer 0 before and after training: the mean weight on the key d
# tokens back. After training the previous-token heads put most of their weight at d =
# 1.
#
# <!-- alt: Two panels of mean weight against distance 0 to 6, one line per head. Before
# training every line is low and flat; after training some heads peak sharply at
# distance 1. -->
#
# **Figure 2 of 2.** Layer 1 before and after training: the mean weight of the second
# copy's queries on keys around the target, the token after the earlier occurrence.
# After training the induction heads peak at the target.
#
# <!-- alt: Two panels of mean weight against the key's shift from the target, -3 to 3,
# one line per head. Before training the lines are low and flat; after training the
# induction heads peak at shift 0. -->

# %% [markdown]
# Before training, every head spreads its weight over the past, a few percent on each
# key. After training, layer 0 has previous-token heads, with most of their weight one
# step back, and layer 1 has induction heads, with most of their weight on the target:
# the key after the earlier occurrence of the query's token, wherever the repeat sits.

# %% [markdown]
# ## 7. Measuring the heads
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
# The previous-token heads look one step back in every part of the sequence, though
# less sharply after the second copy has begun, where nothing later reads what they
# write. Below, a layer-0 head counts as a previous-token head when its score over all
# positions is at least 0.25, more than twice what even weights give.
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
# The repeated random tokens above start at position 0. To see that the induction heads
# match wherever the repeat sits, put $o$ random tokens, which occur nowhere else, in
# front of 8 random tokens repeated once, for every offset $o$ that fits
# (`prefix_matching_by_offset`):

# %%
by_offset = prefix_matching_by_offset(
    model, half_len=8, num_sequences=256, seed=14
)  # (17, 4)
print("best layer-1 head's prefix-matching score at offsets 0-16:")
print(by_offset.max(axis=1))
print(f"lowest: {by_offset.max(axis=1).min():.2f}")

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
# The three layer-1 heads that prefix-match copy, with a score near 1: together, that
# makes them induction heads in Olsson et al.'s sense. The fourth layer-1 head, which
# does not prefix-match, scores near -1: what it attends to, it pushes down. The
# previous-token head of layer 0 scores near -1 too: read directly through the
# unembedding, what it writes lowers the logits of the tokens it attends to. That is
# not its job, though: what it writes is read by layer 1's keys, not by the
# unembedding, and the next measurement looks at that path.

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
partner = result["previous_token_heads"][
    int(np.argmax(result["k_composition"][result["previous_token_heads"], best]))
]
ov = ov_circuit(model, 1, best)
qk = qk_circuit(model, 1, best, key_through=(0, partner))
for name, matrix, title, xlabel, ylabel in [
    ("ov", ov, f"OV circuit, layer 1 head {best}", "logit of token", "attended token"),
    ("qk", qk, f"QK via layer-0 head {partner}", "token before the key", "query token"),
]:
    fig, ax = plt.subplots(figsize=(4.6, 3.9), layout="constrained")
    limit = np.abs(matrix).max()
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set(xticks=range(0, 32, 8), yticks=range(0, 32, 8))
    fig.colorbar(image, ax=ax, shrink=0.9)
    plt.show()
    save_figure(fig, FIGURES / f"09_{name}_circuit.png")
diagonal_wins = lambda m: np.mean(m.argmax(axis=1) == np.arange(32))  # noqa: E731
print(f"on the diagonal: OV {diagonal_wins(ov):.2f}, QK {diagonal_wins(qk):.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure 1 of 2.** The best induction head's OV circuit copies: attending to a token
# raises that token's logit (the bright diagonal).
#
# <!-- alt: A 32-by-32 red-and-blue heatmap of attended token against logit of token,
# with a dark red main diagonal on a pale speckled background. -->
#
# **Figure 2 of 2.** Its QK circuit, read through a previous-token head, matches a query
# with the key right after an earlier copy of the query's token.
#
# <!-- alt: A 32-by-32 red-and-blue heatmap of query token against the token before the
# key, with a dark red diagonal on a noisier background. -->

# %% [markdown]
# Both diagonals are bright. The OV circuit copies: attending to a token raises that
# token's logit most, for most tokens. The QK circuit matches: a query of token $a$
# scores highest the key whose previous-token head wrote $a$, the key right after an
# earlier $a$.
#
# How much of what a layer-0 head writes does a layer-1 head's keys read? Elhage et al.
# (2021) measure it with the **K-composition score** $\|W_{QK}^{h_1} W_{OV}^{h_0}\|_F /
# (\|W_{QK}^{h_1}\|_F \|W_{OV}^{h_0}\|_F)$, a number between 0 (the keys ignore
# everything the head writes) and 1. Even unrelated matrices score well above 0, so the
# score means something only against chance: two independent random maps of rank 16 in
# 64 dimensions, the ranks of our heads' $W_{OV}$ and $W_{QK}$ (`composition_baseline`).
# Elhage et al. define Q- and V-composition the same way, with what the later head's
# queries or values read in place of its keys; we print them beside it.

# %%
show_source(k_composition_scores)

# %%
chance, chance_sd = composition_baseline(64, 16, draws=2000, seed=0)
print(f"random rank-16 maps in d = 64: {chance:.3f} +- {chance_sd:.3f}")
previous_heads, induction_heads = (
    result["previous_token_heads"],
    result["induction_heads"],
)
for kind in ("K", "Q", "V"):
    table = composition_scores(model, kind)
    print(f"{kind}-composition, rows: layer-0 heads, columns: layer-1 heads\n{table}")
K = composition_scores(model, "K")
for head in induction_heads:
    best_previous = K[previous_heads, head].max()
    print(
        f"induction head {head}: K-composition with a previous-token head "
        f"up to {best_previous:.2f}, "
        f"{(best_previous - chance) / chance_sd:.0f} standard deviations above chance"
    )

# %% [markdown]
# Every induction head reads its keys from the previous-token head far above chance,
# while the Q- and V-composition scores of the same pairs stay at or below chance:
# the induction heads' queries and values do not read what the previous-token head
# writes. The
# scores are small numbers, because the Frobenius norms average over all 64 directions
# of the residual stream, most of which a head does not use; what makes them evidence is
# the distance from chance, many standard deviations.
#
# A score computed from weights is still a correlation. The causal test is a **path
# ablation**: run the model with layer 1's *keys* computed from the residual stream less
# the previous-token heads' output, and everything else unchanged: layer 1's queries and
# values, and the unembedding, still see the whole stream
# (`forward_without_key_path`). If the induction heads find the earlier copy by
# K-composition, this alone breaks the copy.

# %%
cut = forward_without_key_path(model, tokens, previous_heads)
print(
    f"accuracy: {result['accuracy']:.2f}; "
    "previous-token heads removed from layer 1's keys only: "
    f"{accuracy(cut, tokens, n, offset, gap):.2f}"
)

# %% [markdown]
# Cutting only what layer 1's keys read from the previous-token head costs about 0.4 of
# accuracy, with its queries, values and output untouched: the K-composition is a cause
# of the copying, not only a correlation. It is not the whole of it, since more than
# half of the accuracy survives the cut: layer 1 still finds part of the matches
# through what else its keys read.

# %% [markdown]
# ## 8. Ablation: switch heads off
#
# A head reaches the residual stream only through its `d_k` rows of $W_o$ (notebook 04).
# Zeroing those rows removes the head and nothing else. `model.forward(tokens,
# ablate=[(layer, head), ...])` does that on copies; `head=None` silences a whole layer.
# The grey line is chance, the orange line the one-layer model.

# %%
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

fig, ax = plt.subplots(figsize=(5.5, 5), layout="constrained")
ax.barh(list(accuracies), list(accuracies.values()), color="tab:blue")
ax.axvline(1 / 32, color="gray", linestyle=":", label="chance, 1/32")
ax.axvline(one_layer["accuracy"], color="tab:orange", linestyle="--", label="one layer")
ax.invert_yaxis()
ax.set(xlabel="accuracy", xlim=(0, 1), title="Heads switched off")
ax.legend(loc="upper center", bbox_to_anchor=(0.3, -0.12), ncol=2)
plt.show()
save_figure(fig, FIGURES / "09_ablation.png")
for name, value in accuracies.items():
    print(f"{name:26s} {value:.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Ablation. Layer 0 holds a single previous-token head: switching it off
# breaks the model, as switching off all of layer 0 does. The induction heads back each
# other up: one of them switched off costs a little, all of them together break the
# model.
#
# <!-- alt: Horizontal bar chart of accuracy with heads switched off. Nothing switched
# off and three of the layer-0 heads reach nearly 1; the fourth layer-0 head, the
# previous-token heads and all of layer 0 fall to near the dotted chance line; single
# layer-1 heads reach 0.8 to 1; the induction heads together fall to 0. -->

# %% [markdown]
# This model has a single previous-token head: switching it off costs as much as
# silencing all of layer 0, and drops the accuracy far below the one-layer model,
# because layer 1 was trained to rely on it. The induction heads back each other up:
# switching off any one of them costs a little, switching off all of them drops the
# accuracy to chance. Redundancy like this is common in trained models (Michel et al.
# 2019), and it is why single-head ablations can understate what heads do.
#
# Everything measured so far, as claims about the model, each True or False (the tests
# check the same claims for the shipped model and for a model retrained with another
# seed):

# %%
for name, holds in claims(result).items():
    print(f"{str(holds):5s}  {name}")

# %% [markdown]
# ## 9. Generation with the KV cache
#
# Notebook 11 builds a KV cache and checks it against the full forward. Here it does
# its job: `generate` feeds the prompt one token at a time through each layer's
# `KVCache`, then writes tokens one by one, each step projecting only the newest token
# and attending over the cached keys and values. Greedy decoding takes the most likely
# token; sampling draws from the softmax of the logits divided by a temperature, with a
# seed. (The tests check that cached decoding writes exactly the tokens that recomputing
# the whole prefix at every step writes.) Type `a b c d e a b`, and the model goes on:

# %%
prompt = encode_letters("a b c d e a b")
print("greedy:                 ", decode_tokens(generate(model, prompt, 3)))
late = encode_letters("q w e r t y u i o p l k j h g f a b c d e a b")
print("after 16 other letters: ", decode_tokens(generate(model, late, 3)))
probability = softmax(model.forward(prompt)[0][-1])  # (32,): the next token after "a b"
print(
    f"P(c | a b c d e a b) = {probability[2]:.2f}; "
    f"at temperature 0.5: {softmax(model.forward(prompt)[0][-1] / 0.5)[2]:.2f}"
)
for temperature in (1.0, 0.5):
    for seed in (0, 1):
        sampled = generate(model, prompt, 3, temperature=temperature, seed=seed)
        print(f"temperature {temperature}, seed {seed}: {decode_tokens(sampled)}")

# %% [markdown]
# After `a b`, the first copy says `c d e`, and greedy decoding writes it, at the start
# of the context or 16 tokens later. The model is less sure than greedy decoding makes
# it look: it gives `c` about half of its probability, because in its training text a
# repeat could stop anywhere and most tokens were random. Sampling at temperature 1
# therefore wanders off the copy; dividing the logits by 0.5 squares the odds, and the
# seeded draws follow the copy.
#
# ## 10. Where does this model's order come from?
#
# Attention compares queries with keys by content, and notebook
# [06_positions.ipynb](06_positions.ipynb) shows what the causal mask adds. One causal
# layer already writes a position signal: a head that spreads its weight evenly over
# the past outputs $1/(t+1)$ of a marker at the first position, a different number at
# every position (Kazemnejad et al. 2023, Theorem 1, build absolute positions this way).
# But one layer sees the tokens before the current one as a set, so it cannot tell
# their order; two causal layers are needed for that, the second reading the positions
# the first one wrote. This model was trained *with* positional embeddings, and its
# previous-token heads use them to find "one step back". Take them away
# (`use_positions=False`) and the circuit breaks:

# %%
print(f"accuracy with positions:    {result['accuracy']:.2f}")
print(f"accuracy without positions: {result['accuracy_without_positions']:.2f}")
_, weights_no_positions = model.forward(tokens, use_positions=False)
print("previous-token scores:", previous_token_score(weights_no_positions[0]))

# %% [markdown]
# Without positions, the layer-0 heads score 0.1 or less on the previous token, no more
# than even weights give: this model never learned to find "one step back" from the mask
# alone.
# It had no reason to, since its positional embeddings gave it the answer.

# %% [markdown]
# ## Summary
#
# - A model trained on repeats at one place learns a shortcut: its previous-token heads
#   work only at the positions its training used, and it fails when the repeat moves.
#   Training on repeats at every offset gives heads that copy wherever the repeat sits.
# - The field's measurements say the same thing in numbers: prefix matching at every
#   offset and copying for the induction heads, previous-token heads that look one step
#   back at every position, K-composition far above its random baseline, and ablations
#   that break the model when either kind of head is removed, or when only layer 1's
#   keys lose the previous-token heads.
# - With a KV cache, the trained model continues a prompt token by token.

# %% [markdown]
# ## Exercises
#
# %% [markdown]
# **Exercise 3 (predict, then measure): one induction head left.** Switch off every
# layer-1 induction head but the last one, `result["induction_heads"][-1]`. Switching
# off one head cost little; does one head alone suffice? Predict the accuracy on the
# determined positions: `"above 0.9"`, `"between 0.4 and 0.9"` or `"below 0.4"`. Then
# check it with
# `accuracy(model.forward(tokens, ablate=...)[0], tokens, n, offset, gap)`.

# %%
prediction_3 = ...  # "above 0.9", "between 0.4 and 0.9" or "below 0.4"


# %% jupyter={"source_hidden": true}
@exercise(
    3, crash_hint='answer with one of "above 0.9", "between 0.4 and 0.9", "below 0.4"'
)
def check_exercise_3(answer):
    choices = ("above 0.9", "between 0.4 and 0.9", "below 0.4")
    assert answer in choices, f"answer with one of {choices}; got {answer!r}"
    others = [(1, head) for head in result["induction_heads"][:-1]]
    measured = accuracy(model.forward(tokens, ablate=others)[0], tokens, n, offset, gap)
    truth = "between 0.4 and 0.9"
    truth = "above 0.9" if measured > 0.9 else "below 0.4" if measured < 0.4 else truth
    assert answer == truth, (
        "not quite: measure it with accuracy(model.forward(tokens, ablate=...)[0], ...)"
    )


print(check_exercise_3(prediction_3))

# %% [markdown]
# *Solution to exercise 3: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Between: the last induction head alone keeps about half the accuracy. Which head
# matters? Keep each in turn: in this model every induction head alone keeps between
# 0.5 and 0.6, because the three share the work. That is a fact about this training
# run, not a law. In the shortcut model of section 5, on repeats at the start, layer-1
# head 0 alone keeps nearly all of its accuracy (0.98) and head 2 alone about a third:
# there one induction head suffices, and which one you keep decides the answer.
# Removing one head costs little, removing all costs everything, and the curve in
# between depends on how training split the work. To see it:
# for kept in result["induction_heads"]:
#     off = [(1, h) for h in result["induction_heads"] if h != kept]
#     logits = model.forward(tokens, ablate=off)[0]
#     print(kept, accuracy(logits, tokens, n, offset, gap))
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
# - Kazemnejad, A., Padhi, I., Natesan Ramamurthy, K., Das, P. and Reddy, S. (2023).
#   *The Impact of Positional Encoding on Length Generalization in Transformers.*
#   NeurIPS 2023. [arXiv:2305.19466](https://arxiv.org/abs/2305.19466). Theorem 1: a
#   causal layer without positions can write each token's absolute position.
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