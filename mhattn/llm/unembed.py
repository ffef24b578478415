r"""The tied unembedding: the residual stream scored against every token's own embedding.

.. math::

    \text{logits} = \operatorname{RMSNorm}(h)\, E^\top

SmolLM2, like GPT-2, uses one matrix ``E`` (``(vocab, d_model)``) both ways: row ``v`` turns
token ``v`` into a vector on the way in, and on the way out scores how well the final vector
matches it. The model's file holds no separate output matrix.
"""

from .norm import rms_norm


def unembed(h, output_norm, embed, eps):
    """Logits ``(..., vocab)`` of the residual stream ``h`` (``(..., d_model)``), through the final RMSNorm."""
    return rms_norm(h, output_norm, eps) @ embed.T  # (..., vocab): embed.T is a view, no copy
