"""KVCache: decoding a token (or a chunk) at a time gives the causal forward's numbers."""

import copy
import gc
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from helpers import assert_refused_by_name, raises, refusals
from oracle import complex_rope

import mhattn
from mhattn import GroupedQueryAttention, causal_mask
from mhattn.engine import FastMultiHeadAttention, KVCache


def decode(mha, x, chunks, cache=None):
    """Feed ``x`` to ``mha`` chunk by chunk through one cache; return the outputs and weights."""
    cache = KVCache() if cache is None else cache
    bounds = np.cumsum([0] + list(chunks))
    assert bounds[-1] == x.shape[1]
    steps = [mha(x[:, start:stop], kv_cache=cache) for start, stop in zip(bounds[:-1], bounds[1:], strict=True)]
    return steps, cache


@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
@pytest.mark.parametrize("chunks", [[1] * 13, [5, 1, 4, 3], [13]])
def test_decoding_equals_the_causal_forward_in_float64(num_kv_heads, chunks):
    mha = GroupedQueryAttention(24, 4, seed=7, num_kv_heads=num_kv_heads)
    x = np.random.default_rng(1).standard_normal((2, 13, 24))
    expected_output, expected_weights = mha(x, causal_mask(13))
    steps, cache = decode(mha, x, chunks)
    output = np.concatenate([out for out, _ in steps], axis=1)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-12)
    start = 0
    for (_, weights), t_new in zip(steps, chunks, strict=True):  # each step's weights: rows of the full ones
        stop = start + t_new
        np.testing.assert_allclose(weights, expected_weights[:, :, start:stop, :stop], rtol=0, atol=1e-12)
        start = stop
    assert len(cache) == 13


def test_decoding_in_float32_stays_float32_and_matches():
    mha = GroupedQueryAttention(16, 2, seed=3)
    x = np.random.default_rng(2).standard_normal((1, 9, 16)).astype(np.float32)
    expected, _ = mha(x, causal_mask(9))
    steps, cache = decode(mha, x, [1] * 9)
    output = np.concatenate([out for out, _ in steps], axis=1)
    assert output.dtype == np.float32 and cache.keys.dtype == np.float32
    # d_model-long sums in the projections dominate the rounding: 16 terms of size ~1, 3 products deep
    np.testing.assert_allclose(output, expected, rtol=0, atol=3 * 16 * 4 * np.finfo(np.float32).eps)


def test_the_engine_module_decodes_too():
    mha = FastMultiHeadAttention(16, 4, seed=5, num_kv_heads=2)
    x = np.random.default_rng(3).standard_normal((2, 6, 16))
    steps, _ = decode(mha, x, [2, 1, 3])
    expected, _ = GroupedQueryAttention(16, 4, seed=5, num_kv_heads=2)(x, causal_mask(6))
    np.testing.assert_allclose(np.concatenate([o for o, _ in steps], axis=1), expected, rtol=0, atol=1e-12)


def test_the_cache_holds_exactly_the_keys_and_values_appended():
    generator = np.random.default_rng(4)
    K = generator.standard_normal((2, 3, 40, 4))
    V = generator.standard_normal((2, 3, 40, 5))
    cache = KVCache()
    for t in range(0, 40, 3):
        K_all, V_all, mask = cache.extend(K[:, :, t : t + 3], V[:, :, t : t + 3])
        total = min(t + 3, 40)
        np.testing.assert_array_equal(K_all, K[:, :, :total])
        np.testing.assert_array_equal(V_all, V[:, :, :total])
        np.testing.assert_array_equal(mask, causal_mask(total)[t:total])  # new rows of the causal mask
    assert len(cache) == 40 and cache.keys.shape == (2, 3, 40, 4) and cache.values.shape == (2, 3, 40, 5)


