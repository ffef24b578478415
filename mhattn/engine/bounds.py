"""What the query blocks and the key tiles share: broadcast views, bounds on scores and values, one overflow check.

Both loops (:mod:`mhattn.engine.blocks`, :mod:`mhattn.engine.flash`) bound every score by
Cauchy-Schwarz, ``|q . k| <= |q| |k|``, to decide whether ``exp`` needs the running maximum
and whether a score could have overflowed; the helpers here compute those bounds once.
"""

import math

import numpy as np

from ..checks import overflow_error


def same_leading_axes(Q, K, V, mask, dtype):
    """Views of ``Q, K, V, mask`` with the same leading axes, at least one; K and V in ``dtype``.

    Returns ``(leading, (Q, K, V, mask))``: ``leading`` is the broadcast leading shape of the
    inputs (``()`` for 2-D inputs, whose results drop the axis added here). No copies, except
    K or V cast to ``dtype``.
    """
    leading = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    lead = leading or (1,)  # at least one leading axis (its last one is usually the heads)
    (seq_q, d_k), seq_k, d_v = Q.shape[-2:], K.shape[-2], V.shape[-1]
    Q = np.broadcast_to(Q, lead + (seq_q, d_k))
    K = np.broadcast_to(K.astype(dtype, copy=False), lead + (seq_k, d_k))
    V = np.broadcast_to(V.astype(dtype, copy=False), lead + (seq_k, d_v))
    mask = None if mask is None else np.broadcast_to(mask, lead + (seq_q, seq_k))
    return leading, (Q, K, V, mask)


def key_norms(K):
    """The length of the longest key of each head, shape ``K.shape[:-2]``."""
    return np.sqrt(np.einsum("...kd,...kd->...k", K, K).max(axis=-1, initial=0))


def log_max_abs(V):
    """``log max|V|`` over the last two axes, as float64 (-inf for zeros); no ``|V|``-sized temporary."""
    largest = np.maximum(V.max(axis=(-2, -1), initial=0), -V.min(axis=(-2, -1), initial=0))
    with np.errstate(divide="ignore"):
        return np.log(largest).astype(np.float64)  # the log in V's dtype: longdouble's max exceeds float64


def safe_exponent(dtype, seq_k):
    """The largest ``bound`` such that scores in ``[-bound, bound]`` need no max subtraction.

    Then ``exp(score)`` lies in ``[exp(-bound), exp(bound)]``, and we ask that

    * a row's sum, at most ``seq_k * exp(bound)``, stays ``2**8`` times below the largest float;
    * ``exp(-bound)`` stays ``2**24`` times above the smallest normal float, so even a row
      whose scores all lie near ``-bound`` keeps full precision in its sum.

    For float32 and ``seq_k = 4096`` the limit is about 70 (for float64, 691); the scores of
    a softmax that has not saturated are far smaller. ``np.log``, not ``math.log``: the
    largest longdouble is beyond a Python float.
    """
    info = np.finfo(dtype)
    overflow = float(np.log(info.max)) - math.log(max(seq_k, 1)) - 8 * math.log(2)
    underflow = -float(np.log(info.tiny)) - 24 * math.log(2)
    return min(overflow, underflow)


def check_scores(name, scores, allowed):
    """Raise ``FloatingPointError`` if a score that may be attended to overflowed to +-inf.

    A row of ``-inf`` scores would otherwise pass for a fully masked row: zeros, silently.
    ``allowed`` is the mask (True = may attend) or None.
    """
    overflowed = ~np.isfinite(scores)
    if allowed is not None:
        overflowed &= allowed
    if overflowed.any():
        raise overflow_error(name, scores.dtype, "a score q.k/sqrt(d_k)")
