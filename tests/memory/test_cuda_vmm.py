"""Expandable segments over CUDA virtual memory (backends/cuda_vmm.py), on a fake driver.

The fake (fake_vmm.py) has cuda.bindings.driver's contract and records every misuse.
After each step of a random allocator program: no violation (no double map, nothing
released while mapped), driver-side mapped bytes equal the allocator's reserved bytes,
and the allocator's own recount holds. At the end everything is unmapped and released.
"""

from __future__ import annotations

import random

import pytest

from gpu_tensor.backends.cuda_vmm import VmmSource, available
from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import RawOutOfMemory

from .fake_vmm import GRANULARITY, FakeDriver

MiB = 1 << 20


class NoPlainSegments:
    """The cudaMalloc side; expandable segments must not use it."""

    def __init__(self, total):
        self.total = total

    def alloc(self, nbytes):
        raise AssertionError("expandable segments asked for a cudaMalloc segment")

    def free(self, ptr):
        raise AssertionError("expandable segments freed a cudaMalloc segment")

    def mem_get_info(self):
        return self.total, self.total


def make_source(capacity=256 * MiB, **driver_args):
    driver = FakeDriver(capacity, **driver_args)
    syncs = []
    source = VmmSource(NoPlainSegments(capacity), driver, 0, lambda: syncs.append(1))
    return driver, source, syncs


def test_map_and_unmap_in_granularity_chunks_with_access_for_peers():
    driver, source, syncs = make_source(devices=3, peer_pairs={(1, 0), (2, 0)})
    assert available(driver, 0) and source.peers == [1, 2]
    base = source.reserve(64 * MiB)
    source.map(base, 8 * MiB)
    assert len(driver.mappings) == 4 and driver.used == 8 * MiB
    assert all(devices == {0, 1, 2} for devices in driver.access.values())
    with pytest.raises(AssertionError, match="already mapped"):
        source.map(base + 6 * MiB, 4 * MiB)  # overlaps: refused before any driver call
    source.unmap(base + 4 * MiB, 4 * MiB)
    assert syncs == [1] and driver.used == 4 * MiB  # synchronised before unmapping
    with pytest.raises(AssertionError, match="still mapped"):
        source.unreserve(base)
    source.unmap(base, 4 * MiB)
    source.unreserve(base)
    assert driver.handles == {} and driver.reserved == {} and driver.violations == []


@pytest.mark.parametrize("failing", ["cuMemCreate", "cuMemMap", "cuMemSetAccess"])
def test_a_failed_map_leaves_nothing_mapped(failing):
    driver, source, _ = make_source()
    base = source.reserve(64 * MiB)
    driver.fail[failing] = 3 if failing != "cuMemSetAccess" else 1
    error = RuntimeError if failing == "cuMemSetAccess" else RawOutOfMemory
    with pytest.raises(error):
        source.map(base, 16 * MiB)
    assert driver.mappings == {} and driver.handles == {} and driver.used == 0
    assert driver.violations == []
    source.map(base, 16 * MiB)  # and the range can be mapped afterwards
    assert driver.mapped_bytes() == 16 * MiB


def test_unaligned_ranges_are_refused():
    _, source, _ = make_source()
    base = source.reserve(10 * MiB)
    with pytest.raises(ValueError, match="chunks of a reserved range"):
        source.map(base + MiB, GRANULARITY)


def _check_step(a, driver):
    assert driver.violations == []
    assert driver.mapped_bytes() == a.stats()["reserved_bytes.all.current"]
    verify.check(a)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_allocator_over_vmm_keeps_driver_and_stats_in_step(seed):
    rng = random.Random(seed)
    driver, source, syncs = make_source(capacity=160 * MiB)
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    live, ooms = [], 0
    for _ in range(400):
        r = rng.random()
        if r < 0.5:
            size = rng.choice([700, 64 * 1024, MiB, 3 * MiB, 9 * MiB, 30 * MiB])
            try:
                live.append(a.malloc(size + rng.randrange(4096), rng.choice([0, 0, 1])))
            except OutOfMemoryError:
                ooms += 1
        elif r < 0.95 and live:
            a.free(live.pop(rng.randrange(len(live))))
        else:
            a.empty_cache()
        _check_step(a, driver)
    assert all(s.expandable for s in a.segments())
    for block in live:
        a.free(block)
    a.empty_cache()
    _check_step(a, driver)
    assert driver.mappings == {} and driver.handles == {} and driver.reserved == {}
    assert driver.calls["cuMemUnmap"] == driver.calls["cuMemMap"] and syncs
    assert ooms > 0  # the capacity was reached: map failures were handled


def test_snapshot_reports_expandable_segments_like_torch():
    driver, source, _ = make_source()
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    block = a.malloc(5 * MiB)
    snap = a.snapshot()
    (segment,) = snap["segments"]
    assert segment["is_expandable"] is True and segment["segment_type"] == "large"
    assert segment["total_size"] == driver.mapped_bytes()
    assert snap["allocator_settings"]["expandable_segments"] is True
    a.free(block)
    a.empty_cache()
    assert a.snapshot()["segments"] == [] and driver.mappings == {}


def test_cuda_backend_maps_expandable_segments_through_the_driver(monkeypatch):
    pytest.importorskip("cupy")
    from gpu_tensor.backends import cuda_memory, cuda_vmm

    monkeypatch.setattr(cuda_vmm, "load_driver", lambda: FakeDriver(devices=2,
                                                                     peer_pairs={(1, 0)}))
    source = cuda_memory._vmm_source(cuda_memory.CudaRawSource(0), 0)
    assert isinstance(source, VmmSource) and source.peers == [1]
    assert source.granularity == GRANULARITY and source.base.device_index == 0
    monkeypatch.setattr(cuda_vmm, "load_driver", lambda: None)  # no cuda-bindings
    assert cuda_memory._vmm_source(cuda_memory.CudaRawSource(0), 0) is None