def test_growth_is_amortised_capacity_doubles_and_nothing_is_copied_in_between():
    cache = KVCache()
    step = np.ones((1, 2, 1, 8))
    previous, reallocations = None, 0
    for t in range(1000):
        K_all, _, _ = cache.extend(step * t, step * t)
        if previous is not None and not np.shares_memory(K_all, previous):
            reallocations += 1  # a new buffer: everything cached was copied once
        previous = K_all
    assert cache.capacity == 1024  # 16 doubled six times: the least power-of-two multiple of 16 that fits
    assert reallocations == 6  # 16 -> 32 -> ... -> 1024: 1008 tokens copied in all, fewer than 2 per token
    np.testing.assert_array_equal(cache.keys[0, 1, :, 0], np.arange(1000))


def test_a_big_first_chunk_sets_the_first_capacity():
    cache = KVCache()
    cache.extend(np.zeros((1, 1, 100, 2)), np.zeros((1, 1, 100, 2)))
    assert cache.capacity == 100
    cache.extend(np.zeros((1, 1, 150, 2)), np.zeros((1, 1, 150, 2)))
    assert cache.capacity == 400 and len(cache) == 250


def test_the_returned_views_are_read_only_and_share_the_cache():
    cache = KVCache()
    K_all, V_all, _ = cache.extend(np.ones((1, 1, 2, 3)), np.ones((1, 1, 2, 3)))
    assert not K_all.flags.writeable and not V_all.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        K_all[0, 0, 0, 0] = 5.0
    cache.extend(np.zeros((1, 1, 1, 3)), np.zeros((1, 1, 1, 3)))
    assert np.shares_memory(K_all, cache.keys)  # no copy was made: capacity 16 was not exceeded


@pytest.mark.parametrize("num_heads, num_kv_heads", [(8, 8), (8, 2), (8, 1)])
def test_the_cache_shrinks_by_num_heads_over_num_kv_heads(num_heads, num_kv_heads):
    d_model, batch, seq_len = 64, 2, 10
    mha = GroupedQueryAttention(d_model, num_heads, num_kv_heads=num_kv_heads)
    cache = KVCache()
    mha(np.zeros((batch, seq_len, d_model)), kv_cache=cache)
    d_k = d_model // num_heads
    assert cache.nbytes == 2 * batch * num_kv_heads * seq_len * d_k * 8  # keys and values, float64
    full = 2 * batch * num_heads * seq_len * d_k * 8
    assert cache.nbytes * (num_heads // num_kv_heads) == full


def test_an_empty_cache_and_clear():
    cache = KVCache()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.capacity == 0 and cache.keys is None
    cache.extend(np.ones((2, 1, 3, 4)), np.ones((2, 1, 3, 4)))
    assert "tokens=3" in repr(cache)
    cache.clear()
    assert len(cache) == 0 and cache.keys is None
    cache.extend(np.ones((5, 2, 1, 6)), np.ones((5, 2, 1, 6)))  # a new batch size is fine after clear()
    assert cache.keys.shape == (5, 2, 1, 6)


# --- bad input: each names the argument, the expected and the actual value --------------------


@pytest.fixture
def filled():
    mha = GroupedQueryAttention(16, 4, seed=1, num_kv_heads=2)
    cache = KVCache()
    mha(np.zeros((2, 3, 16)), kv_cache=cache)
    return mha, cache


def test_another_batch_size_is_refused(filled):
    mha, cache = filled
    with raises(ValueError, "K_new must have batch = 2 like the cached keys and values; got batch = 3"):
        mha(np.zeros((3, 1, 16)), kv_cache=cache)
    assert len(cache) == 3  # nothing was appended


def test_another_module_is_refused_even_with_the_same_sizes(filled):
    mha, cache = filled
    twin = GroupedQueryAttention(16, 4, seed=2, num_kv_heads=2)
    with raises(ValueError, "owner must be the module that filled this cache (GroupedQueryAttention at"):
        twin(np.zeros((2, 1, 16)), kv_cache=cache)
    assert len(cache) == 3


@pytest.mark.parametrize(
    "other, message",
    [
        (
            GroupedQueryAttention(32, 4, num_kv_heads=2),
            "K_new must have d_k = 4 like the cached keys and values; got d_k = 8",
        ),
        (GroupedQueryAttention(16, 4, num_kv_heads=4),
         "K_new must have num_kv_heads = 2 like the cached keys and values"),
    ],
)
def test_another_d_model_or_head_layout_is_refused(filled, other, message):
    mha, cache = filled
    with raises(ValueError, "owner must be the module that filled this cache"):
        other(np.zeros((2, 1, other.d_model)), kv_cache=cache)
    K_new = V_new = np.zeros((2, other.num_kv_heads, 1, other.d_k))  # what `other` would append
    with raises(ValueError, message):
        cache.extend(K_new, V_new, owner=mha)
    assert len(cache) == 3


def test_another_value_width_is_refused():
    cache = KVCache()
    cache.extend(np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 1, 4)))
    with raises(ValueError, "V_new must have d_v = 4 like the cached keys and values; got d_v = 3"):
        cache.extend(np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 1, 3)))


