"""MultiHeadAttention: the fused module against per-head loops and the reference formula.

The seed class (forward, split_heads, combine_heads) is tested here; the features of the full
layer (need_weights, vjp, RoPE attributes) on :class:`mhattn.GroupedQueryAttention`, which has
the same weights and numbers for the same seed.
"""

import math
import threading
import warnings

import numpy as np
import oracle
import pytest
from helpers import assert_refused_by_name, close_in, raises, refusals, small_module

import mhattn
from mhattn import (
    GroupedQueryAttention,
    MultiHeadAttention,
    RotaryMultiHeadAttention,
    causal_mask,
    padding_mask,
    softmax,
)


def seed_oracle(x, W_qkv, W_o, num_heads, mask=None):
    """The seed module written out once more in NumPy, the same operations in the same order."""
    batch, seq_len, d_model = x.shape
    d_k = d_model // num_heads
    qkv = x @ W_qkv  # (batch, seq, 3 d_model)
    Q, K, V = (
        qkv[..., i * d_model : (i + 1) * d_model].reshape(batch, seq_len, num_heads, d_k).transpose(0, 2, 1, 3)
        for i in range(3)
    )  # (batch, heads, seq, d_k) each
    scores = (Q / np.sqrt(x.dtype.type(d_k))) @ K.swapaxes(-1, -2)  # (batch, heads, seq, seq)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    exps = np.exp(scores - np.where(np.isneginf(top), 0.0, top))
    total = exps.sum(axis=-1, keepdims=True)
    weights = exps / np.where(total > 0, total, 1.0)
    heads = (weights @ V).transpose(0, 2, 1, 3).reshape(batch, seq_len, d_model)  # (batch, seq, d_model)
    return heads @ W_o, weights


def reference_example():
    """The reference section's worked example, recomputed from its formulas with nothing from mhattn."""
    np.random.seed(123)
    x = np.random.randn(1, 6, 64)
    np.random.seed(42)
    scale = math.sqrt(2.0 / 64)
    W_qkv = np.random.randn(64, 192) * scale
    W_o = np.random.randn(64, 64) * scale
    return x, W_qkv, W_o


def test_reproduces_the_reference_worked_example():
    x, W_qkv, W_o = reference_example()
    mha = MultiHeadAttention(64, 4)
    np.testing.assert_array_equal(mha.W_qkv, W_qkv)
    np.testing.assert_array_equal(mha.W_o, W_o)
    output, weights = mha(x)
    assert output.shape == (1, 6, 64)
    assert weights.shape == (1, 4, 6, 6)
    assert mha.d_k == 16 and mha.num_heads == 4
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    expected_output, expected_weights = oracle.multi_head_attention(x, W_qkv, W_o, num_heads=4)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


def test_never_touches_numpys_global_random_state():
    np.random.seed(7)
    before = np.random.get_state()
    MultiHeadAttention(32, 4, seed=1)
    after = np.random.get_state()
    assert before[0] == after[0] and (before[1] == after[1]).all() and before[2:] == after[2:]


def test_the_seed_decides_the_weights():
    a, b, c = MultiHeadAttention(16, 2, seed=1), MultiHeadAttention(16, 2, seed=1), MultiHeadAttention(16, 2, seed=2)
    np.testing.assert_array_equal(a.W_qkv, b.W_qkv)
    assert not np.array_equal(a.W_qkv, c.W_qkv)


@pytest.mark.parametrize(
    "batch, seq_len, d_model, num_heads",
    [(2, 5, 12, 3), (3, 7, 8, 1), (1, 4, 8, 8), (2, 3, 20, 4)],
)
@pytest.mark.parametrize("masked", [False, True])
def test_matches_separate_per_head_projections(batch, seq_len, d_model, num_heads, masked):
    """'Fused' means: one matmul with W_qkv equals slicing it into W_q, W_k, W_v per head."""
    rng = np.random.default_rng(batch * 100 + seq_len)
    x = rng.standard_normal((batch, seq_len, d_model))
    mask = None
    if masked:
        lengths = rng.integers(0, seq_len + 1, size=batch)
        mask = causal_mask(seq_len) & padding_mask(lengths, seq_len)
    mha = MultiHeadAttention(d_model, num_heads, seed=seq_len)
    output, weights = mha(x, mask)
    expected_output, expected_weights = oracle.multi_head_attention(x, mha.W_qkv, mha.W_o, num_heads, mask)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)


