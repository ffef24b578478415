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
# Notebook 07 trained a two-layer, attention-only model on the induction task: a block
# of tokens appears twice, and on the second copy the model must predict the next
# token. It gets every determined position of 512 fresh sequences right. This notebook
# asks one question: **what did its heads learn, and how do we know?** Olsson et al.
# (2022) found the same answer in every model with two or more layers that they
# trained: a *previous-token head* in an earlier layer and *induction heads* in a
# later one. We draw that circuit first, then test each of its arrows, with the
# measurements of Elhage et al. (2021) and Olsson et al. (2022) and with ablations that
# switch a head, or a single path, off. Last, a second model shows that a model can
# score as well on its training data with a shortcut instead of the circuit.
#
# **In this notebook you will learn**
#
# - the induction circuit: who writes what into the residual stream, and who reads it;
# - the standard measurements of a head: previous-token and prefix-matching scores,
#   the OV circuit and its copying score, the QK circuit, and composition scores, each
#   on the scale it can actually reach;
# - why a weight score is not evidence of use, and the causal test that is: a path
#   ablation, and why its answer depends on what replaces the path;
# - what switching whole heads off shows, and what it hides;
# - how to tell a circuit from a shortcut: test outside the training data, moving the
#   repeat's offset *and* the gap between its copies.

# %% [markdown]
# **Set-up.** The model that notebook 07 trained (`load_trained`), a batch of 512 fresh
# sequences of its task with a seed training never used, and `measure`, which computes
# every measurement of this notebook on that batch at once (each is a short function,
# shown when we use it).

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from mhattn import softmax
from mhattn.learn import (
    accuracy,
    composition_baseline,
    composition_ceiling,
    composition_ceilings,
    composition_scores,
    copying_score,
    decode_tokens,
    encode_letters,
    generate,
    head_weights,
    induction_batch,
    initial_model,
    load_shortcut,
    load_trained,
    measure,
    offset_accuracy,
    offset_gap_accuracy,
    ov_circuit,
    path_ablation,
    prefix_matching_by_offset,
    prefix_matching_score,
    previous_token_profile,
    previous_token_score,
    qk_circuit,
    repeated_positions,
    segments,
)
from mhattn.pictures import exercise, plot_induction_circuit, save_figure, show_source

np.set_printoptions(precision=2, suppress=True)
plt.rcParams.update({"font.size": 12, "legend.fontsize": 11})  # legible on a phone
FIGURES = Path("../figures")  # the notebooks run in notebooks/

model = load_trained()  # two layers of 4 heads, d_model = 64, vocab 32, 32 tokens
tokens, n, offset, gap = induction_batch(np.random.default_rng(2024), 512)
result = measure(model)  # the same 512 sequences (seed 2024), and more
print(f"accuracy on the determined positions: {result['accuracy']:.2f}")

# %% [markdown]
# ## 1. The circuit we expect
#
# Take a sequence that holds `a b` and, later, `a` again. To predict `b` after the
# second `a`, the model must find the position right after the earlier `a`. Attention
# compares a query with keys, and the key at `b`'s position knows only `b` and its
# position, not that `a` came before it. So a head of layer 0 must first write "the
# token before me was `a`" into the residual stream at `b`'s position: a
# **previous-token head**. Then a head of layer 1, whose query at the second `a` says
# "I am `a`", finds the key that says "`a` came before me" and copies that key's token,
# `b`, into the logits: an **induction head**. The layer-1 head's *keys* read what the
# layer-0 head wrote; Elhage et al. (2021) call this **K-composition**.

