"""gt.cuda.memory: torch.cuda's memory API over the (emulated) device allocator.

These run on the CPU: the allocator is the emulated device's (HostRawSource), made
explicitly through the registry so the tests are the same on a GPU machine.
"""

from __future__ import annotations

import json
import pickle

import pytest

import gpu_tensor.cuda.memory as m
from gpu_tensor.memory import live, registry

MiB = 1 << 20


@pytest.fixture(autouse=True)
def emulated(monkeypatch):
    monkeypatch.setenv("GPU_TENSOR_EMULATED_MEMORY_MB", "96")
    monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")
    with registry._isolated():
        yield
        m._record_memory_history(None)


def alloc():
    return registry.get_allocator(0, "emulated")


def test_no_allocator_reads_zeros_and_creates_nothing():
    assert m.memory_allocated() == m.max_memory_reserved(0) == 0
    assert m.memory_stats("cuda:0")["allocation.all.current"] == 0
    assert "device ID 0" in m.memory_summary()
    assert m.memory_snapshot() == [] and m.live_tensors() == []
    m.reset_peak_memory_stats()
    m.empty_cache()
    assert registry.existing_allocators() == {}
    assert m.mem_get_info() == (96 * MiB, 96 * MiB)


def test_getters_track_allocations_and_peaks():
    a = alloc()
    x = a.malloc(5 * MiB)
    y = a.malloc(100)
    assert m.memory_allocated() == 5 * MiB + 512
    # expandable segments (the default where pages can be mapped): 2 MiB pages per pool
    assert m.memory_reserved() == 6 * MiB + 2 * MiB
    a.free(x)
    assert m.memory_allocated(0) == 512 and m.max_memory_allocated() == 5 * MiB + 512
    m.reset_peak_memory_stats()
    assert m.max_memory_allocated() == 512
    m.empty_cache()
    assert m.memory_reserved() == 2 * MiB and m.max_memory_reserved() == 8 * MiB
    m.reset_accumulated_memory_stats()
    assert m.memory_stats()["allocated_bytes.all.allocated"] == 0
    assert m.mem_get_info() == (94 * MiB, 96 * MiB)
    a.free(y)
    summary = m.memory_summary(abbreviated=True)
    assert "Allocated memory" in summary and "Largest free block" in summary
    with pytest.raises(ValueError, match="cuda device"):
        m.memory_allocated("cpu")


def test_oom_error_is_exported_and_recoverable():
    a = alloc()
    keep = a.malloc(40 * MiB)
    keep.tag = {"shape": (10, MiB), "dtype": "float32"}
    with pytest.raises(m.OutOfMemoryError) as info:
        a.malloc(80 * MiB)
    assert isinstance(info.value, RuntimeError)
    text = str(info.value)
    assert "emulated" in text and "shape (10, 1048576) float32" in text
    assert "GPU_TENSOR_EMULATED_MEMORY_MB" in text or "Hint:" in text
    assert m.memory_stats()["num_ooms"] == 1
    a.free(a.malloc(50 * MiB))  # fits after the OOM
    a.free(keep)


def test_per_process_fraction():
    a = alloc()
    m.set_per_process_memory_fraction(0.25)
    assert m.get_per_process_memory_fraction() == 0.25
    with pytest.raises(m.OutOfMemoryError, match="limit"):
        a.malloc(30 * MiB)
    m.set_per_process_memory_fraction(1.0)
    a.free(a.malloc(30 * MiB))
    with pytest.raises(ValueError):
        m.set_per_process_memory_fraction(1.5)


def test_caching_allocator_alloc_and_delete():
    alloc()  # the emulated device's allocator exists (as it would after any tensor)
    ptr = m.caching_allocator_alloc(3000)
    assert m.memory_allocated() == 3072 and m.get_allocator_backend() == "native"
    m.caching_allocator_delete(ptr)
    assert m.memory_allocated() == 0
    with pytest.raises(ValueError, match="caching_allocator_alloc"):
        m.caching_allocator_delete(ptr)


def test_live_tensors_and_site_switch():
    a = alloc()
    m.record_creation_sites(True)
    b = a.malloc(3 * MiB)
    b.tag = {"shape": (3, 1024, 256), "dtype": "uint32"}
    rows = m.live_tensors()
    assert rows[0]["shape"] == (3, 1024, 256) and rows[0]["site"].startswith(__file__)
    m.record_creation_sites(False)
    c = a.malloc(100)
    assert m.live_tensors(limit=2)[1]["site"] is None
    a.free(b)
    a.free(c)
    live.set_enabled(None)


def test_history_dump_and_save(tmp_path):
    m._record_memory_history(enabled="all", max_entries=1000)
    a = alloc()  # created after recording was switched on: records too
    x = a.malloc(2 * MiB)
    a.free(a.malloc(700))
    pkl, js = tmp_path / "s.pickle", tmp_path / "s.json"
    m._dump_snapshot(str(pkl))
    m.save_snapshot(str(js))
    with open(pkl, "rb") as f:
        snap = pickle.load(f)
    assert json.loads(js.read_text()) == json.loads(json.dumps(snap))
    actions = [e["action"] for e in snap["device_traces"][0]]
    assert actions[:2] == ["segment_map", "alloc"] and "free_completed" in actions
    assert snap["gpu_tensor"]["memory_stats"]["allocated_bytes.all.current"] == x.size
    assert m.memory_snapshot() == snap["segments"]
    m._record_memory_history(None)
    a.free(x)
    assert m._snapshot()["device_traces"][0] == []
    m._record_memory_history(True)  # legacy boolean form
    assert a.history is not None
