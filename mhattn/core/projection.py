"""The fused projection: ``x @ W_qkv`` cut into queries, keys and values, head by head.

The one place that knows ``W_qkv``'s column layout: queries first (``d_model`` columns,
head ``h`` owning columns ``h * d_k`` to ``(h + 1) * d_k - 1``), then the keys and the values
of the ``num_kv_heads`` key/value heads. The module's forward, its backward pass
(:mod:`mhattn.core.grad`), its overflow check and the per-head weights
(:func:`head_weights`) all read the layout from here.
"""

import numpy as np

from .heads import split_heads
from .positions import apply_rope, apply_rope_interleaved


def qkv_columns(d_model, num_heads, num_kv_heads):
    """Where the keys and the values start among ``W_qkv``'s columns: ``[d_model, d_model + kv_width]``."""
    return [d_model, d_model + num_kv_heads * (d_model // num_heads)]


def project_qkv(x, W_qkv, num_heads, num_kv_heads, *, context=None, positions=None, rope_base=10000.0,
                rope_pairing="half"):
    """Queries, keys and values of every head, rotated by ``positions`` if given (RoPE).

    ``x``: ``(batch, seq_q, d_model)``; ``context``: ``(batch, seq_k, d_model)`` or None (then
    the keys and values come from ``x``). ``positions``: ``(seq_q,)`` or ``(batch, seq_q)``;
    ``rope_pairing``: ``"half"`` (:func:`mhattn.apply_rope`) or ``"interleaved"``
    (:func:`mhattn.apply_rope_interleaved`). Returns ``Q`` of shape ``(batch, num_heads, seq_q, d_k)``
    and ``K, V`` of shape ``(batch, num_kv_heads, seq_k, d_k)``.
    """
    columns = qkv_columns(x.shape[-1], num_heads, num_kv_heads)
    if context is None:  # self-attention: queries, keys and values in one product
        Q, K, V = np.split(x @ W_qkv, columns, axis=-1)  # (batch, seq, d_model), (batch, seq, kv_width) x 2
    else:  # cross-attention (notebook 11): queries from x, keys and values from the context
        Q = x @ W_qkv[:, : columns[0]]  # (batch, seq_q, d_model)
        K, V = np.split(context @ W_qkv[:, columns[0] :], 2, axis=-1)  # (batch, seq_k, kv_width) each
    Q = split_heads(Q, num_heads)  # (batch, num_heads, seq_q, d_k)
    K, V = split_heads(K, num_kv_heads), split_heads(V, num_kv_heads)  # (batch, num_kv_heads, seq_k, d_k) each
    if positions is not None:  # rotary positions (notebook 06): queries and keys turn by their positions
        rotate = apply_rope_interleaved if rope_pairing == "interleaved" else apply_rope  # (2i, 2i+1) or (i, i+d_k/2)
        Q, K = rotate(Q, positions, rope_base), rotate(K, positions, rope_base)
    return Q, K, V


def head_weights(mha, head):
    """``(W_Q, W_K, W_V, W_O)`` of query head ``head`` of ``mha``: ``(d_model, d_k)`` x 3 and ``(d_k, d_model)``.

    TransformerLens's per-head shapes, read through :func:`qkv_columns` for any of the
    chapter's attention modules; under grouped queries, ``W_K`` and ``W_V`` are those of the
    key/value head that ``head`` reads.
    """
    num_kv_heads = getattr(mha, "num_kv_heads", mha.num_heads)
    W_q, W_k, W_v = np.split(mha.W_qkv, qkv_columns(mha.d_model, mha.num_heads, num_kv_heads), axis=-1)
    kv_head = head // (mha.num_heads // num_kv_heads)  # the key/value head this query head reads
    per_head = lambda W, count: split_heads(W[None], count)[0]  # noqa: E731  (d_model, width) -> (count, d_model, d_k)
    return (per_head(W_q, mha.num_heads)[head], per_head(W_k, num_kv_heads)[kv_head],
            per_head(W_v, num_kv_heads)[kv_head], per_head(mha.W_o.T, mha.num_heads)[head].T)


def repeat_kv(K, V, group):
    """Grouped queries (notebook 11): each key/value head serves ``group`` query heads in a row."""
    if group == 1:
        return K, V
    return np.repeat(K, group, axis=1), np.repeat(V, group, axis=1)  # (batch, num_heads, seq_k, d_k) each
