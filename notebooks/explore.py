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
# # Multi-head attention explorer
#
# Two kinds of weights, one switch:
#
# - **untrained**: one `MultiHeadAttention` layer from `mhattn`, with fresh random
#   weights, applied to a batch of two sequences of random token vectors. The tokens and
#   the weights come from two independent random streams of the same seed.
# - **trained (induction)**: the chapter's tiny trained model ([notebook 07][nb07]), two
#   layers of attention, reading the letters you type (`a` is token 0, `b` token 1,
#   ...).
#
# Change a setting and everything below redraws:
#
# - **left** (on a phone, above): the attention weights, one heatmap per head, numbered
#   from head 0. Row *i* is query *i*, column *j* is key *j*; a darker cell means query
#   *i* takes more of value *j*. Every panel uses the same colour scale, 0 to 1, so the
#   heads can be compared. Grey cells are masked: their weight is exactly zero.
#   Untrained, the picture shows the second sequence (the one the padding mask
#   shortens); with the padding mask, a dashed line separates its real queries from the
#   padding ones below it.
# - **right** (on a phone, below): every token before the layer (hollow circle) and
#   after it (filled circle), in one 2-D PCA plane fitted to both, with an arrow from
#   each token's input to its output. The arrow is the whole layer's doing, its linear
#   maps included, not attention's alone ([notebook 05][nb05] takes it apart). Trained,
#   it is the residual stream before and after the layer shown.
# - **the readout:** the settings and the width of one head,
#   `d_k = d_model // num_heads`; untrained, the sum of each query's weights (its row of
#   a heatmap); trained, each head's previous-token and prefix-matching scores (the
#   measures of Olsson et al. 2022, from `mhattn.learn.circuits`) and the model's guess
#   for every next letter.
#
# `num_heads` only offers the divisors of `d_model`, up to 8, because each head gets an
# equal slice of the model's width (and more than 8 panels would be too small to read).
# The positions switch takes order away or adds it ([notebook 06][nb06]): untrained,
# RoPE rotates every query and key by its position; trained, `none` leaves out the
# position embeddings the model learned.
#
# [nb05]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/05_embedding_shift.ipynb
# [nb06]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/06_positions.ipynb
# [nb07]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/07_learning_to_attend.ipynb

# %% [markdown]
# <div id="mhattn-live-explorer"></div>

# %%
# NBVAL_IGNORE_OUTPUT
from mhattn.explorer import explorer

explorer()

# %% [markdown] tags=["figure-caption"]
# **Figure.** The explorer's default state, as a still picture: four heads of an
# untrained layer over eight tokens with no mask, and where the layer moves each token.
#
# <!-- alt: Left: four 8-by-8 heatmaps with no grey cells, mostly pale with a few dark
# cells such as row 2, key 7 in head 0 and row 6, key 2 in head 1. Right: a PCA plane
# with eight hollow input circles on the left half and arrows fanning out to eight
# filled outputs labelled 0 to 7. -->

# %% [markdown]
# ## Things to try
#
# 1. **Row sums.** Change anything you like. Do the row sums in the readout ever differ
#    from 1? Which line of `mhattn.softmax` guarantees it?
# 2. **More keys, paler rows.** Move `seq_len` from 4 to 32 with no mask. Why do the
#    heatmaps get paler, even though each row still sums to 1?
# 3. **Causal.** Choose the causal mask and note row 3 of head 0. Now increase
#    `seq_len`. Do the rows that were already shown change? Why not?
# 4. **Padding.** Choose the padding mask. The second sequence has only its first half
#    as real tokens. Which columns turn grey? The padding *queries* (the bottom rows)
#    still sum to 1: why is that harmless in a real model?
# 5. **Heads.** With `d_model = 12`, which head counts are offered, and why is 8
#    missing? With 6 heads, how many numbers does each head use to compare a query with
#    a key?
# 6. **Seeds.** Change the seed a few times. Do the heads of one layer look alike or
#    different? Nothing here is trained: what you see is what random projections do.
# 7. **Induction.** Switch to the trained weights and keep `a b c d x a b c`. In
#    layer 1, where do the last three rows (the repeated `a b c`) put their weight?
#    Compare the model's guesses after the first `a b c` with those after the second.
# 8. **Layer 0.** Show layer 0. Which head has the highest previous-token score? Why
#    does the induction head in layer 1 need a layer before it (notebook 07 trains a
#    one-layer model to find out)?
# 9. **Your own sequence.** Type a few random letters, then the same letters again
#    (`q m f z t q m f z t`). Does the prefix-matching score depend on which letters you
#    chose? What happens when a letter appears three times?
# 10. **Order.** Untrained, with no mask, turn RoPE on: which heatmaps change? Trained,
#     set positions to `none` with `a b c d x a b c`: what happens to the previous-token
#     scores of layer 0, and to the model's guesses?
#
# The code of every piece is in the chapter: [notebook 02][code02] (masks), [notebook
# 03][code03] (heads), [notebook 04][code04] (the layer), [notebook 05][code05] (the
# PCA picture), [notebook 06][code06] (positions) and [notebook 07][code07] (the
# trained model). The links lead to GitHub, so that they work the same here, in
# JupyterLab and in the Voila app; in JupyterLab the notebooks are also in the file
# browser, next to this one.
#
# [code02]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/02_scaled_dot_product_attention.ipynb
# [code03]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/03_splitting_heads.ipynb
# [code04]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/04_multi_head_attention.ipynb
# [code05]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/05_embedding_shift.ipynb
# [code06]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/06_positions.ipynb
# [code07]: https://github.com/mhattn/mhattn/blob/HEAD/notebooks/07_learning_to_attend.ipynb
