"""flash_attention: the online softmax over key tiles gives the teaching path's numbers.

Tolerances are derived, not tuned (:func:`helpers.attention_tolerances`): both paths compute
the same sums in different orders, each within a bound of the exact answer that follows from
the scores' size, ``d_k``, ``seq_k`` and the dtype, so they are within twice it of each other.
"""

import math
import tracemalloc

import numpy as np
import pytest
from helpers import assert_refused_by_name, attention_tolerances, raises, random_qkv, refusals
from hypothesis import given, settings
from hypothesis import strategies as st

import mhattn
from mhattn import causal_mask, padding_mask, scaled_dot_product_attention
from mhattn.engine import blockwise_attention, flash_attention
from mhattn.engine.flash import _finish_rows, _raise_running_max, attention_in_tiles

rng = np.random.default_rng(20230714)


def assert_same_as_teaching(Q, K, V, mask=None, **blocks):
    expected, _ = scaled_dot_product_attention(Q, K, V, mask)
    output = flash_attention(Q, K, V, mask, **blocks)
    assert output.shape == expected.shape
    assert output.dtype == expected.dtype
    np.testing.assert_allclose(output, expected, rtol=0, atol=attention_tolerances(Q, K, V)[0])
    return output


BLOCKS = [{}, {"block_q": 1, "block_k": 1}, {"block_q": 3, "block_k": 7}, {"block_q": 16, "block_k": 5}]


