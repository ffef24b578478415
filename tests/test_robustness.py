"""What a user hits at the edges of the teaching path: float16, overflow, empty axes, other
libraries' mask layouts, odd seeds and sizes, ragged lists, threads.

Each test here failed on the first edition (issue 9) and states the decision taken.
"""

import re
import threading

import numpy as np
import pytest

import mhattn
from mhattn import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention, softmax


def raises(error, message):
    return pytest.raises(error, match=re.escape(message))


# --- float16: computed in float32, returned as float16 (as PyTorch does on the CPU) -----------


def test_softmax_of_many_float16_zeros_still_sums_to_one():
    weights = softmax(np.zeros(70000, np.float16))  # in float16 alone, each exp(0) / 70000 sum overflowed
    assert weights.dtype == np.float16
    # 70000 equal weights of 1/70000 = 1.43e-5, below float16's smallest normal (6.1e-5): each is rounded
    # once to a subnormal, whose spacing is 2**-24, so each is off by at most 2**-25 and the sum by 70000 * 2**-25.
    assert abs(weights.astype(np.float64).sum() - 1) <= 70000 * 2**-25
    assert weights.astype(np.float64).sum() > 0.99  # the first edition's float16 sum gave all zeros


def test_float16_attention_is_as_accurate_as_one_rounding_to_float16():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((2, 3, 40, 16)).astype(np.float16) for _ in range(3))
    output, weights = scaled_dot_product_attention(Q, K, V, causal_mask(40))
    assert output.dtype == weights.dtype == np.float16
    exact = [a.astype(np.float64) for a in (Q, K, V)]
    exact_output, exact_weights = scaled_dot_product_attention(*exact, causal_mask(40))
    # float32 arithmetic adds ~seq_k * eps32 relative error, far below the final rounding to float16:
    # each result is within half a float16 spacing of the exact one (one ulp allows for the float32 part).
    for got, exact in ((output, exact_output), (weights, exact_weights)):
        spacing = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(got.astype(np.float64) - exact) <= spacing + 40 * 2**-23 * np.abs(exact).max())


def test_float16_module_returns_float16_close_to_float32():
    mha = MultiHeadAttention(32, 4, seed=1)
    x = np.random.default_rng(1).standard_normal((2, 10, 32)).astype(np.float16)
    output, weights = mha(x, causal_mask(10))
    assert output.dtype == weights.dtype == np.float16
    reference, _ = mha(x.astype(np.float32), causal_mask(10))
    spacing = np.spacing(np.abs(reference).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(output.astype(np.float32) - reference) <= spacing)


# --- overflow: finite input, non-finite result -> a clear error, never a silent NaN -----------


def test_scores_that_overflow_float32_raise_instead_of_returning_nan():
    Q = np.full((1, 4, 8), 1e20, np.float32)  # q.k = 8e40 > float32's 3.4e38
    with pytest.raises(FloatingPointError, match="overflowed float32.*compute in float64"):
        scaled_dot_product_attention(Q, Q, np.ones((1, 4, 2), np.float32))
    output, _ = scaled_dot_product_attention(Q.astype(np.float64), Q.astype(np.float64), np.ones((1, 4, 2)))
    np.testing.assert_array_equal(output, 1.0)  # the same input in float64 is fine


