"""What the test files share: the error matcher, random inputs, the PyTorch twin, derived tolerances.

The oracles themselves (loops straight from the formulas, and the optional torch import) are in
``oracle.py``; this module holds the plumbing around them.

Tolerances follow one rule, derived rather than tuned. With ``eps`` the unit roundoff of the
dtype a computation runs in (:func:`unit_roundoff`), a sum of ``n`` products of numbers whose
product is at most ``magnitude`` is off by at most ``n * eps * magnitude`` (:func:`rounding`).
Every bound below adds such terms along the computation it bounds (scores, ``exp``, the row sum,
the weighted sum of values, the output projection), and two paths that are each within a bound
of the exact answer are within twice it of each other. A wrong head, column or mask moves the
results by O(1), far above any of them.
"""

import functools
import math
import re

import numpy as np
import pytest
from oracle import require_torch, torch

from mhattn import GroupedQueryAttention


def raises(error, message):
    """``pytest.raises(error)`` whose message contains ``message`` literally (no regex)."""
    return pytest.raises(error, match=re.escape(message))


def random_qkv(rng, q_shape, keys, d_v=None, dtype=np.float64, scale=1.0):
    """Standard-normal ``Q`` of ``q_shape`` (times ``scale``), ``K`` and ``V`` drawn after it.

    keys: the shape of ``K``, or only its length ``seq_k`` (``K`` then has ``Q``'s other axes).
    ``V`` has ``K``'s shape with a last axis of ``d_v`` (default: ``K``'s).
    """
    k_shape = tuple(q_shape[:-2]) + (keys, q_shape[-1]) if np.ndim(keys) == 0 else tuple(keys)
    Q = (scale * rng.standard_normal(q_shape)).astype(dtype)
    K = rng.standard_normal(k_shape).astype(dtype)
    V = rng.standard_normal(k_shape[:-1] + (d_v or k_shape[-1],)).astype(dtype)
    return Q, K, V


def needs_torch(test):
    """Run ``test`` only with torch: skipped without it, failed without it under CI=true."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        require_torch()
        return test(*args, **kwargs)

    return run


def torch_twin(mha):
    """nn.MultiheadAttention holding mhattn's weights (torch computes x @ W.T, we compute x @ W)."""
    twin = torch.nn.MultiheadAttention(mha.d_model, mha.num_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.from_numpy(mha.W_qkv.T.copy()))
        twin.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
    return twin


# --- derived tolerances ----------------------------------------------------------------------


def unit_roundoff(dtype):
    """``eps`` of the dtype a computation on ``dtype`` runs in: float16 is computed in float32."""
    dtype = np.dtype(dtype)
    return float(np.finfo(np.float32 if dtype == np.float16 else dtype).eps)


def rounding(dtype, n, magnitude=1.0):
    """The rule: a sum of ``n`` products, each at most ``magnitude``, computed in ``dtype``, is off by this."""
    return n * unit_roundoff(dtype) * magnitude


def max_norm(X):
    """The largest norm of ``X``'s last-axis vectors, in float64."""
    return float(np.sqrt((np.asarray(X).astype(np.float64) ** 2).sum(axis=-1)).max(initial=0.0))


def attention_tolerances(Q, K, V, float64_scale=True):
    """Bounds ``(output, weights)`` on the difference of two attention paths on these inputs.

    Both compute the same sums in different orders (scaling ``q`` instead of the scores,
    skipping the max subtraction, summing rows with BLAS, tiling the keys). Each path's
    error against the exact result is bounded by :func:`rounding`:

    * a score ``q . k / sqrt(d_k)`` is off by at most ``((d_k + 2) * eps + 2 * eps_64) * S``:
      ``d_k`` for the dot product, 2 for the subtraction of the row's maximum, and two
      roundings for the scale ``1 / sqrt(d_k)``, which the teaching path computes as a Python
      float (so with float64's ``eps_64`` even for longdouble; ``float64_scale=False`` for two
      paths that take the scale in the dtype itself); ``S = max|q| * max|k| / sqrt(d_k)``
      bounds every score (Cauchy-Schwarz);
    * ``exp`` turns an absolute score error into the same *relative* error, plus ``eps``;
      the row sum adds ``seq_k * eps`` relative, the division ``eps``. So each weight is off
      by ``w * r`` with ``r = 2 * (score error) + (seq_k + 2) * eps``, at most ``r``;
    * the output ``sum_j w_j v_j`` is off by ``sum_j |dw_j| |v_j|`` (at most ``r * max|v|``,
      as the weights sum to one) plus the product's own rounding, ``seq_k * eps * max|v|``.

    Two paths each within these of the exact result are within twice them of each other.
    float16 is computed in float32 by both and rounded once at the end: that can part them
    by one more float16 unit in the last place of the largest value (1 for the weights).
    """
    dtype = np.result_type(Q, K, V)
    d_k, seq_k = Q.shape[-1], K.shape[-2]
    S = max_norm(Q) * max_norm(K) / math.sqrt(d_k)
    max_v = float(np.abs(V.astype(np.float64)).max(initial=0.0))
    eps_scale = max(unit_roundoff(dtype), unit_roundoff(np.float64) if float64_scale else 0.0)
    r = 2 * (rounding(dtype, d_k + 2, S) + 2 * eps_scale * S) + rounding(dtype, seq_k + 2)
    weights, output = 2 * r, max_v * (2 * (r + rounding(dtype, seq_k)))  # not (max_v * 2): it may overflow
    if dtype == np.float16:
        half = float(np.finfo(np.float16).eps)
        weights, output = weights + half, output + half * max_v
    return output, weights


