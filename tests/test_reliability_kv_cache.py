"""The KV cache as a public object: copies, pickling, the views it hands out, threads.

The oracle for every decoding check is the module without a cache on the whole sequence
under a causal mask (the cache's documented equivalence).
"""

import copy
import pickle
import threading

import numpy as np
import pytest

from mhattn import KVCache, MultiHeadAttention, causal_mask

RNG = np.random.default_rng(1616)
MHA = MultiHeadAttention(d_model=8, num_heads=2, seed=5)


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
