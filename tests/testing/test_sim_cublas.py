"""The simulated cupy.cuda.cublas: cupy 14.2's signatures, cuBLAS's int8 checks, the exact
int32 product, and stream ordering like any kernel's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from gpu_tensor.testing import sim
from gpu_tensor.testing.sim import cublas as sim_cublas


@pytest.fixture
def cp():
    sim.reset(devices=1, seed=1)
    return sim.module()


def test_signatures_are_the_installed_cupys():
    # the binding needs libcublas to import, which a CPU machine lacks; its docstrings (the
    # signature lines) are in the extension module's bytes either way
    spec = importlib.util.find_spec("cupy_backends")
    so = next((Path(spec.submodule_search_locations[0]) / "cuda" / "libs").glob("cublas.*.so"))
    data = so.read_bytes()
    for line in sim_cublas.SIGNATURES.values():
        assert line.encode() in data, line


def _gemm(cp, a, w, lda=None, transa=1):
    """C (M, N) = a (M, K) @ w (N, K)^T as gpu_tensor calls it (TN, column-major)."""
    m, k = a.shape
    n = w.shape[0]
    da, dw = cp.asarray(a), cp.asarray(w)
    c = cp.zeros((m, n), dtype=np.int32)
    one, zero = np.ones((), np.int32), np.zeros((), np.int32)
    h = cp.cuda.device.get_cublas_handle()
    cp.cuda.cublas.setStream(h, cp.cuda.get_current_stream().ptr)
    cp.cuda.cublas.gemmEx(
        h,
        transa,
        0,
        n,
        m,
        k,
        one.ctypes.data,
        dw.data.ptr,
        3,
        k if lda is None else lda,
        da.data.ptr,
        3,
        k,
        zero.ctypes.data,
        c.data.ptr,
        10,
        n,
        72,
        -1,
    )
    return c


def test_int8_product_is_exact(cp):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (5, 64)).astype(np.int8)
    w = rng.integers(-128, 128, (8, 64)).astype(np.int8)
    c = _gemm(cp, a, w)
    np.testing.assert_array_equal(c.get(), a.astype(np.int64) @ w.astype(np.int64).T)


def test_refuses_what_cublas_refuses(cp):
    a = np.ones((4, 6), np.int8)
    with pytest.raises(sim_cublas.CUBLASError, match="CUBLAS_STATUS_NOT_SUPPORTED"):
        _gemm(cp, a, np.ones((4, 6), np.int8))  # lda = ldb = 6: not a multiple of 4
    with pytest.raises(sim_cublas.CUBLASError, match="CUBLAS_STATUS_INVALID_VALUE"):
        _gemm(cp, np.ones((4, 8), np.int8), np.ones((4, 8), np.int8), lda=4)  # lda < k
    with pytest.raises(TypeError, match="gemmEx"):
        cp.cuda.cublas.gemmEx(0, 1, 0, 4, 4, 4)  # missing arguments
    h = cp.cuda.device.get_cublas_handle()
    one = np.ones((), np.float32)
    with pytest.raises(NotImplementedError, match="int8"):
        cp.cuda.cublas.gemmEx(
            h, 0, 0, 4, 4, 4, one.ctypes.data, 0, 0, 4, 0, 0, 4, one.ctypes.data, 0, 0, 4, 68, -1
        )  # float32: not modelled


def test_runs_on_the_handles_stream(cp):
    s = cp.cuda.Stream(non_blocking=True)
    h = cp.cuda.device.get_cublas_handle()
    cp.cuda.cublas.setStream(h, s.ptr)
    assert cp.cuda.cublas.getStream(h) == s.ptr
    before = sim.counters()["kernel_launches"]
    with s:
        c = _gemm(cp, np.ones((2, 4), np.int8), np.ones((4, 4), np.int8))
    assert sim.counters()["kernel_launches"] == before + 1  # the gemm: one launch
    s.synchronize()
    assert c.get().tolist() == [[4] * 4] * 2


def test_device_pointer_mode_needs_device_scalars(cp):
    h = cp.cuda.device.get_cublas_handle()
    cp.cuda.cublas.setPointerMode(h, 1)
    try:
        with pytest.raises(sim_cublas.CUBLASError, match="device pointer mode"):
            _gemm(cp, np.ones((2, 4), np.int8), np.ones((4, 4), np.int8))  # host scalars
    finally:
        cp.cuda.cublas.setPointerMode(h, 0)
