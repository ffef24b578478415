"""Attention in blocks of queries: the same numbers, a few rows of scores at a time.

The weights of all heads at once take ``batch * num_heads * seq_q * seq_k`` numbers: at
``seq_len = 4096`` with 4 heads that is 256 MiB in float32. Yet each query's output depends
only on its own row of weights. So we cut the queries into blocks and, for one
``(batch, head)`` pair and one block at a time, compute

1. the block's scores ``q @ k.T``, shape ``(rows, seq_k)``;
2. their softmax, in place;
3. the block's output ``weights @ v``, shape ``(rows, d_v)``.

Two things follow.

* **Memory.** Without weights to return, only the current block's scores exist: a few MiB
  whatever ``seq_len`` is (:func:`blockwise_attention`).
* **Speed.** A block of a million scores or fewer stays in a core's L2 cache through all the
  passes the softmax makes over it; a full score matrix goes out to main memory and back
  for each of them. (We also save passes: see :func:`_exponentials`.) And blocks are independent, so several threads
  can work on different blocks at once. NumPy releases the GIL inside ``matmul`` and
  ``exp``, which matters: ``exp`` and the other elementwise passes run on a single core in
  NumPy, only the matrix products are multi-threaded (by BLAS). We give each thread whole
  blocks and ask BLAS for one thread per call, so every core does everything: matrix
  products *and* exponentials.

When a head's scores are fewer than a block holds (short sequences), a block is several
whole heads instead, so that each step is one batched call rather than many tiny ones.

:func:`attention_in_blocks` is the same loop when the weights are wanted: each block's
weights go straight into their rows of the full weight matrix. :func:`mhattn.attention.attend`
hands inputs with many scores to it; small inputs gain nothing from blocks or threads and
take the textbook route.
"""

import concurrent.futures
import contextlib
import math
import threading

import numpy as np

# Scores per block, by default. With weights to return, the softmax passes over a block two
# to four times: 2**18 scores (1 MiB of float32) stay in a core's L2 cache for all of them.
# Without, fewer passes, and taller blocks let BLAS multiply faster: 2**20 (4 MiB).
BLOCK_SCORES = {True: 2**18, False: 2**20}  # {need_weights: scores}
MIN_BLOCK_SCORES = 2**15  # the least, when blocks shrink to give every thread several


def blockwise_attention(Q, K, V, mask=None, block_size=None, *, num_threads=None):
    """Scaled dot-product attention output, computed ``block_size`` queries at a time.

    Takes already validated arrays, like :func:`mhattn.attention.attend`, and never holds
    more than one block of scores per thread.

    Parameters
    ----------
    Q : ndarray of shape ``(..., seq_q, d_k)``
    K : ndarray of shape ``(..., seq_k, d_k)``
    V : ndarray of shape ``(..., seq_k, d_v)``
    mask : ndarray of bool, broadcastable to ``(..., seq_q, seq_k)``, optional
        True = may attend. A query with no allowed key gets an output of zeros.
    block_size : int, optional
        Queries per block (of one head). By default a block holds up to
        ``BLOCK_SCORES[False]`` scores: that many divided by ``seq_k`` query rows, or several
        whole heads when their scores fit; below ``PARALLEL_MIN_SCORES`` scores in all, the
        whole input is one block.
    num_threads : int, optional
        Threads working on blocks at once. The default is the number of threads NumPy's
        BLAS is set to use (``OPENBLAS_NUM_THREADS``, ``threadpoolctl``), or 1 when the
        problem is too small to repay starting them.

    Returns
    -------
    ndarray of shape ``(..., seq_q, d_v)``
        Equal to ``attend(Q, K, V, mask)[0]`` up to rounding.

    Notes
    -----
    Peak extra memory: the output plus, per thread, one block of scores
    (``block_size * seq_k`` numbers), one block of mask and one of scaled queries.
    """
    return _in_blocks(Q, K, V, mask, block_size, num_threads, need_weights=False)[0]


