"""The host emulation itself (kernels/host_emulation.h + gpu_tensor.kernel.emulate): thread and
block indices, __shared__ (static and extern), __syncthreads across a block, by-value
structs, caching, and the errors it reports."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_tensor.kernel import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="host emulation needs g++")

SOURCE = r"""
#include "common.cuh"

struct Affine { long long scale; long long shift; };

// out[b * n + t] = in[b * n + (n - 1 - t)]: each block reverses its slice through shared
// memory, so a missing barrier or shared memory leaking between blocks shows up.
__global__ void reverse_blocks(float* out, const float* in) {
    __shared__ float buf[256];
    unsigned n = blockDim.x;
    unsigned base = blockIdx.x * n;
    buf[threadIdx.x] = in[base + threadIdx.x];
    __syncthreads();
    out[base + threadIdx.x] = buf[n - 1 - threadIdx.x];
}

template <typename T>
__global__ void reverse_dynamic(T* out, const T* in) {
    GT_EXTERN_SHARED(T, buf);
    unsigned n = blockDim.x * blockDim.y;
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned base = (blockIdx.y * gridDim.x + blockIdx.x) * n;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[n - 1 - t];
}

__global__ void affine(long long* out, Affine a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a.scale * i + a.shift;
}
"""
EXPORTS = ["reverse_blocks", "reverse_dynamic<float>", "reverse_dynamic<double>", "affine"]


@pytest.fixture(scope="module")
def lib():
    return emulate.build(SOURCE, EXPORTS)


def test_shared_memory_and_syncthreads_per_block(lib):
    x = np.arange(4 * 64, dtype=np.float32)
    out = np.zeros_like(x)
    emulate.launch(lib, "reverse_blocks", 4, 64, [out, x])
    assert np.array_equal(out, x.reshape(4, 64)[:, ::-1].ravel())


@pytest.mark.parametrize(
    "dtype,name", [(np.float32, "reverse_dynamic<float>"), (np.float64, "reverse_dynamic<double>")]
)
def test_extern_shared_with_2d_grid_and_block(lib, dtype, name):
    x = np.arange(6 * 32, dtype=dtype)
    out = np.zeros_like(x)
    emulate.launch(lib, name, (3, 2), (8, 4), [out, x], shared_bytes=32 * x.itemsize)
    assert np.array_equal(out, x.reshape(6, 32)[:, ::-1].ravel())


def test_struct_and_scalars_by_value(lib):
    rec = np.zeros((), np.dtype([("scale", "<i8"), ("shift", "<i8")]))
    rec["scale"], rec["shift"] = 3, -7
    out = np.zeros(100, np.int64)
    emulate.launch(lib, "affine", 2, 64, [out, rec[()], np.int32(100)], serial=True)
    assert np.array_equal(out, 3 * np.arange(100) - 7)


def test_build_is_cached(lib):
    assert emulate.build(SOURCE, EXPORTS) is lib


def test_errors(lib):
    out = np.zeros(10, np.int64)
    with pytest.raises(TypeError, match="np.int32"):
        emulate.launch(lib, "affine", 1, 32, [out, np.zeros((), "i8,i8")[()], 10])
    with pytest.raises(emulate.EmulationError, match="exports"):
        emulate.launch(lib, "not_a_kernel", 1, 1, [])
    with pytest.raises(ValueError, match="1024"):
        emulate.launch(lib, "affine", 1, (64, 32), [])
    with pytest.raises(emulate.EmulationError, match="__syncthreads"):
        emulate.launch(
            lib,
            "reverse_blocks",
            1,
            32,
            [np.zeros(32, np.float32), np.zeros(32, np.float32)],
            serial=True,
        )
    with pytest.raises(emulate.EmulationError, match="g\\+\\+ could not compile"):
        emulate.build("__global__ void broken( { }", ["broken"])


@pytest.mark.skipif(not emulate.have_fp16(), reason="no complete CUDA include tree for fp16")
def test_fp16_types_on_the_host():
    lib = emulate.build(
        '#include "common.cuh"\n'
        "__global__ void to_half(__half* o, const float* i) { o[threadIdx.x] = "
        "gt_cast<__half>(i[threadIdx.x]); }",
        ["to_half"],
    )
    x = np.linspace(-3, 3, 32, dtype=np.float32)
    out = np.zeros(32, np.float16)
    emulate.launch(lib, "to_half", 1, 32, [out, x], serial=True)
    assert np.array_equal(out, x.astype(np.float16))


def test_symbols_are_distinct_for_distinct_expressions():
    assert emulate.symbol_for("k<float>") != emulate.symbol_for("k<double>")
    assert emulate.symbol_for("k<a, b>") != emulate.symbol_for("k<a,b>")


def test_without_cuda_headers_fp16_variants_are_left_out(monkeypatch, tmp_path):
    """CI with only NVIDIA's wheels has no complete include tree: the emulation still builds
    (its own dim3, no cuda_fp16.h) and leaves the fp16/bf16 variants out."""
    from gpu_tensor.kernel import sources
    from gpu_tensor.kernel import variants as V
    from gpu_tensor.kernel.copy import EmulatedCopyKernels, HostLauncher, strided_copy

    monkeypatch.setattr(sources, "host_cuda_include_dir", lambda: None)
    monkeypatch.setenv("GPU_TENSOR_CACHE_DIR", str(tmp_path))
    assert not emulate.have_fp16()
    wanted = [
        V.variant("transpose", "gt_bytes4", "gt_bytes4"),
        V.variant("transpose_vec", "gt_bytes4", "gt_bytes4", 2),
        V.variant("nd", "__half", "float"),
    ]
    kernels = EmulatedCopyKernels(wanted)
    assert wanted[2].name not in kernels.names and len(kernels.names) == 2
    src = np.arange(64 * 96, dtype=np.float32).reshape(64, 96).T
    dst = np.zeros(src.shape, np.float32)
    plan = strided_copy(dst, src, launcher=HostLauncher(kernels))
    assert plan.variant in kernels and np.array_equal(dst, src)


def test_the_launcher_is_compiled_once_not_with_each_kernel():
    """A kernel's compile reads host_emulation.h only: the thread machinery (std::thread,
    std::barrier, std::mutex) lives in host_emulation_runtime.cc, one library for all kernels,
    so it is not compiled again per kernel (half of each compile's time when it was)."""
    from gpu_tensor.kernel import sources

    header = (sources.kernel_dir() / "host_emulation.h").read_text()
    for heavy in ("<thread>", "<barrier>", "<mutex>", "<atomic>", "<vector>"):
        assert f"#include {heavy}" not in header, heavy
    assert emulate._runtime() is emulate._runtime()


def test_an_exception_in_a_kernel_is_reported_after_the_launch():
    lib = emulate.build(
        "__global__ void throws(int* out) { out[threadIdx.x] = 1; if (threadIdx.x == 3) throw 1; }",
        ["throws"],
    )
    out = np.zeros(8, np.int32)
    with pytest.raises(emulate.EmulationError, match="code 2"):
        emulate.launch(lib, "throws", 1, 8, [out], serial=True)
    assert out.tolist() == [1] * 8  # the other threads ran to the end


def test_the_error_code_python_names_is_the_abi_headers():
    from gpu_tensor.kernel import sources

    abi = (sources.kernel_dir() / "host_emulation_abi.h").read_text()
    assert f"#define GT_EMU_ERR_SYNC_IN_SERIAL {emulate._ERR_SYNC_IN_SERIAL} " in abi
