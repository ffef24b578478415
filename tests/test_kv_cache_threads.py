"""Two threads on one KVCache: a refused call changes nothing, and every successful call's tokens stay cached."""

import threading

import numpy as np

from mhattn import KVCache, MultiHeadAttention


def test_every_successful_calls_tokens_are_cached_under_contention():
    mha = MultiHeadAttention(8, 2, seed=0)
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


def test_a_failed_step_undoes_only_its_own_tokens_when_another_thread_appended_after_them():
    cache, keys = KVCache(), [np.full((1, 1, 1, 2), float(i)) for i in range(3)]
    cache.extend(keys[0], keys[0])
    other = threading.Thread(target=lambda: cache.extend(keys[2], keys[2]))
    try:
        with cache.undo_on_error():
            cache.extend(keys[1], keys[1])  # this step's token
            other.start()
            other.join()  # the other thread's token comes after it
            raise KeyboardInterrupt  # the step fails after its append
    except KeyboardInterrupt:
        pass
    np.testing.assert_array_equal(cache.keys[0, 0, :, 0], [0.0, 1.0, 2.0])  # nothing of the other thread lost