@pytest.mark.parametrize("blocks", BLOCKS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_equals_the_teaching_path_for_every_tile_size_and_dtype(blocks, dtype):
    Q, K, V = random_qkv(rng, (2, 3, 19, 8), (2, 3, 19, 8), d_v=6, dtype=dtype)
    assert_same_as_teaching(Q, K, V, **blocks)


@pytest.mark.parametrize("blocks", BLOCKS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_equals_the_teaching_path_with_a_causal_mask(blocks, dtype):
    Q, K, V = random_qkv(rng, (2, 4, 23, 8), (2, 4, 23, 8), dtype=dtype)
    assert_same_as_teaching(Q, K, V, causal_mask(23), **blocks)


@pytest.mark.parametrize("blocks", BLOCKS)
def test_equals_the_teaching_path_with_a_padding_mask_on_cross_attention_shapes(blocks):
    # Cross-attention: 11 queries against 29 keys, values of another width.
    Q, K, V = random_qkv(rng, (3, 2, 11, 4), (3, 2, 29, 4), d_v=9)
    mask = padding_mask([29, 13, 1], 29)  # (batch, 1, 1, seq_k)
    assert_same_as_teaching(Q, K, V, mask, **blocks)


@pytest.mark.parametrize("blocks", BLOCKS)
def test_fully_masked_rows_give_zeros_and_an_lse_of_minus_infinity(blocks):
    Q, K, V = random_qkv(rng, (2, 2, 9, 4), (2, 2, 12, 4))
    mask = rng.random((2, 2, 9, 12)) < 0.4
    mask[0, 1, 3] = False  # query 3 of head 1 may see nothing
    mask[1, :, 7] = False  # query 7 in every head of the second sequence
    output, lse = flash_attention(Q, K, V, mask, return_lse=True, **blocks)
    assert np.all(output[0, 1, 3] == 0) and np.all(output[1, :, 7] == 0)
    assert np.all(np.isneginf(lse[0, 1, 3])) and np.all(np.isneginf(lse[1, :, 7]))
    assert np.isfinite(np.delete(lse[1], 7, axis=-1)).all()
    assert_same_as_teaching(Q, K, V, mask, **blocks)


@pytest.mark.parametrize("blocks", BLOCKS)
def test_an_all_false_mask_gives_zeros_everywhere(blocks):
    Q, K, V = random_qkv(rng, (5, 4), (6, 4))
    output, lse = flash_attention(Q, K, V, np.zeros((5, 6), dtype=bool), return_lse=True, **blocks)
    assert np.all(output == 0) and np.all(np.isneginf(lse))


@pytest.mark.parametrize("dtype, scale", [(np.float32, 30.0), (np.float64, 300.0), (np.float16, 40.0)])
def test_huge_logits_are_fine(dtype, scale):
    """Scores far beyond exp's range (|score| up to thousands): the running max keeps exp <= 1."""
    Q, K, V = random_qkv(rng, (2, 17, 16), (2, 40, 16), dtype=dtype, scale=scale)
    scores = Q.astype(np.float64) @ np.swapaxes(K, -1, -2).astype(np.float64) / 4
    assert np.abs(scores).max() > (709 if dtype == np.float64 else 88)  # exp(score) would overflow (f16: in f32)
    output = assert_same_as_teaching(Q, K, V, causal_mask(40)[:17], block_q=4, block_k=6)
    assert np.isfinite(output).all()


def test_values_near_the_largest_float_do_not_overflow_the_running_sum():
    """acc sums up to seq_k values before dividing by l: flash scales V by an exact power of two."""
    Q, K, _ = random_qkv(rng, (3, 8), (50, 8))
    V = rng.uniform(-1, 1, (50, 3)) * np.finfo(np.float64).max
    output = assert_same_as_teaching(Q, K, V, block_k=50)
    assert np.isfinite(output).all()


def test_scores_that_overflow_raise_like_the_teaching_path():
    Q, K, V = random_qkv(rng, (3, 4), (5, 4))
    Q = Q * 1e200
    K = K * 1e200
    with pytest.raises(FloatingPointError):
        scaled_dot_product_attention(Q, K, V)
    with pytest.raises(FloatingPointError, match="overflowed float64: .* a score q.k/sqrt\\(d_k\\) went beyond"):
        flash_attention(Q, K, V)


@pytest.mark.parametrize("attend", [flash_attention, blockwise_attention, scaled_dot_product_attention])
def test_an_overflow_names_the_function_that_was_called(attend):
    Q, K, V = random_qkv(rng, (3, 4), (5, 4))
    with raises(FloatingPointError, f"{attend.__name__} overflowed float64: the inputs are finite, but a score"):
        attend(Q * 1e200, K * 1e200, V)


def test_scores_that_overflow_only_where_masked_are_fine():
    Q, K, V = random_qkv(rng, (3, 4), (5, 4))
    K[4] = 1e308 * np.sign(Q[0])  # q0 . k4 is about 3e308: beyond float64, but key 4 is masked
    mask = np.ones((3, 5), dtype=bool)
    mask[:, 4] = False
    expected, _ = scaled_dot_product_attention(Q, K, V, mask)
    output = flash_attention(Q, K, V, mask, block_k=2)
    atol = attention_tolerances(Q, K[:4], V[:4])[0]  # the keys that count
    np.testing.assert_allclose(output, expected, rtol=0, atol=atol)


def test_broadcast_leading_axes_like_the_teaching_path():
    """Shared keys and values across heads (multi-query layout), 2-D mask."""
    Q, K, V = random_qkv(rng, (2, 4, 10, 8), (2, 1, 13, 8))
    mask = rng.random((10, 13)) < 0.7
    assert_same_as_teaching(Q, K, V, mask, block_q=3, block_k=4)


def test_lse_is_the_log_sum_exp_of_the_allowed_scaled_scores():
    """Independent oracle: per row, math.fsum over the allowed keys in float64."""
    Q, K, V = random_qkv(rng, (2, 7, 4), (2, 9, 4), scale=5.0)
    mask = rng.random((2, 7, 9)) < 0.6
    mask[1, 2] = False
    _, lse = flash_attention(Q, K, V, mask, return_lse=True, block_q=2, block_k=4)
    eps, S = np.finfo(np.float64).eps, np.linalg.norm(Q, axis=-1).max() * np.linalg.norm(K, axis=-1).max() / 2
    for b in range(2):
        for i in range(7):
            scores = [float(Q[b, i] @ K[b, j]) / 2 for j in range(9) if mask[b, i, j]]
            if not scores:
                assert np.isneginf(lse[b, i])
                continue
            top = max(scores)
            expected = top + math.log(math.fsum(math.exp(s - top) for s in scores))
            # score rounding (d_k eps S, twice: ours and the oracle's), the sum, the log
            assert abs(lse[b, i] - expected) <= eps * (2 * 4 * S + 9 + 4 + abs(expected))


def test_the_weights_rebuilt_from_the_lse_are_the_teaching_weights():
    """What a backward pass does with the lse: P = exp(scores - lse), no second softmax."""
    Q, K, V = random_qkv(rng, (2, 3, 8, 4), (2, 3, 11, 4))
    mask = causal_mask(11)[3:]
    _, lse = flash_attention(Q, K, V, mask, return_lse=True, block_k=3)
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2) / 2, -np.inf)
    rebuilt = np.exp(scores - lse[..., None])
    _, weights = scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(rebuilt, weights, rtol=0, atol=1e-14)


