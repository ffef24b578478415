"""Path ablation: change what one part of layer 1 reads from some layer-0 heads, and nothing else.

A layer-1 head reads the residual stream three times: its queries, its keys and its values
each project it. A weight product (a composition score, :mod:`.weight_circuits`) says how much
of what a layer-0 head writes each of them *could* read; a path ablation tests whether the
model *needs* it. The listed layer-0 heads' output is replaced in the stream that ``reads``
(``"K"``, ``"Q"``, ``"V"``, or several of them) sees, and everywhere else (the other
projections, the unembedding) the stream stays whole. Three replacements are in use, and the
answer depends on which:

- ``"zero"``: no output at all; this also moves the stream off the values it had in training;
- ``"mean"``: the heads' mean output at each position over the batch (Wang et al. 2022): the
  typical value stays, what depends on the tokens goes;
- ``"resample"``: the heads' output on another sequence of the batch (the next one, cyclically)
  at the same positions (Chan et al. 2022): a value the stream really takes, but about other tokens.

Notebook 09 teaches it. References: Elhage et al. (2021), *A Mathematical Framework for
Transformer Circuits*; Wang et al. (2022), *Interpretability in the Wild*, arXiv:2211.00593;
Chan et al. (2022), *Causal Scrubbing*, Alignment Forum; Zhang and Nanda (2024), *Towards Best
Practices of Activation Patching*, arXiv:2309.16042.
"""

import numpy as np

from ..core.attention import scaled_dot_product_attention
from ..core.heads import combine_heads
from ..core.masks import causal_mask
from ..core.projection import project_qkv, repeat_kv

METHODS = ("zero", "mean", "resample")  #: what replaces the cut heads' output


def path_ablation(model, tokens, heads, *, reads="K", method="resample"):
    """Logits of a two-layer model whose layer 1 reads ``reads`` with layer-0 ``heads``' output replaced.

    Parameters
    ----------
    model : InductionModel with two layers
    tokens : ndarray of int, shape ``(batch, seq_len)``; ``batch >= 2`` for ``"resample"``
    heads : list of int, heads of layer 0
    reads : str, keyword only
        Which of layer 1's projections see the changed stream: letters of ``"QKV"``.
    method : ``"zero"``, ``"mean"`` or ``"resample"``, keyword only

    Returns
    -------
    ndarray of shape ``(batch, seq_len, vocab)``

    Examples
    --------
    >>> from mhattn.learn import induction_batch, load_trained
    >>> model = load_trained()
    >>> tokens = induction_batch(np.random.default_rng(0), 2)[0]
    >>> bool(np.allclose(path_ablation(model, tokens, [], reads="QKV"), model(tokens)[0]))
    True
    """
    seq_len = tokens.shape[-1]
    mask = causal_mask(seq_len)  # (seq_len, seq_len)
    h0 = model.embed[tokens] + model.pos[:seq_len]  # (batch, seq_len, d_model)
    written = model.layers[0](h0, mask)[0]  # (batch, seq_len, d_model): every layer-0 head
    kept = model.ablated_layers([(0, h) for h in heads])[0](h0, mask)[0]  # without the listed heads
    cut = written - kept  # (batch, seq_len, d_model): what the listed heads write
    if method == "zero":
        replacement = np.zeros_like(cut)
    elif method == "mean":
        replacement = np.broadcast_to(cut.mean(axis=0), cut.shape)  # (batch, seq_len, d_model)
    else:
        replacement = np.roll(cut, 1, axis=0)  # sequence b gets what the heads wrote for sequence b - 1
    whole, changed = h0 + written, h0 + kept + replacement  # (batch, seq_len, d_model) each
    layer = model.layers[1]
    Q = _project(layer, changed if "Q" in reads else whole)[0]  # (batch, num_heads, seq_len, d_k)
    K = _project(layer, changed if "K" in reads else whole)[1]  # (batch, num_kv_heads, seq_len, d_k)
    V = _project(layer, changed if "V" in reads else whole)[2]
    K, V = repeat_kv(K, V, layer.num_heads // K.shape[1])  # (batch, num_heads, seq_len, d_k) each
    out = combine_heads(scaled_dot_product_attention(Q, K, V, mask)[0]) @ layer.W_o.astype(whole.dtype, copy=False)
    return (whole + out) @ model.unembed  # (batch, seq_len, vocab)


def _project(layer, x):
    """Queries, keys and values of every head of ``layer`` for the stream ``x``, as its own forward makes them.

    The layer's own projection, rotation (RoPE) included: ``(batch, heads, seq_len, d_k)`` each.
    """
    rope = getattr(layer, "rope", False)  # RotaryMultiHeadAttention, or GroupedQueryAttention(rope=...)
    positions = np.arange(x.shape[1]) if rope else None  # (seq_len,): as the layer's forward numbers the tokens
    num_kv_heads = getattr(layer, "num_kv_heads", layer.num_heads)
    return project_qkv(x, layer.W_qkv.astype(x.dtype, copy=False), layer.num_heads, num_kv_heads, positions=positions,
                       rope_base=getattr(layer, "rope_base", 10000.0),
                       rope_pairing=getattr(layer, "rope_pairing", None) or "half")
