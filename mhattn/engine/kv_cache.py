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

What a cache allows (one thread's step at a time, one owner, a failed step undone) is
:mod:`mhattn.engine.kv_rules`; the arguments of its methods are checked by
:mod:`mhattn.checks.kv_cache`.
"""

import numpy as np

from ..checks import checked, moves_numbers
from ..checks import kv_cache as checks
from .kv_rules import OneThread, Owner, Step

FIRST_CAPACITY = 16  #: tokens the buffers hold at first (more if the first chunk is longer)


class KVCache:
    """The keys and values of every token seen so far, for one attention module.

    Pass it to :meth:`mhattn.GroupedQueryAttention.forward` as ``kv_cache=``; the module calls
    :meth:`extend` with the keys and values of its new tokens, then attends from the new
    queries to everything returned.

    One cache serves one sequence of calls in one thread at a time: a module's step with
    this cache holds it from start to end, and a step, :meth:`extend`, :meth:`truncate` or
    :meth:`clear` that another thread starts meanwhile raises ``RuntimeError`` instead of
    interleaving with it. ``copy.copy`` and ``copy.deepcopy`` give an independent cache (its
    own buffers: forked decoding branches, as in beam search, never overwrite each other),
    with the same owner. A pickled cache keeps its keys and values, but not its owner: the
    first module that extends the restored cache becomes its owner.

    Attributes
    ----------
    capacity : int
        Tokens the buffers can hold before they grow (doubling).

    Examples
    --------
    >>> from mhattn import GroupedQueryAttention, causal_mask
    >>> mha = GroupedQueryAttention(d_model=16, num_heads=4, num_kv_heads=2)
    >>> x = np.random.default_rng(0).standard_normal((1, 5, 16))  # (batch, seq_len, d_model)
    >>> cache = KVCache()
    >>> steps = [mha(x[:, t : t + 1], kv_cache=cache)[0] for t in range(5)]  # one token at a time
    >>> bool(np.allclose(np.concatenate(steps, axis=1), mha(x, causal_mask(5))[0]))
    True
    >>> len(cache), cache.keys.shape  # (batch, num_kv_heads, tokens, d_k)
    (5, (1, 2, 5, 4))
    """

    @checked(checks.init_args)
    def __init__(self):
        self._lock = OneThread()  # a step holds it from start to end: a second thread is refused
        self._reset()

    def _reset(self):
        self._keys = self._values = None  # (batch, num_kv_heads, capacity, d_k) buffers
        self._length = 0
        self._owner = None  # an Owner, from the first extend on

    def __copy__(self):
        """An independent cache: the same tokens and owner, in buffers of its own."""
        twin = type(self)()
        with self._lock.held("copy.copy(KVCache)"):  # the fields of one moment, not of a step half done
            if self._keys is not None:
                twin._keys, twin._values = self._keys.copy(), self._values.copy()
            twin._length, twin._owner = self._length, self._owner
        return twin

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __getstate__(self):
        """Pickle the cached tokens only (not the spare capacity, the lock or the owner)."""
        with self._lock.held("pickling a KVCache"):
            keys, values = self.keys, self.values
            return {"keys": None if keys is None else keys.copy(), "values": None if values is None else values.copy()}

    def __setstate__(self, state):
        self.__init__()
        if state["keys"] is not None:  # buffers exactly as long as the tokens: the next extend grows them
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

    @moves_numbers(checks.extend_args)
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
            ``num_kv_heads``, ``d_k``, ``d_v``), ``K_new`` or ``V_new`` holds NaN or inf, or
            the owner differs from the first one.
        RuntimeError
            If another thread is using the cache (see :meth:`undo_on_error`).

        Examples
        --------
        >>> cache = KVCache()
        >>> K_new = np.zeros((1, 2, 3, 4))  # (batch, num_kv_heads, t_new, d_k): three tokens
        >>> K_all, V_all, mask = cache.extend(K_new, np.ones((1, 2, 3, 4)))
        >>> K_all.shape, len(cache)
        ((1, 2, 3, 4), 3)
        >>> mask  # new token i may attend to the cached tokens up to its own position
        array([[ True, False, False],
               [ True,  True, False],
               [ True,  True,  True]])
        >>> _, _, mask = cache.extend(np.zeros((1, 2, 1, 4)), np.ones((1, 2, 1, 4)))  # a fourth
        >>> mask
        array([[ True,  True,  True,  True]])
        """
        if self._owner is None:  # the first call: this owner, and only this one, from now on
            self._owner = Owner(owner)
        if self._keys is None:
            batch, heads, _, d_k = K_new.shape
            self._keys = np.empty((batch, heads, 0, d_k), dtype=K_new.dtype)
            self._values = np.empty((batch, heads, 0, V_new.shape[3]), dtype=V_new.dtype)
        start, stop = self._length, self._length + K_new.shape[2]
        if stop > self.capacity:
            self._grow(stop)
        self._keys[:, :, start:stop] = K_new
        self._values[:, :, start:stop] = V_new
        self._length = stop
        positions = np.arange(stop)  # (total,)
        mask = positions[None, :] <= np.arange(start, stop)[:, None]  # (t_new, total): key position <= query's
        return self.keys, self.values, mask

    @checked(checks.step_args)
    def undo_on_error(self):
        """A decoding step: the cache is this thread's alone until it ends, and undone if it fails.

        A module's forward with ``kv_cache=cache`` runs inside it (``with
        cache.undo_on_error(): ...``). From the block's start to its end, another thread that
        starts a step, or calls :meth:`extend`, :meth:`truncate` or :meth:`clear`, is refused
        with ``RuntimeError``: the step reads ``len(self)`` (its new tokens' positions, by
        which RoPE rotates their keys) before it appends, and nothing may come in between.
        The same thread may call the cache's methods inside the block. If the block raises
        (an overflow, a KeyboardInterrupt), the cache is put back as it was when the block
        began, so a retry does not cache the step's tokens twice.

        Examples
        --------
        >>> cache = KVCache()
        >>> _ = cache.extend(np.zeros((1, 1, 2, 4)), np.zeros((1, 1, 2, 4)))  # two tokens
        >>> try:
        ...     with cache.undo_on_error():
        ...         _ = cache.extend(np.ones((1, 1, 3, 4)), np.ones((1, 1, 3, 4)))
        ...         raise FloatingPointError("the step failed after caching its tokens")
        ... except FloatingPointError:
        ...     pass
        >>> len(cache)  # the failed step's three tokens are gone
        2
        """
        return self._step("a decoding step")

    @checked(checks.truncate_args)
    def truncate(self, length):
        """Forget every token from position ``length`` on (capacity is kept).

        To go back to an earlier point of a decoding run (a rejected draft, a new branch).

        Examples
        --------
        >>> cache = KVCache()
        >>> _ = cache.extend(np.zeros((1, 1, 4, 2)), np.zeros((1, 1, 4, 2)))  # four tokens
        >>> cache.truncate(1)  # keep the first token only
        >>> len(cache), cache.keys.shape
        (1, (1, 1, 1, 2))
        """
        if length < self._length:  # new buffers: views handed out earlier keep the forgotten tokens
            self._keys, self._values = self._keys.copy(), self._values.copy()
        self._length = length

    @checked(checks.clear_args)
    def clear(self):
        """Forget every token (and the owner); the buffers are released.

        Examples
        --------
        >>> cache = KVCache()
        >>> _ = cache.extend(np.zeros((1, 1, 3, 2)), np.zeros((1, 1, 3, 2)))
        >>> cache.clear()
        >>> len(cache), cache.capacity, cache.keys
        (0, 0, None)
        """
        self._reset()

    def _grow(self, needed):
        """Double the capacity until ``needed`` tokens fit; one copy of what is cached."""
        capacity = max(self.capacity, FIRST_CAPACITY)  # at least 16: doubling 0 would never end
        if self._length == 0:
            capacity = max(capacity, needed)  # nothing to copy: the first chunk's length will do
        while capacity < needed:
            capacity *= 2
        for name in ("_keys", "_values"):
            old = getattr(self, name)
            new = np.empty(old.shape[:2] + (capacity, old.shape[3]), dtype=old.dtype)
            new[:, :, : self._length] = old[:, :, : self._length]
            setattr(self, name, new)

    def _step(self, what):
        """A :class:`~mhattn.engine.kv_rules.Step` on this cache; ``what`` names it if it is refused."""
        return Step(self, what)

    def _state(self):
        """What a step puts back if it fails: buffers, length and owner (no copy: see ``kv_rules``)."""
        return self._keys, self._values, self._length, self._owner

    def _restore(self, state):
        """Put back a state of :meth:`_state`, in copies of its buffers if they changed since."""
        keys, values, length, owner = state
        if keys is not None and (keys is not self._keys or length != self._length):
            keys, values = keys.copy(), values.copy()  # the next step writes here: views handed out keep their tokens
        self._keys, self._values, self._length, self._owner = keys, values, length, owner

    def __repr__(self):
        shape = None if self._keys is None else (self._keys.shape[0], self._keys.shape[1], self._length)
        return f"KVCache(tokens={self._length}, capacity={self.capacity}, shape={shape})"


def _read_only(view):
    """A view that can never be made writable (``flags.writeable = True`` raises): the buffer stays the cache's."""
    return np.lib.stride_tricks.as_strided(view, writeable=False)
