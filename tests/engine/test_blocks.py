"""The block engine: the teaching path's numbers, in O(seq_len) memory, safe from any thread.

Every comparison uses a tolerance derived from the inputs (:func:`helpers.attention_tolerances`), never one
tuned until the suite passed.
"""

import math
import subprocess
import sys
import textwrap
import threading
import tracemalloc
from unittest import mock

import numpy as np
import pytest
from helpers import assert_refused_by_name, attention_tolerances, projected_tolerances, random_qkv, refusals
from hypothesis import given, settings
from hypothesis import strategies as st

import mhattn
from mhattn import GroupedQueryAttention, causal_mask, padding_mask, scaled_dot_product_attention
from mhattn.engine import FastMultiHeadAttention, KVCache, blocks, blockwise_attention, bounds, flash
from mhattn.engine.blocks import BLOCK_SCORES

DTYPES = [np.float16, np.float32, np.float64, np.longdouble]
rng = np.random.default_rng(20240611)


def module_tolerances(recorder, x):
    """Bounds on ``|FastMultiHeadAttention - GroupedQueryAttention|``: ``(output, weights)``.

    ``recorder`` is a :class:`_Recorder` that has just run on ``x``. Both modules compute the
    same ``Q, K, V`` (the same code), so only the heads' outputs ``H`` differ
    (:func:`helpers.projected_tolerances`).
    """
    Q, K, V, heads = recorder.seen
    return projected_tolerances(attention_tolerances(Q, K, V), heads, recorder.W_o, np.asarray(x).dtype)


class _Recorder(GroupedQueryAttention):
    """The teaching module, keeping the arrays its attention step saw."""

    def _attention(self, Q, K, V, mask, need_weights):
        heads, weights = super()._attention(Q, K, V, mask, need_weights)
        self.seen = (Q, K, V, heads)
        return heads, weights


def assert_close(actual, desired, bound):
    """``|actual - desired| <= bound`` everywhere, compared in longdouble (exact for every dtype)."""
    np.testing.assert_allclose(actual.astype(np.longdouble), desired.astype(np.longdouble), rtol=0, atol=bound)


def assert_same_as_teaching(Q, K, V, mask=None, **options):
    """Both ways of calling the engine give the teaching path's output and weights."""
    expected, expected_weights = scaled_dot_product_attention(Q, K, V, mask)
    output, weights = blockwise_attention(Q, K, V, mask, need_weights=True, **options)
    alone = blockwise_attention(Q, K, V, mask, need_weights=False, **options)
    t_output, t_weights = attention_tolerances(Q, K, V)
    for array, reference in ((output, expected), (alone, expected), (weights, expected_weights)):
        assert array.shape == reference.shape and array.dtype == reference.dtype
    assert_close(output, expected, t_output)
    assert_close(weights, expected_weights, t_weights)
    np.testing.assert_array_equal(alone, output)  # the same blocks, the same operations: the same bits
    return output, weights


# --- the same numbers as the teaching path ---------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block_size", [None, 1, 3, 1000])
@pytest.mark.parametrize("seq_q, seq_k", [(7, 7), (5, 11), (12, 3)])
def test_equals_the_teaching_path_for_every_dtype_block_size_and_cross_shape(dtype, block_size, seq_q, seq_k):
    Q, K, V = random_qkv(rng, (2, 3, seq_q, 8), seq_k, d_v=5, dtype=dtype)
    assert_same_as_teaching(Q, K, V, block_size=block_size)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 1e3])
def test_small_and_huge_scores_with_fully_masked_rows(dtype, scale):
    """Both branches of the max shortcut (taken only for provably small scores), with masked rows."""
    scale = min(scale, 200.0) if dtype == np.float16 else scale  # float16's largest value is 65504
    Q, K, V = random_qkv(rng, (2, 2, 9, 4), 9, dtype=dtype, scale=scale)
    mask = causal_mask(9) & (np.arange(9) != 4)[:, None]  # query 4 may attend to nothing
    output, weights = assert_same_as_teaching(Q, K, V, mask, block_size=2)
    assert not output[..., 4, :].any() and not weights[..., 4, :].any()
    assert not weights[..., ~mask].any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.longdouble])
