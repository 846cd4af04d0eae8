"""Every cupy / CUDA runtime call of the real-GPU glue, once, on a real GPU (a few seconds):
streams, events and priorities (backends/cuda_streams.py), the allocator's raw source and
events (cuda_memory.py), page-locking (cuda_pinned.py), NVRTC headers and module loading
with a struct passed by value (kernel/nvrtc.py, kernel/compile.py).

CPU counterparts: test_cuda_runtime_calls.py (the same calls against a rule-keeping fake),
tests/kernel/test_compile.py and tests/kernel/test_nvrtc_compile.py."""

from __future__ import annotations

import warnings

import numpy as np

from gpu_tensor.testing import requires_real_cuda


@requires_real_cuda
def test_real_streams_events_priorities_and_copies():
    from gpu_tensor.testing import cupy_module

    cp = cupy_module()

    from gpu_tensor.backends.cuda_streams import CupyStreams

    b = CupyStreams()
    least, greatest = b.priority_range()
    assert greatest <= least  # (0, -5) on Hopper
    s = b.new_stream(0, greatest)
    assert b.priority(s) == greatest and b.ptr(s) != 0
    b.enter(s)
    try:
        assert cp.cuda.get_current_stream().ptr == s.ptr == b.current(0).ptr
    finally:
        b.exit(s)
    assert cp.cuda.get_current_stream().ptr != s.ptr
    host = np.arange(1 << 16, dtype=np.float32)
    back = np.empty_like(host)
    dev = cp.empty_like(cp.asarray(host))
    start = b.new_event(enable_timing=True, blocking=False, interprocess=False)
    end = b.new_event(enable_timing=True, blocking=True, interprocess=False)
    b.record(start, s)
    b.memcpy_async(dev.data.ptr, host.ctypes.data, host.nbytes, "h2d", s, 0)
    b.memcpy_async(back.ctypes.data, dev.data.ptr, host.nbytes, "d2h", s, 0)
    b.record(end, s)
    b.event_synchronize(end)
    assert b.event_query(end) and b.query(s)
    assert b.elapsed_ms(start, end) >= 0.0
    np.testing.assert_array_equal(back, host)
    other = b.new_stream(0, least)
    b.wait_event(other, end)
    b.synchronize(other)
    ipc = b.new_event(enable_timing=False, blocking=False, interprocess=True)
    b.record(ipc, b.null_stream(0))
    b.device_synchronize(0)
    assert b.event_query(ipc)


@requires_real_cuda
def test_real_raw_source_and_allocator_event():
    from gpu_tensor.testing import cupy_module

    cp = cupy_module()

    from gpu_tensor.backends import cuda_memory

    raw = cuda_memory.CudaRawSource(0)
    free, total = raw.mem_get_info()
    assert 0 < free <= total
    ptr = raw.alloc(1 << 20)
    try:
        s = cp.cuda.Stream(non_blocking=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. a deprecated cupy API on the free path
            ev = cuda_memory.CudaEvent(s.ptr, device=0)
            ev.synchronize()
            assert ev.query()
            on_null = cuda_memory.CudaEvent(0, device=0)  # the legacy default stream
            on_null.synchronize()
            assert on_null.query()
    finally:
        raw.free(ptr)


@requires_real_cuda
def test_real_page_locking_sources():
    from gpu_tensor.backends import cuda_pinned as cpin

    for source in (
        cpin.HostAllocSource(),
        cpin.RegisterSource(cpin.cuda_register, cpin.cuda_unregister),
    ):
        ptr = source.alloc(3 << 20)
        try:
            assert cpin.is_host_pinned(ptr)
        finally:
            source.free(ptr)
    pageable = np.ones(1 << 16)
    assert not cpin.is_host_pinned(pageable.ctypes.data)


STRUCT_SRC = r"""
struct P { long long a; long long b[3]; };
extern "C" __global__ void take(long long* out, unsigned long long tag, P p) {
  out[0] = p.a; out[1] = p.b[0]; out[2] = p.b[1]; out[3] = p.b[2]; out[4] = (long long)tag;
}
template <typename T> __global__ void fill(T* x, T v) { x[threadIdx.x] = v; }
"""


@requires_real_cuda
def test_real_module_load_and_struct_by_value():
    from gpu_tensor.testing import cupy_module

    cp = cupy_module()

    from gpu_tensor.kernel import compile as kcompile
    from gpu_tensor.kernel import copy_launch

    rec = np.zeros((), np.dtype([("a", "<i8"), ("b", "<i8", (3,))]))
    rec["a"], rec["b"] = 7, (8, 9, 10)
    out = cp.zeros(5, cp.int64)
    take = kcompile.get_function(STRUCT_SRC, "take")
    args = copy_launch.cupy_args((out, np.uint64(11), rec[()]))  # np.void -> size-1 array
    take((1,), (1,), args, stream=cp.cuda.get_current_stream())
    assert out.get().tolist() == [7, 8, 9, 10, 11]
    fill = kcompile.get_function(STRUCT_SRC, "fill<float>")  # mangled name via NVRTC
    x = cp.zeros(32, cp.float32)
    fill((1,), (32,), (x, np.float32(2.5)))
    assert float(x.sum()) == 80.0


@requires_real_cuda
def test_real_nvrtc_headers_match_and_fp16_kernel_runs():
    from gpu_tensor.testing import cupy_module

    cp = cupy_module()

    from gpu_tensor.kernel import compile as kcompile
    from gpu_tensor.kernel import nvrtc

    inc = nvrtc.cuda_include_dir()
    assert inc is not None, "no CUDA headers for NVRTC (cuda_fp16.h)"
    print(
        "NVRTC",
        nvrtc.nvrtc_version(),
        "headers",
        inc,
        "major",
        nvrtc._header_major(inc),
        "arch",
        kcompile.device_arch(),
    )
    src = (
        "#include <cuda_fp16.h>\n"
        'extern "C" __global__ void h(__half* x) { x[threadIdx.x] = __float2half(1.5f); }'
    )
    x = cp.zeros(8, cp.float16)
    kcompile.get_function(src, "h")((1,), (8,), (x,))
    assert x.get().tolist() == [1.5] * 8