def test_huge_scores_and_a_fully_masked_row_together():
    """The -1e9-for--inf slip: huge scores with an empty row must give zeros there, exact weights elsewhere."""
    Q = np.array([[[1e6, 0.0], [1e6, 0.0], [-1e6, 0.0]]])  # scores ~ +-7e11: far beyond -1e9
    V = np.array([[[1.0], [2.0], [3.0]]])
    mask = np.array([[True, False, False], [False, False, False], [True, True, True]])
    output, weights = scaled_dot_product_attention(Q, Q, V, mask)
    np.testing.assert_array_equal(weights[0, 1], 0.0)  # empty row: nothing, not spread over masked keys
    np.testing.assert_array_equal(output[0, 1], 0.0)
    np.testing.assert_array_equal(weights[0, 0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(weights[0, 2], [0.0, 0.0, 1.0])  # the largest score, q.k = +1e12, wins outright


def test_a_weight_finite_in_float64_but_not_in_float32_is_caught_after_the_cast():
    mha = MultiHeadAttention(8, 2)
    mha.W_o = np.full((8, 8), 1e39)  # finite in float64, inf in float32
    mha(np.ones((1, 3, 8)))  # float64 input: fine
    with raises(ValueError, "W_o overflows float32: its largest entry 1e+39 is finite in float64 but not in float32"):
        mha(np.ones((1, 3, 8), np.float32))


# --- empty axes: an empty result, following the fully-masked-row rule ------------------------


def test_no_queries_give_an_empty_output_and_no_keys_give_zeros():
    Q, K, V = np.ones((2, 0, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 3))
    output, weights = scaled_dot_product_attention(Q, K, V)
    assert output.shape == (2, 0, 3) and weights.shape == (2, 0, 5)
    output, weights = scaled_dot_product_attention(np.ones((2, 3, 4)), np.ones((2, 0, 4)), np.ones((2, 0, 3)))
    np.testing.assert_array_equal(output, np.zeros((2, 3, 3)))  # a query with no key receives nothing
    assert weights.shape == (2, 3, 0)
    assert softmax(np.zeros((3, 0))).shape == (3, 0)


def test_an_empty_sequence_through_the_module():
    output, weights = MultiHeadAttention(8, 2)(np.zeros((1, 0, 8)))
    assert output.shape == (1, 0, 8) and weights.shape == (1, 2, 0, 0)


def test_zero_depth_is_named_not_a_division_by_zero():
    with raises(ValueError, "Q and K must have depth d_k >= 1 (last axis), to divide by sqrt(d_k); got Q (2, 3, 0)"):
        scaled_dot_product_attention(np.ones((2, 3, 0)), np.ones((2, 3, 0)), np.ones((2, 3, 1)))


# --- masks in other libraries' layouts are refused, not applied to the wrong axes -------------


def test_the_annotated_transformers_mask_layout_masks_sequences_in_the_module_and_is_refused_by_attention():
    batch = 4  # == num_heads, so NumPy alone would silently broadcast batch onto the heads
    mha = MultiHeadAttention(8, 4)
    lengths = [6, 4, 2, 1]
    annotated = np.arange(6) < np.array(lengths)[:, None, None]  # (batch, 1, seq): the Annotated Transformer's
    x = np.random.default_rng(0).standard_normal((batch, 6, 8))
    np.testing.assert_array_equal(mha(x, annotated)[1], mha(x, padding_mask(lengths, 6))[1])  # batch, not heads
    Q = np.ones((batch, 4, 6, 2))  # scaled_dot_product_attention's mask follows the scores' axes: refused there
    with pytest.raises(ValueError, match=r"mask of shape \(4, 1, 6\) does not fit .* padding_mask"):
        scaled_dot_product_attention(Q, Q, Q, annotated)


def test_a_batch_by_seq_mask_is_refused_when_batch_differs_from_seq():
    with pytest.raises(ValueError, match=r"mask of shape \(2, 6\) does not fit scores of shape \(2, 2, 6, 6\)"):
        MultiHeadAttention(8, 2)(np.ones((2, 6, 8)), np.ones((2, 6), dtype=bool))


def test_padding_mask_layout_is_accepted_and_means_what_it_says():
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(0).standard_normal((2, 5, 8))
    _, weights = mha(x, padding_mask([5, 2], 5))
    np.testing.assert_array_equal(weights[1, :, :, 2:], 0.0)
    assert np.all(weights[0] > 0)


# --- sizes, seeds, flags, lists ---------------------------------------------------------------


@pytest.mark.parametrize(
    "seed, error, message",
    [
        (-1, ValueError, "seed must be an int in [0, 2**32 - 1]; got -1"),
        (2**32, ValueError, "seed must be an int in [0, 2**32 - 1]; got 4294967296"),
        (1.5, TypeError, "seed must be an int in [0, 2**32 - 1]; got 1.5 of type float"),
        (True, TypeError, "seed must be an int in [0, 2**32 - 1]; got True of type bool"),
    ],
)
def test_bad_seeds_are_named(seed, error, message):
    with raises(error, message):
        MultiHeadAttention(8, 2, seed=seed)


def test_numpy_integer_seeds_work_and_match_python_ints():
    np.testing.assert_array_equal(MultiHeadAttention(8, 2, seed=np.uint32(7)).W_o, MultiHeadAttention(8, 2, seed=7).W_o)


def test_an_impossible_model_size_is_refused_before_any_allocation():
    with pytest.raises(ValueError, match="d_model = 1180591620717411303424 needs .* GiB of float64 weights"):
        MultiHeadAttention(2**70, 2**70)


def test_the_non_divisor_message_lists_only_small_head_counts():
    """The first edition listed every divisor of d_model: O(d_model) work, 2.6 s at d_model = 1e8."""
    with raises(ValueError, "num_heads must divide d_model = 100000000; got num_heads = 7. "
                            "Head counts up to 64 that work: [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64]"):
        MultiHeadAttention(10**8, 7)


def test_need_weights_must_be_a_bool():
    with raises(TypeError, "need_weights must be True or False; got 'no' of type str"):
        MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), need_weights="no")


