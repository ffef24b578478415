"""Attention in blocks of queries: the same numbers, a few rows of scores at a time.

The weights of all heads at once take ``batch * num_heads * seq_q * seq_k`` numbers: at
``seq_len = 4096`` with 4 heads that is 256 MiB in float32. Yet each query's output depends
only on its own row of weights. So we cut the queries into blocks and, for one block at a
time, compute

1. the block's scores ``q @ k.T``, shape ``(rows, seq_k)``;
2. their softmax, in place;
3. the block's output ``weights @ v``, shape ``(rows, d_v)``.

Two things follow.

* **Memory.** Without weights to return, only the current block's scores exist: a fixed
  number of them, whatever ``seq_len`` is, so the extra memory grows like the output,
  ``O(seq_len)``, not like the weights, ``O(seq_len**2)``.
* **Speed.** The softmax passes over the scores several times (max, subtract, exp, sum,
  divide). A block of ``BLOCK_SCORES`` scores fits in a core's L2 cache, so all passes but
  the first read from the cache; a full score matrix goes out to main memory and back for
  each of them.

**Threads.** The loop over blocks runs on the caller's thread, one block after another. The
matrix products inside each block are multi-threaded by NumPy's BLAS (OpenBLAS), which
releases the GIL and uses every core; the elementwise passes (``exp``, ``max``) run on
one core. Why no threads of our own? It was measured: a helper thread per call that took
half of each ``exp`` gained about 15 % at two BLAS threads, not enough to pay for threads
inside every call; with a pool, one block per thread, our threads and BLAS's fight for
the cores (2-4x slower); limiting BLAS to one thread needs process-wide state that other threads can
change under us. The loop gives the same bits from any thread and changes nothing outside the call.

**Processes.** The loop holds no lock and starts no thread of its own, but BLAS has a
thread pool: a fork while another thread of the parent is inside a matrix product can leave
the child waiting forever on a lock it copied while held (plain NumPy's ``@`` does the same).
Safe: forking while no thread computes, ``multiprocessing`` with the ``"spawn"`` or
``"forkserver"`` start method, or one BLAS thread (``OPENBLAS_NUM_THREADS=1``).

When a head's scores are fewer than a block holds (short sequences), a block is several
whole heads instead, so that each step is one batched call rather than many tiny ones.
"""

import math

import numpy as np

from .bounds import check_scores, key_norms, log_max_abs, safe_exponent, same_leading_axes

# Scores per block: 2**18 float32 scores are 1 MiB, a core's L2 cache here. Measured (float32,
# no weights, 1 / 2 BLAS threads) at (batch, heads, seq_len, d_k) = (1, 4, 4096, 64): 2**15 scores
# 300 / 208 ms, 2**16 234 / 162, 2**17 204 / 136, 2**18 187 / 122; larger blocks gained < 4 % at one
# thread and were erratic at two. At (4, 8, 512, 64) 2**18 was as fast as any other size.
BLOCK_SCORES = 2**18


def blockwise_attention(Q, K, V, mask=None, *, block_size=None, need_weights=False):
    """Scaled dot-product attention, computed ``block_size`` queries at a time.

    The same numbers as :func:`mhattn.scaled_dot_product_attention` (up to rounding), with
    the same checks, dtypes (float16 is computed in float32) and fully-masked-row rule.
    Called as ``mhattn.blockwise_attention`` (or ``mhattn.engine.blockwise_attention``), its
    arguments are checked first by :func:`mhattn.checks.engine.blockwise_args`.

    Parameters
    ----------
    Q : ndarray of shape ``(..., seq_q, d_k)``
    K : ndarray of shape ``(..., seq_k, d_k)``
    V : ndarray of shape ``(..., seq_k, d_v)``
    mask : ndarray of bool, optional
        True = may attend; shape ``(seq_q, seq_k)``, or one axis per axis of the scores,
        each of the scores' size or 1. A query with no allowed key gets an output of zeros.
    block_size : int, optional
        Queries per block (of one head). By default a block holds about ``BLOCK_SCORES``
        scores: that many divided by ``seq_k`` query rows, or several whole heads.
    need_weights : bool, default False
        Also return the weights. Without them, the extra memory is one block of scores.

    Returns
    -------
    output : ndarray of shape ``(..., seq_q, d_v)``
        Returned alone when ``need_weights`` is False; the same numbers either way.
    weights : ndarray of shape ``(..., seq_q, seq_k)``
        Only with ``need_weights=True``.

    Raises
    ------
    TypeError, ValueError
        For the inputs :func:`mhattn.scaled_dot_product_attention` rejects, a ``block_size``
        that is not a positive int, or a ``need_weights`` that is not a bool.
    FloatingPointError
        If finite inputs overflow (a score ``q . k / sqrt(d_k)`` beyond the dtype's range).

    Examples
    --------
    >>> from mhattn import causal_mask, scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.standard_normal((3, 2, 6, 4))  # (batch, seq_len, d_k) each
    >>> output, weights = blockwise_attention(Q, K, V, causal_mask(6), block_size=2, need_weights=True)
    >>> output.shape, weights.shape
    ((2, 6, 4), (2, 6, 6))
    >>> reference, _ = scaled_dot_product_attention(Q, K, V, causal_mask(6))
    >>> bool(np.allclose(output, reference))  # three blocks of two queries: the same numbers
    True
    """
    output, weights = attention_in_blocks(Q, K, V, mask, block_size=block_size, need_weights=need_weights)
    return (output, weights) if need_weights else output


