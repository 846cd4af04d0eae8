"""gpu_tensor/fusion/npmath.py: erf and exact GELU against math.erf (pure tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_tensor.fusion import npmath

TOL64 = 1e-15  # the brief's bound; Cody's approximations measure 2.2e-16 absolute
TINY = np.finfo(np.float64).tiny


def _ref(values: np.ndarray) -> np.ndarray:
    return np.array([math.erf(v) for v in values.astype(np.float64).ravel().tolist()])


def _grid() -> np.ndarray:
    with np.errstate(all="ignore"):
        logs = np.geomspace(5e-324, 1e300, 20001)
    dense = np.linspace(-8.0, 8.0, 160001)
    breaks = [b + d for b in (npmath._ERF_BREAK, npmath._ERF_ONE, 4.0) for d in (-1e-12, 0, 1e-12)]
    edges = [0.0, -0.0, np.inf, -np.inf, 5e-324, TINY, np.nextafter(TINY, 0), 1e-300, 27.0]
    return np.concatenate([dense, logs, -logs, breaks, np.negative(breaks), edges])


def _check64(got: np.ndarray, x: np.ndarray) -> None:
    ref = _ref(x)
    assert got.dtype == np.float64
    err = np.abs(got - ref)
    assert err.max() <= TOL64, f"abs error {err.max()} at x={x[err.argmax()]}"
    normal = np.abs(ref) >= TINY
    rel = err[normal] / np.abs(ref[normal])
    assert rel.max() <= TOL64, f"relative error {rel.max()} at x={x[normal][rel.argmax()]}"
    # subnormal results: the grid of representable values is the limit, one step at most
    assert np.all(err[~normal] <= 5e-324)


def test_erf_float64_dense_grid_vectorised_path():
    x = _grid()
    assert x.size > npmath._ERF_LOOP_MAX  # the Cody path, in many pieces
    _check64(npmath.erf(x), x)


@pytest.mark.parametrize("lo, hi", [(-0.4, 0.4), (0.5, 3.0), (-30.0, -5.0), (-1.0, 1.0)])
def test_erf_pieces_in_one_range_or_mixed(lo, hi):
    x = np.linspace(lo, hi, 3 * npmath._ERF_CHUNK + 7)  # ragged last piece
    _check64(npmath.erf(x), x)


def test_erf_small_input_loop_path_matches_math_erf():
    x = np.linspace(-5, 5, npmath._ERF_LOOP_MAX)
    assert np.array_equal(npmath.erf(x), _ref(x))


@pytest.mark.parametrize("n", [7, 4 * npmath._ERF_LOOP_MAX])
def test_erf_edge_values(n):
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324])
    x = np.resize(edge, n)
    got = npmath.erf(x)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    real = ~np.isnan(x)
    assert np.array_equal(np.signbit(got[real]), np.signbit(x[real]))  # erf is odd
    for value, expected in ((0.0, 0.0), (np.inf, 1.0), (-np.inf, -1.0)):
        assert np.all(got[x == value] == expected)
    sub = np.abs(x) == 5e-324
    assert np.all(np.abs(got[sub] - _ref(x[sub])) <= 5e-324)


@pytest.mark.parametrize("n", [100, 50_000])
def test_erf_float32_within_one_ulp_of_rounded_float64(n):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(n) * 3, np.geomspace(1e-45, 10.0, n)]).astype(
        np.float32
    )
    got = npmath.erf(x)
    assert got.dtype == np.float32
    ref = _ref(x).astype(np.float32)
    ulps = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref)).astype(np.float64)
    assert ulps.max() <= 1.0


def test_erf_keeps_shape_and_dtype():
    x = np.linspace(-3, 3, 3000).reshape(30, 100)
    for arr in (x, x.T, x[:, ::3], x.astype(np.float16), np.array(0.5)):
        got = npmath.erf(arr)
        assert got.shape == arr.shape and got.dtype == arr.dtype
        expect = _ref(np.asarray(arr)).reshape(arr.shape).astype(arr.dtype)
        assert np.allclose(got.astype(np.float64), expect.astype(np.float64), rtol=1e-3, atol=1e-15)
    ints = np.arange(-3000, 3000, dtype=np.int64)  # erf cast back, as numpy would
    assert np.array_equal(npmath.erf(ints), _ref(ints).astype(np.int64))


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
