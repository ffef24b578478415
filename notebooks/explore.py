# ---
# jupyter:
#   jupytext:
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
# One `MultiHeadAttention` layer from `mhattn`, with random weights, applied to a batch of
# two sequences of random token vectors. Change a setting and everything below redraws:
#
# - **left:** the attention weights of the second sequence, one heatmap per head. Row *i* is
#   query *i*, column *j* is key *j*; a darker cell means query *i* takes more of value *j*.
#   Every panel uses the same colour scale, 0 to 1, so the heads can be compared.
#   Grey cells are masked: their weight is exactly zero. With the padding mask, a dashed line
#   separates the real queries from the padding ones below it.
# - **right:** every token before attention (hollow circle) and after (filled circle), in
#   one 2-D PCA plane fitted to both, with an arrow from each token's input to its output.
# - **the readout:** the settings, the width of one head `d_k = d_model / num_heads`, and
#   the sum of each query's weights (its row of a heatmap).
#
# `num_heads` only offers head counts that divide `d_model`, because each head gets an equal
# slice of the model's width.

# %%
# NBVAL_IGNORE_OUTPUT
from mhattn.widgets import explorer

explorer()

# %% [markdown]
# ## Things to try
#
# 1. **Row sums.** Change anything you like. Do the row sums in the readout ever differ
#    from 1? Which line of `mhattn.softmax` guarantees it?
# 2. **More keys, paler rows.** Move `seq_len` from 4 to 32 with no mask. Why do the
#    heatmaps get paler, even though each row still sums to 1?
# 3. **Causal.** Choose the causal mask and note row 3 of head 0. Now increase `seq_len`.
#    Which rows change, and why can't the others?
# 4. **Padding.** Choose the padding mask. The second sequence has only its first half as
#    real tokens. Which columns turn grey? The padding *queries* (the bottom rows) still sum
#    to 1: why is that harmless in a real model?
# 5. **Heads.** With `d_model = 12`, which head counts are offered, and why is 8 missing?
#    With 6 heads, how many numbers does each head use to compare a query with a key?
# 6. **Seeds.** Change the seed a few times. Do the heads of one layer look alike or
#    different? Nothing here is trained: what you see is what random projections do.
#
# The code of every piece is in the chapter: notebook 02 (masks), 03 (heads),
# 04 (the layer) and 05 (the PCA picture).