def test_has_four_d_model_squared_parameters():
    mha = MultiHeadAttention(48, 6)
    assert mha.W_qkv.shape == (48, 144) and mha.W_o.shape == (48, 48)
    assert mha.W_qkv.size + mha.W_o.size == 4 * 48**2


def test_float32_stays_float32_and_agrees_with_float64():
    mha = MultiHeadAttention(32, 4)
    x = np.random.default_rng(0).standard_normal((2, 5, 32))
    output64, weights64 = mha(x)
    output32, weights32 = mha(x.astype(np.float32))
    assert output32.dtype == weights32.dtype == np.float32
    assert output64.dtype == weights64.dtype == np.float64
    np.testing.assert_allclose(output32, output64, rtol=1e-4, atol=1e-5)


def test_weights_are_read_at_every_call_so_an_update_takes_effect():
    mha = MultiHeadAttention(8, 2)
    x = np.ones((1, 3, 8), dtype=np.float32)
    mha(x)
    mha.W_qkv[:] = 0.0  # an in-place update, as a training step makes
    output, _ = mha(x)
    np.testing.assert_array_equal(output, 0.0)
    mha.W_qkv = np.ones((8, 24))  # and an assignment
    mha.W_o = np.zeros((8, 8))
    np.testing.assert_array_equal(mha(x)[0], 0.0)


def test_assigned_weights_are_used():
    mha = MultiHeadAttention(4, 2)
    mha.W_qkv = np.hstack([np.zeros((4, 8)), np.eye(4)])  # Q = K = 0, V = x: uniform attention
    mha.W_o = np.eye(4)
    x = np.random.default_rng(1).standard_normal((1, 3, 4))
    output, weights = mha(x)
    np.testing.assert_allclose(weights, 1 / 3)
    np.testing.assert_allclose(output, np.broadcast_to(x.mean(axis=1, keepdims=True), x.shape), atol=1e-15)


def test_need_weights_false_gives_the_same_output_and_no_weights():
    mha = GroupedQueryAttention(16, 4)
    x = np.random.default_rng(2).standard_normal((2, 9, 16))
    mask = causal_mask(9)
    full, _ = mha(x, mask)
    output, weights = mha(x, mask, need_weights=False)
    assert weights is None
    np.testing.assert_allclose(output, full, rtol=0, atol=1e-12)


def test_calling_the_module_is_forward():
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(3).standard_normal((1, 4, 8))
    np.testing.assert_array_equal(mha(x)[0], mha.forward(x)[0])


def test_each_output_position_depends_only_on_allowed_positions():
    """With a causal mask, changing the last token must not change any earlier output."""
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(4).standard_normal((1, 5, 8))
    changed = x.copy()
    changed[0, -1] += 10.0
    before, _ = mha(x, causal_mask(5))
    after, _ = mha(changed, causal_mask(5))
    np.testing.assert_allclose(before[0, :-1], after[0, :-1], atol=1e-12)
    assert not np.allclose(before[0, -1], after[0, -1])


def test_a_fully_padded_sequence_gives_zero_output_not_nan():
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(5).standard_normal((2, 4, 8))
    output, weights = mha(x, padding_mask([4, 0], 4))
    np.testing.assert_array_equal(output[1], 0.0)
    np.testing.assert_array_equal(weights[1], 0.0)
    assert np.isfinite(output).all()


def test_repr_names_the_sizes():
    assert repr(MultiHeadAttention(64, 4)) == "MultiHeadAttention(d_model=64, num_heads=4, d_k=16)"


# --- float16, overflow and empty sequences ----------------------------------------------------


@pytest.mark.parametrize("name", ["from_torch", "from_weights", "to_torch", "project", "head_weights", "qkv_columns",
                                  "weights", "vjp"])