def test_a_first_call_that_fails_binds_no_owner():
    cache = KVCache()
    with pytest.raises(ValueError):
        cache.extend(np.zeros((1, 2, 3)), np.zeros((1, 2, 3)), owner=object)
    cache.extend(np.zeros((1, 1, 1, 2)), np.zeros((1, 1, 1, 2)), owner=int)
    assert len(cache) == 1


def test_a_dead_owner_is_named_as_such():
    cache = KVCache()
    mha = GroupedQueryAttention(8, 2)
    mha(np.zeros((1, 2, 8)), kv_cache=cache)
    del mha
    gc.collect()
    with raises(ValueError, "owner must be the module that filled this cache (a module that no longer exists)"):
        GroupedQueryAttention(8, 2)(np.zeros((1, 1, 8)), kv_cache=cache)


def test_another_dtype_is_refused(filled):
    mha, cache = filled
    with raises(TypeError, "K_new must have the cache's dtype float64; got float32: x's dtype changed between steps"):
        mha(np.zeros((2, 1, 16), dtype=np.float32), kv_cache=cache)


@pytest.mark.parametrize(
    "K_new, V_new, error, message",
    [
        (np.zeros((1, 2, 3)), np.zeros((1, 2, 3)), ValueError, "K_new must be 4-D with shape (batch, num_kv_heads, "),
        (np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 2, 4)), ValueError, "K_new and V_new must agree on (batch"),
        (
            np.zeros((1, 1, 1, 2), int),
            np.zeros((1, 1, 1, 2)),
            TypeError,
            "K_new must be a float array; got dtype int64",
        ),
        (np.zeros((1, 1, 1, 2)), np.zeros((1, 1, 1, 2), np.float32), TypeError, "same dtype; got float64 and float32"),
    ],
)
def test_malformed_keys_and_values_are_refused(K_new, V_new, error, message):
    with raises(error, message):
        KVCache().extend(K_new, V_new)


def test_a_mask_or_a_context_with_the_cache_is_refused():
    """Decided in the module: the cache builds the causal mask itself, and cross-attention needs no cache."""
    mha = GroupedQueryAttention(8, 2)
    cache = KVCache()
    with raises(ValueError, "mask must be None with kv_cache"):
        mha(np.zeros((1, 3, 8)), causal_mask(3), kv_cache=cache)
    with raises(ValueError, "kv_cache and context cannot be combined"):
        mha(np.zeros((1, 3, 8)), context=np.zeros((1, 4, 8)), kv_cache=cache)
    with raises(TypeError, "kv_cache must be an mhattn.KVCache"):
        mha(np.zeros((1, 3, 8)), kv_cache={})
    assert len(cache) == 0


# --- the module's kv_cache argument, and a failed step ----------------------------------------


@pytest.mark.parametrize("not_a_cache", [[], {}, "cache"])
def test_kv_cache_must_be_a_kv_cache_not_anything_with_an_extend(not_a_cache):
    with pytest.raises(TypeError, match=r"kv_cache must be an mhattn.KVCache\(\); got "):
        GroupedQueryAttention(8, 2)(np.ones((1, 1, 8)), kv_cache=not_a_cache)


def test_a_failed_decoding_step_leaves_the_cache_as_it_was():
    mha = GroupedQueryAttention(8, 2)
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