def test_masked_keys_get_nothing_however_negative_the_allowed_scores(dtype):
    """Filling masked scores with -1e9 instead of -inf would let masked keys win here."""
    d_k = 4
    q = np.zeros((1, d_k), dtype=dtype)
    q[0, 0] = 1e5
    K = np.zeros((6, d_k), dtype=dtype)
    K[:3, 0] = -1e5  # allowed keys: scores of -5e9
    V = np.arange(6 * 2, dtype=dtype).reshape(6, 2)
    mask = np.array([[True, True, True, False, False, False]])
    output, weights = assert_same_as_teaching(q, K, V, mask)
    np.testing.assert_array_equal(weights, np.array([[1, 1, 1, 0, 0, 0]], dtype=dtype) / 3)
    # Three products and two sums, each rounded once: 5 eps relative at most.
    np.testing.assert_allclose(output, V[:3].mean(axis=0, keepdims=True), rtol=5 * np.finfo(dtype).eps)
    no_keys = blockwise_attention(q, K, V, np.zeros((1, 6), dtype=bool))
    assert not no_keys.any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [-60.0, 60.0])
def test_scores_near_the_shortcut_bound(dtype, size):
    """Every score near +-60: no max subtraction in float32, yet no overflow or underflow."""
    d_k, seq_k = 16, 4096
    a = math.sqrt(abs(size) / math.sqrt(d_k))  # q = a * ones, k = +-a * ones: q . k / sqrt(d_k) = +-size
    Q = np.full((3, d_k), a, dtype=dtype)
    K = np.full((seq_k, d_k), math.copysign(a, size), dtype=dtype)
    K[::2] *= 0.99  # not all scores equal
    V = rng.standard_normal((seq_k, 3)).astype(dtype)
    assert_same_as_teaching(Q, K, V)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_max_shortcut_is_taken_exactly_when_the_scores_are_provably_small(monkeypatch, dtype):
    """Small scores skip the max subtraction, scores beyond the proven bound do not: both agree."""
    taken = []
    original = blocks._softmax_

    def spy(scores, subtract_max, **options):
        taken.append(subtract_max)
        return original(scores, subtract_max, **options)

    monkeypatch.setattr(blocks, "_softmax_", spy)
    limit = bounds.safe_exponent(np.float32 if dtype == np.float16 else dtype, 9)
    for scale, subtracts in ((1.0, False), (2 * limit + 2, True)):
        Q = np.zeros((9, 4), dtype=dtype)
        Q[:, 0] = scale  # every |q . k| / sqrt(d_k) <= scale / 2 (Cauchy-Schwarz with |k| <= 1)
        K = np.eye(9, 4, dtype=dtype)
        taken.clear()
        assert_same_as_teaching(Q, K, K)
        assert taken == [subtracts, subtracts]  # with and without weights


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_causal_and_padding_masks_on_four_dimensional_inputs(dtype):
    Q, K, V = random_qkv(rng, (3, 2, 10, 8), 10, dtype=dtype)
    padding = padding_mask([10, 4, 0], 10)  # (3, 1, 1, 10); the last sequence is all padding
    for mask in (causal_mask(10), padding, padding & causal_mask(10)):
        output, _ = assert_same_as_teaching(Q, K, V, mask, block_size=3)
    assert not output[2].any()