@pytest.mark.parametrize(
    "dtype, lse_dtype", [(np.float16, np.float32), (np.float32, np.float32), (np.float64, np.float64)]
)
def test_dtypes_of_output_and_lse(dtype, lse_dtype):
    Q, K, V = random_qkv(rng, (3, 4), (5, 4), dtype=dtype)
    output, lse = flash_attention(Q, K, V, return_lse=True)
    assert output.dtype == dtype and lse.dtype == lse_dtype and lse.shape == (3,)


def test_integer_inputs_are_computed_in_float64():
    Q = np.arange(12).reshape(3, 4)
    assert flash_attention(Q, Q, Q).dtype == np.float64


def test_inputs_are_left_untouched():
    Q, K, V = random_qkv(rng, (2, 9, 4), (2, 9, 4))
    copies = [a.copy() for a in (Q, K, V)]
    flash_attention(Q, K, V, causal_mask(9), block_q=2, block_k=2)
    for array, copy in zip((Q, K, V), copies, strict=True):
        np.testing.assert_array_equal(array, copy)


def test_empty_query_or_key_axes_follow_the_teaching_path():
    Q, K, V = random_qkv(rng, (2, 0, 4), (2, 3, 4))
    assert flash_attention(Q, K, V).shape == (2, 0, 4)
    Q, K, V = random_qkv(rng, (2, 3, 4), (2, 0, 4))
    output, lse = flash_attention(Q, K, V, return_lse=True)
    np.testing.assert_array_equal(output, scaled_dot_product_attention(Q, K, V)[0])  # zeros: nothing to see
    assert np.all(np.isneginf(lse))


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 2),
    seq_q=st.integers(1, 20),
    seq_k=st.integers(1, 20),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 5),
    block_q=st.integers(1, 24),
    block_k=st.integers(1, 24),
    dtype=st.sampled_from([np.float32, np.float64]),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_shape_tile_sizes_and_mask_match_the_teaching_path(
    batch, seq_q, seq_k, d_k, d_v, block_q, block_k, dtype, masked, seed
):
    generator = np.random.default_rng(seed)
    Q = generator.standard_normal((batch, seq_q, d_k)).astype(dtype)
    K = generator.standard_normal((batch, seq_k, d_k)).astype(dtype)
    V = generator.standard_normal((batch, seq_k, d_v)).astype(dtype)
    mask = generator.random((seq_q, seq_k)) < 0.6 if masked else None
    assert_same_as_teaching(Q, K, V, mask, block_q=block_q, block_k=block_k)


# NumPy's ufunc buffer holds min(size, np.getbufsize()) elements of a broadcast operand, so it may grow with
# seq_len up to that cap (NumPy 2.0-2.1 allocate it in the tile loop; 2.4 does not); past the cap nothing may grow.
UFUNC_BUFFER = np.getbufsize() * 4  # bytes: float32 elements


def extra_peak_bytes(seq_len, block_q, block_k):
    """tracemalloc's peak during the tiled loop, minus the output and the lse it returns."""
    Q = np.ones((1, 2, seq_len, 8), dtype=np.float32)
    mask = causal_mask(seq_len)
    attention_in_tiles(Q, Q, Q, mask, block_q=block_q, block_k=block_k)  # the steady state: NumPy's first call
    tracemalloc.start()  # at a new size fills caches of its own (seen: 120 KB once, at seq_len 2048, numpy 2.0-2.4)
    try:
        output, lse = attention_in_tiles(Q, Q, Q, mask, block_q=block_q, block_k=block_k)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - output.nbytes - lse.nbytes


