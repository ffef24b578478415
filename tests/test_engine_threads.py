"""The engine's helper thread (:mod:`mhattn.engine._split`): the same bits, nothing left behind.

The helper runs only when BLAS has two or more threads and the call is large; here it is
forced on (or off) whatever the machine, so these tests check the same thing at every
``OPENBLAS_NUM_THREADS``.
"""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from mhattn.engine import FastMultiHeadAttention, _split, blockwise_attention, flash_attention

rng = np.random.default_rng(7)


@pytest.fixture
def helper(monkeypatch):
    """``helper(True)``: every call starts the helper thread; ``helper(False)``: none does."""

    def force(on):
        monkeypatch.setattr(_split, "MIN_SCORES", 0)
        monkeypatch.setattr(_split, "_cores", lambda: 2)
        monkeypatch.setattr(_split, "_blas_threads", lambda: 2 if on else 1)

    return force


def started_threads(call):
    """Run ``call()``; return its result and the names of the threads started while it ran."""
    started, original = [], threading.Thread.start

    def spy(thread):
        started.append(thread.name)
        return original(thread)

    threading.Thread.start = spy
    try:
        return call(), started
    finally:
        threading.Thread.start = original


CALLS = {
    "blocks": lambda Q, K, V, mask: blockwise_attention(Q, K, V, mask, block_size=5, need_weights=True),
    "blocks, default blocks": lambda Q, K, V, mask: blockwise_attention(Q, K, V, mask),
    "flash": lambda Q, K, V, mask: flash_attention(Q, K, V, mask, block_q=5, block_k=8, return_lse=True),
    "flash causal": lambda Q, K, V, mask: flash_attention(Q, K, V, is_causal=True, block_q=5, block_k=8),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1.0, 300.0])  # small scores (no max subtracted) and large ones
@pytest.mark.parametrize("name", CALLS)
def test_the_helper_thread_changes_no_bit(helper, name, scale, dtype):
    """Each half of a pass is the same ufunc on the same numbers: identical results, helper or not."""
    Q = (scale * rng.standard_normal((2, 3, 21, 8))).astype(dtype)  # 21 rows: halves of 11 and 10
    K, V = (rng.standard_normal((2, 3, 19, 8)).astype(dtype) for _ in range(2))
    mask = None if "causal" in name else rng.random((21, 19)) < 0.7
    helper(False)
    alone, started = started_threads(lambda: CALLS[name](Q, K, V, mask))
    assert started == []
    helper(True)
    split, started = started_threads(lambda: CALLS[name](Q, K, V, mask))
    assert started == ["mhattn-engine-split"]  # one thread per call, not one per block
    if not isinstance(alone, tuple):
        alone, split = (alone,), (split,)
    for a, b in zip(alone, split, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_module_gives_the_same_bits_with_and_without_the_helper(helper):
    mha = FastMultiHeadAttention(32, 4, seed=3)
    x = rng.standard_normal((2, 40, 32)).astype(np.float32)
    helper(False)
    alone = [mha(x, need_weights=nw)[0] for nw in (False, True)]
    helper(True)
    split = [mha(x, need_weights=nw)[0] for nw in (False, True)]
    for a, b in zip(alone, split, strict=True):  # key tiles without weights, query blocks with them
        np.testing.assert_array_equal(a, b)


def test_no_thread_is_left_behind_even_when_the_call_fails(helper):
    helper(True)
    before = threading.active_count()
    Q = np.full((2, 30, 4), 1e20, dtype=np.float32)  # scores overflow float32: a clear error, mid-loop
    for call in (lambda: blockwise_attention(Q, Q, Q), lambda: flash_attention(Q, Q, Q)):
        with pytest.raises(FloatingPointError):
            call()
        assert threading.active_count() == before


def test_an_error_in_the_helpers_half_reaches_the_caller_and_the_helper_is_joined():
    def fails_on_the_first_half(part):
        if part[0, 0] == 0:
            raise KeyError("first half")
        part += 1

    a = np.arange(12.0).reshape(4, 3)
    with _split.Split() as split:
        with pytest.raises(KeyError, match="first half"):
            split.apply(fails_on_the_first_half, a)
        thread = split._thread
    assert not thread.is_alive()
    np.testing.assert_array_equal(a[2:], np.arange(6.0, 12.0).reshape(2, 3) + 1)  # the caller's half was done


def test_the_helper_sees_the_callers_floating_point_error_handling():
    """NumPy's error state is per thread: the helper's half must follow the caller's, or it warns."""
    a = np.full((4, 3), 1e30, dtype=np.float32)
    with np.errstate(over="raise"):
        with _split.Split() as split:
            with pytest.raises(FloatingPointError):
                split.apply(lambda part: np.multiply(part, part, out=part), a[:2])  # the helper's half: row 0


def run_python(script, timeout=120):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=timeout
    )


FORCE = "import mhattn.engine._split as s; s.MIN_SCORES = 0; s._cores = s._blas_threads = lambda: 2"
LARGE = "FastMultiHeadAttention(64, 4, seed=1), np.random.default_rng(0).standard_normal((2, 256, 64), np.float32)"


def test_a_forked_child_runs_the_helper_too():
    result = run_python(f"""
        import os, signal, sys
        import numpy as np
        from mhattn.engine import FastMultiHeadAttention
        {FORCE}
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


def test_an_atexit_handler_gets_the_same_numbers():
    """Where the interpreter refuses new threads (shutdown), the caller does both halves."""
    result = run_python(f"""
        import atexit
        import numpy as np
        from mhattn.engine import FastMultiHeadAttention
        {FORCE}
        mha, x = {LARGE}
        expected = mha(x, need_weights=False)[0]
        atexit.register(lambda: print("same" if np.array_equal(mha(x, need_weights=False)[0], expected) else "differ"))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "same"
