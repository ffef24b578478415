r"""RMSNorm (Zhang and Sennrich 2019): every token's vector rescaled to a root mean square of one.

.. math::

    \operatorname{RMSNorm}(x) = \frac{x}{\sqrt{\tfrac{1}{d}\sum_i x_i^2 + \varepsilon}} \odot g

LayerNorm without the mean: Llama normalises what enters each attention layer and each
feed-forward network this way, and once more before the unembedding; ``g`` is learned.
"""

import numpy as np


def rms_norm(x, gain, eps):
    """``x`` (``(..., d_model)``) divided by its root mean square, times ``gain`` (``(d_model,)``)."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    return x / np.sqrt(mean_square + eps) * gain  # (..., d_model); a Python float eps keeps x's dtype
