r"""Attention one tile of keys at a time: the online softmax of FlashAttention.

Query blocks (:mod:`mhattn.engine.blocks`) cut the *queries* into blocks, but every block
still holds a whole row of scores, ``seq_k`` of them per query. To bound memory by the
block sizes alone we must also cut the *keys*, and then no tile holds a whole row: the
softmax's maximum and sum are not known until the last tile of keys has been seen.

The online softmax (Milakov & Gimelshein 2018) keeps, for every query row, a running
maximum ``m``, a running sum ``l`` of ``exp(score - m)`` and a running unnormalised output
``acc = sum exp(score - m) * v`` (``row_max``, ``row_sum`` and ``acc`` in the code). When a
new tile raises the maximum from ``m`` to ``m_new``, everything summed so far was measured
against the old maximum, and one factor corrects it:

.. math::

    \alpha = e^{m - m_\text{new}}, \qquad
    l \leftarrow \alpha\, l + \sum_j e^{s_j - m_\text{new}}, \qquad
    \text{acc} \leftarrow \alpha\, \text{acc} + \sum_j e^{s_j - m_\text{new}} v_j .

After the last tile, ``output = acc / l`` is exactly the softmax-weighted average, and
``m + log(l)`` is the row's log-sum-exp, all a backward pass needs to rebuild any weight as
``exp(score - lse)``. This is Algorithm 1 of Dao et al. (2022), with the division by ``l``
moved to the end as in FlashAttention-2 (Dao 2023).

**Skipping the running max.** The maximum only keeps ``exp`` from overflowing. When every
score of a query tile provably lies in ``[-b, b]`` with ``b`` small (Cauchy-Schwarz:
``|q . k| <= |q| |k|``, the test of :mod:`mhattn.engine.blocks`), ``m`` is fixed at 0: no
max, no subtraction, no rescaling, and the tile loop is two products, one ``exp`` and
the row sums.

Like the query blocks, the loop runs on the caller's thread; NumPy's BLAS threads the
matrix products inside each tile.
"""

import math

import numpy as np

from ..checks import overflow_error
from .bounds import key_norms, log_max_abs, same_leading_axes
from .tiles import Tiles

# Scores per tile: 2**17 float32 scores (512 KiB) stay in a core's L2 cache through every
# pass over the tile. Key tiles of KEY_TILE keys; query tiles fill the rest.
TILE_SCORES = 2**17
KEY_TILE = 512