def test_a_method_of_the_full_layer_asked_of_the_formulas_class_says_where_it_lives(name):
    for module in (MultiHeadAttention(8, 2), mhattn.RotaryMultiHeadAttention(8, 2, rope=True)):
        with pytest.raises(AttributeError, match=f"has no {name}: it lives on mhattn.GroupedQueryAttention"):
            getattr(module, name)
    assert callable(getattr(mhattn.GroupedQueryAttention(8, 2), name))  # where the message sends the reader
    assert not hasattr(MultiHeadAttention(8, 2), "no_such_method")  # any other name: the usual AttributeError


def test_float16_module_returns_float16_close_to_float32():
    mha = MultiHeadAttention(32, 4, seed=1)
    x = np.random.default_rng(1).standard_normal((2, 10, 32)).astype(np.float16)
    output, weights = mha(x, causal_mask(10))
    assert output.dtype == weights.dtype == np.float16
    reference, _ = mha(x.astype(np.float32), causal_mask(10))
    spacing = np.spacing(np.abs(reference).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(output.astype(np.float32) - reference) <= spacing)


def test_a_float16_result_beyond_65504_raises_instead_of_returning_inf():
    mha = MultiHeadAttention(16, 4)
    mha.W_o = mha.W_o * 1000
    x = (np.random.default_rng(0).standard_normal((1, 3, 16)) * 100).astype(np.float16)
    assert np.abs(mha(x.astype(np.float32))[0]).max() > 65504  # finite in float32, not in float16
    with pytest.raises(FloatingPointError, match="overflowed float16.*compute in float32"):
        mha(x)


def test_a_weight_finite_in_float64_but_not_in_float32_is_caught_after_the_cast():
    mha = MultiHeadAttention(8, 2)
    mha.W_o = np.full((8, 8), 1e39)  # finite in float64, inf in float32
    mha(np.ones((1, 3, 8)))  # float64 input: fine
    with raises(ValueError, "W_o overflows float32: its largest entry 1e+39 is finite in float64 but not in float32"):
        mha(np.ones((1, 3, 8), np.float32))


def test_an_empty_sequence_through_the_module():
    output, weights = MultiHeadAttention(8, 2)(np.zeros((1, 0, 8)))
    assert output.shape == (1, 0, 8) and weights.shape == (1, 2, 0, 0)


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
        GroupedQueryAttention(8, 2)(np.ones((1, 3, 8)), need_weights="no")


def test_numpy_bool_need_weights_is_fine():
    assert GroupedQueryAttention(8, 2)(np.ones((1, 3, 8)), need_weights=np.False_)[1] is None


@pytest.mark.parametrize("call", ["module", "softmax"])
def test_ragged_lists_are_named(call):
    ragged = [[[1.0, 2.0], [3.0]]]
    with raises(ValueError, "x must be a rectangular array of numbers; got a ragged nested sequence"):
        MultiHeadAttention(2, 1)(ragged) if call == "module" else softmax(ragged)


def test_a_wrong_keyword_names_the_function():
    with raises(TypeError, "MultiHeadAttention.forward(): got an unexpected keyword argument 'need_weight'"):
        MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), need_weight=False)


def test_user_code_running_inside_a_call_is_still_checked():
    """A subclass's hook runs inside forward; its own calls must get the full treatment (defaults, checks)."""

    class WithDropout(GroupedQueryAttention):
        def _attention(self, Q, K, V, mask, need_weights):
            return mhattn.attention_with_dropout(Q, K, V, mask, dropout_p=self.dropout_p)

    mha = WithDropout(8, 2)
    mha.dropout_p = 0.5
    output, weights = mha(np.ones((1, 4, 8)))  # the default rng is made for it
    assert set(np.unique(weights)) <= {0.0, 0.5}  # uniform weights 1/4, kept ones doubled
    mha.dropout_p = 1.5
    with raises(ValueError, "dropout_p must be a float in [0, 1); got 1.5"):
        mha(np.ones((1, 4, 8)))


