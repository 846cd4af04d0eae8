"""The value grid and bit helpers of the complex kernel tests (test_complex_rows.py): zeros
of both signs, infs, nans, subnormal, tiny, huge and near-unit-circle parts, every pair of
them, with random parts over the whole exponent range and ordinary points; bits of complex
arrays part by part, distances in ulps for a GPU, and an NVRTC compile check."""

from __future__ import annotations

import numpy as np

from gpu_tensor import device as dv

_INF, _NAN = float("inf"), float("nan")
_PARTS = [0.0, -0.0, 1.0, -1.0, -2.5, 0.1, 0.5, 0.75, -0.75, 0.999, 1.5, 1.0000001, 0.9999999]
_PARTS += [3e-39, 1.2e-38, 1e-30, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-8, 4.0]
_PARTS += [1e38, 3.4e38, -3.4e38, 8.5e37, 1e300, 1.7e308, -1.7e308, 9e307, _INF, -_INF, _NAN]
# the scaled branches of sinh/cosh/sin/tanh (exp(|part|) split at 88 and 709, tanh's at 44
# and 354) and the periods of sin/cos
_PARTS += [44.5, -89.0, 100.0, 265.0, -300.0, 355.0, 710.0, -1500.0, 2200.0, 3.14159265, -1e5]
# the branches of asinh's kernel (|im| in (1, 1.5), |re| < 0.5, parts above 1/eps) and of
# atan's (parts above 16/eps)
_PARTS += [1.25, -0.3, 2e8, 1e17]


def grid(npdt) -> np.ndarray:
    """The special values' every pair, random parts over the type's whole exponent range,
    points near |z| = 1 and ordinary ones."""
    rng = np.random.default_rng(23)
    edge = np.array([complex(a, b) for a in _PARTS for b in _PARTS])
    lo, hi = (-45, 38) if npdt is np.complex64 else (-320, 308)
    mag = 10.0 ** rng.uniform(lo, hi, (1500, 2)) * rng.choice([-1, 1], (1500, 2))
    near = (1 + rng.normal(0, 1e-3, 750) * 10.0 ** rng.uniform(-8, 0, 750)) * np.exp(
        1j * rng.uniform(-np.pi, np.pi, 750)
    )
    mid = rng.uniform(-3, 3, (750, 2))
    with np.errstate(all="ignore"):
        z = np.concatenate([edge, mag[:, 0] + 1j * mag[:, 1], near, mid[:, 0] + 1j * mid[:, 1]])
        return z.astype(npdt)


def parts(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.float32 if a.dtype == np.complex64 else np.float64)


def bits(a: np.ndarray) -> np.ndarray:
    p = parts(a)
    return p.view(np.uint32 if p.dtype == np.float32 else np.uint64)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Part by part distance in units in the last place (two nans: 0; a nan and a number:
    inf)."""
    pa, pb = parts(a).astype(np.float64), parts(b).astype(np.float64)
    spacing = np.spacing(np.abs(parts(b))).astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.where(pa == pb, 0.0, np.abs(pa - pb) / spacing)
    nan_a, nan_b = np.isnan(pa), np.isnan(pb)
    return np.where(nan_a & nan_b, 0.0, np.where(nan_a ^ nan_b, np.inf, d))


def any_nan_bits(a: np.ndarray) -> np.ndarray:
    """bits with every nan part as one value (fused and eager may differ in a nan's sign)."""
    p = parts(a).copy()
    p[np.isnan(p)] = np.nan
    return p.view(np.uint32 if p.dtype == np.float32 else np.uint64)


def on_a_gpu(t) -> bool:
    return t.device.type == "cuda" and dv.cuda_kind() == "cuda"


def assert_numpys(result, want: np.ndarray, max_gpu_ulps: float = 4, nan_sign=True) -> None:
    """result (a tensor) has want's bits, nan signs included unless nan_sign is False; on a
    real GPU, whose real functions may differ from glibc's by an ulp, each part within
    max_gpu_ulps of want (not measured here: no GPU)."""
    got = result.cpu().numpy()
    if on_a_gpu(result):
        assert ulps(got, want).max() <= max_gpu_ulps
    else:
        same = bits if nan_sign else any_nan_bits
        np.testing.assert_array_equal(same(got), same(want))


def assert_compiles_under_nvrtc(keys, npdt) -> None:
    """Each row's kernel over npdt compiles under NVRTC (no headers), in the vector and the
    strided variant; skips where NVRTC cannot be loaded."""
    import pytest

    from gpu_tensor.fusion import eager
    from gpu_tensor.fusion.optable import OPS
    from gpu_tensor.kernel import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: skip
        pytest.skip(f"NVRTC is not available here: {exc}")
    for key in keys:
        for x in (np.zeros(64, npdt), np.zeros((8, 8), npdt).T):
            xs = [x] * OPS[key].arity
            graph = eager._graph_for(key, xs, {})
            out = np.empty(x.shape, graph.outputs[0].dtype)
            ksrc, _, _ = eager.prepare(graph, graph.outputs, xs, [], [out])
            assert nvrtc.compile_ptx(ksrc.source, "compute_90").count(".entry") == 1, key
