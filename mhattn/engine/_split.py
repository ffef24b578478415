"""A second core for the elementwise passes, from a thread that lives for one call.

NumPy's BLAS spreads each matrix product over every core it was given, but ``np.exp``
runs on the calling thread: on two cores, half of the machine idles through every ``exp``.
:class:`Split` runs half of each elementwise pass on a helper thread while the caller
does the other half (NumPy releases the GIL inside large ufunc loops).

What it keeps from a plain loop:

* **No pool, no state.** The thread is started when a large call begins and joined before
  it returns, on errors and ``KeyboardInterrupt`` too; nothing is left between calls, so a
  forked child or an ``atexit`` handler starts from nothing. Where no thread can be started
  (interpreter shutdown), the caller does both halves.
* **The same bits.** A pass is cut at a fixed row, the same whatever the threads: each
  number is computed by the same ufunc loop from the same inputs, so the result is
  identical with and without the helper, from any thread.
* **The caller's thread budget.** The helper runs only when BLAS itself was given two or
  more threads (and the process may use two cores): with BLAS limited to one thread, the
  engine uses one core. Small calls (below ``MIN_SCORES`` scores) never start it: starting
  a thread costs about 0.1 ms.
"""

import os
import threading

import numpy as np

# Below this many scores in a call (a few milliseconds of exp), a thread costs more than it saves.
MIN_SCORES = 2**22


def helper_wanted(num_scores):
    """Whether a call computing ``num_scores`` scores should start a helper thread."""
    return num_scores >= MIN_SCORES and _cores() >= 2 and _blas_threads() >= 2


class Split:
    """Run ``f(part)`` on two fixed halves of an array's rows: one on a helper thread, one here.

    Use as a context manager around the loop (the helper is joined on exit); ``start=False``
    makes every :meth:`apply` run both halves on the caller's thread, with the same result.
    """

    def __init__(self, start=True):
        self._go, self._done = threading.Semaphore(0), threading.Semaphore(0)
        self._job = self._error = None
        self._errstate = np.geterr()  # the caller's floating-point error handling, for the helper's half too
        self._thread = threading.Thread(target=self._serve, name="mhattn-engine-split", daemon=True) if start else None

    def __enter__(self):
        if self._thread is not None:
            try:
                self._thread.start()
            except RuntimeError:  # no new threads (interpreter shutdown): the caller does both halves
                self._thread = None
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._job = None
            self._go.release()  # a job of None: the helper returns
            self._thread.join()
        return False

    def apply(self, f, a):
        """``f(part)`` for the two halves of the rows (axis -2) of ``a``, at the same row either way.

        ``f`` must only touch the part it gets, in place.
        """
        half = (a.shape[-2] + 1) // 2
        first, second = a[..., :half, :], a[..., half:, :]
        if self._thread is None or half == 0:
            f(first)
            f(second)
            return
        self._job = (f, first)
        self._go.release()
        try:
            f(second)
        finally:
            self._done.acquire()  # the helper is done with its half before anything else happens
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _serve(self):
        with np.errstate(**self._errstate):
            self._serve_jobs()

    def _serve_jobs(self):
        while True:
            self._go.acquire()
            job = self._job
            if job is None:
                return
            try:
                job[0](job[1])
            except BaseException as error:  # handed to the caller, which raises it
                self._error = error
            finally:
                self._job = None
                self._done.release()


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _blas_threads():
    """Threads NumPy's BLAS runs now (1 if threadpoolctl cannot tell)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return 1
    counts = [info.get("num_threads") or 1 for info in threadpool_info() if info.get("user_api") == "blas"]
    return max(counts, default=1)
