"""Attention a block of queries at a time gives the numbers of the full path.

The reference is :func:`mhattn.attention.attend` forced onto its textbook route (one score
matrix, :func:`mhattn.softmax.softmax_`, one matrix product): the ``full_path`` fixture
raises the size at which ``attend`` would itself hand over to the block code. "Relative"
tolerances are relative to the largest entry of the reference, since single outputs near
zero are the sum of cancelling terms and carry no relative precision in either path.
"""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_info

import mhattn
from mhattn import blockwise
from mhattn.attention import attend
from mhattn.blockwise import attention_in_blocks, blockwise_attention

TOLERANCE = {np.float32: 1e-6, np.float64: 1e-10}


@pytest.fixture
def full_path(monkeypatch):
    """``attend`` on its textbook route, whatever the size of its input."""
    monkeypatch.setattr(blockwise, "PARALLEL_MIN_SCORES", float("inf"))
    return attend


def assert_close(actual, expected, dtype):
    assert actual.dtype == expected.dtype == dtype, (actual.dtype, expected.dtype, dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    rtol = TOLERANCE[dtype]
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * max(np.abs(expected).max(initial=0), 1e-30))


def qkv(leading, seq_q, seq_k, d_k, d_v, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    Q = (scale * rng.standard_normal(leading + (seq_q, d_k))).astype(dtype)
    K = (scale * rng.standard_normal(leading + (seq_k, d_k))).astype(dtype)
    V = rng.standard_normal(leading + (seq_k, d_v)).astype(dtype)
    return Q, K, V


def both_block_paths(Q, K, V, mask, block_size, num_threads):
    """Outputs of the weights-free path and (output, weights) of the path that keeps weights.

    Small inputs would take the textbook route of ``attend``: here they go through the
    block code whatever their size.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blockwise, "PARALLEL_MIN_SCORES", 0)
        out = blockwise_attention(Q, K, V, mask, block_size, num_threads=num_threads)
        out_w, weights = attention_in_blocks(Q, K, V, mask, block_size, num_threads=num_threads)
    return out, out_w, weights


def assert_block_paths_match(expected, Q, K, V, mask, block_size, num_threads, dtype):
    """Both block paths reproduce ``expected = (output, weights)``; returns their (output, weights)."""
    out, out_w, weights = both_block_paths(Q, K, V, mask, block_size, num_threads)
    assert_close(out, expected[0], dtype)
    assert_close(out_w, expected[0], dtype)
    assert_close(weights, expected[1], dtype)
    return out, weights


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "seq_q, seq_k, block_size",
    [
        (37, 37, 8),  # seq_len not a multiple of the block size
        (16, 16, 1),  # one query per block
        (10, 10, 64),  # one block larger than the whole sequence
        (33, 20, 7),  # cross-attention: seq_q != seq_k
        (5, 50, 2),  # few queries, many keys
        (50, 3, 16),  # many queries, few keys
        (300, 200, None),  # default block size
    ],
)
@pytest.mark.parametrize("num_threads", [1, 2])
def test_blocks_match_the_full_path(full_path, dtype, seq_q, seq_k, block_size, num_threads):
    Q, K, V = qkv((2, 3), seq_q, seq_k, 16, 12, dtype)
    expected = full_path(Q, K, V)
    assert_block_paths_match(expected, Q, K, V, None, block_size, num_threads, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_causal_and_padding_masks_with_fully_masked_rows(full_path, dtype, num_threads):
    batch, heads, seq_len = 3, 2, 29
    Q, K, V = qkv((batch, heads), seq_len, seq_len, 8, 8, dtype, seed=1)
    lengths = np.array([29, 11, 0])  # the last sequence is all padding: every one of its rows is masked
    mask = mhattn.causal_mask(seq_len) & mhattn.padding_mask(lengths, seq_len)  # (batch, 1, seq, seq)
    mask = mask & (np.arange(seq_len) != 5)[:, None]  # query 5 of every sequence may see nothing either
    expected = full_path(Q, K, V, mask)
    out, weights = assert_block_paths_match(expected, Q, K, V, mask, 4, num_threads, dtype)
    # fully masked rows: zero weights, zero output, no NaN
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out[2], 0.0)
    np.testing.assert_array_equal(out[:, :, 5], 0.0)
    np.testing.assert_array_equal(weights[:, :, 5], 0.0)


@settings(max_examples=60, deadline=None)
@given(
    leading=st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple),
    seq_q=st.integers(1, 40),
    seq_k=st.integers(1, 40),
    d_k=st.integers(1, 9),
    d_v=st.integers(1, 9),
    block_size=st.integers(1, 45),
    num_threads=st.integers(1, 3),
    masked=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_any_shape_block_size_and_mask_match_the_full_path(
    leading, seq_q, seq_k, d_k, d_v, block_size, num_threads, masked, dtype, seed
):
    Q, K, V = qkv(leading, seq_q, seq_k, d_k, d_v, dtype, seed)
    # a random mask that broadcasts over the leading axes, with some fully masked rows
    mask = np.random.default_rng(seed).random((seq_q, seq_k)) < 0.6 if masked else None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blockwise, "PARALLEL_MIN_SCORES", float("inf"))
        expected_out, expected_weights = attend(Q, K, V, mask)
    out, out_w, weights = both_block_paths(Q, K, V, mask, block_size, num_threads)
    assert_close(out, expected_out, dtype)
    assert_close(out_w, expected_out, dtype)
    assert_close(weights, expected_weights, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num_threads", [1, 2])
@pytest.mark.parametrize(
    "leading, seq_q, seq_k",
    [
        ((4, 8), 100, 100),  # blocks of 4 or 8 whole heads
        ((2, 8), 70, 90),  # blocks of 5 + 3 heads, or all 8
    ],
)
def test_default_blocks_of_several_whole_heads_match_the_full_path(
    full_path, dtype, num_threads, leading, seq_q, seq_k
):
    """With the default block size, short sequences are processed several heads at a time."""
    total = np.prod(leading) * seq_q * seq_k
    for need_weights in (True, False):
        block_scores = blockwise.BLOCK_SCORES[need_weights]
        group, rows = blockwise._block_shape(leading[-1], seq_q, seq_k, None, total, num_threads, block_scores)
        assert group > 1 and rows == seq_q, (need_weights, group, rows)  # the case this test is about
    Q, K, V = qkv(leading, seq_q, seq_k, 8, 5, dtype, seed=8)
    rng = np.random.default_rng(8)
    mask = (rng.random(leading[:1] + (1, seq_q, seq_k)) < 0.5) & (np.arange(seq_q) % 7 != 3)[:, None]
    for m in (None, mask):
        expected = full_path(Q, K, V, m)
        assert_block_paths_match(expected, Q, K, V, m, None, num_threads, dtype)


def test_leading_axes_broadcast_like_the_full_path(full_path):
    """Keys and values shared by every head (shape (batch, 1, ...)) broadcast against queries."""
    rng = np.random.default_rng(2)
    Q = rng.standard_normal((2, 4, 9, 6))
    K = rng.standard_normal((2, 1, 13, 6))
    V = rng.standard_normal((1, 1, 13, 5))
    expected_out, expected_weights = full_path(Q, K, V)
    out, out_w, weights = both_block_paths(Q, K, V, None, 4, 2)
    assert out.shape == (2, 4, 9, 5) and weights.shape == (2, 4, 9, 13)
    assert_close(out, expected_out, np.float64)
    assert_close(weights, expected_weights, np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [0.1, 3.0, 30.0])
def test_small_and_huge_scores_alike(full_path, dtype, scale):
    """Scores up to thousands (an extremely peaked softmax): no overflow, same numbers.

    Small scores take the shortcut that skips the row maximum; huge ones must not.
    """
    Q, K, V = qkv((1, 2), 64, 64, 16, 4, dtype, seed=3, scale=scale)
    expected_out, expected_weights = full_path(Q, K, V)
    out, out_w, weights = both_block_paths(Q, K, V, None, 16, 1)
    assert np.isfinite(out).all() and np.isfinite(weights).all()
    assert_close(out, expected_out, dtype)
    assert_close(out_w, expected_out, dtype)
    assert_close(weights, expected_weights, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_values_with_small_scores_do_not_overflow(full_path, dtype):
    """The shortcut's exp(scores) @ v can overflow where weights @ v does not: it must notice."""
    Q, K, V = qkv((2,), 40, 40, 8, 3, dtype, seed=9, scale=1.0)
    V = V / np.abs(V).max() * (np.finfo(dtype).max / 8)  # |v| up to 4e37 in float32: weights @ v is fine
    mask = mhattn.causal_mask(40)
    expected_out, _ = full_path(Q, K, V, mask)
    out = blockwise_attention(Q, K, V, mask, block_size=8, num_threads=1)
    assert np.isfinite(out).all()
    assert_close(out, expected_out, dtype)


@pytest.mark.parametrize("path", [blockwise_attention, attention_in_blocks])
def test_the_max_shortcut_is_taken_exactly_when_the_scores_are_provably_small(monkeypatch, path):
    """A spy on the kernel: small inputs skip the row max, large ones keep it."""
    calls = []
    kernel = blockwise._exponentials

    def spy(scores, subtract_max=True):
        calls.append(subtract_max)
        return kernel(scores, subtract_max)

    monkeypatch.setattr(blockwise, "_exponentials", spy)
    for scale, expected in ((0.1, False), (30.0, True)):
        calls.clear()
        Q, K, V = qkv((1,), 32, 32, 16, 4, np.float32, seed=4, scale=scale)
        path(Q, K, V, block_size=8, num_threads=1)
        assert calls == [expected] * 4, (scale, calls)


def test_matches_the_independent_oracle():
    """Not just self-consistent: the block paths agree with the loop-by-loop oracle too."""
    from oracle import attention as oracle_attention

    Q, K, V = qkv((2, 2), 11, 7, 5, 3, np.float64, seed=5)
    mask = np.random.default_rng(5).random((2, 1, 11, 7)) < 0.7
    expected_out, expected_weights = oracle_attention(Q, K, V, mask)
    out, out_w, weights = both_block_paths(Q, K, V, mask, 3, 2)
    assert_close(out, expected_out, np.float64)
    assert_close(weights, expected_weights, np.float64)


def test_attend_hands_large_inputs_to_the_block_path_with_the_same_numbers(full_path, monkeypatch):
    Q, K, V = qkv((2, 2), 100, 90, 8, 8, np.float32, seed=6)
    expected_out, expected_weights = full_path(Q, K, V)
    monkeypatch.setattr(blockwise, "PARALLEL_MIN_SCORES", 1000)  # now this input counts as large
    handed = []
    monkeypatch.setattr(
        blockwise,
        "attention_in_blocks",
        lambda *args: handed.append(True) or attention_in_blocks(*args),
    )
    out, weights = attend(Q, K, V)
    assert handed == [True]
    assert_close(out, expected_out, np.float32)
    assert_close(weights, expected_weights, np.float32)


def test_inputs_are_not_modified():
    Q, K, V = qkv((2,), 20, 20, 4, 4, np.float32)
    mask = mhattn.causal_mask(20)
    copies = [a.copy() for a in (Q, K, V, mask)]
    both_block_paths(Q, K, V, mask, 3, 2)
    for before, after in zip(copies, (Q, K, V, mask), strict=True):
        np.testing.assert_array_equal(before, after)


def test_blas_thread_count_is_restored_after_a_threaded_call():
    def blas_threads():
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    before = blas_threads()
    Q, K, V = qkv((4,), 64, 64, 8, 8, np.float32)
    blockwise_attention(Q, K, V, block_size=8, num_threads=2)
    assert blas_threads() == before


def test_an_error_in_a_thread_reaches_the_caller_and_blas_threads_come_back(monkeypatch):
    def blas_threads():
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    before = blas_threads()
    calls = []

    def failing_block(*args, **kwargs):
        calls.append(True)
        if len(calls) == 3:
            raise RuntimeError("block 3 failed")

    monkeypatch.setattr(blockwise, "_attend_block", failing_block)
    Q, K, V = qkv((4,), 64, 64, 8, 8, np.float32)
    with pytest.raises(RuntimeError, match="block 3 failed"):
        blockwise_attention(Q, K, V, block_size=8, num_threads=2)
    assert blas_threads() == before


@pytest.mark.parametrize("argument", ["block_size", "num_threads"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_block_size_and_num_threads_must_be_positive_ints(argument, bad):
    Q, K, V = qkv((), 4, 4, 2, 2, np.float64)
    with pytest.raises(ValueError, match=rf"{argument} must be a positive int or None; got {bad!r}"):
        blockwise_attention(Q, K, V, **{argument: bad})


# --- through MultiHeadAttention ---------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("masking", ["none", "causal", "padding"])
def test_multihead_without_weights_matches_with_weights(full_path, dtype, masking):
    batch, seq_len, d_model, num_heads = 3, 70, 24, 4
    mha = mhattn.MultiHeadAttention(d_model, num_heads, seed=7)
    x = np.random.default_rng(7).standard_normal((batch, seq_len, d_model)).astype(dtype)
    mask = {
        "none": None,
        "causal": mhattn.causal_mask(seq_len),
        "padding": mhattn.padding_mask(np.array([70, 31, 0]), seq_len),
    }[masking]
    expected, expected_weights = mha(x, mask)
    assert expected_weights is not None
    out, weights = mha(x, mask, need_weights=False)
    assert weights is None
    assert_close(out, expected, dtype)


# --- memory -------------------------------------------------------------------------------


def test_peak_memory_stays_far_below_the_full_weight_matrix():
    """tracemalloc counts every NumPy buffer (in any thread): the peak is deterministic."""
    heads, seq_len, d_k, block_size, threads = 2, 2048, 16, 64, 2
    Q, K, V = qkv((heads,), seq_len, seq_len, d_k, d_k, np.float32)
    full_weights_bytes = heads * seq_len * seq_len * 4  # 32 MiB
    output_bytes = heads * seq_len * d_k * 4
    per_thread = block_size * seq_len * 4 + block_size * d_k * 4  # a block of scores, a block of queries
    tracemalloc.start()
    try:
        blockwise_attention(Q, K, V, block_size=block_size, num_threads=threads)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < full_weights_bytes / 20, f"peak {peak} bytes is not far below the full weights' {full_weights_bytes}"
    assert peak < output_bytes + threads * per_thread + 2 * seq_len * 8 + 64 * 1024, (
        f"peak {peak} bytes: more than the output and {threads} threads' block buffers"
    )


def test_peak_memory_grows_linearly_not_quadratically():
    """Doubling seq_len doubles the block path's peak (output and one row block), not quadruples it."""

    def peak(seq_len):
        Q, K, V = qkv((2,), seq_len, seq_len, 16, 16, np.float32)
        tracemalloc.start()
        try:
            blockwise_attention(Q, K, V, block_size=32, num_threads=1)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(1024), peak(2048)
    assert 1.6 < large / small < 2.4, (small, large)


# --- matmul on the block threads ------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape", [(3, 5, 16), (2, 700, 64), (3000, 64), (1, 4096, 256)])
def test_matmul_equals_the_at_operator(dtype, a_shape):
    """Small products stay plain `a @ b`; large ones are split by rows over threads: same numbers."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal((a_shape[-1], 96)).astype(dtype)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    got = blockwise.matmul(a, b)
    assert got.shape == a_shape[:-1] + (96,) and got.dtype == dtype
    rtol = {np.float32: 1e-5, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def test_matmul_splits_large_products_over_the_threads(monkeypatch):
    monkeypatch.setattr(blockwise, "_blas_threads", lambda: 3)
    submitted = []
    real_pool = blockwise._pool

    class SpyPool:
        def __init__(self, threads):
            self.pool = real_pool(threads)

        def submit(self, function, rows, b, out):
            submitted.append(rows.shape[0])
            return self.pool.submit(function, rows, b, out=out)

    monkeypatch.setattr(blockwise, "_pool", SpyPool)
    a = np.random.default_rng(11).standard_normal((1000, 128)).astype(np.float32)
    b = np.random.default_rng(12).standard_normal((128, 64)).astype(np.float32)
    monkeypatch.setattr(blockwise, "PARALLEL_MIN_MULTIPLY_ADDS", 1000)
    got = blockwise.matmul(a, b)
    assert sorted(submitted) == [333, 333, 334]
    np.testing.assert_allclose(got, a @ b, rtol=1e-6, atol=1e-5)
