"""The real-CUDA branch of gt.fuse / eager.run, driven on the CPU: the same planning,
codegen, argument packing and launch code, with the compiled kernel swapped for the host
emulation of the same source (the GPU-only counterpart is in test_fuse.py / test_eager.py)."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_emu import EMU_SMS, aligned_copy, aligned_empty
from fusion_tolerance import assert_close

import gpu_tensor.backends as backends
from gpu_tensor.creation import from_numpy
from gpu_tensor.fusion import eager, fuse
from gpu_tensor.fusion.npmath import gelu
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.kernel import compile as kcompile
from gpu_tensor.kernel import emulate

if emulate.compiler() is None:
    pytest.skip("host emulation needs g++", allow_module_level=True)


class _FakeCudaBackend:
    xp = None
    host_arrays = False  # not host memory: fuse takes its compiled-kernel branch

    def empty(self, shape, np_dtype):
        """Aligned host memory, bfloat16 as its uint16 bits (as the cuda backend stores it)."""
        dt = np.dtype(np.uint16) if np.dtype(np_dtype).name == "bfloat16" else np_dtype
        return aligned_empty(shape, dt), None

    def copy_(self, dst, src):
        np.copyto(dst, src, casting="unsafe")


@pytest.fixture
def emulated_kernels(monkeypatch):
    launches = []

    def get_kernel(name, source, options=()):
        lib = emulate.build(source, [name])

        def kernel(grid, block, args):
            launches.append((name, grid, block, options))
            emulate.launch(lib, name, grid, block, args, serial=True)

        return kernel

    monkeypatch.setattr(kcompile, "get_kernel", get_kernel)
    monkeypatch.setattr(kcompile, "sm_count", lambda device_id=None: EMU_SMS)
    monkeypatch.setattr(eager, "empty_like_result", lambda shape, dt: aligned_empty(shape, dt))
    monkeypatch.setattr(backends, "get_backend", lambda device: _FakeCudaBackend())
    return launches


def test_fused_call_goes_through_one_generated_kernel(emulated_kernels):
    @fuse(compile_options=("--ftz=true",))
    def f(x, a, b):
        return (a * x + b).gelu()

    x = aligned_copy(np.random.default_rng(1).standard_normal((8, 24)).astype(np.float16))
    y = f(from_numpy(x), 1.5, -0.5)
    assert_close(y._data, gelu(1.5 * x.astype(np.float32) - 0.5).astype(np.float16))
    assert len(emulated_kernels) == 1 and emulated_kernels[0][3] == ("--ftz=true",)
    (grid,), (block,) = emulated_kernels[0][1], emulated_kernels[0][2]
    assert grid >= 1 and block == 256


def test_out_with_strides_and_broadcast_operand(emulated_kernels):
    @fuse
    def f(x, v):
        return x * v - 1

    x = aligned_copy(np.arange(48, dtype=np.float32).reshape(6, 8))
    v = aligned_copy(np.arange(6, dtype=np.float32).reshape(6, 1))
    out_base = aligned_empty((8, 6), np.float64)
    out = from_numpy(out_base).transpose(0, 1)  # a non-contiguous out= view
    f(from_numpy(x), from_numpy(v), out=out)
    np.testing.assert_array_equal(out_base.T, x * v - 1)


def test_eager_run_uses_the_same_kernels(emulated_kernels):
    a = aligned_copy(np.linspace(-2, 2, 40, dtype=np.float32).reshape(5, 8))
    r = eager.run("clamp", [a, -1.0, None], np.dtype(np.float16))
    assert r.dtype == np.float16 and len(emulated_kernels) == 1
    assert_close(r, OPS["clamp"].numpy(a, -1.0, None, out_dtype=np.float16))