# --- overflow with a cache: refused, and the cache left as it was -----------------------------


def _overflowing_module():
    mha = GroupedQueryAttention(d_model=4, num_heads=1, seed=0)
    mha.W_qkv = np.zeros((4, 12))
    mha.W_qkv[0, 0] = 1.0  # q = x_0
    mha.W_qkv[0, 4] = -1.0  # k = -x_0: every score is -x_0^2 / 2, -inf in float32 for x_0 = 1e20
    mha.W_o = np.eye(4)
    x = np.zeros((1, 3, 4), dtype=np.float32)
    x[..., 0] = 1e20
    return mha, x


def test_module_with_a_kv_cache_raises_on_overflow_like_the_module_without():
    mha, x = _overflowing_module()
    with pytest.raises(FloatingPointError, match="overflowed float32"):
        mha(x, np.tril(np.ones((3, 3), dtype=bool)))
    cache = KVCache()
    with pytest.raises(FloatingPointError, match="overflowed float32"):
        mha(x, kv_cache=cache)
    assert len(cache) == 0  # the failed step left nothing behind


def test_kv_cache_overflow_against_cached_keys_is_refused():
    mha, x = _overflowing_module()
    cache = KVCache()
    small = np.zeros_like(x[:, :1])
    small[..., 0] = 1e-3
    mha(x[:, :1] * 0 + small, kv_cache=cache)  # a harmless first step
    cache_keys = cache.keys.copy()
    step = np.zeros_like(x[:, :1])
    step[..., 0] = 1e20  # its own score -1e40 / 2 overflows; so would any score against a big cached key
    with pytest.raises(FloatingPointError):
        mha(step, kv_cache=cache)
    np.testing.assert_array_equal(cache.keys, cache_keys)


# --- the cache as a public object: copies, pickling, the views it hands out, threads ----------
# The oracle for every decoding check is the module without a cache on the whole sequence
# under a causal mask (the cache's documented equivalence).


RNG = np.random.default_rng(1616)


MHA = GroupedQueryAttention(d_model=8, num_heads=2, seed=5)


def _decode(cache, x):
    return np.concatenate([MHA(x[:, t : t + 1], kv_cache=cache)[0] for t in range(x.shape[1])], axis=1)


def _full(x):
    return MHA(x, causal_mask(x.shape[1]))[0]


@pytest.mark.parametrize("fork", [copy.copy, copy.deepcopy])
def test_forked_caches_decode_independent_branches(fork):
    prefix, branch_a, branch_b = (RNG.standard_normal((1, n, 8)) for n in (3, 2, 2))
    cache = KVCache()
    _decode(cache, prefix)
    twin = fork(cache)
    steps_a, steps_b = [], []
    for t in range(2):  # beam search: the branches advance in turn
        steps_a.append(MHA(branch_a[:, t : t + 1], kv_cache=cache)[0])
        steps_b.append(MHA(branch_b[:, t : t + 1], kv_cache=twin)[0])  # must not overwrite branch a's keys
    out_a, out_b = np.concatenate(steps_a, axis=1), np.concatenate(steps_b, axis=1)
    np.testing.assert_allclose(out_a, _full(np.concatenate([prefix, branch_a], axis=1))[:, 3:], atol=1e-12)
    np.testing.assert_allclose(out_b, _full(np.concatenate([prefix, branch_b], axis=1))[:, 3:], atol=1e-12)
    assert len(cache) == len(twin) == 5


def test_pickled_cache_continues_decoding():
    x = RNG.standard_normal((2, 5, 8))
    cache = KVCache()
    _decode(cache, x[:, :3])
    restored = pickle.loads(pickle.dumps(cache))
    assert len(restored) == 3
    np.testing.assert_array_equal(restored.keys, cache.keys)
    rest = _decode(restored, x[:, 3:])
    np.testing.assert_allclose(rest, _full(x)[:, 3:], atol=1e-12)