def flash_attention(Q, K, V, mask=None, *, block_q=None, block_k=None, is_causal=False, return_lse=False):
    """Scaled dot-product attention with tiled queries *and* keys (the online softmax).

    The same numbers as :func:`mhattn.scaled_dot_product_attention`'s output, up to
    rounding, with the same checks, dtypes and fully-masked-row rule; the extra memory
    depends on the tile sizes only, never on ``seq_k``. Called as ``mhattn.flash_attention``
    (or ``mhattn.engine.flash_attention``), its arguments are checked first by
    :func:`mhattn.checks.engine.flash_args`.

    Parameters
    ----------
    Q : ndarray of shape ``(..., seq_q, d_k)``
    K : ndarray of shape ``(..., seq_k, d_k)``
    V : ndarray of shape ``(..., seq_k, d_v)``
    mask : ndarray of bool, optional
        True = may attend; shape ``(seq_q, seq_k)``, or for 4-D inputs
        ``(batch or 1, heads or 1, seq_q, seq_k)``. A query with no allowed key gets an
        output of zeros (and a log-sum-exp of ``-inf``). Not together with ``is_causal``.
    block_q : int, optional
        Queries per tile (of one head). By default a tile holds about ``TILE_SCORES``
        scores.
    block_k : int, optional
        Keys per tile. Default ``KEY_TILE`` (or ``seq_k`` if shorter).
    is_causal : bool, default False
        Causal attention without a mask: query ``i`` may attend to key ``j`` when ``j <= i``
        (top-left aligned, torch's ``is_causal`` convention; for ``seq_q != seq_k`` this is
        ``np.tril(np.ones((seq_q, seq_k), bool))``, not the bottom-right alignment of a KV
        cache). Each tile builds its own mask from the positions, so no ``(seq_q, seq_k)``
        mask ever exists, and tiles wholly above the diagonal are never computed.
    return_lse : bool, default False
        Also return each query's log-sum-exp of its scaled scores,
        ``log(sum_j exp(q . k_j / sqrt(d_k)))`` over the keys it may attend to.

    Returns
    -------
    output : ndarray of shape ``(..., seq_q, d_v)``
        In the dtype of the inputs (float16 is computed in float32). Returned alone when
        ``return_lse`` is False.
    lse : ndarray of shape ``(..., seq_q)``
        Only with ``return_lse=True``, in the dtype the computation ran in (float32 for
        float16 inputs). ``-inf`` for a fully masked query: the log of an empty sum.

    Raises
    ------
    TypeError, ValueError
        For the inputs :func:`mhattn.scaled_dot_product_attention` rejects, and for a
        ``block_q`` or ``block_k`` that is not a positive int, a non-bool ``is_causal`` or
        ``return_lse``, and for ``is_causal=True`` together with a ``mask``.
    FloatingPointError
        If a score ``q . k / sqrt(d_k)`` overflows (finite but enormous ``Q`` and ``K``), or
        the output does not fit the output dtype.

    Examples
    --------
    >>> from mhattn import causal_mask, scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.standard_normal((3, 1, 2, 8, 4))  # (batch, heads, seq_len, d_k) each
    >>> output, lse = flash_attention(Q, K, V, block_q=4, block_k=2, is_causal=True, return_lse=True)
    >>> output.shape, lse.shape
    ((1, 2, 8, 4), (1, 2, 8))
    >>> reference, _ = scaled_dot_product_attention(Q, K, V, causal_mask(8))
    >>> bool(np.allclose(output, reference))  # tiles of 4 queries by 2 keys: the same numbers
    True
    """
    output, lse = attention_in_tiles(Q, K, V, mask, block_q=block_q, block_k=block_k, is_causal=is_causal)
    return (output, lse) if return_lse else output


def attention_in_tiles(Q, K, V, mask=None, *, block_q=None, block_k=None, is_causal=False):
    """:func:`flash_attention` for checked arrays; returns ``(output, lse)``.

    ``mask`` must broadcast to ``(..., seq_q, seq_k)``; with ``is_causal`` it must be None.
    float16 arrays are computed in float32; the output goes back in their dtype, checked
    for overflow there, and the log-sum-exp stays in the dtype it was computed in.
    """
    dtype = np.result_type(Q, K, V)
    work = np.float32 if dtype == np.float16 else dtype  # float16 has too few digits to sum seq_k terms
    leading, (Q, K, V, mask) = same_leading_axes(Q, K, V, mask, work)  # views, with >= 1 leading axis
    lead, (seq_q, d_k), seq_k, d_v = Q.shape[:-2], Q.shape[-2:], K.shape[-2], V.shape[-1]
    output = np.empty(lead + (seq_q, d_v), dtype=work)  # (..., seq_q, d_v)
    lse = np.empty(lead + (seq_q,), dtype=work)  # (..., seq_q)

    heads, rows, keys = _tile_shape(lead[-1], seq_q, seq_k, block_q, block_k)
    tiles = Tiles(heads, rows, keys, d_k, d_v, work, mask is not None, is_causal)
    tiles.check_scores = _scores_may_overflow(Q, K, work)
    v_scale = _value_scale(V, seq_k, work)  # 1 unless the sum over keys could overflow
    key_norms, log_v_max = _key_norms_in_tiles(K), log_max_abs(V) + float(np.log(v_scale))  # (...) each
    with np.errstate(over="ignore", invalid="ignore"):
        for outer in np.ndindex(lead[:-1]):  # every index of the leading axes but the last
            for head in range(0, lead[-1], heads):
                h = slice(head, head + heads)
                tiles.key_norm, tiles.log_v_max = key_norms[outer][h], float(log_v_max[outer][h].max())
                for start in range(0, seq_q, rows):
                    q = slice(start, start + rows)
                    block_mask = None if mask is None else mask[outer][h, q]  # (heads, rows, seq_k)
                    tile = (Q[outer][h, q], K[outer][h], V[outer][h], block_mask)
                    first_query = start if is_causal else None
                    output[outer][h, q], lse[outer][h, q] = _attend_query_tile(*tile, v_scale, tiles, first_query)

    if v_scale != 1:
        output /= v_scale  # a power of two: exact
    if dtype != work:
        output = output.astype(dtype)
    if not _all_finite(output):  # only if V is within rounding of the largest float
        raise overflow_error("flash_attention", dtype, "the output, an average of V,")
    if not leading:  # 2-D inputs: drop the leading axis we added
        return output[0], lse[0]
    return output, lse