def test_default_blocks_of_many_rows_and_of_several_whole_heads():
    """Both shapes of default block: rows of one head (long sequences), whole heads (short ones)."""
    long_q = 2 * BLOCK_SCORES // 300 + 5  # a head's scores fill two blocks and a bit
    Q, K, V = random_qkv(rng, (1, 2, long_q, 8), 300, dtype=np.float32)
    assert_same_as_teaching(Q, K, V, causal_mask(long_q)[:, :300])
    Q, K, V = random_qkv(rng, (2, 37, 20, 8), 20, dtype=np.float32)  # 37 heads of 400 scores, in groups
    assert_same_as_teaching(Q, K, V)


def test_leading_axes_broadcast_like_the_teaching_path():
    Q = rng.standard_normal((2, 3, 6, 4))
    K = rng.standard_normal((1, 3, 5, 4))
    V = rng.standard_normal((2, 1, 5, 7))
    assert_same_as_teaching(Q, K, V, block_size=4)
    assert_same_as_teaching(Q[0, 0], K[0, 0], V[0, 0])  # 2-D


@pytest.mark.parametrize("seq_q, seq_k", [(0, 4), (4, 0), (0, 0)])
def test_empty_query_or_key_axes_follow_the_teaching_path(seq_q, seq_k):
    Q, K, V = np.ones((2, seq_q, 3)), np.ones((2, seq_k, 3)), np.ones((2, seq_k, 2))
    expected, expected_weights = scaled_dot_product_attention(Q, K, V)
    output, weights = blockwise_attention(Q, K, V, need_weights=True)
    np.testing.assert_array_equal(output, expected)
    np.testing.assert_array_equal(weights, expected_weights)


@settings(max_examples=60, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    seq_q=st.integers(1, 20),
    seq_k=st.integers(1, 20),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 4),
    block_size=st.one_of(st.none(), st.integers(1, 25)),
    dtype=st.sampled_from(DTYPES),
    log_scale=st.floats(-3, 3),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_shape_block_size_dtype_and_mask_match_the_teaching_path(
    lead, seq_q, seq_k, d_k, d_v, block_size, dtype, log_scale, masked, seed
):
    gen = np.random.default_rng(seed)
    Q = (10**log_scale * gen.standard_normal((*lead, seq_q, d_k))).astype(dtype)
    K = gen.standard_normal((*lead, seq_k, d_k)).astype(dtype)
    V = gen.standard_normal((*lead, seq_k, d_v)).astype(dtype)
    mask = gen.random((seq_q, seq_k)) < 0.6 if masked else None
    assert_same_as_teaching(Q, K, V, mask, block_size=block_size)


# --- overflow: the same numbers with and without weights, or a clear error ------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_values_give_the_same_numbers_with_and_without_weights(dtype):
    """exp(scores) @ V would overflow before the division by the row sums; weights @ V cannot."""
    big = float(np.finfo(dtype).max) / 8
    Q, K, _ = random_qkv(rng, (2, 300, 8), 300, dtype=dtype, scale=0.01)  # small scores: the max shortcut
    V = np.full((2, 300, 4), big, dtype=dtype)
    V[:, ::3] *= -0.5
    output = assert_same_as_teaching(Q, K, V)[0]
    assert np.isfinite(output).all()


@pytest.mark.parametrize("sign", [1, -1])
def test_scores_that_overflow_raise_a_clear_error(sign):
    """+inf scores would give NaN; a row of -inf scores would pass for a fully masked row (zeros)."""
    Q = np.full((2, 4), 1e20, dtype=np.float32)  # |q . k| / sqrt(d_k) = 2e40 > 3.4e38
    for need_weights in (True, False):
        with pytest.raises(FloatingPointError, match="overflow"):
            blockwise_attention(Q, sign * Q, np.ones((2, 3), dtype=np.float32), need_weights=need_weights)


def test_scores_that_overflow_only_where_masked_are_fine():
    Q = np.full((2, 4), 1e20, dtype=np.float32)
    K = np.concatenate([Q, np.ones((3, 4), dtype=np.float32)])  # keys 0, 1 overflow, and are masked
    V = rng.standard_normal((5, 3)).astype(np.float32)
    mask = np.array([[False, False, True, True, True]])  # (seq_q or 1, seq_k)
    expected, _ = scaled_dot_product_attention(Q, K, V, mask)
    output = blockwise_attention(Q, K, V, mask)
    assert_close(output, expected, attention_tolerances(Q, K[2:], V[2:])[0])  # the keys that count


