"""Expandable segments: grow in pages, restitch free pages, shrink, merge across pages."""

from __future__ import annotations

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import FaultInjectingRawSource, HostRawSource, host_array
from gpu_tensor.memory.snapshot import HistoryRecorder

from .fakes import source_books

MiB = 1 << 20


def make(capacity=1024 * MiB, raw=None, conf="expandable_segments:True"):
    raw = raw if raw is not None else HostRawSource(capacity)
    return CachingAllocator(raw, 0, config=parse_alloc_conf(conf))


def check(a):
    """The allocator's books agree with the source's: every reservation maps exactly its runs
    and the old addresses of its restitched pages, and the source holds what is reserved."""
    verify.check(a)
    assert a.raw.outstanding() == source_books(a)
    assert a.raw.used == a.stats()["reserved_bytes.all.current"]


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
    # torch maps 140 MiB here (20 MiB pages); our 2 MiB pages fit 128 MiB exactly
    assert s["reserved_bytes.all.peak"] == 128 * MiB and s["allocated_bytes.all.peak"] == 128 * MiB
    for b in second:
        a.free(b)
    a.empty_cache()
    check(a)
    assert a.segments() == [] and a.raw.outstanding() == {} and a.raw.used == 0


def test_shrink_keeps_the_page_a_live_block_shares():
    a = make()
    small = a.malloc(5 * MiB)
    big = a.malloc(30 * MiB)  # 1 MiB free tail + 30 MiB more (fifteen 2 MiB pages)
    assert a.segments()[0].size == 36 * MiB and big.ptr == small.ptr + 5 * MiB
    a.free(big)
    a.empty_cache()
    (seg,) = a.segments()
    assert seg.size == 6 * MiB and [b.size for b in seg.blocks()] == [5 * MiB, 1 * MiB]
    assert a.stats()["inactive_split_bytes.large_pool.current"] == 1 * MiB
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
    assert segs == [(False, 0, 4 * MiB), (False, 4, 4 * MiB), (True, 0, 2 * MiB)]
    check(a)


def _hole_between_live_blocks(a):
    """Three 20 MiB blocks, the middle one freed: a 20 MiB hole no 30 MiB request fits."""
    first, middle, last = (a.malloc(20 * MiB) for _ in range(3))
    a.free(middle)
    return first, last


def test_a_hole_between_live_blocks_is_restitched_not_stranded():
    a = make()
    a.history = HistoryRecorder("all", context=None)
    first, last = _hole_between_live_blocks(a)
    check(a)
    assert a.stats()["reserved_bytes.all.current"] == 60 * MiB
    big = a.malloc(30 * MiB)
    check(a)
    s = a.stats()
    # the hole's 20 MiB of whole pages serve the request at the end; only 10 MiB are new
    assert s["reserved_bytes.all.current"] == 70 * MiB and a.raw.used == 70 * MiB
    assert big.ptr == last.ptr + 20 * MiB and s["num_alloc_retries"] == 0
    (res,) = a._ranges
    assert res.aliases == {first.ptr + 20 * MiB: 20 * MiB}  # the hole's old address
    assert [(x.ptr, x.size) for x in a.segments()] == [
        (first.ptr, 20 * MiB),
        (last.ptr, 50 * MiB),
    ]  # torch's snapshot splits runs so too
    host_array(big.ptr, 30 * MiB)[:] = 7  # the restitched memory is real
    trace = [(e["action"], e["size"]) for e in a.snapshot()["device_traces"][0]]
    assert trace[-4:] == [
        ("segment_map", 10 * MiB),
        ("segment_unmap", 20 * MiB),
        ("segment_map", 20 * MiB),
        ("alloc", 30 * MiB),
    ]
    for b in (first, last, big):
        a.free(b)
    a.empty_cache()
    check(a)
    assert a.segments() == [] and a.raw.outstanding() == {} and a.raw.used == 0


def test_torch_policy_would_grow_where_restitching_does_not():
    """At the device limit a restitched request succeeds without the OOM retry (and the
    device sync of its unmaps); without `alias` the source maps new pages and must retry."""

    class NoAlias(HostRawSource):
        alias = None

    for raw, retries in ((HostRawSource(64 * MiB), 0), (NoAlias(64 * MiB), 1)):
        a = make(raw=raw)
        first, last = _hole_between_live_blocks(a)
        big = a.malloc(22 * MiB)  # 20 MiB restitched + 2 MiB new = 62 MiB of 64
        assert a.stats()["num_alloc_retries"] == retries
        assert a.stats()["reserved_bytes.all.current"] == 62 * MiB
        check(a)
        for b in (first, last, big):
            a.free(b)


def test_free_small_pool_pages_serve_the_large_pool():
    a = make()
    small = [a.malloc(MiB) for _ in range(8)]  # 1 MiB blocks: small pool, four 2 MiB pages
    for b in small[1:]:
        a.free(b)  # one page keeps a live block, three are free
    big = a.malloc(6 * MiB)
    check(a)
    s = a.stats()
    assert s["reserved_bytes.all.current"] == 8 * MiB and a.raw.used == 8 * MiB
    assert s["reserved_bytes.small_pool.current"] == 2 * MiB
    assert s["reserved_bytes.large_pool.current"] == 6 * MiB
    assert s["reserved_bytes.all.peak"] == 8 * MiB  # no moment with more
    a.free(big)
    a.free(small[0])
    a.empty_cache()
    check(a)
    assert a.raw.used == 0 and a._ranges == []


def test_restitched_pages_of_another_reservation_and_a_full_one():
    a = make(capacity=128 * MiB)  # each reservation is the capacity: 128 MiB of addresses
    blocks = [a.malloc(40 * MiB) for _ in range(3)]  # 120 MiB of the first range
    a.free(blocks[1])
    big = a.malloc(44 * MiB)  # 8 MiB of addresses left: a second range, pages from the first
    check(a)
    assert len(a._ranges) == 2 and big.segment.reservation is a._ranges[1]
    assert a.stats()["reserved_bytes.all.current"] == 124 * MiB  # 40 MiB restitched, 4 new
    assert a.stats()["num_alloc_retries"] == 0
    a.free(blocks[0])
    a.free(blocks[2])
    a.free(big)
    a.empty_cache()
    check(a)
    assert a._ranges == [] and a.raw.outstanding() == {} and a.raw.used == 0


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
    assert actions == ["segment_map", "alloc", "free_requested", "free_completed", "segment_unmap"]


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

        def attempt(size):
            try:
                return a.malloc(size)
            except OutOfMemoryError:
                return None

        x, y, z = attempt(20 * MiB), attempt(20 * MiB), attempt(20 * MiB)
        if y is not None:
            a.free(y)  # a hole between live blocks: the next request restitches its pages
        live += [b for b in (x, z, attempt(30 * MiB)) if b is not None]
        check(a)
        return live

    class Counting(HostRawSource):
        aliases = 0

        def alias(self, dst, src, nbytes):
            Counting.aliases += 1
            super().alias(dst, src, nbytes)

    clean = make(raw=FaultInjectingRawSource(Counting(256 * MiB)))
    workload(clean)
    assert Counting.aliases >= 1  # the failures below reach the restitching calls too
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
