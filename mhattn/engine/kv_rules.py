"""What a :class:`~mhattn.engine.KVCache` allows: one thread's step at a time, one owner, a failed step undone.

**One thread at a time.** A decoding step reads the cache (how many tokens it holds: the new
tokens' positions, by which RoPE rotates their keys), computes, and appends. If another
thread appended in between, the new keys would sit at positions they were not rotated for:
silently wrong. So a step holds the cache's lock from start to end (:class:`Step`); a
second thread that starts a step, or calls ``extend``, ``truncate`` or ``clear``, while one
runs is refused with a ``RuntimeError``. Refused, never made to wait: a cache holds one
sequence, and two threads feeding one sequence in an order nobody chose is a mistake to
report, not a queue to serve. The lock is re-entrant, so the thread inside a step can
still call the cache's methods (the module's ``extend``).

**A failed step is undone.** A step remembers the cache's state when it starts (the
buffers, the length, the owner) and puts it back if the step raises: no token of a failed
step stays behind, so a retry does not cache it twice. Remembering copies nothing: every
change the cache makes leaves the tokens of the old buffers as they were (appending writes
after them; truncating, clearing and growing switch to new buffers). Putting back copies
the buffers once, so that views the failed step handed out keep their tokens.

**One owner.** A cache holds the keys of one module: another module's keys, even of the same
sizes, would be silently wrong. The first module that extends a cache becomes its owner
(:class:`Owner`, held by weak reference, so a cache does not keep a module alive).
"""

import contextlib
import threading
import weakref


class Step:
    """One thread's step on a cache: the cache is this thread's alone until it ends, and undone if it fails.

    ``with cache.undo_on_error(): ...`` runs a block as a step. The lock is taken when the
    block starts, or earlier by :meth:`take` (a method's argument check takes it, so that
    the check and the change see the same cache); while another thread holds it, taking it
    raises ``RuntimeError``. One ``with`` block per step.
    """

    def __init__(self, cache, what):
        self._cache, self._what, self._saved = cache, what, None

    def take(self):
        """Take the cache's lock now (``RuntimeError`` if another thread holds it); returns the step."""
        if self._saved is None:
            self._cache._lock.take(self._what)
            self._saved = self._cache._state()
        return self

    def __enter__(self):
        self.take()
        return self._cache

    def __exit__(self, kind, error, traceback):
        try:
            if kind is not None:  # the step failed: the cache goes back to what it held when the step began
                self._cache._restore(self._saved)
        finally:
            self._saved = None
            self._cache._lock.give_back()
        return False


class OneThread:
    """A cache's lock: taken without waiting, or refused with a ``RuntimeError`` that says why."""

    def __init__(self):
        self._lock = threading.RLock()  # re-entrant: the thread inside a step calls extend() inside it

    def take(self, what):
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(
                f"{what}: another thread is using this KVCache right now (inside a decoding step, or changing it). "
                "A KVCache holds one sequence of decoding steps and is for one thread at a time: give each "
                "thread its own KVCache (copy.copy(cache) forks an independent one)"
            )

    def give_back(self):
        self._lock.release()

    @contextlib.contextmanager
    def held(self, what):
        """The lock as a context manager, for a read of several fields at once (a copy)."""
        self.take(what)
        try:
            yield
        finally:
            self.give_back()


class Owner:
    """The module that filled a cache: held by weak reference where it allows one, strongly otherwise."""

    def __init__(self, module):
        try:
            self._ref, self._strong = weakref.ref(module), None
        except TypeError:  # None, or an object without weak references
            self._ref, self._strong = None, module

    @property
    def module(self):
        """The module (None once it no longer exists, or if it was None)."""
        return self._strong if self._ref is None else self._ref()

    def gone(self):
        """Whether the module no longer exists."""
        return self._ref is not None and self._ref() is None

    def is_(self, module):
        """Whether ``module`` is this owner (never, once the owner is gone)."""
        return not self.gone() and self.module is module