def attention_in_blocks(Q, K, V, mask=None, *, block_size=None, need_weights=True):
    """The block loop, for arrays already checked; returns ``(output, weights or None)``.

    Runs inside a checked call (:func:`mhattn.engine.blockwise_attention`, the forward of
    :class:`mhattn.engine.FastMultiHeadAttention`), which has cast float16 to float32, silenced
    NumPy's overflow warnings and checks the result for overflow. ``mask`` must broadcast
    to ``(..., seq_q, seq_k)``.
    """
    dtype = np.result_type(Q, K, V)
    leading, (Q, K, V, mask) = same_leading_axes(Q, K, V, mask, dtype)  # views, with >= 1 leading axis
    lead, (seq_q, d_k), seq_k, d_v = Q.shape[:-2], Q.shape[-2:], K.shape[-2], V.shape[-1]
    output = np.empty(lead + (seq_q, d_v), dtype=dtype)  # (..., seq_q, d_v)
    weights = np.empty(lead + (seq_q, seq_k), dtype=dtype) if need_weights else None  # (..., seq_q, seq_k)

    heads, rows = _block_shape(lead[-1], seq_q, seq_k, block_size)
    scratch = _Scratch(heads, rows, seq_k, d_k, dtype, need_weights, mask is not None)
    norms = key_norms(K), log_max_abs(V)  # (...) each: the longest key, log max|V| per head
    for outer in np.ndindex(lead[:-1]):  # every index of the leading axes but the last
        for head in range(0, lead[-1], heads):
            for start in range(0, seq_q, rows):
                block = (outer, slice(head, head + heads), slice(start, start + rows))
                _attend_block(Q, K, V, mask, block, norms, scratch, output, weights)
    if not leading:  # 2-D inputs: drop the leading axis we added
        return output[0], None if weights is None else weights[0]
    return output, weights