def test_float16_is_computed_in_float32():
    """float16 alone cannot hold exp(11.1) or sum 70000 weights; the result is float16 all the same."""
    Q, K, V = random_qkv(rng, (1, 256, 8), 4096, dtype=np.float16, scale=4.0)  # rows of 4096 weights
    output, weights = blockwise_attention(Q, K, V, need_weights=True)
    assert output.dtype == weights.dtype == np.float16
    exact, exact_weights = scaled_dot_product_attention(*(a.astype(np.float64) for a in (Q, K, V)))
    t_output, t_weights = attention_tolerances(Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32))
    half = float(np.finfo(np.float16).eps)
    max_v = float(np.abs(V).max())
    np.testing.assert_allclose(output, exact, rtol=0, atol=t_output + half * max_v)
    np.testing.assert_allclose(weights, exact_weights, rtol=0, atol=t_weights + half)


def test_a_weight_that_overflows_float32_is_a_clear_error():
    mha = FastMultiHeadAttention(8, 2)
    W_qkv = mha.W_qkv.copy()
    W_qkv[0, 0] = 1e39  # finite in float64, inf in float32
    mha.W_qkv = W_qkv
    x = rng.standard_normal((1, 3, 8))
    mha(x)  # float64: fine
    with pytest.raises(ValueError, match="W_qkv"):
        mha(x.astype(np.float32))


def test_module_inputs_that_overflow_raise_a_clear_error():
    x = np.full((1, 4, 8), 1e21, dtype=np.float32)  # projections ~1e21 fit float32, scores ~1e42 do not
    for need_weights in (True, False):
        with pytest.raises(FloatingPointError, match="overflow"):
            FastMultiHeadAttention(8, 2)(x, need_weights=need_weights)


# --- FastMultiHeadAttention is GroupedQueryAttention ----------------------------------------


def assert_module_matches(kwargs, x, mask=None, **call):
    """FastMultiHeadAttention(**kwargs) gives GroupedQueryAttention(**kwargs)'s output and weights."""
    modules = GroupedQueryAttention(**kwargs), FastMultiHeadAttention(**kwargs), _Recorder(**kwargs)
    output, expected, t_output = assert_modules_agree(modules, x, mask, **call)
    # Without weights: query blocks for these short keys, and key tiles (flash) when a tile holds 4 keys.
    for key_tile in (flash.KEY_TILE, 4):
        with mock.patch.object(flash, "KEY_TILE", key_tile):
            alone, none = modules[1](x, mask, need_weights=False, **call)
        assert none is None and alone.dtype == expected.dtype and alone.shape == expected.shape
        assert_close(alone, expected, t_output)
    return output


def assert_modules_agree(modules, x, mask=None, caches=(None, None, None), **call):
    """The teaching, the fast and the recording module (each with its own KV cache or None) agree."""
    teaching, fast, recorder = modules
    recorder(x, mask, kv_cache=caches[2], **call)
    t_output, t_weights = module_tolerances(recorder, x)
    expected, expected_weights = teaching(x, mask, kv_cache=caches[0], **call)
    output, weights = fast(x, mask, kv_cache=caches[1], **call)
    assert output.dtype == expected.dtype and output.shape == expected.shape
    assert weights.dtype == expected_weights.dtype and weights.shape == expected_weights.shape
    assert_close(output, expected, t_output)
    assert_close(weights, expected_weights, t_weights)
    return output, expected, t_output


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("masking", ["none", "causal", "padding"])
def test_fast_module_equals_the_teaching_module(dtype, masking):
    x = rng.standard_normal((3, 11, 12)).astype(dtype)
    mask = {"none": None, "causal": causal_mask(11), "padding": padding_mask([11, 5, 0], 11)}[masking]
    output = assert_module_matches({"d_model": 12, "num_heads": 3}, x, mask)
    if masking == "padding":
        assert not output[2].any()  # a sequence of padding only: every query sees nothing


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_module_with_huge_scores_and_sequences_of_padding_only(dtype):
    """Scores in the thousands (no max shortcut) and whole sequences that may see nothing."""
    x = (300 * rng.standard_normal((3, 11, 12))).astype(dtype)
    output = assert_module_matches({"d_model": 12, "num_heads": 3}, x, padding_mask([11, 1, 0], 11))
    assert not output[2].any()


