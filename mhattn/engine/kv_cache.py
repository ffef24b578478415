"""A key/value cache for causal decoding.

A language model writes one token at a time. Under a causal mask, the keys and values of
the tokens already written never change: token ``t`` cannot see token ``t + 1``, so adding
it changes nothing before it. Recomputing them for every new token repeats all the earlier
work, ``O(n)`` per token and ``O(n**2)`` for a text of ``n`` tokens. The cache keeps them:
each step projects only the new tokens, appends their keys and values, and lets the new
queries attend to everything cached.

Appending must not copy what is cached, or each token would cost ``O(n)`` again. Like a
Python list, the cache over-allocates: when full, it doubles its capacity and copies once,
so ``n`` appends copy fewer than ``2 n`` tokens in all (amortised ``O(1)`` per token).
"""

import contextlib
import functools
import threading
import weakref

import numpy as np

from .. import checks


def _one_thread(method):
    """Run ``method`` holding the cache's lock, or raise ``RuntimeError`` if another thread holds it."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(
                f"KVCache.{method.__name__}: another thread is changing this cache right now. A KVCache holds "
                "one sequence of decoding steps and is for one thread at a time: give each thread its own "
                "KVCache (copy.copy(cache) forks an independent one)"
            )
        try:
            return method(self, *args, **kwargs)
        finally:
            self._lock.release()

    return wrapper


_NO_OWNER = object()
_GONE = object()  # what a dead owner's reference returns


class KVCache:
    """The keys and values of every token seen so far, for one attention module.

    Pass it to :meth:`mhattn.MultiHeadAttention.forward` as ``kv_cache=``; the module calls
    :meth:`extend` with the keys and values of its new tokens, then attends from the new
    queries to everything returned.

    One cache serves one sequence of calls in one thread at a time: a call that enters
    while another thread is inside :meth:`extend`, :meth:`truncate` or :meth:`clear` raises
    ``RuntimeError`` instead of losing tokens. ``copy.copy`` and ``copy.deepcopy`` give an
    independent cache (its own buffers: forked decoding branches, as in beam search, never
    overwrite each other), with the same owner. A pickled cache keeps its keys and values,
    but not its owner: the first module that extends the restored cache becomes its owner.

    Attributes
    ----------
    capacity : int
        Tokens the buffers can hold before they grow (doubling).

    Examples
    --------
    >>> import numpy as np
    >>> from mhattn import MultiHeadAttention, causal_mask
    >>> from mhattn.engine import KVCache
    >>> mha = MultiHeadAttention(d_model=16, num_heads=4)
    >>> x = np.random.default_rng(0).standard_normal((1, 5, 16))
    >>> cache = KVCache()
    >>> steps = [mha(x[:, t : t + 1], kv_cache=cache)[0] for t in range(5)]  # one token at a time
    >>> np.allclose(np.concatenate(steps, axis=1), mha(x, causal_mask(5))[0])
    True
    >>> len(cache)
    5
    """

    def __init__(self):
        self._lock = threading.Lock()  # held during every change: a second thread is refused, never interleaved
        self._steps = threading.local()  # per thread: the spans this thread's guarded calls appended
        self._reset()

    def _reset(self):
        self._keys = self._values = None  # (batch, num_kv_heads, capacity, d_k) buffers
        self._length = 0
        self._owner = _NO_OWNER

    def __copy__(self):
        """An independent cache: the same tokens and owner, in buffers of its own."""
        twin = type(self)()
        if self._keys is not None:
            twin._keys, twin._values = self._keys.copy(), self._values.copy()
        twin._length, twin._owner = self._length, self._owner
        return twin

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __getstate__(self):
        """Pickle the cached tokens only (not the spare capacity, the lock or the owner)."""
        keys, values = self.keys, self.values
        return {"keys": None if keys is None else keys.copy(), "values": None if values is None else values.copy()}

    def __setstate__(self, state):
        self.__init__()
        if state["keys"] is not None:
            self._keys, self._values = state["keys"].copy(), state["values"].copy()
            self._length = self._keys.shape[2]

    def __len__(self):
        """Number of tokens cached."""
        return self._length

    @property
    def capacity(self):
        return 0 if self._keys is None else self._keys.shape[2]

    @property
    def nbytes(self):
        """Bytes of the cached keys and values (the filled part; see :attr:`capacity`)."""
        return 0 if self._keys is None else 2 * self._keys[:, :, : self._length].nbytes

    @property
    def keys(self):
        """ndarray of shape ``(batch, num_kv_heads, len(self), d_k)``: a read-only view."""
        return _read_only(self._keys[:, :, : self._length]) if self._keys is not None else None

    @property
    def values(self):
        """ndarray of shape ``(batch, num_kv_heads, len(self), d_v)``: a read-only view."""
        return _read_only(self._values[:, :, : self._length]) if self._values is not None else None

    @_one_thread
    def extend(self, K_new, V_new, *, owner=None):
        """Append new keys and values; return everything cached and the causal mask.

        Parameters
        ----------
        K_new : ndarray of shape ``(batch, num_kv_heads, t_new, d_k)``
            Keys of the ``t_new`` new tokens, in order.
        V_new : ndarray of shape ``(batch, num_kv_heads, t_new, d_v)``
        owner : object, optional
            The module that uses this cache (it passes ``self``). A cache holds one
            module's keys: another module's keys would be silently wrong, so a second
            owner is an error. Held by weak reference.

        Returns
        -------
        K_all : ndarray of shape ``(batch, num_kv_heads, total, d_k)``
        V_all : ndarray of shape ``(batch, num_kv_heads, total, d_v)``
            Read-only views of the cache, ``total = len(self)`` after the append.
        mask : ndarray of bool, shape ``(t_new, total)``
            Causal: new token ``i`` (at position ``total - t_new + i``) may attend to every
            key at that position or before.

        Raises
        ------
        TypeError
            If ``K_new`` or ``V_new`` is not a float array, or its dtype differs from the
            cached one.
        ValueError
            If a shape does not match the other array or the cached keys (batch size,
            ``num_kv_heads``, ``d_k``, ``d_v``), or the owner differs from the first one.
        """
        K_new, V_new = _array("K_new", K_new), _array("V_new", V_new)
        self._check_owner(owner)
        self._check(K_new, V_new)
        if self._owner is _NO_OWNER:  # the first call: this owner, and only this one, from now on
            self._owner = _reference(owner)
        t_new = K_new.shape[2]
        if self._keys is None:
            batch, heads, _, d_k = K_new.shape
            self._keys = np.empty((batch, heads, max(t_new, 16), d_k), dtype=K_new.dtype)
            self._values = np.empty((batch, heads, max(t_new, 16), V_new.shape[3]), dtype=V_new.dtype)
        if self._length + t_new > self.capacity:
            self._grow(self._length + t_new)
        start, self._length = self._length, self._length + t_new
        self._keys[:, :, start : self._length] = K_new
        self._values[:, :, start : self._length] = V_new
        appended = getattr(self._steps, "spans", None)
        if appended is not None:  # inside undo_on_error(): remember what this call added
            appended.append((start, self._length))
        positions = np.arange(self._length)  # (total,)
        mask = positions[None, :] <= (start + np.arange(t_new))[:, None]  # (t_new, total): key position <= query's
        return self.keys, self.values, mask

    @contextlib.contextmanager
    def undo_on_error(self):
        """Run a decoding step so that, if it fails, the cache holds what it held before.

        :meth:`mhattn.MultiHeadAttention.forward` runs inside it: if the step raises after its
        keys and values were appended (an overflow, a KeyboardInterrupt), exactly the tokens that
        *this* thread appended inside the block are removed, so a retry does not cache them twice.
        A step refused because another thread holds the cache appended nothing, and undoes
        nothing: the other thread's tokens stay.
        """
        outer = getattr(self._steps, "spans", None)
        self._steps.spans = spans = []
        try:
            yield self
        except BaseException:
            with self._lock:
                for start, end in reversed(spans):
                    if self._length == end:  # nothing appended after it: remove exactly this span
                        self._forget_from(start)
            raise
        finally:
            self._steps.spans = outer
            if outer is not None:
                outer.extend(spans)

    @_one_thread
    def truncate(self, length):
        """Forget every token from position ``length`` on (capacity is kept).

        To go back to an earlier point of a decoding run (a rejected draft, a new branch).
        """
        self._forget_from(checks.index("length", length, self._length + 1))

    def _forget_from(self, length):
        """Drop the tokens from ``length`` on; the caller holds the lock."""
        if length < self._length:  # new buffers: views handed out earlier keep the forgotten tokens
            self._keys, self._values = self._keys.copy(), self._values.copy()
        self._length = length

    @_one_thread
    def clear(self):
        """Forget every token (and the owner); the buffers are released."""
        self._reset()

    def _grow(self, needed):
        """Double the capacity until ``needed`` tokens fit; one copy of what is cached."""
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        for name in ("_keys", "_values"):
            old = getattr(self, name)
            new = np.empty(old.shape[:2] + (capacity, old.shape[3]), dtype=old.dtype)
            new[:, :, : self._length] = old[:, :, : self._length]
            setattr(self, name, new)

    def _check_owner(self, owner):
        if self._owner is _NO_OWNER:
            return
        first = self._owner()
        if first is not owner:
            filled_by = "a module that no longer exists" if first is _GONE else _describe(first)
            raise ValueError(
                f"owner must be the module that filled this cache ({filled_by}); got {_describe(owner)}. "
                "A cache holds one module's keys and values: give every module (every layer) its own KVCache, "
                "or call cache.clear() to start over"
            )

    def _check(self, K_new, V_new):
        for name, array in (("K_new", K_new), ("V_new", V_new)):
            if array.ndim != 4:
                raise ValueError(
                    f"{name} must be 4-D with shape (batch, num_kv_heads, t_new, depth); got shape {array.shape}"
                )
        if K_new.shape[:3] != V_new.shape[:3]:
            raise ValueError(
                f"K_new and V_new must agree on (batch, num_kv_heads, t_new); got K_new {K_new.shape} "
                f"and V_new {V_new.shape}"
            )
        if K_new.dtype != V_new.dtype:
            raise TypeError(f"K_new and V_new must have the same dtype; got {K_new.dtype} and {V_new.dtype}")
        if self._keys is None:
            return
        hints = {
            "batch": "every step must continue the same sequences: keep x's batch size, or start a new KVCache",
            "num_kv_heads": "the cache was filled by a module with another num_kv_heads (or d_model)",
            "d_k": "the cache was filled by a module with another d_k = d_model // num_heads",
            "d_v": "the cache was filled by a module with another d_k = d_model // num_heads",
        }
        cached = {
            "batch": ("K_new", self._keys.shape[0], K_new.shape[0]),
            "num_kv_heads": ("K_new", self._keys.shape[1], K_new.shape[1]),
            "d_k": ("K_new", self._keys.shape[3], K_new.shape[3]),
            "d_v": ("V_new", self._values.shape[3], V_new.shape[3]),
        }
        for axis, (name, expected, got) in cached.items():
            if expected != got:
                raise ValueError(
                    f"{name} must have {axis} = {expected} like the cached keys and values; got {axis} = {got} "
                    f"(K_new {K_new.shape}, V_new {V_new.shape}): {hints[axis]}"
                )
        if K_new.dtype != self._keys.dtype:
            raise TypeError(
                f"K_new must have the cache's dtype {self._keys.dtype}; got {K_new.dtype}: x's dtype changed "
                "between steps (the keys and values are computed in x's precision, float16 x in float32). "
                "Keep x's dtype, or start a new KVCache"
            )

    def __repr__(self):
        shape = None if self._keys is None else (self._keys.shape[0], self._keys.shape[1], self._length)
        return f"KVCache(tokens={self._length}, capacity={self.capacity}, shape={shape})"


def _array(name, value):
    array = checks.number_array(name, value)  # a masked array is refused: its mask would be lost
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must be a float array; got dtype {array.dtype}")
    return array


def _read_only(view):
    """A view that can never be made writable (``flags.writeable = True`` raises): the buffer stays the cache's."""
    return np.lib.stride_tricks.as_strided(view, writeable=False)


def _reference(owner):
    """A weak reference to ``owner`` if it allows one (a strong one otherwise); None stays None."""
    if owner is None:
        return lambda: None
    try:
        ref = weakref.ref(owner)
    except TypeError:
        return lambda: owner
    return lambda: _GONE if ref() is None else ref()


def _describe(owner):
    return "no module" if owner is None else f"{type(owner).__name__} at {id(owner):#x} ({owner!r})"