def test_extra_memory_depends_on_the_tile_sizes_not_on_seq_len():
    """Memory, not time: tracemalloc counts every NumPy buffer, the same on every run."""
    short, long, longer = (extra_peak_bytes(n, 32, 64) for n in (256, 2048, 4096))
    assert long - short < 4096 + UFUNC_BUFFER, f"extra peak grew from {short} to {long} bytes with seq_len"
    assert longer - long < 4096, f"extra peak grew from {long} to {longer} bytes with seq_len"  # Python's small objects
    assert extra_peak_bytes(2048, 64, 128) > long + (64 * 128 - 32 * 64) * 4  # bigger tiles: at least their scores


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"block_q": 0}, ValueError, "block_q must be a positive int; got 0"),
        ({"block_k": -3}, ValueError, "block_k must be a positive int; got -3"),
        ({"block_q": 2.0}, TypeError, "block_q must be a positive int; got 2.0 of type float"),
        ({"block_k": True}, TypeError, "block_k must be a positive int; got True of type bool"),
        ({"return_lse": "yes"}, TypeError, "return_lse must be True or False; got 'yes' of type str"),
    ],
)
def test_bad_tile_arguments_name_the_argument(kwargs, error, message):
    Q, K, V = random_qkv(rng, (3, 4), (5, 4))
    with raises(error, message):
        flash_attention(Q, K, V, **kwargs)


def test_numpy_integer_tile_sizes_are_fine():
    Q, K, V = random_qkv(rng, (3, 4), (5, 4))
    assert_same_as_teaching(Q, K, V, block_q=np.int64(2), block_k=np.int32(3))


@pytest.mark.parametrize(
    "shapes, mask, error, message",
    [
        (((3, 4), (5, 2), (5, 4)), None, ValueError, "Q and K must have the same depth d_k"),
        (((3, 4), (5, 4), (6, 4)), None, ValueError, "K and V must have the same length seq_k"),
        (((2, 3, 4), (3, 5, 4), (3, 5, 4)), None, ValueError, "the leading (batch, head) axes of Q, K and V"),
        (((3, 4), (5, 4), (5, 4)), np.ones((3, 5)), TypeError, "mask must be a boolean array"),
        (((2, 3, 4), (2, 5, 4), (2, 5, 4)), np.ones((2, 5), bool), ValueError, "mask of shape (2, 5) does not fit"),
        (((4,), (5, 4), (5, 4)), None, ValueError, "Q must have shape (..., seq_len, depth); got shape (4,)"),
    ],
)
def test_bad_arrays_are_rejected_like_the_teaching_path(shapes, mask, error, message):
    Q, K, V = (np.ones(shape) for shape in shapes)
    with raises(error, message):
        scaled_dot_product_attention(Q, K, V, mask)
    with raises(error, message):
        flash_attention(Q, K, V, mask)


def test_non_finite_and_non_real_inputs_are_rejected():
    Q, K, V = random_qkv(rng, (3, 4), (5, 4))
    K[1, 2] = np.nan
    with raises(ValueError, "K must be finite; found nan at index (1, 2)"):
        flash_attention(Q, K, V)
    with raises(TypeError, "V must hold real numbers; got an array of dtype complex128"):
        flash_attention(Q, Q, Q.astype(complex))


# is_causal: each tile builds its own causal mask from the positions (torch's top-left convention, j <= i).


def top_left_causal_mask(seq_q, seq_k):
    """The oracle's mask, built independently of the tiles: query i may attend to key j <= i."""
    return np.tril(np.ones((seq_q, seq_k), dtype=bool))


