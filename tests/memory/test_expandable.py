"""Expandable segments: grow at the end in pages, shrink at the end, merge across pages."""

from __future__ import annotations

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import FaultInjectingRawSource, HostRawSource, host_array
from gpu_tensor.memory.snapshot import HistoryRecorder

MiB = 1 << 20


def make(capacity=1024 * MiB, raw=None, conf="expandable_segments:True"):
    raw = raw if raw is not None else HostRawSource(capacity)
    return CachingAllocator(raw, 0, config=parse_alloc_conf(conf))


def check(a):
    verify.check(a)
    assert a.raw.outstanding() == {s.ptr: s.size for s in a.segments()}


def test_torch_note_example_8x16_then_4x32():
    a = make()
    first = [a.malloc(16 * MiB) for _ in range(8)]
    assert [(s.size, s.expandable) for s in a.segments()] == [(128 * MiB, True)]  # 16 pages
    for b in first:
        a.free(b)
    check(a)
    maps = a.stats()["num_device_alloc"]
    second = [a.malloc(32 * MiB) for _ in range(4)]  # fits in the merged free space
    assert a.stats()["num_device_alloc"] == maps
    host_array(second[3].ptr, 32 * MiB)[:] = 1  # the mapped memory is real
    s = a.stats()
    # torch maps 140 MiB here (20 MiB pages); our 8 MiB pages fit 128 MiB exactly
    assert s["reserved_bytes.all.peak"] == 128 * MiB and s["allocated_bytes.all.peak"] == 128 * MiB
    for b in second:
        a.free(b)
    a.empty_cache()
    check(a)
    assert a.segments() == [] and a.raw.outstanding() == {} and a.raw.used == 0


def test_shrink_keeps_the_page_a_live_block_shares():
    a = make()
    small = a.malloc(5 * MiB)
    big = a.malloc(30 * MiB)  # 3 MiB free tail + 32 MiB more (four 8 MiB pages)
    assert a.segments()[0].size == 40 * MiB and big.ptr == small.ptr + 5 * MiB
    a.free(big)
    a.empty_cache()
    (seg,) = a.segments()
    assert seg.size == 8 * MiB and [b.size for b in seg.blocks()] == [5 * MiB, 3 * MiB]
    assert a.stats()["inactive_split_bytes.large_pool.current"] == 3 * MiB
    check(a)
    a.free(small)
    a.empty_cache()
    assert a.segments() == []
    check(a)


def test_pools_and_streams_get_their_own_segments():
    a = make()
    a.malloc(100)
    a.malloc(3 * MiB)
    a.malloc(3 * MiB, stream=4)
    segs = sorted((s.is_small, s.stream, s.size) for s in a.segments())
    assert segs == [(False, 0, 8 * MiB), (False, 4, 8 * MiB), (True, 0, 2 * MiB)]
    check(a)


def test_oom_shrinks_then_retries_and_recovers():
    a = make(capacity=100 * MiB)
    keep = a.malloc(30 * MiB)
    temp = a.malloc(50 * MiB, stream=1)  # another stream: its own segment
    a.free(temp)  # 60 MiB mapped and cached on stream 1
    big = a.malloc(60 * MiB)  # needs stream 1's pages back: shrink, retry
    assert a.stats()["num_alloc_retries"] == 1
    check(a)
    with pytest.raises(OutOfMemoryError):
        a.malloc(40 * MiB)
    check(a)
    a.free(big)
    a.free(a.malloc(40 * MiB))
    a.free(keep)
    a.empty_cache()
    check(a)
    assert a.raw.used == 0


def test_snapshot_and_history_show_maps_and_unmaps():
    a = make()
    a.history = HistoryRecorder("all", context=None)
    b = a.malloc(25 * MiB)
    snap = a.snapshot()
    assert snap["segments"][0]["is_expandable"] is True
    a.free(b)
    a.empty_cache()
    actions = [e["action"] for e in a.snapshot()["device_traces"][0]]
    assert actions == ["segment_map", "alloc", "free_requested", "free_completed",
                       "segment_unmap"]


def test_fault_injection_at_every_raw_call():
    def workload(a):
        live = []
        for i, size in enumerate([100, 3 * MiB, 12 * MiB, 700 * 1024, 30 * MiB] * 3):
            try:
                live.append(a.malloc(size, stream=i % 2))
            except OutOfMemoryError:
                pass
            check(a)
            if i % 3 == 2:
                a.free(live.pop(0))
            if i % 5 == 4:
                a.empty_cache()
            check(a)
        return live

    clean = make(raw=FaultInjectingRawSource(HostRawSource(256 * MiB)))
    workload(clean)
    for i in range(clean.raw.calls):
        a = make(raw=FaultInjectingRawSource(HostRawSource(256 * MiB), fail_at=range(i, i + 2)))
        for b in workload(a):
            a.free(b)
        a.empty_cache()
        check(a)
        assert a.raw.outstanding() == {} and a.raw.failures >= 1


def test_source_without_mapping_falls_back_with_a_warning():
    class Plain:
        def __init__(self):
            self.inner = HostRawSource(64 * MiB)
            self.alloc, self.free = self.inner.alloc, self.inner.free
            self.mem_get_info = self.inner.mem_get_info

    with pytest.warns(RuntimeWarning, match="expandable_segments:True ignored"):
        a = make(raw=Plain())
    a.free(a.malloc(3 * MiB))
    assert not a.segments()[0].expandable
