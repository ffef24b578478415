"""The overflow check of the full layer's scores, with a KV cache and a context: a cheap bound, then exact."""

import math

import numpy as np

from .layers import scores_fit


def scores_bounded(self, x, W_qkv, mask, source=None, cached=None, positions=None, project=None):
    """Raise ``FloatingPointError`` if a score a query may attend to could overflow, checked exactly when in doubt.

    A cheap bound first, with no projection computed: ``|q_h| <= |x_i| ||W_q||_F`` and
    ``|k_h| <= |s_j| ||W_k||_F``, so every score is at most
    ``max|x_i| ||W_q||_F max|s_j| ||W_k||_F / sqrt(d_k)``. With a KV cache, the cached keys
    (already projected) are bounded by their own length. Only when the bound reaches the
    dtype's range are the scores computed, through ``project`` (the module's own projection).
    """
    source = x if source is None else source
    if x.size == 0 or source.size == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: an inf bound, then the exact check
        columns = [self.d_model, self.d_model + getattr(self, "num_kv_heads", self.num_heads) * self.d_k]
        W_q, W_k, _ = np.split(W_qkv, columns, axis=-1)
        longest = [math.sqrt(float(np.einsum("...d,...d->...", a, a).max())) for a in (x, source)]
        key = longest[1] * float(np.linalg.norm(W_k))
        if cached is not None and cached.size:
            key = max(key, math.sqrt(float(np.einsum("...d,...d->...", cached, cached).max())))
        bound = longest[0] * float(np.linalg.norm(W_q)) * key / math.sqrt(self.d_k)
    if bound < float(np.finfo(x.dtype).max) / 2:
        return
    if project is None:  # the plain module's projection
        Q, K = (np.split(x @ W_qkv, 3, axis=-1)[i] for i in (0, 1))
        Q, K = (a.reshape(a.shape[0], a.shape[1], self.num_heads, self.d_k).transpose(0, 2, 1, 3) for a in (Q, K))
    else:
        Q, K, _ = project()
    if cached is not None and cached.shape[0::3] == K.shape[0::3] and cached.shape[1] == K.shape[1]:
        K = np.concatenate([cached.astype(x.dtype, copy=False), K], axis=2)  # (batch, kv_heads, len + seq_q, d_k)
        mask = np.arange(K.shape[2])[None, :] <= (cached.shape[2] + np.arange(x.shape[1]))[:, None]  # causal
    group = self.num_heads // getattr(self, "num_kv_heads", self.num_heads)
    scores_fit(f"{type(self).__name__}.forward", Q, K.repeat(group, axis=1), mask)
