"""The multi-head attention module: one fused Q/K/V projection, heads, output projection."""

import numpy as np

from .. import checks
from ..checks import checked, forward_args
from . import grad
from .attention import scaled_dot_product_attention
from .heads import combine_heads, split_heads
from .projection import project_qkv, qkv_columns, repeat_kv


class MultiHeadAttention:
    r"""Multi-head attention with a fused query/key/value projection.

    .. math::

        [Q \;|\; K \;|\; V] = x W_{qkv}, \qquad
        \text{head}_h = \operatorname{Attention}(Q_h, K_h, V_h), \qquad
        \text{output} = [\text{head}_0 \;|\; \dots \;|\; \text{head}_{H-1}]\, W_o

    where :math:`Q_h` is columns :math:`h d_k` to :math:`(h+1) d_k - 1` of :math:`Q`.
    No biases.

    Parameters
    ----------
    d_model : int
        Width of each token's vector.
    num_heads : int
        Number of query heads; must divide ``d_model``. Each head works in
        ``d_k = d_model // num_heads`` dimensions.
    seed : int in [0, 2**32 - 1], default 42
        Seeds the initial weights: standard normal times ``sqrt(2 / d_model)``, ``W_qkv``
        drawn before ``W_o``, from ``np.random.RandomState(seed)``. That is the stream
        ``np.random.seed(seed)`` gives, which NumPy promises never to change, and drawing it
        from our own ``RandomState`` leaves NumPy's global random state untouched.
    num_kv_heads : int, keyword only, optional
        Key/value heads, for grouped-query attention (Ainslie et al. 2023); must divide
        ``num_heads``. Query head ``h`` uses key/value head ``h // (num_heads // num_kv_heads)``
        (PyTorch's ``enable_gqa`` convention). 1 is multi-query attention (Shazeer 2019).
        ``None`` (the default) means ``num_heads``: ordinary multi-head attention.
    rope : bool or str, keyword only, default False
        Rotary position embeddings (Su et al. 2021; notebook 08): after the heads are split,
        every query and key is rotated by its position, so the scores depend on the positions
        only through ``i - j``. Needs an even ``d_k``. Two pairings of the coordinates are in
        use, and a checkpoint runs correctly only in its own:

        * ``True`` or ``"half"``: pairs ``i`` and ``i + d_k / 2`` (:func:`mhattn.apply_rope`),
          as GPT-NeoX and Hugging Face's Llama (``rotate_half``);
        * ``"interleaved"``: pairs ``2i`` and ``2i + 1`` (:func:`mhattn.apply_rope_interleaved`),
          as RoFormer, Meta's Llama reference code and Stanford's CS336.

        (:func:`mhattn.interleaved_to_half_split` reorders one into the other.) The tokens sit
        at positions ``0, 1, ...`` unless ``forward`` gets ``positions``; with a ``kv_cache``,
        the new tokens sit at positions ``len(cache)`` onwards, and their keys are cached
        already rotated. Cross-attention (``context=``) is refused: queries and keys from two
        different sequences share no positions.
    rope_base : float > 0, keyword only, default 10000.0
        The base of RoPE's frequencies, ``theta_i = rope_base ** (-2 i / d_k)``: the
        literature's :math:`\theta` (``rope_theta`` in Hugging Face's configs), 10000 in Su et
        al., 500000 in Llama 3.

    Attributes
    ----------
    d_model, num_heads, num_kv_heads, d_k : int
    rope : bool
        True for either pairing.
    rope_pairing : str or None
        ``"half"`` or ``"interleaved"``; None without RoPE.
    rope_base : float
    W_qkv : ndarray of shape ``(d_model, d_model + 2 * num_kv_heads * d_k)``
        Columns ``[0, d_model)`` make queries, the next ``num_kv_heads * d_k`` keys, the
        rest values; ``(d_model, 3 * d_model)`` without grouping. Query head ``h`` owns
        columns ``h * d_k`` to ``(h + 1) * d_k - 1`` of the query block, and likewise for keys
        and values.
    W_o : ndarray of shape ``(d_model, d_model)``
        Mixes the concatenated heads back into ``d_model`` dimensions.

    Both weights are plain arrays: assign new ones or update them in place (training
    does); they are checked at every call. Weights trained elsewhere come in through
    :meth:`from_weights` (separate ``W_q``, ``W_k``, ``W_v``, ``W_o``) or :meth:`from_torch`.

    Examples
    --------
    >>> mha = MultiHeadAttention(d_model=64, num_heads=4)
    >>> x = np.random.RandomState(0).randn(2, 10, 64)
    >>> output, weights = mha(x)
    >>> output.shape, weights.shape
    ((2, 10, 64), (2, 4, 10, 10))
    """

    def __init__(self, d_model, num_heads, seed=42, *, num_kv_heads=None, rope=False, rope_base=10000.0):
        self._set_sizes(d_model, num_heads, num_kv_heads, rope, rope_base)
        rng = np.random.RandomState(checks.seed(seed))
        scale = np.sqrt(2.0 / self.d_model)  # He initialisation (made for ReLU layers): here it doubles the variance
        width = self.d_model + 2 * self.num_kv_heads * self.d_k  # queries, keys, values
        self.W_qkv = rng.randn(self.d_model, width) * scale  # (d_model, width)
        self.W_o = rng.randn(self.d_model, self.d_model) * scale  # (d_model, d_model)

    def _set_sizes(self, d_model, num_heads, num_kv_heads, rope, rope_base):
        """Check and store the sizes and the RoPE settings: everything but the weights."""
        self.d_model, self.num_heads, self.num_kv_heads = checks.head_counts(d_model, num_heads, num_kv_heads)
        self.d_k = self.d_model // self.num_heads
        self.rope, self.rope_pairing, self.rope_base = checks.rope_settings(rope, rope_base, self.d_k)

    @classmethod
    def from_weights(cls, W_q, W_k, W_v, W_o, *, num_heads, layout, num_kv_heads=None, rope=False,
                     rope_base=10000.0):
        """A module with the given projections: queries, keys, values and output, each its own matrix.

        Parameters
        ----------
        W_q, W_k, W_v, W_o : array_like
            In ``layout="torch"`` (``nn.Linear``'s ``weight``, ``y = x @ W.T``), shapes
            ``(d_model, d_model)``, ``(kv_width, d_model)`` twice and ``(d_model, d_model)``;
            in ``layout="mhattn"`` (this chapter's ``y = x @ W``), their transposes. Here
            ``kv_width = num_kv_heads * d_k``, ``d_k = d_model // num_heads``, and head ``h``
            owns rows (torch) or columns (mhattn) ``h * d_k`` to ``(h + 1) * d_k - 1``.
            The arrays are copied: changing them later changes nothing here.
        num_heads : int, keyword only
        layout : ``"torch"`` or ``"mhattn"``, keyword only, required
            There is no default because a wrong layout cannot be detected: square weights
            have the same shape transposed, and a module built from transposed weights runs
            without an error and gives wrong numbers.
        num_kv_heads, rope, rope_base : keyword only
            As for the constructor. For a checkpoint with interleaved RoPE, pass
            ``rope="interleaved"``.

        Returns
        -------
        MultiHeadAttention
            (or the subclass this is called on), with ``W_qkv = [W_q | W_k | W_v]`` and ``W_o``
            in this chapter's layout.

        Examples
        --------
        >>> linear = np.random.RandomState(0).randn(4, 8, 8)  # four (out, in) weights of nn.Linear
        >>> mha = MultiHeadAttention.from_weights(*linear, num_heads=2, layout="torch")
        >>> bool(np.array_equal(mha.W_qkv[:, :8], linear[0].T))
        True
        """
        if layout not in ("torch", "mhattn"):
            raise ValueError(
                "layout must be 'torch' (weights of shape (out, in), y = x @ W.T, as nn.Linear) or 'mhattn' "
                f"(shape (in, out), y = x @ W); got {layout!r}. It has no default: a square weight has the same "
                "shape either way, so a wrong guess would give wrong numbers without an error"
            )
        mha = cls.__new__(cls)
        W_q, W_k, W_v, W_o = checks.separate_weights(W_q, W_k, W_v, W_o, num_heads, num_kv_heads, layout)
        mha._set_sizes(W_q.shape[0], num_heads, num_kv_heads, rope, rope_base)
        mha.W_qkv = np.concatenate([W_q, W_k, W_v], axis=1)  # (d_model, width): a new array, the caller's untouched
        mha.W_o = W_o.copy()  # (d_model, d_model)
        return mha

    @classmethod
    def from_torch(cls, module):
        """A module with the weights of a ``torch.nn.MultiheadAttention`` (copied, as NumPy arrays).

        The torch module must have no biases (``bias=False, add_bias_kv=False``): this module
        has none, so a biased checkpoint cannot run here unchanged. Its keys and values must
        come from ``embed_dim`` features (no ``kdim``/``vdim``). ``batch_first`` may be either:
        this module always takes ``(batch, seq, d_model)``. Dropout is not carried over; the
        outputs equal torch's in ``eval()`` mode. Note torch's mask polarity:
        ``nn.MultiheadAttention``'s boolean ``attn_mask`` is True where a query may *not*
        attend, the opposite of this chapter's masks (pass ``~mask``).
        """
        torch = checks.require("torch", "torch")
        W_qkv, W_o, num_heads = checks.torch_attention(torch, module)
        mha = cls.__new__(cls)
        mha._set_sizes(W_o.shape[0], num_heads, None, False, 10000.0)
        mha.W_qkv, mha.W_o = W_qkv, W_o
        return mha

    def to_torch(self, *, batch_first=True):
        """A ``torch.nn.MultiheadAttention(bias=False)`` with this module's weights (copied).

        Its dtype is that of the weights (float64 weights give a float64 module). Refused for
        grouped queries and RoPE, which ``nn.MultiheadAttention`` does not have.
        """
        torch = checks.require("torch", "torch")
        batch_first = checks.flag("batch_first", batch_first)
        if self.num_kv_heads != self.num_heads or self.rope:
            raise ValueError(
                "to_torch needs plain multi-head attention: torch.nn.MultiheadAttention has no grouped key/value "
                f"heads and no RoPE; this module has num_kv_heads={self.num_kv_heads}, num_heads={self.num_heads}, "
                f"rope={self.rope}"
            )
        dtype = np.result_type(self.W_qkv, self.W_o)
        dtype = dtype if dtype in (np.float16, np.float32, np.float64) else np.dtype(np.float64)
        W_qkv, W_o = self.weights(dtype)
        module = torch.nn.MultiheadAttention(self.d_model, self.num_heads, bias=False, batch_first=batch_first,
                                             dtype=getattr(torch, dtype.name))
        with torch.no_grad():
            module.in_proj_weight.copy_(torch.from_numpy(np.ascontiguousarray(W_qkv.T)))  # (3 d_model, d_model)
            module.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(W_o.T)))  # (d_model, d_model)
        return module.eval()

    @checked(forward_args)
    def forward(self, x, mask=None, *, need_weights=True, context=None, kv_cache=None, positions=None):
        """Attend from every position of ``x`` to every position of ``x`` (or of ``context``).

        Parameters
        ----------
        x : ndarray of shape ``(batch, seq_q, d_model)``
            float32, float64 and longdouble are computed and returned in their own dtype;
            float16 is computed in float32 and returned as float16; integers become float64.
            The weights are cast to the compute dtype.
        mask : ndarray of bool, optional
            True where a query may attend to a key: ``(seq_q, seq_k)``; or
            ``(batch or 1, seq_q or 1, seq_k)``, one mask per sequence shared by every head; or
            ``(batch or 1, num_heads or 1, seq_q or 1, seq_k)`` (see :func:`mhattn.causal_mask`,
            :func:`mhattn.padding_mask`). A query with no allowed key gets zeros.
        need_weights : bool, keyword only, default True
            False returns None instead of the weights (they are still computed here;
            :class:`mhattn.engine.FastMultiHeadAttention` never holds them all).
        context : ndarray of shape ``(batch, seq_k, d_model)``, keyword only, optional
            Cross-attention: queries come from ``x``, keys and values from ``context``
            (an encoder's output), through the key and value columns of ``W_qkv``.
        kv_cache : mhattn.KVCache, keyword only, optional
            Causal decoding: this call's keys and values are appended to the cache, and the
            new queries attend to everything cached up to their own position. ``mask`` must
            be None (the cache builds the causal mask) and ``context`` too.
        positions : ndarray of int >= 0, keyword only, optional
            RoPE only: the position of every token of ``x``, shape ``(seq_q,)`` (the same for
            every sequence) or ``(batch, seq_q)`` (an offset per sequence, left padding, several
            documents packed into one row). Default: ``0, 1, ...``, or ``len(kv_cache)`` onwards
            with a cache. The scores depend only on the differences of the positions.

        Returns
        -------
        output : ndarray of shape ``(batch, seq_q, d_model)``
        weights : ndarray of shape ``(batch, num_heads, seq_q, seq_k)``, or None
            ``weights[b, h, i, j]`` is how much query ``i`` of head ``h`` takes from key ``j``.
        """
        W_qkv, W_o = self.weights(x.dtype)  # checked, in x's dtype (float32 stays float32)
        start = 0 if kv_cache is None else len(kv_cache)  # new tokens sit after the cached ones
        Q, K, V = self.project(x, W_qkv, context=context, start=start, positions=positions)  # (batch, heads, seq, d_k)
        if kv_cache is not None:  # decoding (notebook 10): this step's keys and values join the cached ones
            K, V, mask = kv_cache.extend(K, V, owner=self)  # (batch, num_kv_heads, seq_k, d_k) x 2, causal mask
        K, V = repeat_kv(K, V, self.num_heads // self.num_kv_heads)  # (batch, num_heads, seq_k, d_k) each
        heads, weights = self._attention(Q, K, V, mask, need_weights)  # (batch, num_heads, seq_q, d_k)
        output = combine_heads(heads) @ W_o  # (batch, seq_q, d_model)
        return output, (weights if need_weights else None)

    __call__ = forward

    def project(self, x, W_qkv, *, context=None, start=0, positions=None):
        """Queries, keys and values of every head (:func:`mhattn.core.projection.project_qkv`).

        With RoPE, the tokens of ``x`` sit at ``positions`` (``(seq_q,)`` or ``(batch, seq_q)``),
        by default ``start, start + 1, ...``, and their queries and keys are rotated by them.
        """
        if self.rope and positions is None:
            positions = np.arange(start, start + x.shape[1])  # (seq_q,)
        return project_qkv(x, W_qkv, self.num_heads, self.num_kv_heads, context=context,
                           positions=positions if self.rope else None, rope_base=self.rope_base,
                           rope_pairing=self.rope_pairing)

    def head_weights(self, head):
        """``(W_Q, W_K, W_V, W_O)`` of query head ``head``: ``(d_model, d_k)`` x 3 and ``(d_k, d_model)``.

        TransformerLens's per-head shapes, read from ``W_qkv`` and ``W_o`` through the one
        column layout (:func:`mhattn.core.projection.qkv_columns`); under grouped queries,
        ``W_K`` and ``W_V`` are those of the key/value head that ``head`` reads.
        """
        head = checks.index("head", head, self.num_heads)
        W_qkv, W_o = self.weights(np.result_type(self.W_qkv, self.W_o))
        W_q, W_k, W_v = np.split(W_qkv, self.qkv_columns(), axis=-1)
        kv_head = head // (self.num_heads // self.num_kv_heads)
        per_head = lambda W, count: split_heads(W[None], count)[0]  # noqa: E731  (d_model, width) -> (count, d_model, d_k)
        return (per_head(W_q, self.num_heads)[head], per_head(W_k, self.num_kv_heads)[kv_head],
                per_head(W_v, self.num_kv_heads)[kv_head], per_head(W_o.T, self.num_heads)[head].T)

    def qkv_columns(self):
        """Where the key and the value columns start in ``W_qkv``: ``[d_model, d_model + num_kv_heads * d_k]``."""
        return qkv_columns(self.d_model, self.num_heads, self.num_kv_heads)

    def _attention(self, Q, K, V, mask, need_weights):
        """Attention in every head at once: the one step :class:`mhattn.engine.FastMultiHeadAttention` replaces."""
        return scaled_dot_product_attention(Q, K, V, mask)

    def weights(self, dtype=np.float64):
        """``(W_qkv, W_o)`` with their shapes checked, cast to ``dtype`` and checked finite after the cast."""
        width = self.d_model + 2 * self.num_kv_heads * self.d_k
        return (
            checks.weight("W_qkv", self.W_qkv, (self.d_model, width), dtype),
            checks.weight("W_o", self.W_o, (self.d_model, self.d_model), dtype),
        )

    def split_heads(self, x):
        """``(batch, seq_len, d_model)`` -> ``(batch, num_heads, seq_len, d_k)``; see :func:`mhattn.split_heads`."""
        return split_heads(x, self.num_heads)

    def combine_heads(self, x):
        """``(batch, num_heads, seq_len, d_k)`` -> ``(batch, seq_len, d_model)``; see :func:`mhattn.combine_heads`."""
        return combine_heads(x)

    def __repr__(self):
        grouped = "" if self.num_kv_heads == self.num_heads else f", num_kv_heads={self.num_kv_heads}"
        rope = "True" if self.rope_pairing == "half" else repr(self.rope_pairing)
        grouped += f", rope={rope}, rope_base={self.rope_base:g}" if self.rope else ""
        return f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}{grouped}, d_k={self.d_k})"

    def vjp(self, x, mask=None, *, positions=None):
        """The forward pass, and a function that runs it backwards: ``output, weights, backward``.

        ``output`` and ``weights`` are :meth:`forward`'s (``mask`` and ``positions`` as there).
        ``backward(d_output)``, with
        ``d_output`` the gradient of a loss with respect to ``output``, returns the dict
        ``{"x": ..., "W_qkv": ..., "W_o": ...}`` of the loss's gradients, each with the shape
        and dtype of that input. Nothing is stored on the module: call it from any thread.
        The derivation is in :mod:`mhattn.core.grad` and notebook 09.
        """
        return grad.module_vjp(self, x, mask, positions=positions)