def test_fast_module_with_grouped_queries():
    x = rng.standard_normal((2, 9, 16)).astype(np.float32)
    assert_module_matches({"d_model": 16, "num_heads": 4, "num_kv_heads": 2, "seed": 3}, x, causal_mask(9))


def test_fast_module_with_cross_attention():
    x, context = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 13, 8))
    assert_module_matches({"d_model": 8, "num_heads": 2}, x, context=context)


def test_fast_module_with_a_kv_cache():
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    kwargs = {"d_model": 8, "num_heads": 2}
    modules = GroupedQueryAttention(**kwargs), FastMultiHeadAttention(**kwargs), _Recorder(**kwargs)
    caches = KVCache(), KVCache(), KVCache()
    for t in range(5):  # one token at a time, each attending to all before it
        assert_modules_agree(modules, x[:, t : t + 1], caches=caches)


FAST_MODULES = {
    "constructor": lambda: FastMultiHeadAttention(d_model=16, num_heads=4),
    "from_weights": lambda: FastMultiHeadAttention.from_weights(
        *np.random.default_rng(0).standard_normal((4, 16, 16)), num_heads=4, layout="mhattn"
    ),
}


@pytest.mark.parametrize("built_by", sorted(FAST_MODULES))
def test_the_fast_modules_repr_names_its_own_class(built_by):
    module = FAST_MODULES[built_by]()
    assert type(module) is FastMultiHeadAttention
    assert repr(module).startswith("FastMultiHeadAttention(d_model=16, num_heads=4, ")


# --- memory -------------------------------------------------------------------------------