def _attend_query_tile(q, K, V, mask, v_scale, tiles, first_query=None):
    """One tile of queries against every tile of keys: the online softmax.

    Shapes: ``q (heads, rows, d_k)``, ``K (heads, seq_k, d_k)``, ``V (heads, seq_k, d_v)``,
    ``mask (heads, rows, seq_k)`` or None. ``first_query``: for causal attention, the
    position of the tile's first query (None otherwise). Returns the tile's output
    ``(heads, rows, d_v)`` and log-sum-exp ``(heads, rows)`` (views of scratch arrays, copied
    out by the caller).
    """
    q = tiles.scaled_queries(q)  # (heads, rows, d_k), times 1 / sqrt(d_k)
    fixed_max = tiles.max_is_not_needed(q, K)  # then m stays 0: no max, no rescaling
    row_max, row_sum, acc = tiles.start(q.shape[:2], fixed_max)  # m = -inf (or 0), l = 0, acc = 0
    stop = K.shape[-2] if first_query is None else min(K.shape[-2], first_query + q.shape[1])  # causal: no later key
    for start in range(0, stop, tiles.keys):
        k = slice(start, min(start + tiles.keys, stop))
        blocked = _blocked_in_key_tile(mask, k, tiles, first_query, q.shape[1])  # (heads, rows, keys)
        if blocked is SKIP:
            continue  # a tile nobody may attend to adds nothing (half the tiles of a causal mask)
        s = tiles.scores(q, K[:, k], blocked)  # (heads, rows, keys): scaled scores, -inf where blocked
        if not fixed_max:
            _raise_running_max(s, row_max, row_sum, acc)  # s becomes s - m_new; l and acc move to m_new
        np.exp(s, out=s)  # every exponent <= 0, or provably small
        v = V[:, k] if v_scale == 1 else V[:, k] * v_scale  # (heads, keys, d_v)
        row_sum += s @ tiles.ones[: s.shape[-1]]  # row sums, by BLAS (faster than s.sum(-1))
        acc += np.matmul(s, v, out=tiles.pv[: acc.shape[0], : acc.shape[1]])  # (heads, rows, d_v)
    return _finish_rows(row_max, row_sum, acc)


SKIP = object()  #: what :func:`_blocked_in_key_tile` returns for a key tile that no query may see


def _blocked_in_key_tile(mask, k, tiles, first_query, rows):
    """Where this tile's queries may not see the keys ``k``: a bool array, None (all allowed) or ``SKIP`` (none).

    Causal tiles build their own ``(1, rows, keys)`` mask from the positions; otherwise it is
    the ``(heads, rows, keys)`` slice of ``mask``, negated into a scratch buffer.
    """
    if first_query is not None:
        return tiles.causal_blocked(first_query, rows, k)
    allowed = None if mask is None else mask[..., k]  # (heads, rows, keys)
    if allowed is not None and not allowed.any():
        return SKIP
    return tiles.blocked_by(allowed)