@pytest.mark.parametrize("blocks", BLOCKS + [{"block_q": 4, "block_k": 4}, {"block_q": 5, "block_k": 3}])
@pytest.mark.parametrize("seq_q, seq_k", [(23, 23), (7, 19), (19, 7), (1, 6), (6, 1)])
def test_is_causal_equals_the_teaching_path_with_a_causal_mask(blocks, seq_q, seq_k):
    Q, K, V = random_qkv(rng, (2, 3, seq_q, 8), (2, 3, seq_k, 8), d_v=5)
    expected, _ = scaled_dot_product_attention(Q, K, V, top_left_causal_mask(seq_q, seq_k))
    if seq_q == seq_k:  # the square case is the package's causal_mask
        np.testing.assert_array_equal(top_left_causal_mask(seq_q, seq_k), causal_mask(seq_q))
    output = flash_attention(Q, K, V, is_causal=True, **blocks)
    np.testing.assert_allclose(output, expected, rtol=0, atol=attention_tolerances(Q, K, V)[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_is_causal_gives_the_same_output_and_lse_as_the_mask(dtype):
    Q, K, V = random_qkv(rng, (4, 13, 8), (4, 13, 8), dtype=dtype)
    out_mask, lse_mask = flash_attention(Q, K, V, causal_mask(13), block_q=4, block_k=3, return_lse=True)
    out, lse = flash_attention(Q, K, V, block_q=4, block_k=3, is_causal=True, return_lse=True)
    assert out.dtype == out_mask.dtype and lse.dtype == lse_mask.dtype
    # the same sums over the same tiles, but the last key tile of a row is cut at the diagonal, so BLAS may
    # round the scores differently: each lse is within the score and sum rounding of the exact one
    np.testing.assert_allclose(out, out_mask, rtol=0, atol=attention_tolerances(Q, K, V)[0])
    eps = float(np.finfo(lse.dtype).eps)
    S = float(np.linalg.norm(Q.astype(np.float64), axis=-1).max() * np.linalg.norm(K.astype(np.float64), axis=-1).max())
    bound = 2 * eps * (2 * 8 * S / math.sqrt(8) + 13 + 4 + float(np.abs(lse_mask).max()))
    np.testing.assert_allclose(lse, lse_mask, rtol=0, atol=bound)


def test_is_causal_with_a_positional_none_mask_and_no_keys_gives_zeros():
    Q, K, V = random_qkv(rng, (3, 4), (0, 4))
    output = flash_attention(Q, K, V, None, block_q=2, block_k=2, is_causal=True)  # mask=None passed by position
    np.testing.assert_array_equal(output, np.zeros((3, 4)))
    _, lse = flash_attention(Q, K, V, is_causal=True, return_lse=True)
    assert np.isneginf(lse).all()


@pytest.mark.parametrize("seq_q, seq_k, expected", [(8, 8, 10), (4, 8, 3), (8, 4, 7), (9, 8, 14)])
def test_is_causal_skips_the_tiles_above_the_diagonal(monkeypatch, seq_q, seq_k, expected):
    """Tiles of 2 x 2: only tiles with a key at or before one of their queries are computed."""
    from mhattn.engine import tiles

    calls = []
    scores = tiles.Tiles.scores

    def counted(self, q, k, blocked):
        calls.append(k.shape)
        return scores(self, q, k, blocked)

    monkeypatch.setattr(tiles.Tiles, "scores", counted)
    Q, K, V = random_qkv(rng, (seq_q, 4), (seq_k, 4))
    flash_attention(Q, K, V, block_q=2, block_k=2, is_causal=True)
    # query tile r (rows 2r, 2r+1) needs key tiles 0 .. r (those holding a key <= 2r + 1), at most seq_k / 2
    assert len(calls) == expected == sum(min(r + 1, -(-seq_k // 2)) for r in range(-(-seq_q // 2)))


def test_is_causal_needs_no_quadratic_memory():
    """No (seq_q, seq_k) mask is ever built: the extra memory is flat in seq_len, as without a mask."""

    def extra(seq_len):
        Q = np.ones((1, 1, seq_len, 8), dtype=np.float32)
        tracemalloc.start()
        try:
            output, lse = flash_attention(Q, Q, Q, block_q=32, block_k=64, is_causal=True, return_lse=True)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return peak - output.nbytes - lse.nbytes

    extra(2048)  # the steady state: NumPy's first call at a new size fills caches of its own
    short, long, longer = extra(256), extra(2048), extra(4096)  # a 4096^2 bool mask alone would be 16 MiB
    assert long - short < 4096 + UFUNC_BUFFER, f"extra peak grew from {short} to {long} bytes"
    assert longer - long < 4096, f"extra peak grew from {long} to {longer} bytes"


def test_is_causal_with_a_mask_is_refused():
    Q, K, V = random_qkv(rng, (3, 4), (3, 4))
    with raises(ValueError, "mask must be None when is_causal=True (is_causal builds each tile's causal mask"):
        flash_attention(Q, K, V, causal_mask(3), is_causal=True)
    with raises(TypeError, "is_causal must be True or False; got 1 of type int"):
        flash_attention(Q, K, V, is_causal=1)


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps, reason="longdouble is float64 here")
def test_longdouble_is_computed_to_longdouble_accuracy():
    """The scale 1 / sqrt(d_k) is taken in longdouble too: a float64 scale would be off by ~1e-17 relative,
    a hundred times the bound below. Oracle: the log-sum-exp of the scaled scores, in longdouble."""
    Q, K, V = (X.astype(np.longdouble) for X in random_qkv(rng, (5, 3), (9, 3), scale=4.0))
    output, lse = flash_attention(Q, K, V, block_q=2, block_k=4, return_lse=True)
    assert output.dtype == lse.dtype == np.longdouble
    scores = (Q @ K.T) / np.sqrt(np.longdouble(3))
    top = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - top)
    expected = top[:, 0] + np.log(weights.sum(axis=-1))
    eps = np.finfo(np.longdouble).eps
    S = np.linalg.norm(Q, axis=-1).max() * np.linalg.norm(K, axis=-1).max() / np.sqrt(np.longdouble(3))
    assert np.abs(lse - expected).max() <= eps * (2 * 3 * S + 9 + 4 + np.abs(expected).max())
    expected_output = (weights / weights.sum(axis=-1, keepdims=True)) @ V
    assert np.abs(output - expected_output).max() <= attention_tolerances(Q, K, V, float64_scale=False)[0]


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.flash_attention,
        dict(Q=np.random.default_rng(0).standard_normal((3, 4)), K=np.random.default_rng(0).standard_normal((5, 4)),
             V=np.random.default_rng(0).standard_normal((5, 4))),
        mask=[np.full((3, 5), 1.0)]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)


# The pieces of one query tile's loop, each against the formulas of the online softmax ----------


def test_one_online_step_gives_the_whole_rows_sums_against_its_maximum():
    """Tile A's (m, l, acc), raised by tile B, plus B's own terms, are the row's sums against its max."""
    s, v = 10 * rng.standard_normal((2, 3, 9)), rng.standard_normal((2, 9, 4))  # (heads, rows, keys), values
    s[0, 0, 7] = 40.0  # a maximum that only tile B holds: alpha = exp(m_A - m) is tiny there
    A, B = slice(0, 4), slice(4, 9)
    row_max = s[..., A].max(axis=-1)
    row_sum = np.exp(s[..., A] - row_max[..., None]).sum(axis=-1)
    acc = np.exp(s[..., A] - row_max[..., None]) @ v[:, A]
    tile = s[..., B].copy()
    _raise_running_max(tile, row_max, row_sum, acc)
    p = np.exp(tile)  # what the loop does next: the tile's terms, already against the new max
    row_sum += p.sum(axis=-1)
    acc += p @ v[:, B]
    whole = np.exp(s - s.max(axis=-1, keepdims=True))  # the row at once, shifted by its maximum
    eps = np.finfo(np.float64).eps
    np.testing.assert_array_equal(row_max, s.max(axis=-1))
    np.testing.assert_allclose(row_sum, whole.sum(axis=-1), rtol=16 * 9 * eps, atol=0)
    np.testing.assert_allclose(acc, whole @ v, rtol=0, atol=16 * 9 * eps * np.abs(v).max() * whole.sum(-1).max())


def test_a_row_masked_so_far_stays_finite_and_ends_as_zeros_with_an_lse_of_minus_infinity():
    tile = np.full((1, 2, 3), -np.inf)  # two rows, every key of this tile blocked
    tile[0, 1] = [0.5, -1.0, 2.0]  # the second row sees this tile
    row_max, row_sum, acc = np.full((1, 2), -np.inf), np.zeros((1, 2)), np.zeros((1, 2, 4))
    with np.errstate(invalid="raise"):  # -inf - (-inf) would be NaN
        _raise_running_max(tile, row_max, row_sum, acc)
    assert np.isneginf(row_max[0, 0]) and row_max[0, 1] == 2.0
    np.testing.assert_array_equal(tile[0, 1], [-1.5, -3.0, 0.0])  # shifted by the new maximum
    p, v = np.exp(tile), np.ones((1, 3, 4))  # what the loop does next; the blocked row's terms are exactly 0
    row_sum += p.sum(axis=-1)
    acc += p @ v
    output, lse = _finish_rows(row_max, row_sum, acc)
    np.testing.assert_array_equal(output[0, 0], 0)  # the chapter's rule: a fully masked row gives zeros
    np.testing.assert_allclose(output[0, 1], 1, rtol=4 * np.finfo(float).eps)  # the average of values all 1
    expected_lse = np.log(np.exp([0.5, -1.0, 2.0]).sum())
    assert np.isneginf(lse[0, 0]) and lse[0, 1] == pytest.approx(expected_lse, rel=8 * np.finfo(float).eps)
