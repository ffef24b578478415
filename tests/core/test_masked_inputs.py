"""A masked array is refused at every door that takes numbers: np.asarray would drop its mask."""

import numpy as np
import pytest

from mhattn import MultiHeadAttention, blockwise_attention, flash_attention, scaled_dot_product_attention, softmax

X = np.ma.masked_array(np.array([[0.0, 50.0, 1.0]]), mask=[[False, True, False]])


def test_softmax_refuses_a_masked_array():
    with pytest.raises(TypeError, match="x must be a plain ndarray"):
        softmax(X)


@pytest.mark.parametrize("attention", [scaled_dot_product_attention, flash_attention, blockwise_attention])
@pytest.mark.parametrize("which", ["Q", "K", "V"])
def test_attention_refuses_a_masked_array(attention, which):
    arrays = {"Q": np.ones((2, 4)), "K": np.ones((3, 4)), "V": np.ones((3, 4))}
    arrays[which] = np.ma.masked_array(arrays[which], mask=np.zeros(arrays[which].shape, bool))
    with pytest.raises(TypeError, match=f"{which} must be a plain ndarray"):
        attention(arrays["Q"], arrays["K"], arrays["V"])


def test_the_module_refuses_a_masked_array():
    mha = MultiHeadAttention(4, 2)
    with pytest.raises(TypeError, match="x must be a plain ndarray"):
        mha(np.ma.masked_array(np.ones((1, 3, 4))))


@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max, reason="longdouble is float64 here")
def test_flash_attention_on_longdouble_values_near_their_maximum_matches_attention():
    rng = np.random.default_rng(0)
    Q, K = (rng.standard_normal((3, 4)).astype(np.longdouble) for _ in range(2))
    V = rng.uniform(0.5, 1.0, (5, 4)).astype(np.longdouble) * (np.finfo(np.longdouble).max / 2)
    K = np.concatenate([K, K[:2]])
    expected, _ = scaled_dot_product_attention(Q, K, V)  # a convex combination of V's rows: below the max
    got = flash_attention(Q, K, V)
    np.testing.assert_allclose(got / expected, 1, rtol=0, atol=64 * float(np.finfo(np.longdouble).eps))