def _raise_running_max(s, row_max, row_sum, acc):
    """One step of the online softmax, in place: raise ``m`` to this tile's maximum and move ``l`` and acc to it.

    ``s`` (heads, rows, keys) becomes ``s - m_new``; ``l`` and acc, summed against the old
    ``m``, are multiplied by ``alpha = exp(m_old - m_new) <= 1``.
    """
    new_max = np.maximum(row_max, s.max(axis=-1))  # (heads, rows): the running max, raised by this tile
    shift = np.where(np.isneginf(new_max), 0.0, new_max)  # a row masked so far: exp(-inf - 0) = 0, not NaN
    alpha = np.exp(row_max - shift)  # (heads, rows): rescales what was summed against the old max
    np.subtract(s, shift[..., None], out=s)  # a broadcast: NumPy runs it through its ufunc buffer
    row_sum *= alpha
    acc *= alpha[..., None]
    row_max[...] = new_max


def _finish_rows(row_max, row_sum, acc):
    """Each row's output ``acc / l`` (in place) and log-sum-exp ``m + log(l)``.

    A fully masked row (``l = 0``) gets the output 0 and the log-sum-exp ``-inf``.
    """
    with np.errstate(divide="ignore"):  # log(0) = -inf for a fully masked row: the log of an empty sum
        row_lse = row_max + np.log(row_sum)
    acc /= np.where(row_sum == 0, 1, row_sum)[..., None]  # a fully masked row: 0 / 1 = 0
    return acc, row_lse


def _tile_shape(num_heads, seq_q, seq_k, block_q, block_k):
    """``(heads, rows, keys)`` of one tile.

    ``keys`` is ``block_k`` or ``KEY_TILE``, at most ``seq_k``. ``rows`` is ``block_q`` or
    as many as fill ``TILE_SCORES`` scores; if a whole head fits, a tile is several heads.
    """
    keys = min(block_k or KEY_TILE, max(seq_k, 1))
    seq_q = max(seq_q, 1)  # no queries: one empty tile
    if block_q is not None:
        return 1, min(block_q, seq_q), keys
    if seq_q * keys <= TILE_SCORES:
        return max(1, min(num_heads, TILE_SCORES // (seq_q * keys))), seq_q, keys
    return 1, max(1, TILE_SCORES // keys), keys


def _key_norms_in_tiles(K):
    """The length of the longest key of each head, ``K.shape[:-2]``, ``KEY_TILE`` keys at a time
    (so that no temporary grows with ``seq_k``)."""
    longest = np.zeros(K.shape[:-2], dtype=K.dtype)
    for start in range(0, K.shape[-2], KEY_TILE):
        np.maximum(longest, key_norms(K[..., start : start + KEY_TILE, :]), out=longest)
    return longest


def _all_finite(X):
    """``np.isfinite(X).all()`` without a temporary the size of ``X`` (max and min propagate NaN)."""
    return X.size == 0 or bool(np.isfinite(X.max()) and np.isfinite(X.min()))


def _max_abs(X):
    """``max |X|`` without a temporary the size of ``X`` (0 for an empty ``X``)."""
    return max(float(X.max(initial=0.0)), -float(X.min(initial=0.0)))


def _scores_may_overflow(Q, K, dtype):
    """Whether any ``q . k / sqrt(d_k)`` could overflow ``dtype``: then every tile is checked.

    ``|q . k| <= d_k * max|q| * max|k|``; below half the largest float nothing overflows.
    """
    d_k = Q.shape[-1]
    bound = math.sqrt(d_k) * _max_abs(Q) * _max_abs(K)  # d_k / sqrt(d_k)
    return not bound < float(np.finfo(dtype).max) / 2


def _value_scale(V, seq_k, dtype):
    """A power of two that keeps ``sum_j p_j v_j`` (each ``p_j <= 1``) from overflowing.

    The running output sums up to ``seq_k`` values before it is divided by ``l``: for values
    near the largest float that sum could overflow where the average does not. Scaling V by
    a power of two, and the output back, changes no digit.
    """
    limit = np.finfo(dtype).max / np.asarray(4 * max(seq_k, 1), dtype=dtype)  # in dtype: longdouble's max is no float
    largest = np.maximum(V.max(initial=0), -V.min(initial=0)).astype(dtype)  # max |V| without a |V|-sized temporary
    if largest <= limit:
        return 1
    return np.asarray(2.0, dtype=dtype) ** -int(np.ceil(np.log2(largest / limit)))
