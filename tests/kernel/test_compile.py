"""The loader (gpu_tensor.kernel.compile) without a GPU: CuPy's device and module objects are
replaced by recording fakes, so the compile -> disk cache -> load -> launch chain runs here.
The real-GPU counterpart is test_cuda_copy.py::test_get_function_caches_per_device."""

from __future__ import annotations

import types

import numpy as np
import pytest

from gpu_tensor.kernel import compile as kcompile
from gpu_tensor.kernel import copy_launch, copy_plan, nvrtc


def _nvrtc_missing() -> bool:
    try:
        nvrtc.nvrtc_version()
    except Exception:
        return True
    return False


pytestmark = pytest.mark.skipif(_nvrtc_missing(), reason="NVRTC (cupy + nvrtc wheel) missing")


class FakeModule:
    loads: list = []

    def load(self, code):
        FakeModule.loads.append(code)

    def get_function(self, name):
        calls = []

        def fn(grid, block, args, stream=None):
            calls.append((grid, block, args, stream))

        fn.name, fn.calls = name, calls
        return fn


@pytest.fixture
def fake_cupy(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_TENSOR_CACHE_DIR", str(tmp_path))
    device = types.SimpleNamespace(id=0, compute_capability="90")
    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(
            Device=lambda *a: device, function=types.SimpleNamespace(Module=FakeModule)
        )
    )
    monkeypatch.setattr(kcompile, "_cupy", lambda: fake)
    kcompile.clear_cache()
    FakeModule.loads = []
    yield tmp_path
    kcompile.clear_cache()


SRC = "template <typename T> __global__ void fill(T* x, T v) { x[threadIdx.x] = v; }"


def test_get_function_compiles_caches_and_uses_lowered_names(fake_cupy):
    fn = kcompile.get_function(SRC, "fill<float>")
    assert fn.name == "_Z4fillIfEvPT_S0_"  # NVRTC's mangled name, not the expression
    assert FakeModule.loads[0][:4] == b"\x7fELF"  # sm_90 CUBIN
    assert kcompile.get_function(SRC, "fill<float>") is fn  # in-memory cache
    assert len(list((fake_cupy / "kernels").glob("*.cubin"))) == 1
    kcompile.clear_cache()  # a new process: the disk cache answers, NVRTC is not called
    original = nvrtc.compile_program
    try:
        nvrtc.compile_program = None  # would raise if called
        again = kcompile.get_function(SRC, "fill<float>")
    finally:
        nvrtc.compile_program = original
    assert again.name == fn.name


def test_compile_checks_and_loads_share_one_disk_cache(fake_cupy):
    """The no-GPU compile check writes what the loader later loads: one cache."""
    src = 'extern "C" __global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }'
    _, path, _ = kcompile.compiled_file(src, "sm_90")
    assert path.parent == fake_cupy / "kernels"
    original = nvrtc.compile_program
    try:
        nvrtc.compile_program = None  # would raise if called: the loader must hit the disk
        kcompile.get_function(src, "fill")
    finally:
        nvrtc.compile_program = original
    assert FakeModule.loads == [path.read_bytes()]


def test_launch_packs_struct_by_value_for_cupy(fake_cupy):
    plan = copy_plan.plan_copy((64, 48), (192, 4), (4, 256), np.float32, np.float32, 1024, 8192)
    spec = copy_launch.launch_spec(plan, 1024, 8192)
    assert plan.path == "transpose" and spec.block == (32, 8, 1) and not spec.serial_ok
    side = 32 * plan.vec  # fp32 aligned: the 2-wide vector tile (64 x 64)
    assert plan.vec == 2 and spec.name.startswith("gt_copy_transpose_vec<gt_bytes4, 2")
    assert spec.grid == (-(-64 // side) * -(-48 // side), 1, 1)
    copy_launch.launch(spec)
    fn = kcompile.get_function(kcompile.sources.read_kernel(spec.file), spec.name)
    ((grid, block, args, _),) = fn.calls
    assert isinstance(args[2], np.ndarray) and args[2].size == 1  # CuPy: by value
    assert args[2].dtype == copy_plan.PARAMS_DTYPE
    assert int(args[0]) == 1024 and int(args[1]) == 8192


def test_grid_covers_the_work_and_respects_the_limit():
    assert copy_launch._grid(1, 1024) == (1, 1, 1)
    assert copy_launch._grid(1025, 1024) == (2, 1, 1)
    assert copy_launch._grid(2**45, 1024) == (copy_launch.MAX_GRID_X, 1, 1)


def test_device_arch_falls_back_to_ptx_for_unknown_gpus(monkeypatch):
    dev = types.SimpleNamespace(id=0, compute_capability="990")
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda *a: dev))
    monkeypatch.setattr(kcompile, "_cupy", lambda: fake)
    arch = kcompile.device_arch()
    assert arch.startswith("compute_") and int(arch.split("_")[1]) <= 990


def test_device_arch_refuses_gpus_older_than_this_nvrtc(monkeypatch):
    dev = types.SimpleNamespace(id=0, compute_capability="70")  # Volta
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda *a: dev))
    monkeypatch.setattr(kcompile, "_cupy", lambda: fake)
    monkeypatch.setattr(nvrtc, "supported_archs", lambda: (75, 80, 86, 89, 90, 100, 120))
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 0))  # NVRTC 13 dropped sm_70
    with pytest.raises(RuntimeError, match="oldest target is sm_75"):
        kcompile.device_arch()
