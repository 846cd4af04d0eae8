"""gpu_tensor/fusion/nperf.py: erf against math.erf (pure tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_tensor.fusion import nperf

TOL64 = 1e-15  # the brief's bound; Cody's approximations measure 2.2e-16 absolute
TINY = np.finfo(np.float64).tiny


def _ref(values: np.ndarray) -> np.ndarray:
    return np.array([math.erf(v) for v in values.astype(np.float64).ravel().tolist()])


def _grid() -> np.ndarray:
    with np.errstate(all="ignore"):
        logs = np.geomspace(5e-324, 1e300, 20001)
    dense = np.linspace(-8.0, 8.0, 160001)
    breaks = [b + d for b in (nperf._ERF_BREAK, nperf._ERF_ONE, 4.0) for d in (-1e-12, 0, 1e-12)]
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
    assert x.size > nperf._ERF_LOOP_MAX  # the Cody path, in many pieces
    _check64(nperf.erf(x), x)


@pytest.mark.parametrize("lo, hi", [(-0.4, 0.4), (0.5, 3.0), (-30.0, -5.0), (-1.0, 1.0)])
def test_erf_pieces_in_one_range_or_mixed(lo, hi):
    x = np.linspace(lo, hi, 3 * nperf._ERF_CHUNK + 7)  # ragged last piece
    _check64(nperf.erf(x), x)


def test_erf_small_input_loop_path_matches_math_erf():
    x = np.linspace(-5, 5, nperf._ERF_LOOP_MAX)
    assert np.array_equal(nperf.erf(x), _ref(x))


@pytest.mark.parametrize("n", [7, 4 * nperf._ERF_LOOP_MAX])
def test_erf_edge_values(n):
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324])
    x = np.resize(edge, n)
    got = nperf.erf(x)
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
    got = nperf.erf(x)
    assert got.dtype == np.float32
    ref = _ref(x).astype(np.float32)
    ulps = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref)).astype(np.float64)
    assert ulps.max() <= 1.0


def test_erf_keeps_shape_and_dtype():
    x = np.linspace(-3, 3, 3000).reshape(30, 100)
    for arr in (x, x.T, x[:, ::3], x.astype(np.float16), np.array(0.5)):
        got = nperf.erf(arr)
        assert got.shape == arr.shape and got.dtype == arr.dtype
        expect = _ref(np.asarray(arr)).reshape(arr.shape).astype(arr.dtype)
        assert np.allclose(got.astype(np.float64), expect.astype(np.float64), rtol=1e-3, atol=1e-15)
    ints = np.arange(-3000, 3000, dtype=np.int64)  # erf cast back, as numpy would
    assert np.array_equal(nperf.erf(ints), _ref(ints).astype(np.int64))