# --- threads: the checks' thread-local state never leaks between callers ----------------------


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


# --- bad input: each error names the argument, the expected and the actual value -------------
# (a ValueError or TypeError, never NumPy's broadcasting message)


@pytest.mark.parametrize(
    "d_model, num_heads, error, message",
    [
        (64.0, 4, TypeError, "d_model must be a positive int; got 64.0 of type float"),
        ("64", 4, TypeError, "d_model must be a positive int; got '64' of type str"),
        (True, 1, TypeError, "d_model must be a positive int; got True of type bool"),
        (0, 1, ValueError, "d_model must be a positive int; got 0"),
        (64, -2, ValueError, "num_heads must be a positive int; got -2"),
        (64, None, TypeError, "num_heads must be a positive int; got None of type NoneType"),
    ],
)
def test_sizes_must_be_positive_ints(d_model, num_heads, error, message):
    with raises(error, message):
        MultiHeadAttention(d_model, num_heads)


def test_numpy_integers_are_fine_as_sizes():
    mha = MultiHeadAttention(np.int64(12), np.int32(3))
    assert (mha.d_model, mha.num_heads, mha.d_k) == (12, 3, 4)
    assert type(mha.d_k) is int


def test_an_indivisible_head_count_lists_the_ones_that_work():
    message = (
        "num_heads must divide d_model = 12; got num_heads = 5. "
        "Head counts up to 64 that work: [1, 2, 3, 4, 6, 12]"
    )
    with raises(ValueError, message):
        MultiHeadAttention(12, 5)


@pytest.fixture
def mha():
    return MultiHeadAttention(8, 2)


def test_x_must_be_3d(mha):
    with raises(ValueError, "x must be 3-D with shape (batch, seq_len, d_model=8); got shape (5, 8)"):
        mha(np.zeros((5, 8)))


def test_x_must_end_in_d_model(mha):
    message = "x must have shape (batch, seq_len, d_model=8); got shape (1, 5, 6) (last axis 6 != d_model 8)"
    with raises(ValueError, message):
        mha(np.zeros((1, 5, 6)))


@pytest.mark.parametrize("bad, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_x_must_be_finite_and_the_first_bad_entry_is_located(mha, bad, shown):
    x = np.zeros((1, 3, 8))
    x[0, 2, 5] = bad
    with raises(ValueError, f"x must be finite; found {shown} at index (0, 2, 5)"):
        mha(x)


def test_x_must_be_numbers(mha):
    with raises(TypeError, "x must hold real numbers; got an array of dtype complex128"):
        mha(np.zeros((1, 3, 8), dtype=complex))


def test_mask_must_be_boolean(mha):
    message = "mask must be a boolean array (True = this query may attend to this key); got dtype int64"
    with raises(TypeError, message):
        mha(np.zeros((1, 3, 8)), mask=np.ones((3, 3), dtype=np.int64))


@pytest.mark.parametrize("shape", [(4, 4), (3, 1, 3, 3), (1, 3, 3, 3), (3,) * 5, (2, 3), (3,), (3, 1, 3), (2, 2, 3, 1)])
def test_mask_must_have_a_documented_layout(mha, shape):
    message = f"mask of shape {shape} does not fit scores of shape (2, 2, 3, 3): a mask is boolean"
    with raises(ValueError, message) as error:
        mha(np.zeros((2, 3, 8)), mask=np.ones(shape, dtype=bool))
    assert "padding_mask(lengths, seq_len) gives (batch, 1, 1, seq_k)" in str(error.value)


@pytest.mark.parametrize(
    "name, shape, expected",
    [("W_qkv", (8, 16), (8, 24)), ("W_qkv", (24, 8), (8, 24)), ("W_o", (8, 4), (8, 8))],
)
def test_reassigned_weights_of_the_wrong_shape_are_caught_when_used(mha, name, shape, expected):
    setattr(mha, name, np.zeros(shape))
    with raises(ValueError, f"{name} must have shape {expected}; got shape {shape}"):
        mha(np.zeros((1, 3, 8)))


def test_reassigned_weights_must_be_finite(mha):
    W_o = np.eye(8)
    W_o[1, 2] = np.nan
    mha.W_o = W_o
    with raises(ValueError, "W_o must be finite; found nan at index (1, 2)"):
        mha(np.zeros((1, 3, 8)))


def test_reassigned_weights_must_be_numbers(mha):
    mha.W_qkv = np.array([["a"]])
    with raises(TypeError, "W_qkv must hold real numbers; got an array of dtype <U1"):
        mha(np.zeros((1, 3, 8)))


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"rope": True}, "rope=True needs an even d_k = d_model // num_heads (RoPE turns pairs of coordinates); "
                         "got d_k = 3"),
        ({"rope_base": -1.0}, "rope_base must be a positive, finite float (10000.0 is usual); got -1.0"),
        ({"rope_base": float("nan")}, "rope_base must be a positive, finite float (10000.0 is usual); got nan"),
        ({"rope": True, "rope_pairing": "sideways"}, "rope must be True or False, 'half'"),
        ({"rope": "yes"}, "rope must be True or False, 'half'"),
    ],
)
@pytest.mark.parametrize("call", ["forward", "vjp"])
def test_rope_attributes_changed_after_construction_are_checked_when_used(settings, message, call):
    mha = GroupedQueryAttention(6, 2)  # d_k = 3: RoPE cannot pair its coordinates
    for name, value in settings.items():
        setattr(mha, name, value)
    with raises(ValueError, message) as error:
        getattr(mha, call)(np.zeros((1, 3, 6)))
    assert "this module's RoPE attributes" in str(error.value)


