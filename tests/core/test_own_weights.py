"""Bringing your own weights: from_weights, from_torch / to_torch, both RoPE pairings, token positions, 3-D masks.

The oracle is written here in plain torch and shares nothing with mhattn: separate q/k/v/o
weights in torch's ``(out, in)`` layout (``y = x @ W.T``), heads cut with ``view``, grouped
key/value heads with ``repeat_interleave``, a boolean mask filled with ``-inf``, and RoPE in
the two conventions as their own codebases write it: Hugging Face's ``rotate_half`` (pairs
``i, i + d/2``) and Meta's Llama reference, which multiplies complex numbers (pairs ``2i, 2i+1``).
"""

import math

import numpy as np
import pytest
from oracle import require_torch, torch

import mhattn
from mhattn import (
    FastMultiHeadAttention,
    GroupedQueryAttention,
    KVCache,
    RotaryMultiHeadAttention,
    apply_rope,
    apply_rope_interleaved,
    causal_mask,
    interleaved_to_half_split,
)

BATCH, SEQ, D_MODEL, HEADS = 3, 7, 32, 4
D_K = D_MODEL // HEADS
PAD = np.array([0, 2, 5])  # left padding of each row
OFFSET = np.array([0, 11, 3])  # where each row's first real token sits (a continued document, say)
EPS32 = float(np.finfo(np.float32).eps)


# --- the independent torch oracle -------------------------------------------------------