def peak_bytes(mha, x):
    tracemalloc.start()
    try:
        mha(x, need_weights=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_without_weights_grows_linearly_with_seq_len():
    """Peak = a * seq_len + b with b (one block of scores) >= 0, so 4x seq_len costs at most 4x."""
    mha = FastMultiHeadAttention(32, 4)
    short, long = 1024, 4096  # both beyond one block of scores
    x = rng.standard_normal((1, long, 32)).astype(np.float32)
    peak_short, peak_long = peak_bytes(mha, x[:, :short]), peak_bytes(mha, x)
    assert peak_long <= 4 * peak_short
    weights_bytes = 4 * long * long * 4  # (1, 4, long, long) float32
    assert peak_long < weights_bytes / 8


# --- threads, processes, interpreter shutdown ---------------------------------------------

# A module and an input whose scores fill several blocks, as one line of Python for the subprocesses.
LARGE = "FastMultiHeadAttention(64, 4, seed=1), np.random.default_rng(0).standard_normal((2, 1024, 64), np.float32)"


def run_python(script, timeout=120):
    """Run ``script`` in a fresh interpreter; a hang fails the test instead of hanging it."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=timeout
    )


def test_a_forked_child_can_run_a_large_forward():
    """The old engine's thread pool was dead in a forked child: its next large forward hung forever."""
    result = run_python(f"""
        import os, signal, sys
        import numpy as np
        from mhattn.engine import FastMultiHeadAttention
        mha, x = {LARGE}
        expected = mha(x, need_weights=False)[0]
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # a hang ends the child (exit status: killed by SIGALRM)
            output = mha(x, need_weights=False)[0]
            os._exit(0 if np.array_equal(output, expected) else 3)
        sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """)
    assert result.returncode == 0, result.stderr


def test_a_forward_from_an_atexit_handler_works():
    result = run_python(f"""
        import atexit
        import numpy as np
        from mhattn.engine import FastMultiHeadAttention
        mha, x = {LARGE}

        def at_exit():
            print("finite" if np.isfinite(mha(x, need_weights=False)[0]).all() else "not finite")

        atexit.register(at_exit)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "finite"


def test_a_worker_thread_gets_the_same_numbers_and_no_thread_is_left_behind():
    """The engine runs on the caller's thread: the same blocks, the same BLAS calls, the same bits."""
    mha = FastMultiHeadAttention(64, 4, seed=1)
    x = rng.standard_normal((2, 1024, 64)).astype(np.float32)
    threads_before = threading.active_count()
    on_main = [mha(x, need_weights=need_weights)[0] for need_weights in (False, True)]
    on_worker = []
    worker = threading.Thread(target=lambda: on_worker.extend(mha(x, need_weights=nw)[0] for nw in (False, True)))
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive()
    for a, b in zip(on_main, on_worker, strict=True):
        np.testing.assert_array_equal(a, b)
    assert threading.active_count() == threads_before


# --- arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", np.float64(2.0)])
def test_block_size_must_be_a_positive_int(bad):
    Q = np.ones((3, 2))
    with pytest.raises((TypeError, ValueError), match="block_size"):
        blockwise_attention(Q, Q, Q, block_size=bad)


def test_numpy_integer_block_size_is_fine():
    Q, K, V = random_qkv(rng, (5, 4), 6)
    np.testing.assert_array_equal(
        blockwise_attention(Q, K, V, block_size=np.int64(2)), blockwise_attention(Q, K, V, block_size=2)
    )


@pytest.mark.parametrize("bad", ["no", 0, None])
def test_need_weights_must_be_a_bool(bad):
    Q = np.ones((3, 2))
    with pytest.raises(TypeError, match="need_weights"):
        blockwise_attention(Q, Q, Q, need_weights=bad)
    with pytest.raises(TypeError, match="need_weights"):
        FastMultiHeadAttention(2, 1)(Q[None], need_weights=bad)


@pytest.mark.parametrize(
    "shapes, mask, message",
    [
        (((3, 4), (5, 3), (5, 2)), None, "d_k"),
        (((3, 4), (5, 4), (6, 2)), None, "seq_k"),
        (((2, 3, 4), (3, 5, 4), (3, 5, 2)), None, "broadcast"),
        (((2, 3, 4), (2, 5, 4), (2, 5, 2)), np.ones((2, 1, 5), dtype=bool)[:, 0], "mask"),
    ],
)
def test_bad_arrays_are_rejected_like_the_teaching_path(shapes, mask, message):
    arrays = [np.ones(shape) for shape in shapes]
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*arrays, mask)
    with pytest.raises(ValueError, match=message):
        blockwise_attention(*arrays, mask)


def test_inputs_are_left_untouched():
    Q, K, V = random_qkv(rng, (2, 40, 8), 40, dtype=np.float32)
    copies = [a.copy() for a in (Q, K, V)]
    blockwise_attention(Q, K, V, causal_mask(40), block_size=3, need_weights=True)
    for a, b in zip((Q, K, V), copies, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_engine_and_production_names_are_exported_at_top_level():
    for name in ("FastMultiHeadAttention", "KVCache", "blockwise_attention", "flash_attention"):
        assert getattr(mhattn, name) is getattr(mhattn.engine, name)


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.blockwise_attention,
        dict(Q=np.random.default_rng(0).standard_normal((3, 4)), K=np.random.default_rng(0).standard_normal((5, 4)),
             V=np.random.default_rng(0).standard_normal((5, 4))),
        mask=[np.full((3, 5), 1.0)]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