# --- dtypes and overflow messages -------------------------------------------------------------


def test_float32_weights_with_float64_x_warn_nothing():
    mha, x, _ = small_module(np.float64, module=MultiHeadAttention)
    mha.W_qkv, mha.W_o = mha.W_qkv.astype(np.float32), mha.W_o.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        output, _ = mha(x)
    assert output.dtype == np.float64


@pytest.mark.parametrize("module", [MultiHeadAttention, GroupedQueryAttention])
def test_float64_overflow_message_does_not_advise_float64(module):
    mha = module(d_model=4, num_heads=1, seed=0)
    mha.W_o = np.full((4, 4), 1e300)
    x = np.full((1, 2, 4), 1e10)
    with pytest.raises(FloatingPointError) as error:
        mha(x)
    assert "float64" in str(error.value)  # it names the dtype that overflowed ...
    assert "compute in float64" not in str(error.value)  # ... and offers no wider one: none exists
    if module is GroupedQueryAttention:  # the full layer's backward says the same
        with pytest.raises(FloatingPointError) as error:
            mha.vjp(x)
        assert "compute in float64" not in str(error.value)


def test_float32_overflow_message_offers_float64():
    mha = MultiHeadAttention(d_model=4, num_heads=1, seed=0)
    mha.W_o = np.full((4, 4), 1e30)
    with pytest.raises(FloatingPointError, match="compute in float64"):
        mha(np.full((1, 2, 4), 1e10, dtype=np.float32))


@pytest.mark.parametrize(
    ("what", "x_scale", "qkv_scale", "o_scale"),
    [("a projection", 1e30, 1e9, 1.0), ("a score", 1e10, 2e9, 1.0), ("the output", 1e10, 1.0, 1e28)],
)
def test_a_forward_that_overflows_anywhere_is_refused_never_returned(what, x_scale, qkv_scale, o_scale):
    # float32, d_model 4: the values are finite, but the product named by `what` passes 3.4e38.
    mha = MultiHeadAttention(d_model=4, num_heads=2, seed=0)
    mha.W_qkv, mha.W_o = np.full((4, 12), qkv_scale, np.float32), np.full((4, 4), o_scale, np.float32)
    with pytest.raises(FloatingPointError, match="overflow"):
        mha(np.full((1, 3, 4), x_scale, np.float32), causal_mask(3))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble])
