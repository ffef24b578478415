"""Attention dropout (notebook 11): training only, on the weights after the softmax."""

from .attention import scaled_dot_product_attention


def attention_with_dropout(Q, K, V, mask=None, *, dropout_p=0.0, rng=None):
    """:func:`mhattn.scaled_dot_product_attention`, with each weight dropped with probability ``dropout_p``.

    The weights that survive are divided by ``1 - dropout_p``, so every weight keeps its
    expected value and the output, averaged over many draws, is the one without dropout
    (Srivastava et al. 2014; BERT used ``p = 0.1``, most large language models use none).
    At inference dropout is always off.

    Parameters
    ----------
    Q, K, V, mask
        As for :func:`mhattn.scaled_dot_product_attention`.
    dropout_p : float in [0, 1), keyword only, default 0
        0 changes nothing and draws no random numbers.
    rng : numpy.random.Generator, keyword only, optional
        The random numbers (seed it for repeatable runs); a fresh one if None.

    Returns
    -------
    output : ndarray of shape ``(..., seq_q, d_v)``
    weights : ndarray of shape ``(..., seq_q, seq_k)``
        After dropout: zeros where a weight was dropped, the rest scaled by ``1 / (1 - p)``.

    Examples
    --------
    >>> import numpy as np
    >>> Q, K, V = np.random.default_rng(0).standard_normal((3, 1, 4, 8))
    >>> output, weights = attention_with_dropout(Q, K, V, dropout_p=0.5, rng=np.random.default_rng(1))
    >>> _, plain = scaled_dot_product_attention(Q, K, V)
    >>> bool(np.all((weights == 0) | np.isclose(weights, 2 * plain)))  # dropped, or doubled: 1 / (1 - 0.5)
    True
    """
    output, weights = scaled_dot_product_attention(Q, K, V, mask)  # (..., seq_q, d_v), (..., seq_q, seq_k)
    if dropout_p == 0:
        return output, weights
    keep = rng.random(weights.shape) >= dropout_p  # (..., seq_q, seq_k), True with probability 1 - p
    weights = weights * keep / (1 - dropout_p)  # the survivors keep their expected value
    return weights @ V, weights  # (..., seq_q, d_v), (..., seq_q, seq_k)