def attention_in_blocks(Q, K, V, mask=None, block_size=None, *, num_threads=None):
    """Like :func:`blockwise_attention`, and also return the full weights.

    The weight matrix is allocated once; each block's scores are computed inside their own
    rows of it and turned into weights there, while they are still in cache.

    Returns
    -------
    output : ndarray of shape ``(..., seq_q, d_v)``
    weights : ndarray of shape ``(..., seq_q, seq_k)``
        Equal to ``attend(Q, K, V, mask)`` up to rounding.
    """
    return _in_blocks(Q, K, V, mask, block_size, num_threads, need_weights=True)


def _in_blocks(Q, K, V, mask, block_size, num_threads, need_weights):
    for name, value in (("block_size", block_size), ("num_threads", num_threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive int or None; got {value!r}")
    leading = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    (seq_q, d_k), seq_k, d_v = Q.shape[-2:], K.shape[-2], V.shape[-1]
    if math.prod(leading) * seq_q * seq_k < PARALLEL_MIN_SCORES and (block_size is None or block_size >= seq_q):
        from .attention import attend  # here, not at the top: attention.py imports this module

        return attend(Q, K, V, mask)  # small enough to be one block: the textbook path is that block
    dtype = np.result_type(Q, K, V)
    lead = leading or (1,)  # at least one leading axis (its last one is usually the heads)
    # Views that broadcast every array to the same leading axes (no copies).
    Q = np.broadcast_to(Q, lead + (seq_q, d_k))
    K = np.broadcast_to(K.astype(dtype, copy=False), lead + (seq_k, d_k))
    V = np.broadcast_to(V.astype(dtype, copy=False), lead + (seq_k, d_v))
    if mask is not None:
        mask = np.broadcast_to(mask, lead + (seq_q, seq_k))
    output = np.empty(lead + (seq_q, d_v), dtype=dtype)  # (..., seq_q, d_v)
    weights = np.empty(lead + (seq_q, seq_k), dtype=dtype) if need_weights else None
    scale = 1.0 / math.sqrt(d_k)  # a Python float: float32 stays float32

    # The longest key of each (batch, head): with the longest query of a block it bounds every
    # score of the block, which can save two passes over it (see _exponentials).
    key_norm = np.sqrt(np.einsum("...kd,...kd->...k", K, K).max(axis=-1, initial=0.0))  # (...)
    exponent_limit = _safe_exponent(dtype, seq_k)

    # A task is a block of `rows` queries in `group` heads (consecutive indices of the last
    # leading axis) at one index `outer` of the other leading axes.
    total_scores = math.prod(lead) * seq_q * seq_k
    threads = _threads_for(num_threads, total_scores)
    group, rows = _block_shape(lead[-1], seq_q, seq_k, block_size, total_scores, threads, BLOCK_SCORES[need_weights])
    tasks = [
        (outer, slice(head, min(head + group, lead[-1])), slice(start, min(start + rows, seq_q)))
        for outer in np.ndindex(lead[:-1])
        for head in range(0, lead[-1], group)
        for start in range(0, seq_q, rows)
    ]

    def worker(task_iterator):
        """Work through tasks until none are left; every buffer here belongs to this thread."""
        q_buffer = np.empty((group, rows, d_k), dtype=dtype)  # the block's queries, scaled
        scores_buffer = None if need_weights else np.empty((group, rows, seq_k), dtype=dtype)
        blocked_buffer = np.empty((group, rows, seq_k), dtype=bool) if mask is not None else None
        for outer, heads, queries in task_iterator:
            shape = (heads.stop - heads.start, queries.stop - queries.start)  # (heads in the block, rows)
            q = q_buffer[: shape[0], : shape[1]]
            np.multiply(Q[outer][heads, queries], scale, out=q)  # scaling q is cheaper than scaling scores
            # Scores go straight into their rows of the weight matrix, or into a scratch block.
            scores = weights[outer][heads, queries] if need_weights else scores_buffer[: shape[0], : shape[1]]
            blocked = None
            if mask is not None:
                blocked = np.logical_not(mask[outer][heads, queries], out=blocked_buffer[: shape[0], : shape[1]])
            # Cauchy-Schwarz: |q . k| <= |q| |k|, so every score of the block lies in [-bound, bound].
            bound = math.sqrt(np.einsum("...d,...d->...", q, q).max()) * key_norm[outer][heads].max()
            small = bound <= exponent_limit
            block = (q, K[outer][heads], V[outer][heads], blocked, scores, output[outer][heads, queries])
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked for just below
                _attend_block(*block, need_weights, subtract_max=not small)
            if small and not need_weights and not np.isfinite(block[-1]).all():
                # Values beyond ~1e19 (float32) overflowed exp(scores) @ v: redo the block the safe way.
                _attend_block(*block, need_weights, subtract_max=True)

    threads = max(1, min(threads, len(tasks)))
    if threads == 1:
        worker(iter(tasks))
    else:
        shared = iter(tasks)  # next() on a list iterator is atomic under the GIL: each task is taken once
        with _one_blas_thread():
            futures = [_pool(threads).submit(worker, shared) for _ in range(threads)]
            concurrent.futures.wait(futures)  # every thread has finished before BLAS gets its threads back
        for future in futures:
            future.result()  # re-raises a worker's exception here
    if not leading:  # 2-D inputs: drop the leading axis we added
        return output[0], None if weights is None else weights[0]
    return output, weights


def _block_shape(num_heads, seq_q, seq_k, block_size, total_scores, threads, block_scores):
    """``(heads, rows)`` of one block.

    An explicit ``block_size`` means that many query rows of one head. Otherwise a block holds
    about ``block_scores`` scores (fewer when that would leave fewer than four blocks per
    thread): a slab of query rows of one head when a head's scores are more than that, or
    whole heads, several at a time, when they are fewer.
    """
    if block_size is not None:
        return 1, min(block_size, seq_q)
    target = min(block_scores, max(MIN_BLOCK_SCORES, total_scores // (4 * threads)))
    per_head = seq_q * seq_k
    if per_head <= target:
        return max(1, min(num_heads, target // per_head)), seq_q
    return 1, max(1, min(seq_q, target // seq_k))


def _attend_block(q, k, v, blocked, scores, out, need_weights, subtract_max):
    """Attention for one block: ``scores`` and ``out`` are filled in place.

    Shapes: ``q (..., rows, d_k)``, ``k (..., seq_k, d_k)``, ``v (..., seq_k, d_v)``,
    ``blocked`` (True = masked) and ``scores`` ``(..., rows, seq_k)``, ``out (..., rows, d_v)``.

    With ``need_weights`` the scores become the weights (rows summing to one) before they
    multiply ``v``. Without, they stay unnormalised and the *output* is divided by the row
    sums instead: the same numbers, but ``rows * d_v`` divisions instead of ``rows * seq_k``,
    one pass over the block fewer.
    """
    np.matmul(q, k.swapaxes(-1, -2), out=scores)  # (..., rows, seq_k)
    if blocked is not None:
        np.copyto(scores, -np.inf, where=blocked)  # exp(-inf) = 0: masked keys get exactly zero weight
    total = _exponentials(scores, subtract_max)  # (..., rows)
    if need_weights:
        np.multiply(scores, (1 / total)[..., None], out=scores)  # the weights
        np.matmul(scores, v, out=out)  # (..., rows, d_v)
    else:
        np.matmul(scores, v, out=out)  # (..., rows, d_v)
        np.divide(out, total[..., None], out=out)


def _exponentials(scores, subtract_max=True):
    """Replace ``scores`` by ``exp(scores - row max)`` in place; return the row sums.

    Subtracting each row's maximum (as :func:`mhattn.softmax.softmax_` does) keeps ``exp``
    from overflowing, and changes nothing else: the factor ``exp(-max)`` cancels when the
    rows are divided by their sums. The caller may skip it (``subtract_max=False``, two passes
    over the block fewer) when it has proved that every score is small enough for ``exp`` to
    neither overflow nor underflow (see :func:`_safe_exponent`).

    A fully masked row (all ``-inf``) becomes zeros, and its sum is reported as 1, so that
    dividing by it leaves zeros.
    """
    if subtract_max:
        row_max = scores.max(axis=-1, keepdims=True)  # (..., rows, 1)
        row_max[np.isneginf(row_max)] = 0.0  # a fully masked row: exp(-inf - 0) = 0
        np.subtract(scores, row_max, out=scores)
    np.exp(scores, out=scores)
    total = scores @ np.ones(scores.shape[-1], dtype=scores.dtype)  # (..., rows): row sums, by BLAS (faster than .sum)
    total[total == 0] = 1.0
    return total


def _safe_exponent(dtype, seq_k):
    """The largest ``bound`` such that scores in ``[-bound, bound]`` need no max subtraction.

    Then ``exp(score)`` lies in ``[exp(-bound), exp(bound)]``, and we ask that

    * a row's sum, at most ``seq_k * exp(bound)``, stays below the square root of the largest
      float: no overflow, and room for values up to that root in ``exp(scores) @ v`` (the
      caller checks the output for the rare larger values);
    * ``exp(-bound)`` stays ``2**24`` times above the smallest normal float, so even a row whose
      scores are all near ``-bound`` keeps full precision in its sum.

    For float32 and ``seq_k = 4096`` the limit is about 36 (it is 346 for float64); the
    scores of a softmax that has not saturated are far smaller.
    """
    info = np.finfo(dtype)
    overflow = 0.5 * math.log(float(info.max)) - math.log(max(seq_k, 1))
    underflow = -math.log(float(info.tiny)) - 24 * math.log(2)
    return min(overflow, underflow)


def matmul(a, b):
    """``a @ b`` for a 2-D ``b`` (a weight matrix), the rows of ``a`` shared among our threads.

    The same numbers as ``a @ b``. Why not write that? BLAS would run it on *its* threads,
    and OpenBLAS's threads keep spinning for about 0.1 s after each call, holding a core
    that the block threads starting next then share with them (measured: attention right
    after a projection ran up to 1.7x slower). When the projections around attention run
    on the same threads as the blocks, no core is ever claimed twice. Small products, which
    threads would only slow down, are plain ``a @ b``.

    Parameters
    ----------
    a : ndarray of shape ``(..., k)``
    b : ndarray of shape ``(k, n)``

    Returns
    -------
    ndarray of shape ``(..., n)``
    """
    if a.size * b.shape[-1] < PARALLEL_MIN_MULTIPLY_ADDS:  # m * k * n multiply-adds: too few to share
        return a @ b
    rows = a.reshape(-1, a.shape[-1])  # (m, k): a view for a contiguous `a`
    threads = min(_blas_threads(), rows.shape[0])
    if threads == 1:
        return a @ b
    out = np.empty((rows.shape[0], b.shape[-1]), dtype=np.result_type(a, b))  # (m, n)
    bounds = np.linspace(0, rows.shape[0], threads + 1).astype(int)
    with _one_blas_thread():
        futures = [
            _pool(threads).submit(np.matmul, rows[start:stop], b, out=out[start:stop])
            for start, stop in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        concurrent.futures.wait(futures)
    for future in futures:
        future.result()
    return out.reshape(a.shape[:-1] + (b.shape[-1],))


# --- threads ---------------------------------------------------------------------------

PARALLEL_MIN_MULTIPLY_ADDS = 2**22  # the same for matmul()

PARALLEL_MIN_SCORES = 2**20  # below this many scores in all, threads and blocks cost more than they save

_pool_lock = threading.Lock()
_pools = {}
_blas = None


def _threads_for(num_threads, num_scores):
    """How many threads to use: the caller's choice, else BLAS's count if the work repays it."""
    if num_threads is not None:
        return num_threads
    return _blas_threads() if num_scores >= PARALLEL_MIN_SCORES else 1


def _pool(threads):
    with _pool_lock:
        if threads not in _pools:
            _pools[threads] = concurrent.futures.ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix="mhattn-block"
            )
        return _pools[threads]


def _blas_controller():
    """threadpoolctl's handle on the BLAS libraries (found once), or None without threadpoolctl."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _blas = False
        else:
            _blas = ThreadpoolController().select(user_api="blas")
    return _blas or None


def _blas_threads():
    controller = _blas_controller()
    if not controller:
        return 1  # cannot stop BLAS from spawning its own threads: don't add ours on top
    return max(lib.num_threads for lib in controller.lib_controllers)


@contextlib.contextmanager
def _one_blas_thread():
    """While our threads run, each BLAS call uses one thread (no oversubscription)."""
    limit = _blas_controller().limit(limits=1)
    try:
        yield
    finally:
        limit.restore_original_limits()