def rotate_half_rope(t, positions, base):
    """Hugging Face Llama's RoPE: t (batch, heads, seq, d), positions (batch, seq); cos/sin of [freqs, freqs]."""
    d = t.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = positions.to(torch.float64)[..., None] * inv_freq  # (batch, seq, d/2)
    emb = torch.cat([freqs, freqs], dim=-1)[:, None]  # (batch, 1, seq, d)
    cos, sin = emb.cos().to(t.dtype), emb.sin().to(t.dtype)
    rotated = torch.cat([-t[..., d // 2 :], t[..., : d // 2]], dim=-1)  # rotate_half
    return t * cos + rotated * sin


def complex_rope(t, positions, base):
    """Meta's Llama reference RoPE: consecutive pairs as complex numbers, times e^(i p theta)."""
    d = t.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = positions.to(torch.float64)[..., None] * inv_freq  # (batch, seq, d/2)
    cis = torch.polar(torch.ones_like(freqs), freqs)[:, None]  # (batch, 1, seq, d/2), complex128
    pairs = torch.view_as_complex(t.to(torch.float64).reshape(*t.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * cis).flatten(-2).to(t.dtype)


def torch_reference(x, W_q, W_k, W_v, W_o, num_heads, allowed, rope=None, positions=None, base=10000.0):
    """Attention with torch-layout weights. x: (batch, seq, d_model); allowed: (batch, seq, seq), True = may attend."""
    batch, seq, d_model = x.shape
    d_k = d_model // num_heads
    q = (x @ W_q.T).view(batch, seq, num_heads, d_k).transpose(1, 2)  # (batch, heads, seq, d_k)
    kv_heads = W_k.shape[0] // d_k
    k = (x @ W_k.T).view(batch, seq, kv_heads, d_k).transpose(1, 2)
    v = (x @ W_v.T).view(batch, seq, kv_heads, d_k).transpose(1, 2)
    if rope is not None:
        q, k = rope(q, positions, base), rope(k, positions, base)
    k, v = k.repeat_interleave(num_heads // kv_heads, dim=1), v.repeat_interleave(num_heads // kv_heads, dim=1)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(d_k)
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    heads = weights @ v  # (batch, heads, seq, d_k)
    return heads.transpose(1, 2).reshape(batch, seq, d_model) @ W_o.T, weights


ROPES = {False: None, "half": rotate_half_rope, "interleaved": complex_rope}


# --- the data -----------------------------------------------------------------------------


def left_padded_causal():
    """(batch, seq, seq): causal, padded keys hidden; a padded query sees itself (no empty row)."""
    i, j = np.arange(SEQ)[:, None], np.arange(SEQ)[None, :]
    return (j <= i) & ((j >= PAD[:, None, None]) | (j == i))


def row_positions():
    """(batch, seq): 0 on the padding, then OFFSET, OFFSET + 1, ... on each row's real tokens."""
    real = np.arange(SEQ) >= PAD[:, None]  # (batch, seq)
    return np.clip(np.arange(SEQ) - PAD[:, None], 0, None) + np.where(real, OFFSET[:, None], 0)


def torch_weights(num_kv_heads, seed=0):
    """Four nn.Linear-style weights (out, in), scaled so every activation is of order one."""
    rng = np.random.default_rng(seed)
    kv_width = num_kv_heads * D_K
    shapes = [(D_MODEL, D_MODEL), (kv_width, D_MODEL), (kv_width, D_MODEL), (D_MODEL, D_MODEL)]
    return [rng.standard_normal(shape) / np.sqrt(D_MODEL) for shape in shapes]


def tokens(seed=1, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal((BATCH, SEQ, D_MODEL)).astype(dtype)


def reference(x, weights, num_kv_heads, allowed, rope, positions):
    """The torch oracle in float64 on (float32-rounded, where given) inputs, as NumPy arrays."""
    t = [torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in (x, *weights)]
    with torch.no_grad():
        out, w = torch_reference(*t, HEADS, torch.from_numpy(allowed), ROPES[rope], torch.from_numpy(positions))
    return out.numpy(), w.numpy()


# --- from_weights against the torch oracle ---------------------------------------------


@pytest.mark.parametrize("rope", [False, "half", "interleaved"])
@pytest.mark.parametrize("num_kv_heads", [HEADS, 2])
@pytest.mark.parametrize("layout", ["torch", "mhattn"])
def test_from_weights_with_positions_and_a_3d_mask_equals_torch_in_float64(layout, num_kv_heads, rope):
    require_torch()
    weights = torch_weights(num_kv_heads)
    given = weights if layout == "torch" else [W.T for W in weights]
    mha = GroupedQueryAttention.from_weights(*given, num_heads=HEADS, layout=layout, num_kv_heads=num_kv_heads,
                                             rope=rope)
    x, allowed, positions = tokens(), left_padded_causal(), row_positions()
    output, attn = mha(x, allowed, positions=positions if rope else None)
    expected_output, expected_weights = reference(x, weights, num_kv_heads, allowed, rope, positions)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-10)
    np.testing.assert_allclose(attn, expected_weights, rtol=0, atol=1e-10)


@pytest.mark.parametrize("rope", [False, "half", "interleaved"])
def test_from_weights_in_float32_is_within_its_rounding_error_of_torch_in_float64(rope):
    # Error analysis (Higham, Accuracy and Stability, Thm 3.5): a float32 dot product of length n
    # errs by at most n * eps32 * sum_i |a_i b_i|. The forward chains four of them (inner lengths
    # d_model for Q/K/V, d_k for the scores, seq_k for weights @ V, d_model for W_o); RoPE's
    # rotations add a few eps, and the softmax turns an absolute score error delta into a
    # relative weight error of at most 2 delta. With standard-normal tokens and weights scaled by
    # 1/sqrt(d_model), sum_i |a_i b_i| is of the size of the largest entries: |tokens|, |values|,
    # |scores| and |outputs| all stay below 4 in this data, and the softmax's factor 2 makes
    # C = 8. The bound is eps32 * (2 d_model + d_k + seq) * C = 7.5e-5 (measured: 7.5e-7, since
    # rounding errors mostly cancel); a missed transpose or a wrong pairing errs by O(1).
    # The oracle runs in float64 on the same float32 inputs, so only mhattn's rounding counts.
    require_torch()
    weights = [W.astype(np.float32) for W in torch_weights(HEADS, seed=2)]
    mha = GroupedQueryAttention.from_weights(*weights, num_heads=HEADS, layout="torch", rope=rope)
    x, allowed, positions = tokens(3, np.float32), left_padded_causal(), row_positions()
    output, attn = mha(x, allowed, positions=positions if rope else None)
    assert output.dtype == attn.dtype == np.float32
    expected_output, expected_weights = reference(x, weights, HEADS, allowed, rope, positions)
    tolerance = EPS32 * (2 * D_MODEL + D_K + SEQ) * 8
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=tolerance)
    np.testing.assert_allclose(attn, expected_weights, rtol=0, atol=tolerance)


def test_the_two_pairings_differ_and_the_reorder_maps_one_onto_the_other():
    """An interleaved checkpoint run as half-split is wrong; reordering W_q's and W_k's head columns fixes it."""
    weights = [W.T for W in torch_weights(HEADS, seed=4)]  # mhattn layout
    x, positions = tokens(5), row_positions()
    interleaved = GroupedQueryAttention.from_weights(*weights, num_heads=HEADS, layout="mhattn", rope="interleaved")
    order = np.concatenate([h * D_K + interleaved_to_half_split(D_K) for h in range(HEADS)])  # every head's columns
    W_q, W_k, W_v, W_o = weights
    half = GroupedQueryAttention.from_weights(W_q[:, order], W_k[:, order], W_v, W_o, num_heads=HEADS, layout="mhattn",
                                           rope=True)
    unordered = GroupedQueryAttention.from_weights(*weights, num_heads=HEADS, layout="mhattn", rope=True)
    expected = interleaved(x, positions=positions)[0]
    np.testing.assert_allclose(half(x, positions=positions)[0], expected, rtol=0, atol=1e-12)
    assert np.abs(unordered(x, positions=positions)[0] - expected).max() > 1e-2


def test_from_weights_copies_the_callers_arrays():
    weights = torch_weights(2, seed=6)
    mha = GroupedQueryAttention.from_weights(*weights, num_heads=HEADS, layout="torch", num_kv_heads=2)
    x = tokens(7)
    before = mha(x)[0]
    for W in weights:
        W *= 3.0
    np.testing.assert_array_equal(mha(x)[0], before)
    assert all(not np.shares_memory(W, mha.W_qkv) and not np.shares_memory(W, mha.W_o) for W in weights)


def test_from_weights_on_the_engine_gives_the_engine():
    weights = torch_weights(HEADS, seed=8)
    fast = FastMultiHeadAttention.from_weights(*weights, num_heads=HEADS, layout="torch", rope="interleaved")
    plain = GroupedQueryAttention.from_weights(*weights, num_heads=HEADS, layout="torch", rope="interleaved")
    assert type(fast) is FastMultiHeadAttention
    x, allowed, positions = tokens(9), left_padded_causal(), row_positions()
    np.testing.assert_allclose(fast(x, allowed, positions=positions, need_weights=False)[0],
                               plain(x, allowed, positions=positions)[0], rtol=0, atol=1e-12)


def test_a_missing_or_unknown_layout_is_refused_by_name():
    weights = torch_weights(HEADS)
    with pytest.raises(TypeError, match="layout"):
        GroupedQueryAttention.from_weights(*weights, num_heads=HEADS)
    with pytest.raises(ValueError, match=r"layout must be 'torch' .* or 'mhattn' .*got 'pytorch'"):
        GroupedQueryAttention.from_weights(*weights, num_heads=HEADS, layout="pytorch")


def test_a_wrong_shape_names_the_weight_the_expected_and_the_actual_shape():
    W_q, W_k, W_v, W_o = torch_weights(2)
    message = r"W_k must have shape \(16, 32\) in layout='torch' .*got shape \(32, 16\) \(that is the shape in layout="
    with pytest.raises(ValueError, match=message):
        GroupedQueryAttention.from_weights(W_q, W_k.T, W_v, W_o, num_heads=HEADS, layout="torch", num_kv_heads=2)
    with pytest.raises(ValueError, match=r"W_q must be a square \(d_model, d_model\) matrix .*got shape \(32, 16\)"):
        GroupedQueryAttention.from_weights(W_q[:, :16], W_k, W_v, W_o, num_heads=HEADS, layout="torch")
    with pytest.raises(ValueError, match=r"W_o must have shape \(32, 32\) .*got shape \(32, 31\)"):
        GroupedQueryAttention.from_weights(W_q, W_k, W_v, W_o[:, :31], num_heads=HEADS, layout="torch", num_kv_heads=2)
    with pytest.raises(ValueError, match="W_v must be finite"):
        GroupedQueryAttention.from_weights(W_q, W_k, W_v * np.nan, W_o, num_heads=HEADS, layout="torch", num_kv_heads=2)


# --- from_torch / to_torch ---------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [True, False])
def test_from_torch_equals_nn_multiheadattention_outputs_and_per_head_weights(batch_first):
    require_torch()
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(D_MODEL, HEADS, bias=False, batch_first=batch_first, dtype=torch.float64)
    mha = GroupedQueryAttention.from_torch(module)
    x, allowed = tokens(10), causal_mask(SEQ)
    output, weights = mha(x, allowed)
    t = torch.from_numpy(x if batch_first else x.transpose(1, 0, 2).copy())
    with torch.no_grad():  # torch's boolean attn_mask is True where a query may NOT attend
        expected, expected_weights = module(t, t, t, attn_mask=torch.from_numpy(~allowed), average_attn_weights=False)
    expected = expected.numpy() if batch_first else expected.numpy().transpose(1, 0, 2)
    np.testing.assert_allclose(output, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(weights, expected_weights.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(mha.head_weights(1)[0], module.in_proj_weight.detach().numpy()[D_K : 2 * D_K].T)


@pytest.mark.parametrize("batch_first", [True, False])
def test_to_torch_and_back_keeps_every_weight_and_output(batch_first):
    require_torch()
    mha = GroupedQueryAttention(D_MODEL, HEADS, seed=11)
    module = mha.to_torch(batch_first=batch_first)
    assert module.batch_first is batch_first and module.in_proj_weight.dtype == torch.float64
    back = GroupedQueryAttention.from_torch(module)
    np.testing.assert_array_equal(back.W_qkv, mha.W_qkv)
    np.testing.assert_array_equal(back.W_o, mha.W_o)
    x = tokens(12)
    t = torch.from_numpy(x if batch_first else x.transpose(1, 0, 2).copy())
    with torch.no_grad():
        expected = module(t, t, t, need_weights=False)[0].numpy()
    expected = expected if batch_first else expected.transpose(1, 0, 2)
    np.testing.assert_allclose(mha(x)[0], expected, rtol=0, atol=1e-10)
    assert not np.shares_memory(back.W_qkv, module.in_proj_weight.detach().numpy())


@pytest.mark.parametrize("module_class", [GroupedQueryAttention, FastMultiHeadAttention])
@pytest.mark.parametrize(
    "options, message",
    [
        ({"bias": True}, "module must have no biases"),
        ({"bias": False, "add_bias_kv": True}, "module must have no biases"),
        ({"bias": False, "add_zero_attn": True}, "module must have add_zero_attn=False"),
        ({"bias": False, "kdim": 16, "vdim": 16}, "module must take keys and values of embed_dim = 32 features"),
    ],
)
def test_from_torch_refuses_what_this_module_cannot_hold(module_class, options, message):
    require_torch()
    with pytest.raises(ValueError, match=message):
        module_class.from_torch(torch.nn.MultiheadAttention(D_MODEL, HEADS, **options))
    with pytest.raises(TypeError, match="module must be a torch.nn.MultiheadAttention; got Linear"):
        module_class.from_torch(torch.nn.Linear(4, 4))


@pytest.mark.filterwarnings("ignore:Complex modules:UserWarning")  # torch's own notice on .to(complex64)
@pytest.mark.parametrize("module_class", [GroupedQueryAttention, FastMultiHeadAttention])
def test_from_torch_refuses_a_complex_module_before_building_a_layer(module_class):
    require_torch()
    module = torch.nn.MultiheadAttention(D_MODEL, HEADS, bias=False).to(torch.complex64)
    message = r"module's weights must be of a real floating-point dtype .*got module.in_proj_weight of dtype " \
              r"torch.complex64"
    with pytest.raises(TypeError, match=message):
        module_class.from_torch(module)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn"])
def test_from_torch_of_a_module_in_a_dtype_numpy_lacks_gives_its_weights_and_outputs_in_float32(dtype, batch_first):
    # NumPy has neither dtype, and float32 holds every value of both exactly (bfloat16 is float32
    # with 8 of its 24 mantissa bits; float8_e4m3fn has fewer bits and a narrower exponent), so
    # the copies must equal the module's weights bit for bit. The outputs are compared with the
    # same module in float32 (module.float(), the same weights): both sides compute in float32,
    # each within the bound of the float32 test above, eps32 * (2 d_model + d_k + seq) * 8
    # (torch's initialisation keeps every weight below sqrt(3/2) / sqrt(d_model), and every
    # activation stays below 4 here), so they differ by at most twice that (measured: 1.5e-7);
    # a transposed W_q errs by 0.3.
    require_torch()
    torch.manual_seed(24)
    module = torch.nn.MultiheadAttention(D_MODEL, HEADS, bias=False, batch_first=batch_first)
    module = module.to(getattr(torch, dtype))
    mha = GroupedQueryAttention.from_torch(module)
    assert mha.W_qkv.dtype == mha.W_o.dtype == np.float32
    twin = module.float()  # the same weights, widened exactly
    np.testing.assert_array_equal(mha.W_qkv, twin.in_proj_weight.detach().numpy().T)
    np.testing.assert_array_equal(mha.W_o, twin.out_proj.weight.detach().numpy().T)
    x = tokens(25, np.float32)
    output = mha(x)[0]
    assert output.dtype == np.float32
    t = torch.from_numpy(x if batch_first else x.transpose(1, 0, 2).copy())
    with torch.no_grad():
        expected = twin(t, t, t, need_weights=False)[0].numpy()
    expected = expected if batch_first else expected.transpose(1, 0, 2)
    np.testing.assert_allclose(output, expected, rtol=0, atol=2 * EPS32 * (2 * D_MODEL + D_K + SEQ) * 8)
    back = mha.to_torch(batch_first=batch_first)
    assert back.in_proj_weight.dtype == back.out_proj.weight.dtype == torch.float32
    assert torch.equal(back.in_proj_weight, twin.in_proj_weight)
    assert torch.equal(back.out_proj.weight, twin.out_proj.weight)


def test_from_torch_refuses_no_module_and_a_module_with_a_nan_weight():
    require_torch()
    with pytest.raises(TypeError, match="module must be a torch.nn.MultiheadAttention"):
        GroupedQueryAttention.from_torch(None)
    module = torch.nn.MultiheadAttention(D_MODEL, HEADS, bias=False)
    with torch.no_grad():
        module.in_proj_weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="module"):
        GroupedQueryAttention.from_torch(module)


def test_to_torch_refuses_rope_and_grouped_queries():
    require_torch()
    for mha in (GroupedQueryAttention(D_MODEL, HEADS, rope=True),
                GroupedQueryAttention(D_MODEL, HEADS, num_kv_heads=2)):
        with pytest.raises(ValueError, match="to_torch needs plain multi-head attention"):
            mha.to_torch()


# --- masks, positions and the KV cache (no torch needed) -------------------------------


@pytest.mark.parametrize("module", [GroupedQueryAttention, FastMultiHeadAttention])
@pytest.mark.parametrize("need_weights", [True, False])
def test_a_3d_mask_equals_the_same_mask_with_a_head_axis(module, need_weights):
    mha = module(D_MODEL, HEADS, seed=13, num_kv_heads=2, rope="interleaved")
    x, allowed = tokens(14), left_padded_causal()
    three = mha(x, allowed, need_weights=need_weights)
    four = mha(x, allowed[:, None], need_weights=need_weights)
    np.testing.assert_array_equal(three[0], four[0])
    shared = mha(x, allowed[:1])[0]  # (1, seq, seq): one mask for every sequence
    np.testing.assert_array_equal(shared, mha(x, np.broadcast_to(allowed[:1, None], (BATCH, HEADS, SEQ, SEQ)))[0])


def test_a_3d_mask_of_another_shape_is_refused_with_the_layouts():
    mha = GroupedQueryAttention(D_MODEL, HEADS)
    with pytest.raises(ValueError, match=r"mask of shape \(2, 7, 7\) does not fit scores of shape \(3, 4, 7, 7\): "
                                         r".*\(batch or 1, seq_q or 1, seq_k\), shared by every head"):
        mha(tokens(), np.ones((2, SEQ, SEQ), dtype=bool))


def test_the_default_positions_are_0_to_seq_len_and_only_differences_matter():
    mha = GroupedQueryAttention(D_MODEL, HEADS, seed=15, rope="interleaved")
    x = tokens(16)
    default = mha(x, causal_mask(SEQ))[0]
    np.testing.assert_array_equal(mha(x, causal_mask(SEQ), positions=np.arange(SEQ))[0], default)
    np.testing.assert_array_equal(mha(x, causal_mask(SEQ), positions=np.tile(np.arange(SEQ), (BATCH, 1)))[0], default)
    shifted = mha(x, causal_mask(SEQ), positions=np.arange(SEQ) + np.array([[0], [9], [100]]))[0]
    np.testing.assert_allclose(shifted, default, rtol=0, atol=1e-12)  # a rotation by the offset cancels in q.k


@pytest.mark.parametrize("rope", ["interleaved", True])
def test_the_kv_cache_with_rope_equals_the_full_causal_forward(rope):
    mha = GroupedQueryAttention(D_MODEL, HEADS, seed=17, num_kv_heads=2, rope=rope)
    x = tokens(18)
    cache = KVCache()
    steps = [mha(x[:, :3], kv_cache=cache)[0]] + [mha(x[:, t : t + 1], kv_cache=cache)[0] for t in range(3, SEQ)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), mha(x, causal_mask(SEQ))[0], rtol=0, atol=1e-12)
    # per-row positions with a cache: each step gives its tokens' own positions
    positions, cache = row_positions(), KVCache()
    steps = [mha(x[:, t : t + 1], kv_cache=cache, positions=positions[:, t : t + 1])[0] for t in range(SEQ)]
    expected = mha(x, causal_mask(SEQ), positions=positions)[0]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), expected, rtol=0, atol=1e-12)


def test_apply_rope_with_a_row_of_positions_per_sequence_rotates_each_row_by_its_own():
    q = np.random.default_rng(19).standard_normal((BATCH, HEADS, SEQ, D_K))
    positions = row_positions()
    for rotate in (apply_rope, apply_rope_interleaved):
        rotated = rotate(q, positions)
        for b in range(BATCH):
            np.testing.assert_array_equal(rotated[b], rotate(q[b], positions[b]))


@pytest.mark.parametrize(
    "positions, error, message",
    [
        (np.arange(SEQ) > 2, TypeError, "positions must .*dtype bool"),
        (np.arange(SEQ) * 1.0, TypeError, "positions must be an array of ints .*got dtype float64"),
        (np.arange(SEQ + 1), ValueError, r"positions must have shape \(seq_len,\) = \(7,\) or \(batch, seq_len\) = "
                                         r"\(3, 7\); got shape \(8,\)"),
        (np.zeros((2, SEQ), dtype=int), ValueError, r"got shape \(2, 7\)"),
        (np.arange(SEQ) - 1, ValueError, r"positions must be >= 0 .*got -1 at index \(0,\)"),
    ],
)
def test_positions_are_checked_at_the_door(positions, error, message):
    mha = GroupedQueryAttention(D_MODEL, HEADS, rope="interleaved")
    with pytest.raises(error, match=message):
        mha(tokens(), positions=positions)
    with pytest.raises(error, match=message):
        mha.vjp(tokens(), positions=positions)


def test_positions_without_rope_and_unknown_pairings_are_refused():
    with pytest.raises(ValueError, match="positions are only used by rotary embeddings"):
        GroupedQueryAttention(D_MODEL, HEADS)(tokens(), positions=np.arange(SEQ))
    with pytest.raises(ValueError, match="rope must be True or False, 'half' .* or 'interleaved' .*got 'complex'"):
        GroupedQueryAttention(D_MODEL, HEADS, rope="complex")
    with pytest.raises(ValueError, match=r"positions must be 1-D .*\(batch, seq_len\) for x of shape \(batch, heads"):
        apply_rope(np.ones((BATCH, SEQ, D_K)), row_positions())


@pytest.mark.parametrize("module", [GroupedQueryAttention, RotaryMultiHeadAttention])
def test_the_pairing_is_an_attribute_and_in_the_repr(module):
    half, interleaved = (module(D_MODEL, HEADS, rope=r) for r in ("half", "interleaved"))
    assert (half.rope, half.rope_pairing) == (True, "half")
    assert (interleaved.rope, interleaved.rope_pairing) == (True, "interleaved")
    assert "rope=True, rope_base=10000" in repr(half)
    assert "rope='interleaved', rope_base=10000" in repr(interleaved)
    assert (module(D_MODEL, HEADS, rope=True).rope_pairing) == "half"
    if module is GroupedQueryAttention:
        plain = module(D_MODEL, HEADS, rope=False)
        assert (plain.rope, plain.rope_pairing) == (False, None)


def test_the_rope_functions_are_exported():
    assert {"apply_rope", "apply_rope_interleaved", "interleaved_to_half_split"} <= set(mhattn.__all__)
    assert mhattn.apply_rope.__wrapped__ is mhattn.core.positions.apply_rope  # the plain function behind its door
    assert mhattn.apply_rope_interleaved.__wrapped__ is mhattn.core.positions.apply_rope_interleaved


# --- the backward pass ------------------------------------------------------------------


@pytest.mark.parametrize("rope", ["interleaved", "half"])
def test_the_backward_with_positions_and_a_3d_mask_equals_torch_autograd(rope):
    require_torch()
    mha = GroupedQueryAttention(D_MODEL, HEADS, seed=21, num_kv_heads=2, rope=rope)
    x, allowed, positions = tokens(22), left_padded_causal(), row_positions()
    output, _, backward = mha.vjp(x, allowed, positions=positions)
    d_output = np.random.default_rng(23).standard_normal(output.shape)
    grads = backward(d_output)
    W_q, W_k, W_v = np.split(mha.W_qkv, mha.qkv_columns(), axis=-1)
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, W_q.T, W_k.T, W_v.T, mha.W_o.T)]
    out, _ = torch_reference(*leaves, HEADS, torch.from_numpy(allowed), ROPES[rope], torch.from_numpy(positions))
    out.backward(torch.from_numpy(d_output))
    d_x, d_q, d_k, d_v, d_o = (leaf.grad.numpy() for leaf in leaves)
    np.testing.assert_allclose(output, out.detach().numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(grads["x"], d_x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(grads["W_qkv"], np.concatenate([d_q.T, d_k.T, d_v.T], axis=1), rtol=0, atol=1e-10)
    np.testing.assert_allclose(grads["W_o"], d_o.T, rtol=0, atol=1e-10)
