"""What a module's forward is checked for after its body ran: finite output, no row of weights emptied.

A forward's door reads no value before the body (:func:`mhattn.checks.module.forward_args`);
after it, the two results say whether anything went wrong, in two passes for the common case:

- the output's sum of squares is finite only if every entry is (a NaN or an infinity anywhere
  makes it NaN or infinite); an entry beyond the square root of the dtype's largest value makes
  it infinite too, and then every entry is looked at;
- every row of softmax weights sums to 1, or to exactly 0 when it took nothing: a row where
  every allowed score overflowed to ``-inf`` looks like a fully masked row, with no NaN.
"""

import math

import numpy as np

FLOAT64 = np.dtype(np.float64)
EPS_FLOAT64 = float(np.finfo(np.float64).eps)
_EPS = {np.dtype(t): float(np.finfo(t).eps) for t in (np.float16, np.float32, np.float64, np.longdouble)}


def finite_at_a_glance(output):
    """True if ``output``'s sum of squares is finite: then every entry is. False says nothing: look at each.

    ``vdot`` is no ufunc: an overflow in it warns of nothing.
    """
    return math.isfinite(np.vdot(output, output))


def every_row_took_something(weights):
    """True if no row of ``weights`` is all zeros, read from their total in one pass; False: look row by row.

    Every row sums to 1 (within ``seq_k`` roundings) or, taking nothing, to exactly 0. So a
    total above ``rows - 1/2`` means that no row is empty, as long as the roundings of all rows
    together stay far below 1/2 (``size * eps < 0.01``); a larger array, a smaller total or a
    NaN says nothing.
    """
    size = weights.size
    if not size:
        return True
    eps = EPS_FLOAT64 if weights.dtype is FLOAT64 else _EPS.get(weights.dtype, 1.0)
    return size * eps < 0.01 and np.add.reduce(weights, None) > size // weights.shape[-1] - 0.5


def emptied_rows(weights, mask):
    """True if a row of ``weights`` took nothing although ``mask`` allows one of its keys (None: all)."""
    sums = weights.sum(axis=-1)  # (batch, heads, seq_q): 1, or 0 for a row that took nothing
    if not sums.size or sums.min() > 0:
        return False
    empty = sums == 0
    allowed = np.ones(empty.shape, bool) if mask is None else np.broadcast_to(mask, weights.shape).any(axis=-1)
    return bool((empty & allowed).any())
