"""Two threads on one KVCache: a step holds the cache from start to end, a refused call changes nothing,
and every successful call's tokens stay cached, each at its own position."""

import threading

import numpy as np
import pytest
from oracle import complex_rope

from mhattn import GroupedQueryAttention, KVCache, causal_mask


def test_every_successful_calls_tokens_are_cached_under_contention():
    mha = GroupedQueryAttention(8, 2, seed=0)
    W_k = mha.W_qkv[:, 8:16]  # the key columns: a token's cached keys are x @ W_k, split into heads
    for trial in range(20):
        cache, successes, start = KVCache(), {0: [], 1: []}, threading.Barrier(2)

        def decode(thread, trial=trial, cache=cache, successes=successes, start=start):
            rng = np.random.default_rng([trial, thread])
            start.wait()
            for _ in range(40):
                x = rng.standard_normal((1, 1, 8))
                try:
                    mha(x, kv_cache=cache)
                except RuntimeError:  # the other thread held the cache: refused, nothing appended
                    continue
                successes[thread].append(x[0, 0])

        threads = [threading.Thread(target=decode, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expected = np.array(successes[0] + successes[1]) @ W_k  # (calls, 8): every successful call's keys
        cached = cache.keys[0].transpose(1, 0, 2).reshape(len(cache), 8)  # (len, 8): heads side by side
        assert len(cache) == len(expected), trial
        order = lambda a: a[np.lexsort(a.T[::-1])]  # noqa: E731 - the same rows, in one order
        np.testing.assert_allclose(order(cached), order(expected), rtol=1e-12, atol=1e-12)


def test_another_thread_is_refused_inside_a_step_and_the_failed_step_puts_the_cache_back():
    cache, keys = KVCache(), [np.full((1, 1, 1, 2), float(i)) for i in range(3)]
    cache.extend(keys[0], keys[0])
    refused = []

    def other_thread():
        try:
            cache.extend(keys[2], keys[2])
        except RuntimeError as error:
            refused.append(str(error))

    other = threading.Thread(target=other_thread)
    try:
        with cache.undo_on_error():
            cache.extend(keys[1], keys[1])  # this step's token
            other.start()
            other.join(timeout=30)  # the other thread tries to append while the step holds the cache
            raise KeyboardInterrupt  # the step fails after its append
    except KeyboardInterrupt:
        pass
    assert len(refused) == 1 and "another thread is using this KVCache" in refused[0]
    np.testing.assert_array_equal(cache.keys[0, 0, :, 0], [0.0])  # the step's token is gone, nothing else came in
    other = threading.Thread(target=other_thread)
    other.start()
    other.join(timeout=30)  # once the step is over, the other thread may append
    np.testing.assert_array_equal(cache.keys[0, 0, :, 0], [0.0, 2.0])


class PausingAttention(GroupedQueryAttention):
    """The chapter's module, except that in one chosen thread it waits after projecting its new tokens.

    By then the step has read ``len(cache)`` and rotated its new keys for those positions
    (RoPE), but not yet appended them: the moment another thread must not get in.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pause_in, self.projected, self.resume = None, threading.Event(), threading.Event()

    def _project(self, x, context=None, start=0, positions=None):
        projected = super()._project(x, context, start, positions)
        if threading.current_thread() is self.pause_in:
            self.projected.set()
            self.resume.wait(timeout=30)
        return projected


def test_a_rope_step_holds_the_cache_so_another_threads_step_cannot_come_between_its_positions_and_its_append():
    mha = PausingAttention(16, 2, seed=0, rope=True)
    x = np.random.default_rng(5).standard_normal((1, 4, 16))
    cache, outputs = KVCache(), {}
    outputs[0] = mha(x[:, :2], kv_cache=cache)[0]  # positions 0 and 1
    worker = threading.Thread(target=lambda: outputs.__setitem__(2, mha(x[:, 2:3], kv_cache=cache)[0]), daemon=True)
    mha.pause_in = worker
    worker.start()
    try:
        assert mha.projected.wait(timeout=30)  # the worker's key is rotated for position 2, not yet cached
        with pytest.raises(RuntimeError, match="another thread is using this KVCache"):
            mha(x[:, 3:4], kv_cache=cache)  # it would take position 2 too
        assert len(cache) == 2
    finally:
        mha.resume.set()
        worker.join(timeout=30)
    assert not worker.is_alive() and len(cache) == 3
    outputs[3] = mha(x[:, 3:4], kv_cache=cache)[0]  # the step is over: now it is position 3
    expected = mha(x, causal_mask(4))[0]  # the oracle: the whole sequence at once, no cache
    np.testing.assert_allclose(np.concatenate([outputs[t] for t in (0, 2, 3)], axis=1), expected, rtol=0, atol=1e-12)
    raw = (x @ mha.W_qkv[:, 16:32]).reshape(1, 4, 2, 8).transpose(0, 2, 1, 3)  # keys before rotation
    np.testing.assert_allclose(cache.keys, complex_rope(raw, np.arange(4)), rtol=0, atol=1e-13 * np.abs(raw).max())
