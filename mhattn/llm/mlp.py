r"""The feed-forward network of a Llama block: SwiGLU (Shazeer 2020).

.. math::

    \operatorname{FFN}(x) = \bigl(\operatorname{SiLU}(x W_{gate}) \odot x W_{up}\bigr) W_{down},
    \qquad \operatorname{SiLU}(z) = \frac{z}{1 + e^{-z}}

Each token goes through it on its own: no token reads another here. ``W_gate`` and ``W_up``
are ``(d_model, d_ff)``, ``W_down`` is ``(d_ff, d_model)`` (``y = x @ W``, as everywhere in
this chapter).
"""

import numpy as np


def silu(z):
    """``z * sigmoid(z)``: near 0 for large negative ``z``, near ``z`` for large positive ``z``."""
    with np.errstate(over="ignore"):  # exp(-z) = inf for z < -88 in float32: z / inf = -0, as it should be
        return z / (1 + np.exp(-z))


def swiglu(x, W_gate, W_up, W_down):
    """The gated feed-forward network: ``(..., d_model)`` to ``(..., d_ff)`` and back."""
    hidden = silu(x @ W_gate) * (x @ W_up)  # (..., d_ff): the gate opens or closes each unit
    return hidden @ W_down  # (..., d_model)
