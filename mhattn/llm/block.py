r"""One block of a Llama model: attention, then a feed-forward network, each adding to the residual stream.

.. code-block:: text

    h = h + attention(rms_norm(h, attn_norm))   # tokens read from each other (causal, RoPE)
    h = h + swiglu(rms_norm(h, ffn_norm))       # each token on its own

The attention is the chapter's own :class:`mhattn.GroupedQueryAttention`, with its weights
taken from the file as they are (``layout="torch"``: ``nn.Linear``'s ``(out, in)``).
"""

import copy

import numpy as np

from ..core.production import GroupedQueryAttention
from .mlp import swiglu
from .norm import rms_norm

#: The layer's own forward, without its door: the model's door has checked the ids, and the weights were
#: checked when the model was built (the layer's check would read every weight again, at every token).
attend = GroupedQueryAttention.forward.__wrapped__


def block_names(i):
    """The names of block ``i``'s weights, as a GGUF file (llama.cpp) calls them."""
    return {part: f"blk.{i}.{part}.weight" for part in (
        "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")}


class DecoderBlock:
    """Block ``i`` of a Llama model, built from a config and the model's weights by their file names.

    Attributes
    ----------
    attention : GroupedQueryAttention
    attn_norm, ffn_norm : ndarray of shape ``(d_model,)``
        The RMSNorm gains before the attention and before the feed-forward network.
    W_gate, W_up : ndarray of shape ``(d_model, d_ff)``
    W_down : ndarray of shape ``(d_ff, d_model)``
        Views of the given ``(out, in)`` arrays, transposed: no copy.
    """

    def __init__(self, config, weights, i):
        name = block_names(i)
        W_q, W_k, W_v, W_o = (weights[name[part]] for part in ("attn_q", "attn_k", "attn_v", "attn_output"))
        self.attention = GroupedQueryAttention.from_weights(
            W_q, W_k, W_v, W_o, num_heads=config.num_heads, layout="torch", num_kv_heads=config.num_kv_heads,
            rope=config.rope, rope_base=config.rope_base)
        self.attn_norm, self.ffn_norm = weights[name["attn_norm"]], weights[name["ffn_norm"]]  # (d_model,) each
        self.W_gate, self.W_up = weights[name["ffn_gate"]].T, weights[name["ffn_up"]].T  # (d_model, d_ff) views
        self.W_down = weights[name["ffn_down"]].T  # (d_ff, d_model) view
        self.eps = config.rms_eps

    def __call__(self, h, mask=None, *, kv_cache=None, need_weights=False, silenced=None):
        """``h`` (``(batch, seq, d_model)``) after this block, and the attention weights (or None).

        ``silenced``: query heads whose output is zeroed (:func:`silence`); None silences none.
        """
        attention = self.attention if silenced is None else silence(self.attention, silenced)
        out, weights = attend(attention, rms_norm(h, self.attn_norm, self.eps), mask, kv_cache=kv_cache,
                              need_weights=need_weights)  # (batch, seq, d_model), (batch, heads, seq, seq_k)
        h = h + out  # the residual stream: attention adds what the tokens read from each other
        h = h + swiglu(rms_norm(h, self.ffn_norm, self.eps), self.W_gate, self.W_up, self.W_down)
        return h, weights


def silence(attention, heads):
    """A copy of ``attention`` whose query ``heads`` reach nothing: their ``d_k`` rows of ``W_o`` are zero.

    A head's output enters the residual stream only through its rows of ``W_o``; its attention
    weights are still computed (and returned).
    """
    silent = copy.copy(attention)  # shares W_qkv; W_o is replaced below
    silent.W_o = np.array(attention.W_o, copy=True)  # (d_model, d_model)
    d_k = attention.d_k
    for head in heads:
        silent.W_o[head * d_k : (head + 1) * d_k] = 0.0  # (d_k, d_model): head `head`'s rows
    return silent
