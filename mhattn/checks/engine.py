"""The arguments of the engine's free functions: :func:`mhattn.engine.blockwise_attention` and
:func:`mhattn.engine.flash_attention`.

Both take the teaching path's ``Q, K, V, mask`` (checked by :func:`.layers.attention_args`,
which names the function in an overflow error) and a few settings of their own.
"""

import numpy as np

from .layers import attention_args
from .values import flag, positive_int, real_array


def blockwise_args(Q, K, V, mask, block_size, need_weights):
    """Arguments of :func:`mhattn.engine.blockwise_attention`: those of the teaching path, and two more."""
    arguments, result_dtype = attention_args(Q, K, V, mask, caller="blockwise_attention")
    block_size = None if block_size is None else positive_int("block_size", block_size)
    need_weights = flag("need_weights", need_weights)
    return arguments | {"block_size": block_size, "need_weights": need_weights}, result_dtype


def flash_args(Q, K, V, mask, block_q, block_k, is_causal, return_lse):
    """Arguments of :func:`mhattn.engine.flash_attention`.

    The result dtype is None: the tiles take float16 as it is, compute in float32, and give
    the output back in float16 (checked for overflow there) and the log-sum-exp in float32,
    which may hold ``-inf`` (a fully masked query), so the door leaves the results alone.
    """
    block_q = None if block_q is None else positive_int("block_q", block_q)
    block_k = None if block_k is None else positive_int("block_k", block_k)
    is_causal = flag("is_causal", is_causal)
    return_lse = flag("return_lse", return_lse)
    if is_causal and mask is not None:
        raise ValueError(
            "mask must be None when is_causal=True (is_causal builds each tile's causal mask itself); "
            f"got a mask of shape {np.shape(mask)}. Pass one or the other, or combine them into one mask"
        )
    arguments, result_dtype = attention_args(Q, K, V, mask, caller="flash_attention")
    if result_dtype is not None:  # float16 Q, K and V: handed on as they came (no copy), the tiles widen them
        arguments |= {"Q": real_array("Q", Q), "K": real_array("K", K), "V": real_array("V", V)}
    settings = {"block_q": block_q, "block_k": block_k, "is_causal": is_causal, "return_lse": return_lse}
    return arguments | settings, None