def test_a_cache_truncated_to_no_tokens_and_pickled_decodes_again():
    """Its restored buffers hold 0 tokens: the next step must not try to double a capacity of 0 forever.

    Run in a fresh interpreter, so that a step that never returns fails the test instead of hanging it.
    """
    script = """
        import pickle
        import numpy as np
        from mhattn import GroupedQueryAttention, causal_mask
        from mhattn.engine import KVCache
        mha = GroupedQueryAttention(8, 2, seed=5)
        x = np.random.default_rng(0).standard_normal((2, 3, 8))
        cache = KVCache()
        mha(x, kv_cache=cache)
        cache.truncate(0)
        restored = pickle.loads(pickle.dumps(cache))
        steps = [mha(x[:, t : t + 1], kv_cache=restored)[0] for t in range(3)]
        error = np.abs(np.concatenate(steps, axis=1) - mha(x, causal_mask(3))[0]).max()
        print(len(restored), restored.capacity, error <= 1e-12)
    """
    try:
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                                timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the first step after restoring a pickled empty cache never returned")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "16", "True"]


def test_a_failed_step_puts_back_what_it_truncated_and_appended():
    cache = KVCache()
    _decode(cache, RNG.standard_normal((1, 4, 8)))
    keys, values = cache.keys.copy(), cache.values.copy()
    with pytest.raises(KeyboardInterrupt), cache.undo_on_error():
        cache.truncate(1)
        cache.extend(np.zeros((1, 2, 5, 4)), np.zeros((1, 2, 5, 4)), owner=MHA)  # grows the buffers, too
        raise KeyboardInterrupt
    assert len(cache) == 4
    np.testing.assert_array_equal(cache.keys, keys)
    np.testing.assert_array_equal(cache.values, values)


def test_a_view_handed_out_by_a_failed_step_keeps_its_tokens():
    cache = KVCache()
    cache.extend(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2)))
    with pytest.raises(KeyboardInterrupt), cache.undo_on_error():
        K_all, V_all, _ = cache.extend(np.ones((1, 1, 1, 2)), np.ones((1, 1, 1, 2)))
        raise KeyboardInterrupt
    cache.extend(np.full((1, 1, 1, 2), 2.0), np.full((1, 1, 1, 2), 2.0))  # position 2 again
    np.testing.assert_array_equal(K_all[0, 0, :, 0], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(cache.keys[0, 0, :, 0], [0.0, 0.0, 2.0])


def test_views_cannot_be_made_writable():
    cache = KVCache()
    _decode(cache, RNG.standard_normal((1, 2, 8)))
    for view in (cache.keys, cache.values):
        with pytest.raises(ValueError):
            view.flags.writeable = True
    K_all, V_all, _ = cache.extend(np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 1, 4)), owner=MHA)
    for view in (K_all, V_all):
        with pytest.raises(ValueError):
            view.flags.writeable = True


def test_a_view_taken_before_truncate_keeps_its_tokens():
    cache = KVCache()
    _decode(cache, RNG.standard_normal((1, 4, 8)))
    keys = cache.keys
    before = keys.copy()
    cache.truncate(2)
    _decode(cache, RNG.standard_normal((1, 2, 8)))  # writes positions 2 and 3 again
    np.testing.assert_array_equal(keys, before)


def test_truncate_refuses_a_bool_and_out_of_range_lengths():
    cache = KVCache()
    _decode(cache, RNG.standard_normal((1, 2, 8)))
    with pytest.raises(TypeError, match="length"):
        cache.truncate(True)
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        cache.truncate(3)


class _SlowArray:
    """An array-like whose conversion waits for a signal: it holds a thread inside ``extend``."""

    def __init__(self, array, entered, release):
        self.array, self.entered, self.release = array, entered, release

    def __array__(self, dtype=None, copy=None):
        self.entered.set()
        self.release.wait(timeout=30)
        return self.array


