"""The module of notebook 04 with rotary positions (notebook 06): queries and keys turn by their positions."""

import numpy as np

from ..checks import checked
from ..checks.module import rotary_forward_args, rotary_init_args
from .attention import scaled_dot_product_attention
from .heads import combine_heads, split_heads
from .multihead import MultiHeadAttention
from .positions import apply_rope, apply_rope_interleaved


class RotaryMultiHeadAttention(MultiHeadAttention):
    """:class:`mhattn.MultiHeadAttention` with rotary position embeddings (Su et al. 2021).

    After the heads are split, every query and key is rotated by its position, so the scores
    depend on the positions only through ``i - j``. The weights are drawn exactly as the plain
    module's (the same ``seed`` gives the same ``W_qkv`` and ``W_o``).

    Parameters
    ----------
    d_model, num_heads, seed
        As for :class:`mhattn.MultiHeadAttention`; ``d_k = d_model // num_heads`` must be even.
    rope : True, ``"half"`` or ``"interleaved"``, keyword only, default True
        Which coordinates turn together; a checkpoint runs correctly only in its own pairing:

        * ``True`` or ``"half"``: ``i`` and ``i + d_k / 2`` (:func:`mhattn.apply_rope`), as
          GPT-NeoX and Hugging Face's Llama (``rotate_half``);
        * ``"interleaved"``: ``2i`` and ``2i + 1`` (:func:`mhattn.apply_rope_interleaved`), as
          RoFormer, Meta's Llama reference code and llama.cpp's files.
    rope_base : float > 0, keyword only, default 10000.0
        The base of the frequencies, ``theta_i = rope_base ** (-2 i / d_k)`` (``rope_theta`` in
        Hugging Face's configs; 10000 in Su et al., 500000 in Llama 3).

    Attributes
    ----------
    rope : bool
        True.
    rope_pairing : ``"half"`` or ``"interleaved"``
    rope_base : float

    Examples
    --------
    >>> rmha = RotaryMultiHeadAttention(d_model=16, num_heads=2, rope="interleaved")
    >>> rmha
    RotaryMultiHeadAttention(d_model=16, num_heads=2, rope='interleaved', rope_base=10000, d_k=8)
    >>> x = np.random.default_rng(0).standard_normal((1, 5, 16))
    >>> output, weights = rmha(x)
    >>> _, shifted = rmha(x, positions=np.arange(100, 105))  # every position moved by 100
    >>> bool(np.allclose(weights, shifted))  # only the differences of positions count
    True
    """

    @checked(rotary_init_args)
    def __init__(self, d_model, num_heads, seed=42, *, rope=True, rope_base=10000.0):
        super().__init__(d_model, num_heads, seed)  # the same weights as the plain module
        self.rope, self.rope_pairing, self.rope_base = True, rope, rope_base

    @checked(rotary_forward_args, results_finite=False)  # the output: checked after (forward_args)
    def forward(self, x, mask=None, *, positions=None):
        """:meth:`mhattn.MultiHeadAttention.forward`, with the tokens of ``x`` at ``positions``.

        ``positions``: ints >= 0 of shape ``(seq_len,)`` (the same for every sequence) or
        ``(batch, seq_len)`` (an offset per sequence, left padding, packed documents); default
        ``0, 1, ..., seq_len - 1``. Only the differences of the positions change the scores.
        """
        if positions is None:
            positions = np.arange(x.shape[1])  # (seq,): token t sits at position t
        Q, K, V = np.split(x @ self.W_qkv, 3, axis=-1)  # (batch, seq, d_model) each
        Q, K, V = (split_heads(t, self.num_heads) for t in (Q, K, V))  # (batch, num_heads, seq, d_k) each
        Q, K = rotate(Q, positions, self), rotate(K, positions, self)  # each turned by its position
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)
        output = combine_heads(heads) @ self.W_o  # (batch, seq, d_model)
        return output, weights

    def __repr__(self):
        rope = "True" if self.rope_pairing == "half" else repr(self.rope_pairing)
        return (f"{type(self).__name__}(d_model={self.d_model}, num_heads={self.num_heads}, rope={rope}, "
                f"rope_base={self.rope_base:g}, d_k={self.d_k})")


def rotate(x, positions, module):
    """``x`` (queries or keys, ``(..., seq, d_k)``) turned by ``positions`` in ``module``'s pairing and base."""
    turn = apply_rope_interleaved if module.rope_pairing == "interleaved" else apply_rope  # (2i, 2i+1) or (i, i+d_k/2)
    return turn(x, positions, module.rope_base)
