"""gpu_tensor/fusion/npmath.py: exact GELU against math.erf, relu (pure tests); erf itself
is tested in test_nperf.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_tensor.fusion import npmath

TOL64 = 1e-15  # erf's bound (test_nperf.py)


def _ref(values: np.ndarray) -> np.ndarray:
    return np.array([math.erf(v) for v in values.astype(np.float64).ravel().tolist()])


def test_npmath_erf_is_nperf_erf():
    from gpu_tensor.fusion import nperf

    assert npmath.erf is nperf.erf  # the op table's erf row reads it from npmath


@pytest.mark.parametrize("n", [16, 65536])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_math_erf_formula(n, dtype):
    x = (np.random.default_rng(3).standard_normal(n) * 3).astype(dtype)
    got = npmath.gelu(x)
    assert got.dtype == dtype and got.shape == x.shape
    scaled = x * x.dtype.type(0.7071067811865476)
    expect = (0.5 * x * (1.0 + _ref(scaled).astype(dtype))).astype(dtype)
    if dtype == np.float32:  # erf's error vanishes in float32's rounding
        assert np.array_equal(got, expect)
    else:  # absolute: for x << 0, 1 + erf cancels in torch's formula too
        assert np.all(np.abs(got - expect) <= TOL64 * np.maximum(1.0, np.abs(x)))


@pytest.mark.parametrize("n", [4099, 300])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_relu_is_the_where_it_replaced_bit_for_bit(dtype, n):
    # issue 30: np.maximum plus zeros copied back from x, against the np.where(x < 0, 0, x)
    # it replaced; -0.0 stays -0.0, a NaN keeps its own bits
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(n) * 10).astype(dtype)
    if x.dtype.kind == "f":
        x[::7] = -0.0
        x[::11] = 0.0
        x[::13] = np.nan
        x[::17] = -np.asarray(np.nan, dtype)
        x[5:9] = [np.inf, -np.inf, -0.0, 0.0]
    ref = np.where(x < 0, x.dtype.type(0), x)
    got = npmath.relu(x)
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