# %%
previous, induction = result["previous_token_heads"], result["induction_heads"]
fig = plot_induction_circuit(previous[0], induction)
save_figure(fig, FIGURES / "09_induction_circuit.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The induction circuit in this model. Grey lines: the residual stream at
# three positions, `a` at *j* − 1, `b` at *j*, `a` again at a later *t*. Orange: layer
# 0's previous-token head moves `a` into the stream at *j*. Blue: the keys of layer 1's
# induction heads at *j* read it (K-composition); the query at *t*, token `a`, matches
# that key; the heads' OV circuit copies `b` from *j* into the logits at *t*. The head
# numbers come from the measurements below.
#
# <!-- alt: A diagram of three vertical grey lines, the residual stream at positions j -
# 1 (token a), j (token b) and t (token a). An orange box, layer 0 head 0, the
# previous-token head, takes a from position j - 1 and writes "a came before me" into
# position j. Above, a blue box, layer 1 heads 0, 1, 2, 3, the induction heads: an arrow
# from position j into the box is labelled "key at j reads it (K-composition)", an
# arrow from position t is labelled "query at t: I am a", a double arrow between them
# says "they match: t attends to j", and an arrow from the box to a box "predicts b" at
# the top of position t is labelled "OV copies b from j to t". -->

# %% [markdown]
# Each arrow is a claim we can test. Sections 2 and 3 look at the heads: where they
# look, what they write, what they look for. Section 4 asks what their weights can
# read from each other and then cuts single paths; section 5 switches whole heads off.
# Measuring what the model loses is the test that makes an arrow a cause.
#
# ## 2. Where the heads look, before and after training
#
# For layer 0 we draw the mean weight a query $t$ puts on key $t - d$, against the
# distance $d$: a previous-token head peaks at $d = 1$. For layer 1 we take the queries
# of the second copy and draw the weight on keys around the **target**, the key right
# after the earlier occurrence of the query's token, $t - n - g + 1$ for a block of $n$
# tokens and a gap of $g$: an induction head peaks at 0. (The drawing code is folded.)

# %% jupyter={"source_hidden": true}
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


distances, shifts = np.arange(7), np.arange(-3, 4)
for layer, xs, xlabel in [
    (0, distances, "distance d (key t - d)"),
    (1, shifts, "key minus target"),
]:
    fig, axes = plt.subplots(
        1, 2, figsize=(5.5, 3.2), layout="constrained", sharey=True
    )
    for ax, (when, m) in zip(
        axes, [("before", initial_model(2, seed=0)), ("after", model)], strict=True
    ):
        weights = m.forward(tokens)[1][layer]
        table = (
            weight_by_distance(weights, xs)
            if layer == 0
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
# tokens back. After training one head puts most of its weight at d = 1.
#
# <!-- alt: Two panels of mean weight against distance 0 to 6, one line per head.
# Before training every line is low and flat; after training head 0 peaks above 0.8 at
# distance 1 and the other heads stay low. -->
#
# **Figure 2 of 2.** Layer 1 before and after training: the mean weight of the second
# copy's queries on keys around the target, the token after the earlier occurrence.
# After training all four heads peak at the target.
#
# <!-- alt: Two panels of mean weight against the key's shift from the target, -3 to
# 3, one line per head. Before training the lines are low and flat; after training
# all four heads peak near 0.8 at shift 0. -->

# %% [markdown]
# Before training, each head spreads its weight over the past, about what even weights
# give: at most 0.07 on key $t - 1$ for queries $t \ge 8$, which see 9 keys or more.
# After training, layer 0 has one previous-token head and all four heads of layer 1 put
# their weight on the target, wherever the repeat is. The next sections measure this.
#
# ## 3. Measuring the heads
#
# ### Previous-token score, and its profile
#
# A head's **previous-token score** is its average weight on key $t - 1$ over queries
# $t$: 1 for a head that always looks one step back, 0.10 on 32 tokens for one that
# spreads its weight evenly. A layer-0 head counts as a previous-token head from 0.25.

# %%
show_source(previous_token_score)

# %%
print("layer 0, all positions:", result["previous_token"][0])
print("previous-token heads (>= 0.25):", result["previous_token_heads"])
head = result["previous_token_heads"][0]
profile = previous_token_profile(model, num_sequences=1024, seed=13)  # (4, 32)
weights0 = model.forward(tokens)[1][0]  # (512, 4, 32, 32): layer 0
for name, queries in segments(n, 32, offset, gap).items():  # each (512, 32)
    measured = previous_token_score(weights0, queries)[head]
    by_position = np.nanmean(np.where(queries, profile[head], np.nan))
    print(f"{name:12s} measured {measured:.3f}, from position alone {by_position:.3f}")

# %% [markdown]
# Head 0 is the previous-token head. Its score differs between the parts of the
# sequence (0.99 on the first copy, 0.83 on the second, 0.81 on the rest), but the part
# does not matter: averaging its weight *by position* over 1024 other sequences
# (`previous_token_profile`) and then over the same queries predicts each part's score
# to within a few thousandths. What the head does depends on the query's position,
# not on what the tokens are. We come back to this profile in section 6.
#
# ### Prefix-matching score
#
# Olsson et al. (2022) test for induction heads on sequences of random tokens repeated
# once. A head's **prefix-matching score** is the weight a query puts on the tokens
# that followed earlier occurrences of its own token, summed over those tokens and
# averaged over the queries that have one; an ideal induction head scores 1. We use 16
# different random tokens repeated once, and call a layer-1 head an induction head
# from 0.3:

# %%
show_source(prefix_matching_score)

# %%
for layer in (0, 1):
    print(f"layer {layer} prefix-matching score: {result['prefix_matching'][layer]}")
print("induction heads (layer 1, >= 0.3):", result["induction_heads"])
by_offset = prefix_matching_by_offset(
    model, half_len=8, num_sequences=256, seed=14
)  # (17, 4): offset, head
best_by_offset = by_offset.max(axis=1)  # (17,): the best head at offsets 0-16
print(f"8 tokens repeated after o others: lowest over o {best_by_offset.min():.2f}")

# %% [markdown]
# All four heads of layer 1 prefix-match. They do it wherever the repeat sits: with
# $o$ random tokens, which occur nowhere else, in front of 8 random tokens repeated
# once, the best head scores at least the printed value at every offset $o$
# (`prefix_matching_by_offset`).
#
# ### The OV circuit: what a head writes
#
# Attention decides *where* a head looks; the value and output matrices decide *what*
# it writes. Follow one token from the embedding, through head $h$'s values and
# output, to the unembedding: $W_E W_V^h W_O^h W_U$, a vocab $\times$ vocab matrix
# that Elhage et al. (2021) call the head's **OV circuit**. Row $i$ says how attending
# to token $i$ changes each logit. Their **copying score** summarises it with the
# eigenvalues $\lambda$ of the matrix, $\sum \lambda / \sum |\lambda|$: 1 for a pure
# copier, -1 for a head that pushes down exactly the tokens it sees. Olsson et al.
# call a head an induction head only if it both prefix-matches and copies.

# %%
show_source(copying_score)

# %%
for layer in (0, 1):
    print(f"layer {layer} copying score: {result['copying'][layer]}")

# %% [markdown]
# The four heads that prefix-match also copy, with a score near 1: induction heads in
# Olsson et al.'s sense. The previous-token head scores near -1, but what it writes
# matters through layer 1's keys, which the next measurement reads (and section 4
# cuts).
#
# ### The QK circuit: what a head looks for
#
# The scores of head $h$ between a query of token $a$ and a key of token $b$ are $W_E
# W_Q^h W_K^{h\top} W_E^\top / \sqrt{d_k}$, its **QK circuit**. An induction head looks
# not for a token but for what the previous-token head wrote into the key: replace the
# keys' $W_E$ by what that head writes for each token, $W_E W_V^{h_0} W_O^{h_0}$. If
# the induction head looks for "my token came before you", this matrix has a bright
# diagonal. For the strongest induction head (the drawing code is folded):

# %% jupyter={"source_hidden": true}
best = int(np.argmax(result["prefix_matching"][1]))
ov = ov_circuit(model, 1, best)
qk = qk_circuit(model, 1, best, key_through=(0, head))
for name, matrix, title, xlabel, ylabel in [
    ("ov", ov, f"OV circuit, layer 1 head {best}", "logit of token", "attended token"),
    ("qk", qk, f"QK via layer-0 head {head}", "token before the key", "query token"),
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
print(f"row maximum on the diagonal: OV {diagonal_wins(ov):.2f}")
print(f"row maximum on the diagonal: QK {diagonal_wins(qk):.2f}")

# %% [markdown] tags=["figure-caption"]
# **Figure 1 of 2.** The best induction head's OV circuit copies: attending to a token
# raises that token's logit (the dark red diagonal), strongly for about a dozen tokens.
#
# <!-- alt: A 32-by-32 red-and-blue heatmap of attended token against logit of token,
# with dark red cells on the main diagonal for about a dozen tokens; the rest of the
# diagonal and the background are pale. -->
#
# **Figure 2 of 2.** Its QK circuit, read through the previous-token head, matches a
# query with the key right after an earlier copy of the query's token.
#
# <!-- alt: A 32-by-32 red-and-blue heatmap of query token against the token before
# the key, with a dark red diagonal on a noisier background. -->

# %% [markdown]
# The QK diagonal is bright for every token. The OV diagonal is dark for only about a
# dozen: this head copies some tokens strongly and barely touches the others. Count,
# for each induction head, the tokens whose own logit it raises by more than 1 (a
# natural cut: no diagonal entry of the four heads lies between 0.91 and 1.07):

# %%
ovs = np.array([ov_circuit(model, 1, h) for h in induction])  # (4, 32, 32)
strong = np.diagonal(ovs, axis1=1, axis2=2) > 1  # (4, 32): head, token
print("tokens each induction head copies strongly:", strong.sum(axis=1))
print("heads that copy each token strongly, fewest:", strong.sum(axis=0).min())
summed = ovs.sum(axis=0)  # (32, 32): the four heads' OV circuits added
print(f"summed OV circuit, row maximum on the diagonal: {diagonal_wins(summed):.2f}")

# %% [markdown]
# The four induction heads split the vocabulary: each copies 12-14 tokens strongly,
# every token has at least one head that copies it, and their summed OV circuit puts
# each row's largest entry on the diagonal. The copying score (1.00 for every head)
# does not show this: it is a ratio of eigenvalues, not a count of tokens. These
# diagonals are the two blue arrows of the diagram, read from the weights. They say
# what the heads *can* do; whether the model uses this path is the next question.
# %% [markdown]
# ## 4. Composition scores, on the scale they can reach
#
# How much of what a layer-0 head writes do a layer-1 head's keys read? Elhage et al.
# (2021) measure it with the **K-composition score** $\|W_{QK}^{h_1} W_{OV}^{h_0}\|_F
# / (\|W_{QK}^{h_1}\|_F \|W_{OV}^{h_0}\|_F)$; Q- and V-composition put what the later
# head's queries or values read in place of its keys. The score runs from 0 to 1 in
# principle, but 1 is out of reach here. Two numbers set its real scale:
#
# - **chance**: two independent random maps of rank 16 in 64 dimensions, the ranks of
#   our heads' $W_{OV}$ and $W_{QK}$ (`composition_baseline`);
# - **the ceiling**: the largest score that any matrices with these two singular value
#   spectra reach, when what one writes most is what the other reads most
#   (`composition_ceiling`). A reader of exactly the 16 directions the previous-token
#   head writes, each equally, scores $1/\sqrt{16} = 0.25$.

# %%
chance, chance_sd = composition_baseline(64, 16, draws=2000, seed=0)
print(f"chance: {chance:.3f} +- {chance_sd:.3f}")
_, _, W_v, W_o = head_weights(model, 0, head)  # (64, 16) and (16, 64)
writes = W_v @ W_o  # (64, 64), rank 16: what the previous-token head writes
exact_reader = np.linalg.pinv(writes) @ writes  # (64, 64): projects on those 16
top = composition_ceiling(writes, exact_reader)
print(f"a reader of exactly those 16 directions: {top:.2f}")
others = [h for h in range(4) if h not in previous]  # the other layer-0 heads
for kind in "KQV":
    scores = composition_scores(model, kind)  # (4, 4): layer-0 head, layer-1 head
    ceiling = composition_ceilings(model, kind)[head, induction]  # (4,)
    print(f"{kind}: head {head} -> induction heads {scores[head, induction]} "
          f"(ceiling {ceiling})")
    for h in others:
        print(f"   head {h} -> induction heads {scores[h, induction]}")

# %% [markdown]
# The previous-token head's K-composition with the four induction heads, 0.22-0.23,
# is 15-16 standard deviations above chance (0.125) and about three quarters of the
# ceiling that these spectra allow (about 0.30); a reader of exactly what the head
# writes would score 0.25. Its Q- and V-composition sit far *below* chance
# (0.02-0.05): the queries and values read away from what it writes. So the weights
# are built for the diagram's K path.
#
# Now look at the other layer-0 heads. Most of their scores sit at or below chance
# (0.08-0.11), but head 3's Q-composition with induction head 0, 0.15, is 3.5
# standard deviations above it: by a rule of three standard deviations, these two
# compose. (Trained weights spread more than random ones: the 36 scores of heads 1-3
# vary with a standard deviation of 0.017, not 0.007, and this is the largest of them.)
# Distance from chance says that two matrices share directions; it does not say that
# the model uses them. That takes an experiment.
#
# ### Path ablation: the causal test
#
# A **path ablation** changes what one projection of layer 1 reads from some layer-0
# heads and leaves everything else as it was: the other projections and the
# unembedding still see the whole residual stream (`path_ablation`). What replaces the
# heads' output matters, and there are three choices in use:
#
# - **resample**: what the heads wrote for *another* sequence of the batch, at the same
#   positions (Chan et al. 2022). The stream keeps values it really takes, only the
#   tokens they describe are wrong. This asks exactly our question, "does the key read
#   *which* token came before?", so it is the method we rely on;
# - **mean**: the heads' mean output at each position over the batch (Wang et al.
#   2022). The token information is gone, and no wrong one is put in;
# - **zero**: nothing at all. This also moves the stream away from every value it had
#   in training, so part of what it breaks may have nothing to do with the tokens.

# %%
show_source(path_ablation)


# %%
def cut_accuracy(heads, reads, method):
    logits = path_ablation(model, tokens, heads, reads=reads, method=method)
    return accuracy(logits, tokens, n, offset, gap)  # logits: (512, 32, 32)


METHODS = ("resample", "mean", "zero")
print(f"nothing cut: {result['accuracy']:.2f}")
for heads, reads in [([head], "K"), ([head], "Q"), ([head], "V"), ([3], "Q")]:
    row = {m: round(cut_accuracy(heads, reads, m), 2) for m in METHODS}
    print(f"layer-0 heads {heads} -> layer 1's {reads}: {row}")

# %% [markdown]
# Resampling what the previous-token head writes into layer 1's keys, and nowhere else,
# drops the accuracy from 1.00 to 0.06: the keys read which token came before them, and
# the copy depends on it. Removing that information without putting a wrong one in
# (mean) costs as much, 0.05, and so does zeroing it, 0.06. Here the three methods
# agree. They need not: zeroing, for one, also moves the stream away from every value
# it had in training, and Zhang and Nanda (2024) show how the choice can change the
# answer. So name the method you quote.
#
# The other paths are the control. Head 3 into the queries, with its Q-composition
# above chance, costs nothing (1.00 by every method): a composition score without a
# use. The previous-token head into the queries or the values costs nothing either.
# The diagram's K arrow carries the circuit.
#
# ## 5. Ablation: switch whole heads off
#
# A head reaches the residual stream only through its `d_k` rows of $W_o$ (notebook
# 04). Zeroing those rows removes the head and nothing else (zero ablation of the
# whole head: every path it writes to). `model.forward(tokens, ablate=[(layer, head),
# ...])` does that on copies; `head=None` silences a whole layer. The baseline is the
# model with nothing removed; the grey line is chance, $1/32$.

# %%
ablations = {"nothing": []}
for layer in (0, 1):
    for h in range(4):
        ablations[f"layer {layer}, head {h}"] = [(layer, h)]
ablations["all of layer 0"] = [(0, None)]
ablations["the induction heads"] = [(1, h) for h in induction]  # (layer, head)
ablations["all of layer 1"] = [(1, None)]
accuracies = {
    name: accuracy(model.forward(tokens, ablate=heads)[0], tokens, n, offset, gap)
    for name, heads in ablations.items()
}

# %% jupyter={"source_hidden": true}
fig, ax = plt.subplots(figsize=(5.5, 5), layout="constrained")
ax.barh(list(accuracies), list(accuracies.values()), color="tab:blue")
ax.axvline(1 / 32, color="gray", linestyle=":", label="chance, 1/32")
ax.invert_yaxis()
ax.set(xlabel="accuracy", xlim=(0, 1), title="Heads switched off")
ax.legend(loc="upper center", bbox_to_anchor=(0.3, -0.12))
plt.show()
save_figure(fig, FIGURES / "09_ablation.png")
for name, value in accuracies.items():
    print(f"{name:20s} {value:.3f}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Zero ablation of whole heads, on the 512 sequences of the set-up. Layer 0
# holds a single previous-token head: switching it off breaks the model, as switching
# off all of layer 0 does. One induction head switched off costs a little on average;
# all four together break the model.
#
# <!-- alt: Horizontal bar chart of accuracy with heads switched off. Nothing switched
# off, layer-0 heads 1 to 3 and layer-1 heads 0 and 3 reach nearly 1; layer-1 heads 1
# and 2 alone reach about 0.9; layer-0 head 0 and all of layer 0 fall to near the
# dotted chance line; the induction heads together and all of layer 1 fall to the
# chance line. -->

# %% [markdown]
# Switching off the previous-token head costs as much as silencing all of layer 0
# (0.05 and 0.06 left). The induction heads back each other up, in part: each alone
# costs at most 0.09 on average (heads 0 and 3 almost nothing), all four together drop
# the accuracy to 0.03, chance. The average hides the split of section 3. Switch off
# head 1 and score the second copy's positions whose next token only head 1 copies
# strongly, against the rest:

# %%
sole = strong & (strong.sum(axis=0) == 1)  # (4, 32): tokens only one head copies
logits = model.forward(tokens, ablate=[(1, 1)])[0]  # (512, 32, 32): head 1 off
hits = logits[:, :-1].argmax(axis=-1) == tokens[:, 1:]  # (512, 31)
copied = repeated_positions(n, 32, offset, gap)[:, :-1]  # (512, 31): second copy
only_head_1 = sole[induction.index(1)][tokens[:, 1:]]  # (512, 31)
print(f"head 1 off, its own tokens: {hits[copied & only_head_1].mean():.2f}")
print(f"head 1 off, the other tokens: {hits[copied & ~only_head_1].mean():.2f}")

# %% [markdown]
# Without head 1, the tokens that only it copies strongly are right less than half the
# time (0.43), while the others drop only to 0.92. Redundancy like this, partial and
# uneven, is common in trained models (Michel et al. 2019), and it is why single-head
# ablations, averaged over every token, can understate what heads do.
# %% [markdown]
# ## 6. Circuit or shortcut?
#
# A model can do well on its training data without learning the rule we had in mind.
# The package ships a second two-layer model to show it (`load_shortcut`): the same
# architecture, trained for 1500 steps on a narrower task, in which every first copy
# starts at position 0 and the second copy follows it at once (offset 0, gap 0). Both
# models copy on repeats at the start (the trained model least well there: 0.93 for
# blocks of 4, its lowest). Move the repeat: the accuracy on the second
# copy against the offset, for blocks of 4, 8 and 12 tokens, gap 0, 256 fresh
# sequences a point (`offset_accuracy`):

# %%
shortcut = load_shortcut()
lengths = [4, 8, 12]
tables = {  # each (3, 25): block length, offset; gap 0
    "shortcut": offset_accuracy(shortcut, lengths, per_cell=256, seed=11),
    "trained": offset_accuracy(model, lengths, per_cell=256, seed=11),
}

# %% jupyter={"source_hidden": true}
fig, axes = plt.subplots(1, 2, figsize=(5.5, 3.6), layout="constrained", sharey=True)
for ax, (name, table) in zip(axes, tables.items(), strict=True):
    for row, n_block in zip(table, lengths, strict=True):
        ax.plot(np.arange(len(row)), row, "o-", ms=3, lw=1, label=f"n = {n_block}")
    ax.set(title=f"{name}, gap 0", xlabel="offset", ylim=(0, 1.02))
axes[0].set_ylabel("accuracy")
axes[0].legend()
plt.show()
save_figure(fig, FIGURES / "09_circuit_or_shortcut.png")
for name, table in tables.items():
    print(f"{name:8s} lowest over offsets, n = 4, 8, 12: {np.nanmin(table, axis=1)}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Accuracy on the second copy against the offset of the repeat, with no
# gap between the copies, for blocks of 4, 8 and 12 tokens. The shortcut model,
# trained only on repeats at the start, falls as the repeat moves; the trained model
# copies at every offset.
#
# <!-- alt: Two panels of accuracy against offset, gap 0. Left, the shortcut model:
# three lines start at 1 at offset 0; the 4-token line falls near 0 by offset 8,
# rises briefly to about 0.5 at offset 12 and stays near 0 from offset 15; the 8-token
# line falls near 0 by offset 11; the 12-token line falls to about 0.5. Right, the
# trained model: three lines stay between 0.93 and 1 at every offset. -->

# %% [markdown]
# With no gap, the shortcut falls to near 0 for blocks of 4 and 8, and to 0.49 for
# blocks of 12; the trained model keeps at least 0.93 everywhere. But the offset is
# only half of where a repeat sits. Fix the block at 4 tokens and vary the offset *and*
# the gap, every pair that fits (`offset_gap_accuracy`, 32 sequences a cell):

# %%
grids = {"shortcut": offset_gap_accuracy(shortcut, 4, per_cell=32, seed=11)}  # (25, 25)

# %%
grids["trained"] = offset_gap_accuracy(model, 4, per_cell=32, seed=11)  # offset, gap
o, g = np.meshgrid(np.arange(25), np.arange(25), indexing="ij")  # (25, 25) each
rules = (o <= 12) & (g >= o) & (g <= 12)  # first copy in 0-15, gap from offset to 12
cut = grids["shortcut"]
print(f"shortcut, offset 5: gap 0 {cut[5, 0]:.2f}, gap 5 {cut[5, 5]:.2f}")
print(f"shortcut where the rules hold: lowest {np.nanmin(cut[rules]):.2f}")
print(f"shortcut elsewhere: mean {np.nanmean(cut[~rules]):.2f}")
print(f"trained model, every cell: lowest {np.nanmin(grids['trained']):.2f}")

# %% jupyter={"source_hidden": true}
fig, ax = plt.subplots(figsize=(5, 4.4), layout="constrained")
image = ax.imshow(grids["shortcut"], origin="lower", cmap="viridis", vmin=0, vmax=1)
ax.plot([0, 12], [0, 12], color="white", lw=2, ls="--")  # gap = offset
ax.axhline(12.5, color="white", lw=2, ls=":")  # the first copy ends at position 15
ax.set(xlabel="gap", ylabel="offset", title="Shortcut, block of 4")
fig.colorbar(image, ax=ax, shrink=0.9, label="accuracy")
save_figure(fig, FIGURES / "09_shortcut_offset_and_gap.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The shortcut model's accuracy on a block of 4 tokens, for every offset
# (rows) and gap (columns) that fit. It copies in a wedge: below the dotted line (the
# first copy inside positions 0-15, where its training put first copies) and right of
# the dashed line (a gap at least as large as the offset), up to a gap of about 13.
#
# <!-- alt: A triangular heatmap of accuracy, offset 0 to 24 upwards, gap 0 to 24 to
# the right. A bright yellow wedge, accuracy near 1, lies between a dashed diagonal
# where the gap equals the offset and a dotted horizontal line at offset 12.5, and
# ends near gap 13. Above the dotted line the cells are dark (accuracy about 0.1),
# past gap 13 mostly dark (about 0.2); left of the diagonal the accuracy fades with the
# distance from it, from about 0.8 within three cells to about 0.2 eight or more away.
# -->

# %% [markdown]
# With the first copy at the same place, the gap alone decides: at offset 5 the
# shortcut copies about a quarter of the block with no gap and all of it with a gap
# of 5.
# (For a block of 6 at offset 9 it is the same: 0.25 with no gap, 0.92 with a gap of
# 8, just short of the rule below, and 1.00 with a gap of 9.) The shortcut obeys two
# positional rules, which we attribute one to each layer:
#
# - **layer 0**: the first copy must sit inside positions 0-15, where its training put
#   first copies (below the dotted line);
# - **layer 1**: the earlier copy must sit early in what the query sees, as it always
#   did when every first copy began at position 0. A gap at least as large as the
#   offset keeps it there (right of the dashed line), and the copies must not be much
#   further apart than the 16 positions training ever put between them.
#
# Inside both rules it copies (0.96 or more in every cell); outside them it mostly
# fails (about a third on average). The trained model keeps at least 0.89 in every
# cell. Where do the rules come from? Here is each model's
# previous-token head, the weight on $t - 1$ against the query position $t$, averaged
# over 1024 sequences of its own training task (`previous_token_profile`):

# %%
profiles = {
    "shortcut": previous_token_profile(
        shortcut, num_sequences=1024, seed=13, at_start=True
    ),  # (4, 32)
    "trained": profile,  # (4, 32): the profile of section 3
}

# %% jupyter={"source_hidden": true}
fig, ax = plt.subplots(figsize=(5, 3.6), layout="constrained")
ax.axvspan(1, 15, color="0.9")
for name, p in profiles.items():
    best_head = int(np.nanargmax(np.nanmean(p, axis=1)))
    label = f"{name}, head {best_head}"
    ax.plot(np.arange(32), p[best_head], "o-", ms=3, lw=1, label=label)
ax.set(xlabel="query position t", ylabel="weight on t - 1", ylim=(0, 1.02))
ax.set_title("Layer 0's previous-token head")
ax.legend(loc="lower left")
plt.show()
save_figure(fig, FIGURES / "09_previous_token_by_position.png")
for name, p in profiles.items():
    row = p[int(np.nanargmax(np.nanmean(p, axis=1)))]  # (32,)
    print(f"{name:8s} positions where the weight on t - 1 is >= 0.5: "
          f"{np.flatnonzero(row >= 0.5).min()}-{np.flatnonzero(row >= 0.5).max()}")

# %% [markdown] tags=["figure-caption"]
# **Figure.** Each model's previous-token head, by query position. The shortcut's looks
# one step back only where its training put first copies (grey band, 1-15); the
# trained model's from 1 to 27, where its training put them.
#
# <!-- alt: The weight on the previous token against the query position, for each
# model's best layer-0 head. Inside a grey band from 1 to 15 the shortcut's line
# falls from 1 to about 0.5; after the band it is near 0. The trained model's line
# stays above 0.9 from 1 to 27 and drops near 0 from 28 on. -->

# %% [markdown]
# Both previous-token heads are tables of positions, not a rule "one step back". The
# models differ in how far their table reaches: 1-15 for the shortcut, 1-27 for the
# trained model, exactly where their training needed one. The head writes for the keys
# of an earlier copy, and the latest an earlier copy ends is position 27 (the shortest
# block, 4 tokens, at positions 24-27 with its second copy at 28-31); for the
# shortcut, whose first copies start at 0 and hold at most 16 tokens, it is 15. Take
# the positions away and the trained model's table is gone:

# %%
_, weights_without = model.forward(tokens, use_positions=False)  # 2 x (512, 4, 32, 32)
print(f"accuracy without positions: {result['accuracy_without_positions']:.2f}")
print("layer-0 previous-token scores:", previous_token_score(weights_without[0]))

# %% [markdown]
# Without its positional embeddings no layer-0 head scores more than about what even
# weights give (0.10), and the copy fails. A shortcut and a circuit can score the same
# on the data they were trained on; only data that moves the pattern, in every
# direction it can move, tells them apart. The trained model's circuit holds wherever
# its training's positions reach.
#
# ## 7. The circuit at work
#
# `generate` feeds a prompt to the model and writes tokens one at a time, each the
# most likely next token (greedy) or one drawn from the softmax of the logits divided
# by a temperature (notebook 01), with a seed. Type `a b c d e a b`:

# %%
prompt = encode_letters("a b c d e a b")
print("greedy:                 ", decode_tokens(generate(model, prompt, 3)))
late = encode_letters("q w e r t y u i o p l k j h g f a b c d e a b")
print("after 16 other letters: ", decode_tokens(generate(model, late, 3)))
logits = model.forward(prompt)[0][-1]  # (32,): the scores of the token after "a b"
cold = softmax(logits / 0.5)  # (32,)
print(f"P(c) = {softmax(logits)[2]:.2f}; at temperature 0.5: {cold[2]:.2f}")
for temperature in (1.0, 0.5):
    for seed in (0, 1):
        sampled = generate(model, prompt, 3, temperature=temperature, seed=seed)
        print(f"temperature {temperature}, seed {seed}: {decode_tokens(sampled)}")

# %% [markdown]
# Greedy decoding continues the copy, at the start of the context or 16 tokens later.
# The model is less sure than that makes it look: it gives `c` about half of its
# probability. Its training data explain the hedge. In those sequences, when a token
# has occurred before, the token that followed its earlier occurrence comes next only
# about half of the time (0.49): the other half are coincidences, a random token that
# happens to repeat, and the ends of blocks. Sampling at temperature 1 therefore
# wanders off the copy; dividing the logits by 0.5 squares the odds, and the seeded
# draws follow it.

# %% [markdown]
# ## Summary
#
# - The trained model runs the induction circuit: layer 0's head 0 writes each token's
#   predecessor into the stream; the keys of all four layer-1 heads read it; their
#   OV circuit copies the matched token. Each head's scores (previous-token,
#   prefix-matching, copying) say so on fresh data and at every offset.
# - Composition scores have a scale: chance (0.125 here) and a ceiling set by the
#   spectra (about 0.30). A score far from chance says that two heads *could* talk; the
#   Q-composition of layer-0 head 3, above chance by more than three standard
#   deviations, is unused.
# - The evidence is causal: resampling the previous-token head's output into layer 1's
#   keys alone drops the accuracy from 1.00 to 0.06 (0.05 by mean, 0.06 by zero
#   ablation: here the methods agree, but name the one you quote). Whole-head
#   ablations agree, and show redundancy among the induction heads.
# - A shortcut model trained on repeats at the start copies only where two positional
#   rules hold, one per layer, visible only when both the offset and the gap move. The
#   trained model's previous-token head is a table of positions too, one that covers
#   every position its training used.

# %% [markdown]
# ## Exercises
#
# %% [markdown]
# **Exercise 1 (predict, then measure): one induction head left.** Switch off every
# layer-1 induction head but the last one, `result["induction_heads"][-1]`. Switching
# off one head cost little; does one head alone suffice? Predict the accuracy on the
# determined positions: `"above 0.9"`, `"between 0.4 and 0.9"` or `"below 0.4"`. Then
# check it with
# `accuracy(model.forward(tokens, ablate=...)[0], tokens, n, offset, gap)`.

# %%
prediction_1 = ...  # "above 0.9", "between 0.4 and 0.9" or "below 0.4"


# %% jupyter={"source_hidden": true}
@exercise(
    1, crash_hint='answer with one of "above 0.9", "between 0.4 and 0.9", "below 0.4"'
)
def check_exercise_1(answer):
    choices = ("above 0.9", "between 0.4 and 0.9", "below 0.4")
    assert answer in choices, f"answer with one of {choices}; got {answer!r}"
    others = [(1, h) for h in result["induction_heads"][:-1]]
    measured = accuracy(model.forward(tokens, ablate=others)[0], tokens, n, offset, gap)
    truth = "between 0.4 and 0.9"
    truth = "above 0.9" if measured > 0.9 else "below 0.4" if measured < 0.4 else truth
    assert answer == truth, (
        "not quite: measure it with accuracy(model.forward(tokens, ablate=...)[0], ...)"
    )


print(check_exercise_1(prediction_1))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Between: the last induction head alone keeps about half the accuracy. Which head
# matters? Keep each in turn: in this model every induction head alone keeps between
# 0.47 and 0.59, because the four share the work. That is a fact about this training
# run, not a law. In the shortcut model of section 6, on repeats at the start, layer-1
# head 0 alone keeps nearly all of its accuracy (0.98) and head 2 alone about a third:
# there one induction head suffices, and which one you keep decides the answer.
# Removing one head costs little, removing all costs everything, and the curve in
# between depends on how training split the work. To see it:
# for kept in result["induction_heads"]:
#     off = [(1, h) for h in result["induction_heads"] if h != kept]
#     logits = model.forward(tokens, ablate=off)[0]
#     print(kept, accuracy(logits, tokens, n, offset, gap))
solution_prediction_1 = "between 0.4 and 0.9"
print(check_exercise_1(solution_prediction_1))

# %% [markdown]
# **Exercise 2 (predict, then measure): the other heads in the keys.** Section 4 cut
# the previous-token head from layer 1's keys. Now cut the *other* three layer-0
# heads, 1, 2 and 3, from layer 1's keys by resampling, and keep the previous-token
# head. Predict the accuracy on the determined positions: `"above 0.95"`, `"between
# 0.5 and 0.95"` or `"below 0.5"`. Then measure it with `cut_accuracy`, and try the
# other two methods.

# %%
prediction_2 = ...  # "above 0.95", "between 0.5 and 0.95" or "below 0.5"


# %% jupyter={"source_hidden": true}
@exercise(
    2, crash_hint='answer with one of "above 0.95", "between 0.5 and 0.95", "below 0.5"'
)
def check_exercise_2(answer):
    choices = ("above 0.95", "between 0.5 and 0.95", "below 0.5")
    assert answer in choices, f"answer with one of {choices}; got {answer!r}"
    others = [h for h in range(4) if h not in result["previous_token_heads"]]
    measured = cut_accuracy(others, "K", "resample")
    truth = "between 0.5 and 0.95"
    if measured > 0.95 or measured < 0.5:
        truth = "above 0.95" if measured > 0.95 else "below 0.5"
    assert answer == truth, "not quite: measure it with cut_accuracy([1, 2, 3], ...)"


print(check_exercise_2(prediction_2))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Above: 1.00 by resampling, and 1.00 by mean or zero ablation, as much as the whole
# model. The three heads spread their weight over the past (previous-token scores
# near 0.1, what even weights give), so what they write mixes the tokens seen so far.
# The keys neither need it (mean and zero ablation remove it and change nothing) nor
# are thrown off by a wrong one (resampling puts in *another* sequence's mix, and
# changes nothing either). Their K-composition scores of section 4 said as much: all
# below chance. The keys read the previous-token head, and nothing else of layer 0.
# for method in ("resample", "mean", "zero"):
#     print(method, cut_accuracy([1, 2, 3], "K", method))
solution_prediction_2 = "above 0.95"
print(check_exercise_2(solution_prediction_2))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, L. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). The layer whose trained
#   heads this notebook reads.
# - Olsson, C., Elhage, N., Nanda, N., Joseph, N., DasSarma, N., Henighan, T., Mann, B.,
#   Askell, A., Bai, Y., Chen, A., et al. (2022). *In-context Learning and Induction
#   Heads.* Transformer Circuits Thread.
#   [arXiv:2209.11895](https://arxiv.org/abs/2209.11895). Induction heads, the
#   prefix-matching score, and the ablations this notebook repeats at toy scale.
# - Elhage, N., Nanda, N., Olsson, C., Henighan, T., Joseph, N., Mann, B., Askell, A.,
#   Bai, Y., Chen, A., Conerly, T., et al. (2021). *A Mathematical Framework for
#   Transformer Circuits.* Transformer Circuits Thread.
#   [transformer-circuits.pub/2021/framework](https://transformer-circuits.pub/2021/framework/index.html).
#   Attention-only transformers, the QK and OV circuits, the copying score and Q-, K-
#   and V-composition.
# - Wang, K., Variengien, A., Conmy, A., Shlegeris, B. and Steinhardt, J. (2023).
#   *Interpretability in the Wild: a Circuit for Indirect Object Identification in GPT-2
#   Small.* ICLR 2023. [arXiv:2211.00593](https://arxiv.org/abs/2211.00593). Path
#   patching, and mean ablation.
# - Chan, L., Garriga-Alonso, A., Goldowsky-Dill, N., Greenblatt, R., Nitishinskaya, J.,
#   Radhakrishnan, A., Shlegeris, B. and Thomas, N. (2022). *Causal Scrubbing: a Method
#   for Rigorously Testing Interpretability Hypotheses.* Alignment Forum. Resampling
#   ablation: replace an activation by its value on another input.
# - Zhang, F. and Nanda, N. (2024). *Towards Best Practices of Activation Patching in
#   Language Models: Metrics and Methods.* ICLR 2024.
#   [arXiv:2309.16042](https://arxiv.org/abs/2309.16042). How the ablation method
#   changes the answer, and why zero ablation can mislead.
# - Michel, P., Levy, O. and Neubig, G. (2019). *Are Sixteen Heads Really Better than
#   One?* NeurIPS 2019. [arXiv:1905.10650](https://arxiv.org/abs/1905.10650). Trained
#   heads are often redundant, as the single-head ablations here are.
# - Kazemnejad, A., Padhi, I., Natesan Ramamurthy, K., Das, P. and Reddy, S. (2023).
#   *The Impact of Positional Encoding on Length Generalization in Transformers.*
#   NeurIPS 2023. [arXiv:2305.19466](https://arxiv.org/abs/2305.19466). What a causal
#   model can and cannot do without positional embeddings.
#
# ---
# Previous: [notebook 08](08_why_several_heads.ipynb) showed why a layer has several
# heads. Next: [notebook 10](10_real_model.ipynb) looks for the same heads in a real
# language model. The explorer ([explore.ipynb](explore.ipynb)) can switch to the
# trained weights: type `a b c d x a b c` and watch layer 1 light up on the repeat.
