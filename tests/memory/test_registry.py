"""Registry: one allocator per (kind, device), created lazily; reading creates nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpu_tensor.memory import registry

MiB = 1 << 20


@pytest.fixture(autouse=True)
def fresh_registry():
    with registry._isolated():
        yield


def test_emulated_allocator_is_created_once_with_env_capacity(monkeypatch):
    monkeypatch.setenv("GPU_TENSOR_EMULATED_MEMORY_MB", "64")
    assert registry.existing_allocators() == {} and registry.find(0) is None
    a = registry.get_allocator(0, "emulated")
    assert registry.get_allocator(0, "emulated") is a and a.kind == "emulated"
    assert a.mem_get_info() == (64 * MiB, 64 * MiB)
    assert registry.existing_allocators() == {("emulated", 0): a}
    assert registry.find(0) is a and registry.find(1) is None
    b = a.malloc(100)
    a.free(b)


def test_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        registry.get_allocator(0, "tpu")


def test_cuda_factory_is_registered_by_the_backend(monkeypatch):
    monkeypatch.setattr(registry, "_factories", {"emulated": registry._emulated})
    with pytest.raises(RuntimeError, match="backends.cuda_memory"):
        registry.get_allocator(0, "cuda")
    made = []

    def factory(index, config):
        made.append(index)
        return registry._emulated(index, config)

    registry.register_factory("cuda", factory)
    assert registry.get_allocator(3, "cuda") is registry.get_allocator(3, "cuda")
    assert made == [3] and registry.find(3) is registry.get_allocator(3, "cuda")


def test_history_applies_to_present_and_future_allocators():
    a = registry.get_allocator(0, "emulated")
    registry.set_history({"enabled": "all", "context": None})
    b = registry.get_allocator(1, "emulated")
    assert a.history is not None and b.history is not None and b.device_index == 1
    registry.set_history(None)
    assert a.history is None and b.history is None


def test_reading_memory_never_imports_cupy():
    code = (
        "import sys, gpu_tensor.cuda.memory as m, gpu_tensor.memory as mm; "
        "assert m.memory_allocated() == 0 and m.memory_stats()['num_ooms'] == 0; "
        "m.memory_summary(); m.memory_snapshot(); m.empty_cache(); "
        "assert 'cupy' not in sys.modules, 'cupy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
