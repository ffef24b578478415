"""The multi-head attention module of notebook 04: one fused projection, heads, output projection."""

import numpy as np

from ..checks import checked
from ..checks.module import (
    FORWARD_MOVED,
    MOVED_ARGUMENTS,
    MOVED_METHODS,
    forward_args,
    heads_method_args,
    init_args,
    split_heads_method_args,
)
from .attention import scaled_dot_product_attention
from .heads import combine_heads, split_heads


class MultiHeadAttention:
    r"""Multi-head attention with a fused query/key/value projection.

    .. math::

        [Q \;|\; K \;|\; V] = x W_{qkv}, \qquad
        \text{head}_h = \operatorname{Attention}(Q_h, K_h, V_h), \qquad
        \text{output} = [\text{head}_0 \;|\; \dots \;|\; \text{head}_{H-1}]\, W_o

    where :math:`Q_h` is columns :math:`h d_k` to :math:`(h+1) d_k - 1` of :math:`Q`. No biases.
    The later notebooks extend this class: rotary positions
    (:class:`mhattn.RotaryMultiHeadAttention`, notebook 06) and grouped queries, a KV cache and
    cross-attention (:class:`mhattn.GroupedQueryAttention`, the production notebook).

    Parameters
    ----------
    d_model : int
        Width of each token's vector.
    num_heads : int
        Number of heads; must divide ``d_model``. Each head works in
        ``d_k = d_model // num_heads`` dimensions.
    seed : int in [0, 2**32 - 1], default 42
        Seeds the initial weights: standard normal times ``sqrt(2 / d_model)``, ``W_qkv``
        drawn before ``W_o``, from ``np.random.RandomState(seed)``. That is the stream
        ``np.random.seed(seed)`` gives, which NumPy promises never to change, and drawing it
        from our own ``RandomState`` leaves NumPy's global random state untouched.

    Attributes
    ----------
    d_model, num_heads, d_k : int
    W_qkv : ndarray of shape ``(d_model, 3 * d_model)``
        Columns ``[0, d_model)`` make queries, the next ``d_model`` keys, the rest values;
        head ``h`` owns columns ``h * d_k`` to ``(h + 1) * d_k - 1`` of each block.
    W_o : ndarray of shape ``(d_model, d_model)``
        Mixes the concatenated heads back into ``d_model`` dimensions.

    Both weights are plain arrays: assign new ones or update them in place (training does);
    they are checked at every call.

    Examples
    --------
    >>> mha = MultiHeadAttention(d_model=64, num_heads=4)
    >>> x = np.random.RandomState(0).randn(2, 10, 64)
    >>> output, weights = mha(x)
    >>> output.shape, weights.shape
    ((2, 10, 64), (2, 4, 10, 10))
    """

    @checked(init_args, moved=MOVED_ARGUMENTS)
    def __init__(self, d_model, num_heads, seed=42):
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = d_model // num_heads  # each head's width
        rng = np.random.RandomState(seed)
        scale = np.sqrt(2.0 / d_model)  # He initialisation (made for ReLU layers): here it doubles the variance
        self.W_qkv = rng.randn(d_model, 3 * d_model) * scale  # (d_model, 3 * d_model): queries, keys, values
        self.W_o = rng.randn(d_model, d_model) * scale  # (d_model, d_model)

    @checked(split_heads_method_args, results_finite=False)
    def split_heads(self, x):
        """``(batch, seq_len, d_model)`` -> ``(batch, num_heads, seq_len, d_k)``; see :func:`mhattn.split_heads`.

        Examples
        --------
        >>> mha = MultiHeadAttention(d_model=8, num_heads=2)
        >>> mha.split_heads(np.zeros((1, 5, 8))).shape  # d_k = 8 // 2
        (1, 2, 5, 4)
        """
        return split_heads(x, self.num_heads)

    @checked(heads_method_args, results_finite=False)
    def combine_heads(self, x):
        """``(batch, num_heads, seq_len, d_k)`` -> ``(batch, seq_len, d_model)``; see :func:`mhattn.combine_heads`.

        Examples
        --------
        >>> mha = MultiHeadAttention(d_model=8, num_heads=2)
        >>> mha.combine_heads(np.zeros((1, 2, 5, 4))).shape
        (1, 5, 8)
        """
        return combine_heads(x)

    @checked(forward_args, results_finite=False, moved=FORWARD_MOVED)  # the output: checked after (forward_args)
    def forward(self, x, mask=None):
        """Attend from every position of ``x`` to every position of ``x``.

        Parameters
        ----------
        x : ndarray of shape ``(batch, seq_len, d_model)``
            Computed in the wider of its dtype and the weights' (float64 weights: float64), and
            returned in ``x``'s dtype; integers become float64.
        mask : ndarray of bool, optional
            True where a query may attend to a key: ``(seq_len, seq_len)``; or
            ``(batch or 1, seq_len or 1, seq_len)``, one mask per sequence shared by every head;
            or ``(batch or 1, num_heads or 1, seq_len or 1, seq_len)`` (see
            :func:`mhattn.causal_mask`, :func:`mhattn.padding_mask`). A query with no allowed
            key gets zeros.

        Returns
        -------
        output : ndarray of shape ``(batch, seq_len, d_model)``
        weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
            ``weights[b, h, i, j]`` is how much query ``i`` of head ``h`` takes from key ``j``.
        """
        Q, K, V = np.split(x @ self.W_qkv, 3, axis=-1)  # (batch, seq, d_model) each: one product for all three
        Q, K, V = (split_heads(t, self.num_heads) for t in (Q, K, V))  # (batch, num_heads, seq, d_k) each
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # every head at once
        output = combine_heads(heads) @ self.W_o  # (batch, seq, d_model)
        return output, weights

    def __call__(self, *args, **kwargs):
        """``module(x, ...)`` is ``module.forward(x, ...)``."""
        return self.forward(*args, **kwargs)

    def __repr__(self):
        return f"{type(self).__name__}(d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k})"


def _missing_attribute(self, name):
    """``module.name`` for a name the class does not have: an AttributeError that says where a method lives."""
    if name in MOVED_METHODS:
        raise AttributeError(f"{type(self).__name__} has no {name}: {MOVED_METHODS[name]}")
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


MultiHeadAttention.__getattr__ = _missing_attribute  # set here: the class notebook 04 shows is the formula alone