def _block_shape(num_heads, seq_q, seq_k, block_size):
    """``(heads, rows)`` of a block: ``block_size`` rows of one head, or about ``BLOCK_SCORES`` scores.

    A slab of query rows of one head when a head's scores are more than a block holds;
    several whole heads at once when they are fewer.
    """
    if block_size is not None:
        return 1, max(1, min(block_size, seq_q))
    per_head = max(1, seq_q * seq_k)  # at least 1: an empty input is one empty block
    if per_head <= BLOCK_SCORES:
        return max(1, min(num_heads, BLOCK_SCORES // per_head)), max(1, seq_q)
    return 1, max(1, min(seq_q, BLOCK_SCORES // seq_k))


class _Scratch:
    """Arrays for one block, allocated once and reused by every block."""

    def __init__(self, heads, rows, seq_k, d_k, dtype, need_weights, masked):
        self.q = np.empty((heads, rows, d_k), dtype=dtype)  # the block's queries, scaled
        self.scores = None if need_weights else np.empty((heads, rows, seq_k), dtype=dtype)
        self.blocked = np.empty((heads, rows, seq_k), dtype=bool) if masked else None


def _attend_block(Q, K, V, mask, block, norms, scratch, output, weights):
    """Fill ``output`` (and ``weights``) for one block: some query rows of some heads."""
    outer, heads, queries = block  # an index of the outer axes, a slice of heads, a slice of queries
    key_norm, log_v_max = norms  # (...): the longest key and log max|V| of every head
    allowed = None if mask is None else mask[outer][heads, queries]  # (heads, rows, seq_k)
    into = None if weights is None else weights[outer][heads, queries]  # the scores go straight into the weights
    scores, bound = _block_scores(Q[outer][heads, queries], K[outer][heads], key_norm[outer][heads].max(),
                                  allowed, scratch, into)  # (heads, rows, seq_k)
    _weigh_values(scores, bound, V[outer][heads], log_v_max[outer][heads].max(),
                  output[outer][heads, queries], keep_weights=weights is not None)


def _block_scores(q_in, K, key_norm, allowed, scratch, into):
    """The block's scaled and masked scores (in ``into``, or in the scratch block) and a bound on them."""
    n_heads, n_rows, d_k = q_in.shape
    scale = 1 / np.sqrt(scratch.q.dtype.type(d_k))  # in the dtype: a Python float would round longdouble's
    q = np.multiply(q_in, scale, out=scratch.q[:n_heads, :n_rows])  # scaling q is cheaper than scaling scores
    scores = into if into is not None else scratch.scores[:n_heads, :n_rows]  # (heads, rows, seq_k)
    np.matmul(q, K.swapaxes(-1, -2), out=scores)  # (heads, rows, seq_k)
    # Cauchy-Schwarz: |q . k| <= |q| |k|, so every score of the block lies in [-bound, bound].
    bound = np.sqrt(np.einsum("...d,...d->...", q, q).max()) * key_norm
    if not bound < np.finfo(scores.dtype).max / 2:  # rare: only then can a score have overflowed
        check_scores("blockwise attention", scores, allowed)
    if allowed is not None:
        blocked = np.logical_not(allowed, out=scratch.blocked[:n_heads, :n_rows])
        np.copyto(scores, -np.inf, where=blocked)  # exp(-inf) = 0: masked keys get exactly zero weight
    return scores, bound


def _weigh_values(scores, bound, V, log_v_max, out, keep_weights):
    """``out = softmax(scores) @ V``; the softmax runs in place on ``scores``."""
    subtract_max = not bound <= safe_exponent(scores.dtype, scores.shape[-1])
    # Dividing the output rows (d_v numbers each) instead of the weights (seq_k each) saves a
    # pass over the scores, if exp(scores) @ V cannot overflow: each exp is at most 1 (max
    # subtracted) or e**bound, so each sum at most seq_k * that * max|V|.
    log_largest_exp = 0.0 if subtract_max else float(bound)
    log_sum = math.log(max(scores.shape[-1], 1)) + log_largest_exp + log_v_max
    divide_output = _fits(scores.dtype, log_sum)
    inverse = _softmax_(scores, subtract_max, normalise=not divide_output)
    np.matmul(scores, V, out=out)  # (heads, rows, d_v): exp(scores) @ V, or an average of V
    if divide_output:
        np.multiply(out, inverse, out=out)
        if keep_weights:  # the same output bits with and without weights
            np.multiply(scores, inverse, out=scores)


def _softmax_(scores, subtract_max=True, normalise=True):
    """Softmax over the last axis, in place; a fully masked (all ``-inf``) row becomes zeros.

    Subtracting each row's maximum keeps ``exp`` from overflowing and changes nothing else:
    the factor ``exp(-max)`` cancels in the division. The caller may skip it
    (``subtract_max=False``: two passes over the block fewer) when it has proved that
    every score is small enough for ``exp`` to neither overflow nor underflow
    (:func:`~mhattn.engine.bounds.safe_exponent`).

    Returns the reciprocals of the row sums, shape ``(..., rows, 1)``. With
    ``normalise=False`` the rows are left unnormalised (``exp(scores)``, or
    ``exp(scores - max)``): the caller divides ``exp(scores) @ V`` instead, ``d_v``
    multiplications per row rather than ``seq_k``, where that product cannot overflow.
    """
    if subtract_max:
        row_max = scores.max(axis=-1, keepdims=True)  # (..., rows, 1)
        row_max[np.isneginf(row_max)] = 0  # a fully masked row: exp(-inf - 0) = 0
        np.subtract(scores, row_max, out=scores)
    np.exp(scores, out=scores)
    total = scores @ np.ones(scores.shape[-1], dtype=scores.dtype)  # (..., rows): row sums by BLAS, faster than .sum
    total[total == 0] = 1  # a fully masked row: 0 / 1 = 0
    inverse = np.reciprocal(total, out=total)[..., None]  # (..., rows, 1)
    if normalise:
        np.multiply(scores, inverse, out=scores)
    return inverse


def _fits(dtype, log_size):
    """Whether a number of log ``log_size`` stays 4 times below the largest ``dtype``."""
    return log_size < float(np.log(np.finfo(dtype).max)) - 2 * math.log(2)
