"""Complex sqrt and log on cuda are ONE generated kernel each (issue 23): the kernel ports
glibc's csqrt and clog step for step (fusion/preamble_complex.py), and numpy 2.x on Linux
calls those two functions, so under the simulated CuPy (the kernel's source built by g++
against glibc's sqrt/hypot/log/log1p/atan2) the bits are numpy's on every grid value: zeros
of both signs, infs, nans, subnormal, tiny, huge and near-unit-circle parts (log's
|z|^2 - 1 path), nan signs included. cpu and emulated cuda run numpy itself. On a GPU the
real-valued CUDA functions may differ from glibc's by an ulp or two: compared in ulps there.
"""

from __future__ import annotations

import numpy as np
import pytest
from fusion_sim_counts import one_warm_launch

import gpu_tensor as gt
from gpu_tensor import device as dv

_INF, _NAN = float("inf"), float("nan")
_PARTS = [0.0, -0.0, 1.0, -1.0, -2.5, 0.1, 0.5, 0.75, -0.75, 0.999, 1.5, 1.0000001, 0.9999999]
_PARTS += [3e-39, 1.2e-38, 1e-30, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-8, 4.0]
_PARTS += [1e38, 3.4e38, -3.4e38, 8.5e37, 1e300, 1.7e308, -1.7e308, 9e307, _INF, -_INF, _NAN]
_DTYPES = [(gt.complex64, np.complex64), (gt.complex128, np.complex128)]
_FNS = {"sqrt": np.sqrt, "log": np.log}


def _grid(npdt) -> np.ndarray:
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


def _parts(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.float32 if a.dtype == np.complex64 else np.float64)


def _bits(a: np.ndarray) -> np.ndarray:
    p = _parts(a)
    return p.view(np.uint32 if p.dtype == np.float32 else np.uint64)


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Part by part distance in units in the last place (two nans: 0; a nan and a number:
    inf)."""
    pa, pb = _parts(a).astype(np.float64), _parts(b).astype(np.float64)
    spacing = np.spacing(np.abs(_parts(b))).astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.where(pa == pb, 0.0, np.abs(pa - pb) / spacing)
    nan_a, nan_b = np.isnan(pa), np.isnan(pb)
    return np.where(nan_a & nan_b, 0.0, np.where(nan_a ^ nan_b, np.inf, d))


def _on_a_gpu(t) -> bool:
    return t.device.type == "cuda" and dv.cuda_kind() == "cuda"


@pytest.mark.parametrize("key", list(_FNS))
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_values_are_numpys(device, key, dt, npdt):
    z = _grid(npdt)
    r = getattr(gt, key)(gt.tensor(z, device=device))
    assert r.dtype is dt
    with np.errstate(all="ignore"):
        want = _FNS[key](z)
    got = r.cpu().numpy()
    if _on_a_gpu(r):  # CUDA's own sqrt/hypot/log/log1p/atan2 (untested here: no GPU)
        assert _ulps(got, want).max() <= 4
        return
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_non_contiguous_and_methods(device):
    z = _grid(np.complex128)[:1024].reshape(32, 32)
    t = gt.tensor(z, device=device).t()
    with np.errstate(all="ignore"):
        want_sqrt, want_log = np.sqrt(z.T), np.log(z.T)
    np.testing.assert_array_equal(_bits(t.sqrt().cpu().numpy()), _bits(want_sqrt))
    if not _on_a_gpu(t):
        np.testing.assert_array_equal(_bits(t.log().cpu().numpy()), _bits(want_log))


def test_fused_is_eager(device):
    """Inside @gt.fuse sqrt and log take complex values (the same kernel helpers as eager
    cuda, numpy's functions on cpu): fused equals eager bit for bit on each device."""
    z = gt.tensor(_grid(np.complex64)[:1200], device=device)
    w = gt.tensor(_grid(np.complex64)[1200:2400], device=device)
    fns = [
        lambda a, b: a.sqrt() * b + a.log(),
        lambda a, b: gt.log(a / b) - gt.sqrt(b).conj(),
        lambda a, b: np.sqrt(a) + np.log(b),
    ]
    eager = [fns[0], fns[1], lambda a, b: a.sqrt() + b.log()]
    for fused_fn, eager_fn in zip(fns, eager, strict=True):
        want = eager_fn(z, w).cpu().numpy()
        got = gt.fuse(fused_fn)(z, w).cpu().numpy()
        both = np.isnan(_parts(want)) & np.isnan(_parts(got))  # (a nan is any nan)
        np.testing.assert_array_equal(np.where(both, 0, _bits(got)), np.where(both, 0, _bits(want)))


@pytest.mark.sim
@pytest.mark.parametrize("key", list(_FNS))
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_one_launch_on_sim(key, dt, npdt):
    one_warm_launch(getattr(gt, key), gt.tensor(_grid(npdt)[:256], device="cuda"))


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_sqrt_and_log_compile_under_nvrtc(npdt):
    """The ports compile under NVRTC (no headers), in the vector and the strided variant."""
    from gpu_tensor.fusion import eager
    from gpu_tensor.kernel import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: skip
        pytest.skip(f"NVRTC is not available here: {exc}")
    for key in _FNS:
        for x in (np.zeros(64, npdt), np.zeros((8, 8), npdt).T):
            graph = eager._graph_for(key, [x], {})
            out = np.empty(x.shape, graph.outputs[0].dtype)
            ksrc, _, _ = eager.prepare(graph, graph.outputs, [x], [], [out])
            assert nvrtc.compile_ptx(ksrc.source, "compute_90").count(".entry") == 1