def test_a_second_thread_is_refused_while_one_extends():
    cache = KVCache()
    entered, release = threading.Event(), threading.Event()
    K = np.zeros((1, 2, 1, 4))
    errors = []

    def first():
        try:
            cache.extend(_SlowArray(K, entered, release), K, owner=MHA)
        except Exception as error:  # pragma: no cover - reported by the assertion below
            errors.append(error)

    worker = threading.Thread(target=first)
    worker.start()
    assert entered.wait(timeout=30)
    try:
        with pytest.raises(RuntimeError, match="another thread"):
            cache.extend(K, K, owner=MHA)
        with pytest.raises(RuntimeError, match="another thread"):
            cache.truncate(0)
    finally:
        release.set()
        worker.join()
    assert errors == [] and len(cache) == 1  # the first thread's step went in, whole
    cache.extend(K, K, owner=MHA)  # and once it left, the cache is free again
    assert len(cache) == 2


def test_cache_documents_that_it_is_for_one_thread():
    assert "one thread" in KVCache.__doc__


# --- rotary positions: each key rotated once, at its absolute position ------------------------


@pytest.mark.parametrize("cls", [GroupedQueryAttention, FastMultiHeadAttention])
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
@pytest.mark.parametrize("chunks", [[1] * 13, [5, 1, 4, 3], [13]], ids=["token_by_token", "uneven", "one_chunk"])
def test_rope_kv_cache_decoding_equals_the_full_causal_forward(cls, num_kv_heads, chunks):
    mha = cls(d_model=32, num_heads=4, seed=2, num_kv_heads=num_kv_heads, rope=True)
    x = np.random.default_rng(9).standard_normal((2, 13, 32))
    expected = mha(x, causal_mask(13))[0]
    cache = KVCache()
    bounds = np.cumsum([0] + chunks)
    steps = [mha(x[:, a:b], kv_cache=cache)[0] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    decoded = np.concatenate(steps, axis=1)
    assert np.abs(decoded - expected).max() < 1e-12


def test_rope_kv_cache_in_float32_equals_the_float32_forward():
    mha = GroupedQueryAttention(d_model=32, num_heads=4, seed=2, rope=True)
    x = np.random.default_rng(10).standard_normal((1, 11, 32)).astype(np.float32)
    expected = mha(x, causal_mask(11))[0]
    cache = KVCache()
    decoded = np.concatenate([mha(x[:, t : t + 1], kv_cache=cache)[0] for t in range(11)], axis=1)
    assert decoded.dtype == np.float32
    # the two paths round differently: products of inner size d_model = 32 of numbers ~ 3
    assert np.abs(decoded - expected).max() <= 32 * np.finfo(np.float32).eps * 3 * max(1, np.abs(expected).max())


def test_rope_cache_holds_each_key_rotated_once_at_its_absolute_position():
    mha = GroupedQueryAttention(d_model=24, num_heads=4, seed=5, num_kv_heads=2, rope=True)
    x = np.random.default_rng(11).standard_normal((2, 10, 24))
    cache = KVCache()
    for a, b in [(0, 3), (3, 4), (4, 10)]:
        mha(x[:, a:b], kv_cache=cache)
    W_k = mha.W_qkv[:, 24 : 24 + 2 * mha.d_k]
    raw = (x @ W_k).reshape(2, 10, 2, mha.d_k).transpose(0, 2, 1, 3)  # (batch, kv_heads, seq, d_k), not rotated
    np.testing.assert_allclose(cache.keys, complex_rope(raw, np.arange(10)), rtol=0, atol=1e-13 * np.abs(raw).max())


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------


def _filled_cache():
    cache = mhattn.KVCache()
    cache.extend(np.ones((1, 1, 2, 2)), np.ones((1, 1, 2, 2)))
    return cache




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        (lambda **kw: _filled_cache().extend(**kw)),
        dict(K_new=np.full((1, 1, 1, 2), 1.0), V_new=np.full((1, 1, 1, 2), 1.0)),
        K_new=[np.full((1, 1, 1, 3), 1.0), np.full((1, 1, 2), 1.0)],
        V_new=[np.full((1, 1, 2, 2), 1.0), np.full((1, 1, 1, 2), 1)]),
    *refusals(
        (lambda **kw: _filled_cache().truncate(**kw)),
        dict(length=1),
        length=[-1, 3]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