def test_module_returns_the_documented_dtype(dtype):
    # forward's docstring: float16 computed in float32 and returned as float16; the others in their own.
    for module in (MultiHeadAttention, GroupedQueryAttention):
        mha, x, d_out = small_module(dtype, module=module)
        output, weights = mha(x)
        assert output.dtype == weights.dtype == np.dtype(dtype)
        reference, _ = mha(x.astype(np.float64))
        tolerance = 8 * 8 * float(np.finfo(dtype).eps) * max(np.abs(reference).max(), 1)  # d_model roundings
        np.testing.assert_allclose(output.astype(np.float64), reference, atol=tolerance + 1e-15)
    grads = mha.vjp(x)[2](d_out)  # the full layer's backward
    assert grads["x"].dtype == np.dtype(dtype)


# --- the seed class and its extensions ---------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding"])
def test_the_seed_class_equals_a_plain_numpy_oracle_bit_for_bit(dtype, mask_name):
    batch, seq_len, d_model, num_heads = 3, 6, 12, 3
    mha = MultiHeadAttention(d_model, num_heads, seed=5)
    x = np.random.default_rng(20).standard_normal((batch, seq_len, d_model)).astype(dtype)
    mask = {"none": None, "causal": causal_mask(seq_len), "padding": padding_mask([6, 3, 0], seq_len)}[mask_name]
    output, weights = mha(x, mask)
    # NumPy's promotion: float32 tokens times float64 weights compute in float64, cast back to x's dtype
    expected_output, expected_weights = seed_oracle(x, mha.W_qkv, mha.W_o, num_heads, mask)
    assert output.dtype == weights.dtype == dtype
    np.testing.assert_array_equal(output, expected_output.astype(dtype))
    np.testing.assert_array_equal(weights, expected_weights.astype(dtype))


def test_the_seed_class_has_only_the_seed_methods():
    mha = MultiHeadAttention(8, 2)
    for name in ("from_weights", "from_torch", "to_torch", "vjp", "project", "head_weights", "weights"):
        assert not hasattr(mha, name), name
    assert callable(mha.split_heads) and callable(mha.combine_heads)


