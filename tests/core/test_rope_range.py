"""RoPE's positions and precision: every position it accepts turns by its own angle, longdouble keeps its digits."""

import numpy as np
import pytest

from mhattn import apply_rope, apply_rope_interleaved, rope_angles


@pytest.mark.parametrize("function", [apply_rope, apply_rope_interleaved])
def test_positions_beyond_two_to_the_53_are_refused(function):
    x = np.ones((2, 4))
    with pytest.raises(ValueError, match="positions"):
        function(x, np.array([2**62, 2**62 + 1]))  # in float64 both would turn by the same angle
    function(x, np.array([2**53, -(2**53)]))  # the end points are exact


def test_rope_angles_refuses_them_too():
    with pytest.raises(ValueError, match="positions"):
        rope_angles(np.array([2**60]), 4)


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps, reason="longdouble is float64 here")
def test_longdouble_rope_is_accurate_to_longdouble():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    positions, d_k, base = np.array([0, 7, 999, 1000]), 8, 10000
    x = np.ones((len(positions), d_k), dtype=np.longdouble)
    got = apply_rope(x, positions, float(base))
    for row, p in enumerate(positions):
        for i in range(d_k // 2):
            angle = int(p) * mpmath.mpf(base) ** (mpmath.mpf(-2 * i) / d_k)
            expected = (mpmath.cos(angle) - mpmath.sin(angle), mpmath.sin(angle) + mpmath.cos(angle))
            # the angle p * theta_i is rounded a few times in longdouble: error <= 8 p eps
            tolerance = 8 * max(int(p), 1) * float(np.finfo(np.longdouble).eps)
            for column, value in ((i, expected[0]), (i + d_k // 2, expected[1])):
                assert abs(float(mpmath.mpf(str(got[row, column])) - value)) <= tolerance, (p, i)