def test_numpy_bool_need_weights_is_fine():
    assert MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), need_weights=np.False_)[1] is None


@pytest.mark.parametrize("call", ["module", "softmax"])
def test_ragged_lists_are_named(call):
    ragged = [[[1.0, 2.0], [3.0]]]
    with raises(ValueError, "x must be a rectangular array of numbers; got a ragged nested sequence"):
        MultiHeadAttention(2, 1)(ragged) if call == "module" else softmax(ragged)


def test_softmax_of_a_scalar_says_what_it_needs():
    with raises(ValueError, "x must have at least one axis (the scores to normalise); got a scalar 3.0"):
        softmax(3.0)


def test_a_wrong_keyword_names_the_function():
    with raises(TypeError, "MultiHeadAttention.forward(): got an unexpected keyword argument 'need_weight'"):
        MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), need_weight=False)


# --- threads: the checks' thread-local state never leaks between callers --------------------


def test_concurrent_calls_from_many_threads_give_the_serial_results_and_errors():
    mha = MultiHeadAttention(16, 4)
    inputs = [np.random.default_rng(seed).standard_normal((2, 7, 16)) for seed in range(8)]
    expected = [mha(x)[0] for x in inputs]
    results, errors = {}, {}
    barrier = threading.Barrier(16)

    def good(index):
        barrier.wait()
        for _ in range(20):
            results[index] = mha(inputs[index])[0]

    def bad(index):
        barrier.wait()
        for _ in range(20):
            try:
                mha(np.ones((2, 7, 15)))
            except ValueError as error:
                errors[index] = str(error)

    threads = [threading.Thread(target=good, args=(i,)) for i in range(8)]
    threads += [threading.Thread(target=bad, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index in range(8):
        np.testing.assert_array_equal(results[index], expected[index])
        assert errors[index].startswith("x must have shape (batch, seq_len, d_model=16)")


def test_the_teaching_modules_do_not_import_the_engine():
    import ast
    from pathlib import Path

    for name in ("softmax", "attention", "masks", "heads", "multihead", "grad", "_checks"):
        path = Path(mhattn.__file__).parent / f"{name}.py"
        if not path.exists():
            continue
        imported = [
            node.module or "" for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)
        ]
        assert not [m for m in imported if "engine" in m or "blockwise" in m], f"{name}.py imports the engine"


def test_weights_reassigned_while_another_thread_runs_float32_forwards_are_used_from_then_on():
    """The first edition cached float32 casts; a reassignment racing a forward could keep the old ones for good."""
    mha = MultiHeadAttention(16, 4)
    x = np.random.default_rng(2).standard_normal((2, 9, 16)).astype(np.float32)
    stop = threading.Event()

    def keep_calling():
        while not stop.is_set():
            mha(x)

    worker = threading.Thread(target=keep_calling)
    worker.start()
    try:
        for seed in range(20):
            new = MultiHeadAttention(16, 4, seed=seed)
            mha.W_qkv, mha.W_o = new.W_qkv, new.W_o
    finally:
        stop.set()
        worker.join()
    np.testing.assert_array_equal(mha(x)[0], new(x)[0])


def test_a_call_leaves_no_threads_and_no_process_state_behind():
    from threadpoolctl import threadpool_info

    before_threads, before_blas = threading.active_count(), threadpool_info()
    before_errstate = np.geterr()
    MultiHeadAttention(64, 4)(np.ones((2, 300, 64), np.float32))
    assert threading.active_count() == before_threads
    assert threadpool_info() == before_blas
    assert np.geterr() == before_errstate


@pytest.mark.parametrize("not_a_cache", [[], {}, "cache"])
def test_kv_cache_must_be_a_kv_cache_not_anything_with_an_extend(not_a_cache):
    with pytest.raises(TypeError, match=r"kv_cache must be an mhattn.KVCache\(\); got "):
        MultiHeadAttention(8, 2)(np.ones((1, 1, 8)), kv_cache=not_a_cache)


def test_the_engine_and_production_names_are_exported_at_top_level():
    for name in ("FastMultiHeadAttention", "KVCache", "blockwise_attention", "flash_attention"):
        assert getattr(mhattn, name) is getattr(mhattn.engine, name)


def test_a_float16_result_beyond_65504_raises_instead_of_returning_inf():
    mha = MultiHeadAttention(16, 4)
    mha.W_o = mha.W_o * 1000
    x = (np.random.default_rng(0).standard_normal((1, 3, 16)) * 100).astype(np.float16)
    assert np.abs(mha(x.astype(np.float32))[0]).max() > 65504  # finite in float32, not in float16
    with pytest.raises(FloatingPointError, match="overflowed float16.*compute in float32"):
        mha(x)


def test_user_code_running_inside_a_call_is_still_checked():
    """A subclass's hook runs inside forward; its own calls must get the full treatment (defaults, checks)."""

    class WithDropout(MultiHeadAttention):
        def _attention(self, Q, K, V, mask, need_weights):
            return scaled_dot_product_attention(Q, K, V, mask, dropout_p=self.dropout_p)

    mha = WithDropout(8, 2)
    mha.dropout_p = 0.5
    output, weights = mha(np.ones((1, 4, 8)))  # the default rng is made for it
    assert set(np.unique(weights)) <= {0.0, 0.5}  # uniform weights 1/4, kept ones doubled
    mha.dropout_p = 1.5
    with raises(ValueError, "dropout_p must be a float in [0, 1); got 1.5"):
        mha(np.ones((1, 4, 8)))


def test_a_failed_decoding_step_leaves_the_cache_as_it_was():
    mha = MultiHeadAttention(8, 2)
    cache = mhattn.KVCache()
    x = np.random.default_rng(3).standard_normal((1, 6, 8))
    mha(x[:, :2], kv_cache=cache)
    good_W_qkv = mha.W_qkv
    mha.W_qkv = good_W_qkv * 1e160  # scores ~ 1e320 overflow float64, after the step's keys were cached
    with pytest.raises(FloatingPointError):
        mha(x[:, 2:5], kv_cache=cache)
    assert len(cache) == 2
    mha.W_qkv = good_W_qkv
    stepwise = np.concatenate([mha(x[:, 2:5], kv_cache=cache)[0], mha(x[:, 5:], kv_cache=cache)[0]], axis=1)
    np.testing.assert_allclose(stepwise, mha(x, causal_mask(6))[0][:, 2:], rtol=0, atol=1e-13)


@pytest.mark.parametrize("call", ["attention", "module"])
def test_scores_overflowing_to_minus_infinity_raise_instead_of_looking_masked(call):
    """q.k = -8e40: every allowed score is -inf in float32, which looked like a fully masked row (zeros)."""
    Q = np.full((1, 3, 8), 1e20, np.float32)
    if call == "attention":
        with pytest.raises(FloatingPointError, match="overflowed float32.*a score"):
            scaled_dot_product_attention(Q, -Q, np.ones((1, 3, 2), np.float32))
        return
    mha = MultiHeadAttention(8, 2)
    mha.W_qkv = np.hstack([np.eye(8), -np.eye(8), np.eye(8)]) * 1e10  # K = -Q, both ~1e10 x
    with pytest.raises(FloatingPointError, match="overflowed float32.*a score"):
        mha(np.full((1, 3, 8), 1e10, np.float32))
    mha(np.full((1, 3, 8), 1e10))  # float64 holds the scores (~1e41): no error
