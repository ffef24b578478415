"""Weights to and from ``torch.nn.MultiheadAttention``: the bridge the production notebook tests the layer with.

PyTorch keeps ``in_proj_weight`` as the rows ``[W_q; W_k; W_v]`` of ``y = x @ W.T``; this chapter
keeps ``W_qkv`` as the columns of ``y = x @ W``: one is the other's transpose. Everything is
copied, so neither side ever shares storage with the other.
"""

import numpy as np

from ..checks.optional import require


def weights_of(module):
    """``(W_qkv, W_o, num_heads)`` of a bias-free ``torch.nn.MultiheadAttention``, as NumPy copies.

    NumPy has no bfloat16 (nor float8): such weights are widened to float32, which holds every
    one of their values exactly. The module must be bias-free, with real floating-point weights,
    ``add_zero_attn=False`` and keys and values of ``embed_dim`` features (its door checks that).
    """
    torch = require("torch", "torch")
    numpy_floats = (torch.float16, torch.float32, torch.float64)

    def as_numpy(tensor):
        tensor = tensor.detach().cpu()
        return (tensor if tensor.dtype in numpy_floats else tensor.to(torch.float32)).numpy().copy()

    W_qkv = as_numpy(module.in_proj_weight).T  # (d_model, 3 d_model): torch's rows [W_q; W_k; W_v], transposed
    W_o = as_numpy(module.out_proj.weight).T  # (d_model, d_model)
    for name, array in (("in_proj_weight", W_qkv), ("out_proj.weight", W_o)):
        if not np.isfinite(array).all():
            raise ValueError(f"module.{name} must be finite; it holds NaN or inf")
    return np.ascontiguousarray(W_qkv), np.ascontiguousarray(W_o), module.num_heads


def module_from(mha, batch_first=True):
    """A ``torch.nn.MultiheadAttention(bias=False)`` with the weights of ``mha`` (copied), in their dtype."""
    torch = require("torch", "torch")
    dtype = np.result_type(mha.W_qkv, mha.W_o)
    dtype = dtype if dtype in (np.float16, np.float32, np.float64) else np.dtype(np.float64)
    module = torch.nn.MultiheadAttention(mha.d_model, mha.num_heads, bias=False, batch_first=batch_first,
                                         dtype=getattr(torch, dtype.name))
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.from_numpy(np.ascontiguousarray(mha.W_qkv.T, dtype=dtype)))  # (3 d, d)
        module.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(mha.W_o.T, dtype=dtype)))  # (d, d)
    return module.eval()
