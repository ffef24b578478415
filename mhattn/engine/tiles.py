"""The bookkeeping of :func:`mhattn.engine.flash_attention`'s tiles: scratch arrays and the steps of one tile.

The loop over tiles (:func:`mhattn.engine.flash.attention_in_tiles`) runs the online softmax;
every array it touches inside the loop is allocated here once, before the first tile, and
reused by every tile after it, so that the memory of a call depends on the tile sizes only.
A :class:`Tiles` also knows the steps that do not depend on the running softmax: scaling the
queries, deciding whether a query tile needs the running maximum at all, building a tile's
causal mask, and computing a tile's scores.
"""

import math

import numpy as np

from .bounds import check_scores, safe_exponent


class Tiles:
    """Scratch arrays for one tile, allocated once and reused by every tile, and what each tile does with them."""

    def __init__(self, heads, rows, keys, d_k, d_v, dtype, masked, causal=False):
        self.keys = keys
        # 1 / sqrt(d_k) in the compute dtype (a float64 scale would cap longdouble at float64 accuracy)
        self.scale = 1 / np.sqrt(np.dtype(dtype).type(d_k))
        self.q = np.empty((heads, rows, d_k), dtype=dtype)
        self.s = np.empty(heads * rows * keys, dtype=dtype)  # flat: a smaller tile is a contiguous view
        self.blocked = np.empty((heads, rows, keys), dtype=bool) if masked else None
        # causal: one diagonal of flags, t > first blocked, read as a (rows, keys) Toeplitz view
        self.diagonal = np.empty(rows + keys - 1, dtype=bool) if causal else None
        self.row_max = np.empty((heads, rows), dtype=dtype)
        self.row_sum = np.empty((heads, rows), dtype=dtype)
        self.acc = np.empty((heads, rows, d_v), dtype=dtype)
        self.pv = np.empty((heads, rows, d_v), dtype=dtype)  # one key tile's share of the output
        self.ones = np.ones(keys, dtype=dtype)
        self.check_scores = False
        self.key_norm = self.log_v_max = self.limits = None  # for the shortcut of max_is_not_needed
        self.log_limit = float(np.log(np.finfo(dtype).max)) - 2 * math.log(2)  # 4 times below the largest float

    def scaled_queries(self, q):
        out = self.q[: q.shape[0], : q.shape[1]]
        return np.multiply(q, self.scale, out=out, dtype=out.dtype)  # float16 queries: in float32

    def max_is_not_needed(self, q, K):
        """Whether every exponent of this query tile is provably safe without a running max.

        Every score lies in ``[-bound, bound]``, ``bound = max|q| max|k|`` (Cauchy-Schwarz).
        When ``exp`` can neither overflow nor underflow there (:func:`~.bounds.safe_exponent`)
        and the running output ``sum_j exp(s_j) v_j`` stays below the largest float, the max
        is fixed at 0: no max, no subtraction, no rescaling, three passes over each tile fewer.
        """
        if self.log_v_max is None:
            return False
        if self.limits is None or self.limits[0] != K.shape[-2]:  # computed once per call
            seq_k = max(K.shape[-2], 1)
            self.limits = K.shape[-2], safe_exponent(self.q.dtype, seq_k), self.log_limit - math.log(seq_k)
        _, safe, log_room = self.limits
        bound = float(np.sqrt(np.einsum("...d,...d->...", q, q).max(initial=0)) * self.key_norm.max(initial=0))
        return bound <= safe and bound + self.log_v_max < log_room

    def start(self, shape, fixed_max=False):
        row_max, row_sum, acc = (a[: shape[0], : shape[1]] for a in (self.row_max, self.row_sum, self.acc))
        row_max.fill(0 if fixed_max else -np.inf)
        row_sum.fill(0)
        acc.fill(0)
        return row_max, row_sum, acc

    def blocked_by(self, allowed):
        """``~allowed`` in the scratch buffer (None for no mask)."""
        if allowed is None:
            return None
        return np.logical_not(allowed, out=self.blocked[tuple(slice(n) for n in allowed.shape)])

    def causal_blocked(self, first_query, rows, keys):
        """Where key ``j`` comes after query ``i`` (``j > i``), for the tile's ``rows`` queries
        from ``first_query`` and the ``keys`` slice: a read-only view of shape ``(1, rows, keys)``,
        or None when every key is at or before every query (a tile below the diagonal).

        Row ``r``, column ``c`` is blocked when ``c - r > first_query - keys.start``: it depends on
        ``c - r`` only, so one vector ``z[t]``, ``t = c - r + rows - 1``, holds the whole tile, and
        a strided view of ``z`` shows it as a matrix without a copy (nor NumPy's ufunc
        buffers that a broadcast comparison would allocate).
        """
        if keys.stop - 1 <= first_query:
            return None
        width = keys.stop - keys.start
        z = self.diagonal[: rows + width - 1]
        first_blocked = first_query - keys.start + rows  # >= 1: the key loop stops before the last query
        z[:first_blocked] = False
        z[first_blocked:] = True
        # view[0, r, c] = z[rows - 1 - r + c] (np.lib.stride_tricks would do, but keeps a few objects per call)
        return np.ndarray((1, rows, width), dtype=bool, buffer=z, offset=rows - 1, strides=(0, -1, 1))

    def scores(self, q, k, blocked):
        shape = (q.shape[0], q.shape[1], k.shape[1])  # (heads, rows, keys)
        s = self.s[: math.prod(shape)].reshape(shape)  # contiguous, so NumPy needs no buffers to walk it
        np.matmul(q, k.swapaxes(-1, -2), out=s)  # (heads, rows, keys)
        if self.check_scores:
            check_scores("flash_attention", s, None if blocked is None else ~blocked)
        if blocked is not None:
            np.copyto(s, -np.inf, where=blocked)  # exp(-inf) = 0: masked keys get exactly zero weight
        return s
