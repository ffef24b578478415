"""The multi-head attention module: one fused Q/K/V projection, heads, output projection."""

import numpy as np

from . import _checks
from .attention import attend
from .blockwise import blockwise_attention, matmul
from .heads import combine_heads, split_heads


class MultiHeadAttention:
    r"""Multi-head self-attention with a fused query/key/value projection.

    .. math::

        [Q \;|\; K \;|\; V] = x W_{qkv}, \qquad
        \text{head}_h = \operatorname{Attention}(Q_h, K_h, V_h), \qquad
        \text{output} = [\text{head}_0 \;|\; \dots \;|\; \text{head}_{H-1}]\, W_o

    where :math:`Q_h` is columns :math:`h d_k` to :math:`(h+1) d_k - 1` of :math:`Q`.
    No biases: ``4 * d_model**2`` parameters in all.

    Parameters
    ----------
    d_model : int
        Width of each token's vector.
    num_heads : int
        Number of heads; must divide ``d_model``. Each head works in ``d_k = d_model // num_heads``
        dimensions.
    seed : int, default 42
        Seeds the initial weights: standard normal times ``sqrt(2 / d_model)``, ``W_qkv``
        drawn before ``W_o``, from ``np.random.RandomState(seed)``. That is the stream
        ``np.random.seed(seed)`` gives, which NumPy promises never to change, and drawing it
        from our own ``RandomState`` leaves NumPy's global random state untouched.

    Attributes
    ----------
    d_model, num_heads, d_k : int
    W_qkv : ndarray of shape ``(d_model, 3 * d_model)``
        Columns ``[0, d_model)`` make queries, ``[d_model, 2 d_model)`` keys, the rest values.
    W_o : ndarray of shape ``(d_model, d_model)``
        Mixes the concatenated heads back into ``d_model`` dimensions.

    You may assign new ``W_qkv`` or ``W_o`` arrays; their shapes are checked when the module
    is next called. The arrays are stored read-only, so an in-place edit fails loudly
    instead of being silently ignored by the float32 copies the module caches.

    Examples
    --------
    >>> mha = MultiHeadAttention(d_model=64, num_heads=4)
    >>> x = np.random.RandomState(0).randn(2, 10, 64)
    >>> output, weights = mha(x)
    >>> output.shape, weights.shape
    ((2, 10, 64), (2, 4, 10, 10))
    """

    def __init__(self, d_model, num_heads, seed=42):
        self.d_model = _checks.positive_int("d_model", d_model)
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        if self.d_model % self.num_heads:
            divisors = [h for h in range(1, self.d_model + 1) if self.d_model % h == 0]
            raise ValueError(
                f"num_heads must divide d_model = {self.d_model}; got num_heads = {self.num_heads}. "
                f"Head counts that work: {divisors}"
            )
        self.d_k = self.d_model // self.num_heads
        rng = np.random.RandomState(seed)
        scale = np.sqrt(2.0 / self.d_model)
        self.W_qkv = rng.randn(self.d_model, 3 * self.d_model) * scale  # (d_model, 3 * d_model)
        self.W_o = rng.randn(self.d_model, self.d_model) * scale  # (d_model, d_model)

    # The weights are properties so that assigning one drops the cached float32 copies.
    @property
    def W_qkv(self):
        """ndarray of shape ``(d_model, 3 * d_model)``: the fused query/key/value projection (read-only)."""
        return self._W_qkv

    @W_qkv.setter
    def W_qkv(self, value):
        self._W_qkv = _read_only("W_qkv", value)
        self._cast_cache = {}

    @property
    def W_o(self):
        """ndarray of shape ``(d_model, d_model)``: the output projection (read-only)."""
        return self._W_o

    @W_o.setter
    def W_o(self, value):
        self._W_o = _read_only("W_o", value)
        self._cast_cache = {}

    def split_heads(self, x):
        """``(batch, seq_len, d_model)`` -> ``(batch, num_heads, seq_len, d_k)``; see :func:`mhattn.split_heads`."""
        return split_heads(x, self.num_heads)

    def combine_heads(self, x):
        """``(batch, num_heads, seq_len, d_k)`` -> ``(batch, seq_len, d_model)``; see :func:`mhattn.combine_heads`."""
        return combine_heads(x)

    def forward(self, x, mask=None, *, need_weights=True):
        """Attend from every position of ``x`` to every other, in ``num_heads`` heads.

        Parameters
        ----------
        x : ndarray of shape ``(batch, seq_len, d_model)``
            float32 in gives float32 out; anything else is computed in float64.
        mask : ndarray of bool, broadcastable to ``(batch, num_heads, seq_len, seq_len)``, optional
            True where a query may attend to a key (see :func:`mhattn.causal_mask`,
            :func:`mhattn.padding_mask`). A query with no allowed key gets zeros.
        need_weights : bool, keyword only, default True
            With False the weights are never materialised for all queries at once: queries
            are processed in blocks, which saves memory on long sequences.

        Returns
        -------
        output : ndarray of shape ``(batch, seq_len, d_model)``
        weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``, or None
            ``weights[b, h, i, j]`` is how much query ``i`` of head ``h`` takes from key ``j``.
            None when ``need_weights`` is False.
        """
        x = self._check_input(x)
        batch, seq_len, _ = x.shape
        mask = _checks.broadcast_mask(
            mask, (batch, self.num_heads, seq_len, seq_len), "(batch, num_heads, seq_q, seq_k)"
        )
        W_qkv, W_o = self._weights(x.dtype)

        # Step 1: all heads' queries, keys and values in one matmul (threaded for large inputs: notebook 06).
        qkv = matmul(x, W_qkv)  # (batch, seq_len, 3 * d_model)
        # Step 2: np.split(qkv, 3, axis=-1) and split_heads on each part, done as one view.
        qkv = qkv.reshape(batch, seq_len, 3, self.num_heads, self.d_k)  # column -> (Q/K/V, head, column in head)
        Q, K, V = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, num_heads, seq_len, d_k)
        # Step 3: attention in every head at once.
        if need_weights:
            heads, weights = attend(Q, K, V, mask)  # (batch, num_heads, seq_len, d_k), (..., seq_len, seq_len)
        else:
            heads, weights = blockwise_attention(Q, K, V, mask), None
        # Step 4: heads side by side again, then mixed by W_o.
        return matmul(self.combine_heads(heads), W_o), weights  # (batch, seq_len, d_model)

    __call__ = forward

    def _check_input(self, x):
        x = _checks.real_array("x", x)
        if x.ndim != 3:
            _checks.ndim("x", x, 3, f"(batch, seq_len, d_model={self.d_model})")  # raises
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (batch, seq_len, d_model={self.d_model}); got shape {x.shape} "
                f"(last axis {x.shape[-1]} != d_model {self.d_model})"
            )
        if x.dtype != np.float32:
            x = x.astype(np.float64, copy=False)
        return _checks.finite("x", x)

    def _weights(self, dtype):
        """``W_qkv`` and ``W_o`` checked and cast to ``dtype`` (cached, so cast once)."""
        if dtype not in self._cast_cache:
            expected = {"W_qkv": (self.d_model, 3 * self.d_model), "W_o": (self.d_model, self.d_model)}
            for name, weight in (("W_qkv", self._W_qkv), ("W_o", self._W_o)):
                if weight.shape != expected[name]:
                    raise ValueError(f"{name} must have shape {expected[name]}; got shape {weight.shape}")
                _checks.finite(name, weight)
            self._cast_cache[dtype] = (self._W_qkv.astype(dtype, copy=False), self._W_o.astype(dtype, copy=False))
        return self._cast_cache[dtype]

    def __repr__(self):
        return f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k})"


def _read_only(name, value):
    """A read-only float copy of a weight matrix."""
    weight = np.array(_checks.real_array(name, value), copy=True)
    weight.flags.writeable = False
    return weight