@pytest.mark.parametrize("mask_name", ["none", "causal", "padding"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_grouped_query_attention_with_its_defaults_is_the_seed_class(mask_name, dtype):
    """Exactly in float64; below float64 the seed computes in its float64 weights' precision, the full layer in
    x's: they differ by the full layer's rounding (:func:`helpers.close_in`)."""
    plain, full = MultiHeadAttention(16, 4, seed=8), GroupedQueryAttention(16, 4, seed=8)
    np.testing.assert_array_equal(full.W_qkv, plain.W_qkv)
    np.testing.assert_array_equal(full.W_o, plain.W_o)
    x = np.random.default_rng(21).standard_normal((2, 7, 16)).astype(dtype)
    mask = {"none": None, "causal": causal_mask(7), "padding": padding_mask([7, 2], 7)}[mask_name]
    bounds = close_in(plain, x, dtype)
    for got, want, bound in zip(full(x, mask), plain(x, mask), bounds, strict=True):
        assert got.dtype == want.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=0, atol=bound)  # float64: exactly (the bound is 0)


@pytest.mark.parametrize(
    "settings, where",
    [
        ({"rope": True}, "rotary positions live in mhattn.RotaryMultiHeadAttention(d_model, num_heads, rope=...)"),
        ({"rope_base": 500.0}, "rotary positions live in mhattn.RotaryMultiHeadAttention(d_model, num_heads, "
                               "rope_base=...)"),
        ({"num_kv_heads": 2}, "grouped queries live in mhattn.GroupedQueryAttention(d_model, num_heads, "
                              "num_kv_heads=...)"),
    ],
)
def test_the_seed_class_refuses_the_later_features_and_says_where_they_live(settings, where):
    name = next(iter(settings))
    with raises(TypeError, f"MultiHeadAttention.__init__() takes no {name}=: {where}"):
        MultiHeadAttention(16, 4, **settings)


def test_the_heads_methods_check_x_against_the_modules_sizes():
    mha = MultiHeadAttention(12, 3)
    x = np.random.default_rng(22).standard_normal((2, 5, 12))
    heads = mha.split_heads(x)
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(mha.combine_heads(heads), x)
    with raises(ValueError, "x must have shape (batch, seq_len, d_model=12); got shape (5, 12)"):
        mha.split_heads(x[0])
    with raises(ValueError, "x must have shape (batch, seq_len, d_model=12); got shape (2, 5, 8)"):
        mha.split_heads(x[..., :8])
    with raises(ValueError, "x must have shape (batch, num_heads=3, seq_len, d_k=4); got shape (2, 5, 12)"):
        mha.combine_heads(x)
    with raises(ValueError, "x must have shape (batch, num_heads=3, seq_len, d_k=4); got shape (2, 4, 5, 3)"):
        mha.combine_heads(np.zeros((2, 4, 5, 3)))


@pytest.mark.parametrize("settings", [{"rope_base": -1.0}, {"rope_pairing": "sideways"}])
def test_rotary_attributes_changed_after_construction_are_checked_when_used(settings):
    mha = RotaryMultiHeadAttention(8, 2)
    for name, value in settings.items():
        setattr(mha, name, value)
    with raises(ValueError, "this module's RoPE attributes"):
        mha(np.zeros((1, 3, 8)))


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------


def _ones_but_one(shape, index, value):
    """Ones of ``shape``, with ``value`` at flat position ``index``."""
    array = np.ones(shape)
    array.flat[index] = value
    return array




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.GroupedQueryAttention,
        dict(d_model=4, num_heads=2),
        num_heads=[3],
        num_kv_heads=[3]),
    *refusals(
        (lambda **kw: mhattn.GroupedQueryAttention(4, 2).forward(**kw)),
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4))),
        x=[np.random.default_rng(0).standard_normal((1, 2, 3, 4)),
           np.random.default_rng(0).standard_normal((2, 3, 3))],
        mask=[np.full((3, 3), 1.0), np.ones((2, 2), bool)],
        context=[np.full((2, 3, 4), np.str_('a')), _ones_but_one((2, 3, 4), 0, np.nan),
                 _ones_but_one((2, 3, 4), 23, np.inf),
                 np.ma.masked_array(np.random.default_rng(0).standard_normal((2, 3, 4))),
                 np.random.default_rng(0).standard_normal((1, 2, 3, 4))]),
    *refusals(
        (lambda **kw: mhattn.GroupedQueryAttention(4, 2).vjp(**kw)),
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4))),
        x=[np.random.default_rng(0).standard_normal((1, 2, 3, 4))],
        mask=[np.full((3, 3), 1.0)]),
    *refusals(
        mhattn.GroupedQueryAttention.from_weights,
        dict(W_q=np.random.default_rng(0).standard_normal((4, 4)), W_k=np.random.default_rng(0).standard_normal((4, 4)),
             W_v=np.random.default_rng(0).standard_normal((4, 4)), W_o=np.random.default_rng(0).standard_normal((4, 4)),
             num_heads=2, layout='torch'),
        W_q=[np.random.default_rng(0).standard_normal((1, 4, 4)), np.random.default_rng(0).standard_normal((4, 3))],
        W_k=[np.random.default_rng(0).standard_normal((1, 4, 4)), np.random.default_rng(0).standard_normal((4, 2))],
        W_v=[np.random.default_rng(0).standard_normal((2, 4))],
        W_o=[np.random.default_rng(0).standard_normal((1, 4, 4)), np.random.default_rng(0).standard_normal((3, 4))],
        num_heads=[3],
        num_kv_heads=[3]),
    *refusals(
        (lambda **kw: mhattn.MultiHeadAttention(4, 2).split_heads(**kw)),
        dict(x=np.random.default_rng(0).standard_normal((2, 3, 4))),
        x=[np.random.default_rng(0).standard_normal((3, 4))]),
    *refusals(
        (lambda **kw: mhattn.MultiHeadAttention(4, 2).combine_heads(**kw)),
        dict(x=np.random.default_rng(0).standard_normal((1, 2, 3, 2))),
        x=[np.random.default_rng(0).standard_normal((2, 3, 4))]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
