"""The compile step: NVRTC to PTX/CUBIN through the kernel loader's one disk cache, keyed by
source/arch/options/compiler (version, and real or simulated)."""

from __future__ import annotations

import logging

import pytest
from fusion_variants import variants

from gpu_tensor.fusion.codegen import generate
from gpu_tensor.kernel import compile as kcompile
from gpu_tensor.kernel import nvrtc
from gpu_tensor.testing import requires_real_cuda


@pytest.fixture
def source():
    graph, plan, outs = variants()["axpb_f32_vector"]
    return generate(graph, plan, outs).source


def test_cache_key_covers_arch_options_and_source(source):
    base = kcompile.cache_key(source, "compute_90")
    assert base == kcompile.cache_key(source, "compute_90")
    assert base != kcompile.cache_key(source, "compute_80")
    assert base != kcompile.cache_key(source, "compute_90", ("-ftz=true",))
    assert base != kcompile.cache_key(source + "\n", "compute_90")


def test_cache_key_separates_the_simulators_nvrtc(source, monkeypatch):
    """The simulator's "CUBIN" is a blob only it can run: never served to a GPU, which shares
    the cache folder (GPU_TENSOR_CACHE_DIR) when both tiers run on one machine."""
    real = kcompile.cache_key(source, "sm_90")
    monkeypatch.setattr(nvrtc, "backend_name", lambda: "gpu_tensor.testing.sim.nvrtc")
    assert kcompile.cache_key(source, "sm_90") != real


def test_disk_cache_compiles_once_and_logs_compile_time(source, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("GPU_TENSOR_CACHE_DIR", str(tmp_path))
    calls = []
    real = nvrtc.compile_program
    monkeypatch.setattr(nvrtc, "compile_program", lambda *a, **k: calls.append(1) or real(*a, **k))
    with caplog.at_level(logging.DEBUG, logger="gpu_tensor.kernel"):
        key, path = kcompile.compiled_file(source, "compute_80")[:2]
    assert path.is_file() and path.parent == tmp_path / "kernels" and key in path.name
    assert ".entry" in path.read_text()
    assert any("compiled" in r.getMessage() and "ms" in r.getMessage() for r in caplog.records)
    again = kcompile.compiled_file(source, "compute_80")[:2]
    assert again == (key, path) and len(calls) == 1  # second call: from disk
    _, cubin, _ = kcompile.compiled_file(source, "sm_90")  # what a device loads: no driver JIT
    assert cubin.suffix == ".cubin" and cubin.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.cuda
@requires_real_cuda
def test_real_cuda_kernel_is_loaded_once_per_device(source):
    name = source.split('extern "C" __global__ void ')[1].split("(")[0]
    assert kcompile.get_kernel(name, source) is kcompile.get_kernel(name, source)
