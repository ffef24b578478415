"""The arguments of :class:`mhattn.engine.KVCache`'s methods.

A check that reads the cache (its sizes, its owner, its length) first takes the cache's lock
(:meth:`~mhattn.engine.kv_rules.Step.take`) and hands the taken step to the door, which runs
the method inside it: what the check found is still true when the method changes the cache,
since no other thread can change it in between. A refused call gives the lock back and
changes nothing.
"""

import contextlib

from .values import finite, index, number_array

SIZE_HINTS = {
    "batch": "every step must continue the same sequences: keep x's batch size, or start a new KVCache",
    "num_kv_heads": "the cache was filled by a module with another num_kv_heads (or d_model)",
    "d_k": "the cache was filled by a module with another d_k = d_model // num_heads",
    "d_v": "the cache was filled by a module with another d_k = d_model // num_heads",
}


def init_args(self):
    """Arguments of :class:`mhattn.engine.KVCache`: none; a new cache is empty."""
    return {"self": self}, None


def extend_args(self, K_new, V_new, owner):
    """Arguments of :meth:`mhattn.engine.KVCache.extend`: finite new keys and values that fit the cached ones."""
    step = self._step("KVCache.extend").take()  # from here the cache is this thread's, until extend returns
    with _given_back_if_refused(step):
        K_new, V_new = _float_array("K_new", K_new), _float_array("V_new", V_new)
        _same_owner(self, owner)
        _same_layout(K_new, V_new)
        _fit_the_cache(self, K_new, V_new)
    return {"self": self, "K_new": K_new, "V_new": V_new, "owner": owner}, None, step


def truncate_args(self, length):
    """Arguments of :meth:`mhattn.engine.KVCache.truncate`: a length in ``[0, len(cache)]``."""
    step = self._step("KVCache.truncate").take()
    with _given_back_if_refused(step):
        length = index("length", length, len(self) + 1)
    return {"self": self, "length": length}, None, step


def clear_args(self):
    """Arguments of :meth:`mhattn.engine.KVCache.clear`: none; it runs as a step of its own."""
    return {"self": self}, None, self._step("KVCache.clear")


def step_args(self):
    """Arguments of :meth:`mhattn.engine.KVCache.undo_on_error`: none (its step takes the lock when entered)."""
    return {"self": self}, None


@contextlib.contextmanager
def _given_back_if_refused(step):
    """Give the taken lock back if the check inside refuses the call (nothing was changed)."""
    try:
        yield
    except BaseException as error:
        step.__exit__(type(error), error, error.__traceback__)
        raise


def _float_array(name, value):
    array = number_array(name, value)  # a masked array is refused: its mask would be lost
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must be a float array; got dtype {array.dtype}")
    return finite(name, array)  # a NaN key or value, once cached, would spoil every later step's output


def _same_owner(cache, owner):
    first = cache._owner  # None until the first extend
    if first is None or first.is_(owner):
        return
    filled_by = "a module that no longer exists" if first.gone() else _describe(first.module)
    raise ValueError(
        f"owner must be the module that filled this cache ({filled_by}); got {_describe(owner)}. "
        "A cache holds one module's keys and values: give every module (every layer) its own KVCache, "
        "or call cache.clear() to start over"
    )


def _describe(owner):
    """An owner in an error message: its class, address and repr."""
    return "no module" if owner is None else f"{type(owner).__name__} at {id(owner):#x} ({owner!r})"


def _same_layout(K_new, V_new):
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


def _fit_the_cache(cache, K_new, V_new):
    keys, values = cache._keys, cache._values  # (batch, num_kv_heads, capacity, d_k), (..., d_v), or None
    if keys is None:
        return
    cached = {
        "batch": ("K_new", keys.shape[0], K_new.shape[0]),
        "num_kv_heads": ("K_new", keys.shape[1], K_new.shape[1]),
        "d_k": ("K_new", keys.shape[3], K_new.shape[3]),
        "d_v": ("V_new", values.shape[3], V_new.shape[3]),
    }
    for axis, (name, expected, got) in cached.items():
        if expected != got:
            raise ValueError(
                f"{name} must have {axis} = {expected} like the cached keys and values; got {axis} = {got} "
                f"(K_new {K_new.shape}, V_new {V_new.shape}): {SIZE_HINTS[axis]}"
            )
    if K_new.dtype != keys.dtype:
        raise TypeError(
            f"K_new must have the cache's dtype {keys.dtype}; got {K_new.dtype}: x's dtype changed "
            "between steps (the keys and values are computed in x's precision, float16 x in float32). "
            "Keep x's dtype, or start a new KVCache"
        )
