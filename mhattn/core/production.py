"""The full attention layer of notebook 11 (production): grouped queries, a KV cache, cross-attention, RoPE.

:class:`GroupedQueryAttention` is the module a real model runs. It extends notebook 06's
:class:`~mhattn.RotaryMultiHeadAttention` (RoPE is optional here) with what decoding and
checkpoints need: fewer key/value heads than query heads, a :class:`mhattn.KVCache`, keys and
values from another sequence, and weights read from separate matrices or from PyTorch.
"""

import numpy as np

from ..checks import checked
from ..checks.module import weights_args
from ..checks.production import (
    columns_args,
    from_weights_args,
    full_forward_args,
    full_init_args,
    head_args,
    project_args,
    to_torch_args,
    torch_args,
    vjp_args,
)
from . import torch_bridge
from .attention import scaled_dot_product_attention
from .grad_full import module_vjp
from .heads import combine_heads
from .projection import head_weights, project_qkv, qkv_columns, repeat_kv
from .rotary import RotaryMultiHeadAttention


class GroupedQueryAttention(RotaryMultiHeadAttention):
    r"""Multi-head attention with grouped key/value heads, a KV cache, cross-attention and optional RoPE.

    With the defaults (``num_kv_heads=None``, ``rope=False``) it is :class:`mhattn.MultiHeadAttention`,
    with the same weights for the same seed and the same numbers.

    Parameters
    ----------
    d_model, num_heads, seed
        As for :class:`mhattn.MultiHeadAttention`.
    num_kv_heads : int, keyword only, optional
        Key/value heads (Ainslie et al. 2023); must divide ``num_heads``. Query head ``h`` uses
        key/value head ``h // (num_heads // num_kv_heads)`` (PyTorch's ``enable_gqa``
        convention); 1 is multi-query attention (Shazeer 2019). None means ``num_heads``.
    rope : bool or str, keyword only, default False
        False, or the pairing of :class:`mhattn.RotaryMultiHeadAttention` (True, ``"half"``,
        ``"interleaved"``). Cross-attention is refused with RoPE: queries and keys from two
        sequences share no positions.
    rope_base : float > 0, keyword only, default 10000.0

    Attributes
    ----------
    d_model, num_heads, num_kv_heads, d_k : int
    rope : bool
    rope_pairing : str or None
    rope_base : float
    W_qkv : ndarray of shape ``(d_model, d_model + 2 * num_kv_heads * d_k)``
        Queries, then the keys and the values of the ``num_kv_heads`` key/value heads.
    W_o : ndarray of shape ``(d_model, d_model)``

    Examples
    --------
    >>> gqa = GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2)
    >>> gqa
    GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2, d_k=4)
    >>> gqa.W_qkv.shape  # 16 query columns, then 2 key and 2 value heads of width 4
    (16, 32)
    >>> GroupedQueryAttention(d_model=16, num_heads=4).W_qkv.shape  # as MultiHeadAttention's
    (16, 48)
    """

    @checked(full_init_args)
    def __init__(self, d_model, num_heads, seed=42, *, num_kv_heads=None, rope=False, rope_base=10000.0):
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_k = d_model // num_heads
        self.rope, self.rope_pairing, self.rope_base = rope is not None, rope, rope_base
        rng = np.random.RandomState(seed)
        scale = np.sqrt(2.0 / d_model)  # as MultiHeadAttention: the same seed, the same weights
        self.W_qkv = rng.randn(d_model, d_model + 2 * num_kv_heads * self.d_k) * scale  # queries, keys, values
        self.W_o = rng.randn(d_model, d_model) * scale  # (d_model, d_model)

    @checked(full_forward_args)
    def forward(self, x, mask=None, *, need_weights=True, context=None, kv_cache=None, positions=None):
        """Attend from every token of ``x`` to every token of ``x`` (or of ``context``).

        ``x``, ``mask`` and ``positions`` (RoPE only) as for
        :meth:`mhattn.RotaryMultiHeadAttention.forward`. ``need_weights=False`` returns None for the
        weights (:class:`mhattn.FastMultiHeadAttention` then never holds them all).
        ``context`` (``(batch, seq_k, d_model)``): cross-attention, keys and values from it.
        ``kv_cache`` (:class:`mhattn.KVCache`): causal decoding; this call's keys and values join
        the cached ones, the new tokens sit at positions ``len(kv_cache)`` onwards (with RoPE, or at ``positions``,
        a row per sequence), and ``mask`` must be None (the cache builds the causal mask). Returns ``(output,
        weights or None)``, the weights of shape ``(batch, num_heads, seq_q, seq_k)``.

        Examples
        --------
        >>> gqa = GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2)
        >>> x = np.random.default_rng(0).standard_normal((2, 5, 16))
        >>> output, weights = gqa(x, mask=np.tril(np.ones((5, 5), dtype=bool)))  # causal
        >>> output.shape, weights.shape
        ((2, 5, 16), (2, 4, 5, 5))
        >>> print(weights[0, 0, 0])  # the first token may see only itself
        [1. 0. 0. 0. 0.]
        """
        start = 0 if kv_cache is None else len(kv_cache)  # new tokens sit after the cached ones
        Q, K, V = self._project(x, context, start, positions)  # (batch, heads, seq, d_k)
        if kv_cache is not None:  # decoding: this step's keys and values join the cached ones
            K, V, mask = kv_cache.extend(K, V, owner=self)  # (batch, num_kv_heads, seq_k, d_k) x 2, causal mask
        K, V = repeat_kv(K, V, self.num_heads // self.num_kv_heads)  # (batch, num_heads, seq_k, d_k) each
        heads, weights = self._attention(Q, K, V, mask, need_weights)  # (batch, num_heads, seq_q, d_k)
        output = combine_heads(heads) @ self.W_o.astype(x.dtype, copy=False)  # (batch, seq_q, d_model)
        return output, (weights if need_weights else None)

    def _project(self, x, context=None, start=0, positions=None):
        """Queries, keys and values of every head, rotated by their positions with RoPE."""
        if self.rope and positions is None:
            positions = np.arange(start, start + x.shape[1])  # (seq_q,)
        return project_qkv(x, self.W_qkv.astype(x.dtype, copy=False), self.num_heads, self.num_kv_heads,
                           context=context, positions=positions if self.rope else None, rope_base=self.rope_base,
                           rope_pairing=self.rope_pairing)

    def _attention(self, Q, K, V, mask, need_weights):
        """Attention in every head at once: the one step :class:`mhattn.FastMultiHeadAttention` replaces."""
        return scaled_dot_product_attention(Q, K, V, mask)

    @checked(project_args)
    def project(self, x, *, context=None, start=0, positions=None):
        """``(Q, K, V)`` of every head for tokens ``x`` (RoPE: at ``positions``, or ``start, start + 1, ...``).

        Shapes ``(batch, num_heads, seq_q, d_k)`` and ``(batch, num_kv_heads, seq_k, d_k)`` twice.

        Examples
        --------
        >>> gqa = GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2)
        >>> Q, K, V = gqa.project(np.random.default_rng(0).standard_normal((1, 5, 16)))
        >>> Q.shape, K.shape, V.shape  # four query heads, two key/value heads
        ((1, 4, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4))
        """
        return self._project(x, context, start, positions)

    @checked(head_args)
    def head_weights(self, head):
        """``(W_Q, W_K, W_V, W_O)`` of query head ``head``: ``(d_model, d_k)`` x 3 and ``(d_k, d_model)``.

        TransformerLens's per-head shapes, read through the one column layout
        (:func:`mhattn.core.projection.qkv_columns`); under grouped queries, ``W_K`` and ``W_V``
        are those of the key/value head that ``head`` reads.

        Examples
        --------
        >>> gqa = GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2)
        >>> W_Q, W_K, W_V, W_O = gqa.head_weights(3)
        >>> W_Q.shape, W_K.shape, W_V.shape, W_O.shape
        ((16, 4), (16, 4), (16, 4), (4, 16))
        >>> bool(np.array_equal(W_K, gqa.head_weights(2)[1]))  # query heads 2 and 3 share a key/value head
        True
        """
        return head_weights(self, head)

    @checked(columns_args)
    def qkv_columns(self):
        """Where the key and the value columns start in ``W_qkv``: ``[d_model, d_model + num_kv_heads * d_k]``.

        Examples
        --------
        >>> GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2).qkv_columns()
        [16, 24]
        """
        return qkv_columns(self.d_model, self.num_heads, self.num_kv_heads)

    @checked(weights_args)
    def weights(self, dtype=np.float64):
        """``(W_qkv, W_o)`` checked (shapes, finite) and cast to ``dtype`` (copies where the dtype changes).

        Examples
        --------
        >>> W_qkv, W_o = GroupedQueryAttention(d_model=8, num_heads=2).weights(np.float32)
        >>> W_qkv.dtype, W_o.dtype, W_qkv.shape
        (dtype('float32'), dtype('float32'), (8, 24))
        """
        return self.W_qkv.astype(dtype, copy=False), self.W_o.astype(dtype, copy=False)

    @checked(vjp_args)
    def vjp(self, x, mask=None, *, positions=None):
        """The forward pass and a function that runs it backwards: ``output, weights, backward``.

        ``backward(d_output)`` returns ``{"x": ..., "W_qkv": ..., "W_o": ...}``, the loss's
        gradients, each with the shape and dtype of that input. Nothing is stored on the module:
        call it from any thread. The derivation is in :mod:`mhattn.core.grad` (notebook 07).

        Examples
        --------
        >>> gqa = GroupedQueryAttention(d_model=8, num_heads=4, num_kv_heads=2, rope=True)
        >>> x = np.random.default_rng(0).standard_normal((2, 5, 8))
        >>> output, weights, backward = gqa.vjp(x)
        >>> grads = backward(np.ones_like(output))  # the loss: output.sum()
        >>> {name: grad.shape for name, grad in grads.items()}  # shaped like x, W_qkv and W_o
        {'x': (2, 5, 8), 'W_qkv': (8, 16), 'W_o': (8, 8)}
        """
        return module_vjp(self, x, mask, positions=positions)

    @classmethod
    @checked(from_weights_args)
    def from_weights(cls, W_q, W_k, W_v, W_o, *, num_heads, layout, num_kv_heads=None, rope=False,
                     rope_base=10000.0):
        """A module with the given projections: queries, keys, values and output, each its own matrix.

        ``layout="torch"``: ``nn.Linear``'s ``weight`` (``y = x @ W.T``), shapes ``(d_model, d_model)``,
        ``(kv_width, d_model)`` twice and ``(d_model, d_model)``; ``layout="mhattn"``: their
        transposes (``y = x @ W``). There is no default: a square weight has the same shape
        either way, and a transposed one runs without an error and gives wrong numbers.
        ``num_kv_heads``, ``rope``, ``rope_base`` as for the constructor (a checkpoint converted
        by llama.cpp needs ``rope="interleaved"``). The arrays are copied.

        Examples
        --------
        >>> linear = np.random.RandomState(0).randn(4, 8, 8)  # four (out, in) weights of nn.Linear
        >>> mha = GroupedQueryAttention.from_weights(*linear, num_heads=2, layout="torch")
        >>> bool(np.array_equal(mha.W_qkv[:, :8], linear[0].T))
        True
        """
        mha = cls.__new__(cls)
        mha.d_model, mha.num_heads, mha.num_kv_heads = W_q.shape[0], num_heads, num_kv_heads
        mha.d_k = mha.d_model // num_heads
        mha.rope, mha.rope_pairing, mha.rope_base = rope is not None, rope, rope_base
        mha.W_qkv = np.concatenate([W_q, W_k, W_v], axis=1)  # (d_model, width): a new array, the caller's untouched
        mha.W_o = W_o  # (d_model, d_model): the check made it a copy in this chapter's layout
        return mha

    @classmethod
    @checked(torch_args)
    def from_torch(cls, module):
        """A module with the weights of a bias-free ``torch.nn.MultiheadAttention`` (NumPy copies).

        See :func:`mhattn.core.torch_bridge.weights_of` for what is refused. Note torch's mask
        polarity: ``nn.MultiheadAttention``'s boolean ``attn_mask`` is True where a query may
        *not* attend, the opposite of this chapter's masks (pass ``~mask``).

        Examples
        --------
        >>> import torch
        >>> module = torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True)
        >>> gqa = GroupedQueryAttention.from_torch(module)
        >>> gqa
        GroupedQueryAttention(d_model=8, num_heads=2, d_k=4)
        >>> bool(np.array_equal(gqa.W_qkv, module.in_proj_weight.detach().numpy().T))  # torch's rows, our columns
        True
        """
        W_qkv, W_o, num_heads = torch_bridge.weights_of(module)
        mha = cls.__new__(cls)
        mha.d_model, mha.num_heads, mha.num_kv_heads = W_o.shape[0], num_heads, num_heads
        mha.d_k = mha.d_model // num_heads
        mha.rope, mha.rope_pairing, mha.rope_base = False, None, 10000.0
        mha.W_qkv, mha.W_o = W_qkv, W_o
        return mha

    @checked(to_torch_args, results_finite=False)
    def to_torch(self, *, batch_first=True):
        """A ``torch.nn.MultiheadAttention(bias=False)`` with this module's weights (copied).

        Its dtype is that of the weights. Refused for grouped queries and RoPE, which
        ``nn.MultiheadAttention`` does not have.

        Examples
        --------
        >>> import torch
        >>> gqa = GroupedQueryAttention(d_model=8, num_heads=2)
        >>> module = gqa.to_torch()
        >>> x = np.random.default_rng(0).standard_normal((1, 3, 8))
        >>> theirs, _ = module(*[torch.from_numpy(x)] * 3)  # query, key and value
        >>> bool(np.allclose(theirs.detach().numpy(), gqa(x)[0]))  # the same numbers
        True
        >>> bool(np.array_equal(GroupedQueryAttention.from_torch(module).W_qkv, gqa.W_qkv))  # and back
        True
        """
        return torch_bridge.module_from(self, batch_first)

    def __repr__(self):
        grouped = "" if self.num_kv_heads == self.num_heads else f", num_kv_heads={self.num_kv_heads}"
        rope = "True" if self.rope_pairing == "half" else repr(self.rope_pairing)
        grouped += f", rope={rope}, rope_base={self.rope_base:g}" if self.rope else ""
        return f"{type(self).__name__}(d_model={self.d_model}, num_heads={self.num_heads}{grouped}, d_k={self.d_k})"


def as_grouped_query_attention(layer):
    """``layer`` (any of the chapter's attention modules) as a :class:`GroupedQueryAttention` that shares its arrays.

    The same weights (not copies: training the one trains the other) and settings, with as many
    key/value heads as query heads unless ``layer`` has fewer: a toy model's plain layers can
    then decode with a :class:`mhattn.KVCache`.
    """
    full = GroupedQueryAttention.__new__(GroupedQueryAttention)
    full.d_model, full.num_heads, full.d_k = layer.d_model, layer.num_heads, layer.d_k
    full.num_kv_heads = getattr(layer, "num_kv_heads", layer.num_heads)
    full.rope = getattr(layer, "rope", False)
    full.rope_pairing = getattr(layer, "rope_pairing", None) if full.rope else None
    full.rope_base = getattr(layer, "rope_base", 10000.0)
    full.W_qkv, full.W_o = layer.W_qkv, layer.W_o  # (d_model, width), (d_model, d_model): shared
    return full
