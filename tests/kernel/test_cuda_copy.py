"""The emulated copy cases, run for real through CuPy on a GPU (``pytest -m cuda``).

CPU counterparts: test_emulated_copy.py (same cases, same kernels, g++ host emulation)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpu_tensor.kernel import variants as V
from gpu_tensor.testing import requires_gpu_hardware, requires_real_cuda

F32 = np.dtype(np.float32)


def _cupy():
    from gpu_tensor.testing import cupy_module

    cupy = cupy_module()

    return cupy


def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def to_device_view(a: np.ndarray):
    """The same view (offset, strides, broadcast, negative strides) over a device copy of
    the numpy array's whole buffer: cupy.asarray would make it contiguous."""
    cp = _cupy()
    owner = _owner(a)
    raw = np.frombuffer(owner.tobytes(), np.uint8)  # (a bfloat16 buffer has no .data)
    dev = cp.asarray(raw)
    offset = a.ctypes.data - owner.ctypes.data
    return cp.ndarray(a.shape, _storage(a.dtype), memptr=dev.data + offset, strides=a.strides), dev


def _storage(dtype):
    """cupy has no bfloat16: its bits live in uint16 arrays (as the cuda backend keeps them)."""
    return np.dtype(np.uint16) if dtype.name == "bfloat16" else dtype


def _logical(dtype):
    return dtype if dtype.name == "bfloat16" else None


def run_case(dst_base, dst_index, src, copy_cases):
    from gpu_tensor.kernel.copy import strided_copy

    expected = copy_cases.expected_after(dst_base, dst_index, src)
    d_src, _keep = to_device_view(src)
    d_base = _cupy().asarray(dst_base.view(_storage(dst_base.dtype)))
    strided_copy(
        d_base[dst_index], d_src, dst_dtype=_logical(dst_base.dtype), src_dtype=_logical(src.dtype)
    )
    got = d_base.get().view(dst_base.dtype)
    assert copy_cases.same_bits(got, expected)


@requires_real_cuda
def test_each_path_on_gpu(path_case, copy_cases):
    name, path, dst_dtype, make = path_case
    src = make()
    dst = copy_cases.values(dst_dtype, src.shape, np.random.default_rng(1))
    run_case(dst, (Ellipsis,), src, copy_cases)


@requires_real_cuda
@pytest.mark.parametrize(
    "dtype",
    [np.dtype(t) for t in (np.bool_, np.uint8, np.float16, np.float32, np.complex128)],
    ids=str,
)
def test_random_same_dtype_on_gpu(dtype, copy_cases):
    rng = np.random.default_rng(zlib.crc32(str(dtype).encode()))
    for _ in range(20):
        run_case(*copy_cases.random_case(rng, dtype, dtype), copy_cases)


@requires_real_cuda
@pytest.mark.parametrize(
    "pair",
    [(d, F32) for d in V.CAST_DTYPES if d != F32] + [(F32, s) for s in V.CAST_DTYPES if s != F32],
    ids=str,
)
def test_random_casts_on_gpu(pair, copy_cases):
    rng = np.random.default_rng(zlib.crc32(repr(pair).encode()))
    for _ in range(6):
        run_case(*copy_cases.random_case(rng, *pair), copy_cases)


def _transpose_on_side_stream(rows, cols):
    """`a` is made on the legacy stream; the copy runs on a non-blocking stream, which is not
    ordered after the legacy stream, so it must wait for `a` explicitly."""
    cp = _cupy()
    from gpu_tensor.kernel.copy import strided_copy

    a = cp.arange(rows * cols, dtype=cp.float32).reshape(rows, cols)
    out = cp.empty((cols, rows), cp.float16)
    ready = cp.cuda.Event(disable_timing=True)
    ready.record(cp.cuda.Stream.null)
    with cp.cuda.Stream(non_blocking=True) as s:
        s.wait_event(ready)
        strided_copy(out, a.T)
        s.synchronize()
    assert bool(cp.array_equal(out, a.T.astype(cp.float16)))


@requires_gpu_hardware
def test_large_transpose_and_stream():
    """A size where the grid and tiling matter, on a non-default stream."""
    _transpose_on_side_stream(4099, 3001)


@requires_real_cuda
def test_transpose_on_a_side_stream_waits_for_its_input():
    _transpose_on_side_stream(70, 45)


@requires_real_cuda
def test_get_function_caches_per_device():
    cp = _cupy()
    from gpu_tensor.kernel import compile as kcompile

    src = 'extern "C" __global__ void fill(float* x, float v) { x[threadIdx.x] = v; }'
    f1 = kcompile.get_function(src, "fill")
    assert kcompile.get_function(src, "fill") is f1
    x = cp.zeros(32, cp.float32)
    f1((1,), (32,), (x, np.float32(2.5)))
    assert float(x.sum()) == 80.0