def projected_tolerances(attention, heads, W_o, x_dtype):
    """Bounds ``(output, weights)`` on two modules that share ``Q, K, V`` and differ in attention.

    ``attention``: :func:`attention_tolerances` of the shared ``Q, K, V``; ``heads`` the heads'
    concatenated outputs ``H`` of one of them. ``H`` differs by at most ``t`` (attention's output
    bound), so ``H @ W_o`` differs by at most ``c * t``, plus each product's rounding
    ``d_model * eps * c * max|H|`` on either side, with ``c`` the largest column sum of ``|W_o|``.
    float16 adds one unit of its own at the end.
    """
    t, t_weights = attention
    c = float(np.abs(W_o).sum(axis=0).max())
    max_h = float(np.abs(heads).max(initial=0.0))
    bound = c * (t + 2 * rounding(heads.dtype, W_o.shape[0], max_h))
    if np.dtype(x_dtype) == np.float16:
        bound += float(np.finfo(np.float16).eps) * c * max_h
        t_weights += float(np.finfo(np.float16).eps)
    return bound, t_weights


def module_tolerances(mha, x, context=None, dtype=np.float64):
    """Bounds ``(output, weights)`` on |mhattn - an independent float64 module| (torch's, say).

    With ``X`` the largest row norm of ``x`` and ``context`` and ``W``, ``W_o`` the largest
    column norms, by :func:`rounding` in float64:

    * every projected q, k, v entry is at most ``P = X W``, off by ``d_model eps P``;
    * every score ``q . k / sqrt(d_k)`` is at most ``S = sqrt(d_k) P^2`` (Cauchy-Schwarz), off by
      ``(2 d_model + d_k) eps S`` (the errors of q and k, and the dot product's own);
    * ``exp`` turns that into a relative weight error, doubled by the normalisation, plus
      ``(seq_k + 4) eps`` for the row sum, the division and ``exp``: ``rel`` below;
    * a head's output, a weighted average of values (each at most ``P``), is off by
      ``P (rel + (d_model + seq_k) eps)``; ``W_o`` sums ``d_model`` of them:
      ``sqrt(d_model) W_o (head error + d_model eps P)``.

    Each side is within that of the exact answer, so they are within twice it of each other.
    ``dtype`` is the precision the computation runs in (float64 unless given).
    """
    d_model, d_k = mha.d_model, mha.d_k
    sources = [x] if context is None else [x, context]
    X = max(max_norm(a) for a in sources)
    P = X * max_norm(mha.W_qkv.T)
    S = math.sqrt(d_k) * P**2
    seq_k = sources[-1].shape[1]
    rel = 2 * rounding(dtype, 2 * d_model + d_k, S) + rounding(dtype, seq_k + 4)
    head = P * rel + rounding(dtype, d_model + seq_k, P)
    output = math.sqrt(d_model) * max_norm(mha.W_o.T) * (head + rounding(dtype, d_model, P))
    return 2 * output, 2 * rel


def close_in(mha, x, dtype):
    """``(output, weights)`` bounds on |a module computed in ``dtype`` - the same in float64|, cast to ``dtype``.

    Zero in float64 (the two must agree exactly). Below it: the rounding of a ``dtype``
    computation (float16 runs in float32) by :func:`module_tolerances`, plus one rounding of the
    cast to ``dtype`` on each side.
    """
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return 0.0, 0.0
    compute = np.float32 if dtype == np.float16 else dtype
    output, weights = module_tolerances(mha, np.asarray(x, np.float64), dtype=compute)
    x_max = max_norm(x) * max_norm(mha.W_qkv.T) * max_norm(mha.W_o.T) * math.sqrt(mha.d_model)
    cast = 2 * unit_roundoff(dtype)
    return output + cast * x_max, weights + cast


def small_module(dtype=np.float64, seq_len=5, seed=16, module=GroupedQueryAttention):
    """A module (d_model 8, 2 heads, seed 3), an input ``x`` and an upstream gradient ``d_out``, in ``dtype``.

    ``module``: the class to build; the default, the full layer, has ``vjp``.
    """
    rng = np.random.default_rng(seed)
    mha = module(d_model=8, num_heads=2, seed=3)
    x = rng.standard_normal((2, seq_len, 8)).astype(dtype)
    d_out = rng.standard_normal((2, seq_len, 8)).astype(dtype)
    return mha, x, d_out


def refusals(door, good, **bad_values):
    """``pytest.param`` rows ``(door, good, argument, bad)``: each bad value of each argument, spoiling a good call."""
    name = getattr(door, "__name__", "door")
    return [pytest.param(door, good, argument, bad, id=f"{name}-{argument}-{i}")
            for argument, bads in bad_values.items() for i, bad in enumerate(bads)]


def assert_refused_by_name(door, good, argument, bad):
    """The good call works, and the same call with ``argument=bad`` is refused by a message naming ``argument``."""
    door(**good)  # the good call works: the refusal below is the spoiled argument's
    with pytest.raises((TypeError, ValueError), match=argument):
        door(**(good | {argument: bad}))
