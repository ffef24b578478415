"""The chapter's module with the engine's attention: the same weights and numbers, in bounded memory."""

from ..core.production import GroupedQueryAttention
from . import flash
from .blocks import attention_in_blocks


class FastMultiHeadAttention(GroupedQueryAttention):
    """:class:`mhattn.GroupedQueryAttention` with attention computed in blocks or tiles.

    The same constructor, weights and outputs (to rounding). With ``need_weights=True`` the
    query blocks of this module compute the weights row block by row block. With
    ``need_weights=False`` no weight is kept: for keys longer than one key tile
    (``mhattn.engine.flash.KEY_TILE``) they are cut into tiles too
    (:func:`mhattn.engine.flash_attention`'s loop, the faster of the two there); shorter ones
    fit a block whole, and the query blocks, with fewer passes per block, are faster. Either
    way the extra memory is one block or a few tiles of scores, whatever ``seq_len`` is,
    besides the output.

    Examples
    --------
    >>> import numpy as np
    >>> from mhattn import GroupedQueryAttention
    >>> x = np.random.default_rng(0).standard_normal((1, 6, 16))  # (batch, seq_len, d_model)
    >>> output, weights = FastMultiHeadAttention(d_model=16, num_heads=4, seed=0)(x, need_weights=False)
    >>> output.shape, weights
    ((1, 6, 16), None)
    >>> reference, _ = GroupedQueryAttention(d_model=16, num_heads=4, seed=0)(x)  # the same weights
    >>> bool(np.allclose(output, reference))
    True
    """

    def _attention(self, Q, K, V, mask, need_weights):
        if need_weights or K.shape[-2] <= flash.KEY_TILE:  # a whole row of scores fits one key tile
            return attention_in_blocks(Q, K, V, mask, need_weights=need_weights)
        return flash.attention_in_tiles(Q, K, V, mask)[0], None
