"""Graph-private pools (CUDA graph capture) in the CachingAllocator, on host memory."""

from __future__ import annotations

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource

from .fakes import source_books

KiB, MiB = 1 << 10, 1 << 20
CAPTURE, OTHER = 7, 9  # stream handles
POOL, SHARED = (1, 0), (0, 1)  # a graph's own pool id, a graph_pool_handle() id


class FakeEvent:
    def __init__(self, stream, device=None):
        self.stream, self.done, self.queries = stream, False, 0

    def query(self):
        self.queries += 1
        return self.done

    def synchronize(self):
        self.done = True


def make(conf="", events=None):
    conf = ",".join(filter(None, ["expandable_segments:False", conf]))
    return CachingAllocator(
        HostRawSource(512 * MiB), 0, event_factory=events, config=parse_alloc_conf(conf)
    )


def check(a):
    verify.check(a)
    assert a.raw.outstanding() == source_books(a)


def test_capture_allocates_from_a_private_pool_that_eager_code_never_reuses():
    a = make()
    eager = a.malloc(100 * KiB, CAPTURE)
    a.free(eager)  # a cached eager block the capture must not take
    a.begin_allocate_to_pool(POOL, CAPTURE)
    assert a.is_capturing() and a.is_capturing(CAPTURE) and not a.is_capturing(OTHER)
    inside = a.malloc(100 * KiB, CAPTURE)
    side = a.malloc(100 * KiB, OTHER)  # another stream: the device pool, as before
    a.end_allocate_to_pool(POOL)
    assert inside.segment.graph_pool is not None and side.segment.graph_pool is None
    assert inside.segment is not eager.segment
    inside_ptr = inside.ptr  # (a freed Block is the allocator's again: keep its address)
    a.free(inside)  # back to the graph's pool, not the device's
    after = a.malloc(100 * KiB, CAPTURE)
    assert after.segment.graph_pool is None and after.ptr != inside_ptr
    assert a.graph_pools() == {POOL: {"use_count": 1, "segments": 1}}
    check(a)
    # A second capture into the same pool reuses the graph's freed block.
    a.begin_allocate_to_pool(POOL, CAPTURE)
    again = a.malloc(100 * KiB, CAPTURE)
    a.end_allocate_to_pool(POOL)
    assert again.ptr == inside_ptr
    assert a.graph_pools()[POOL]["use_count"] == 2
    for b in (side, after, again):
        a.free(b)
    check(a)


def test_blocks_freed_inside_the_capture_are_reused_inside_it():
    a = make()
    a.begin_allocate_to_pool(POOL, CAPTURE)
    tmp = a.malloc(MiB, CAPTURE)
    ptr = tmp.ptr
    a.free(tmp)
    assert a.malloc(MiB, CAPTURE).ptr == ptr  # ordered on the capturing stream: safe
    a.end_allocate_to_pool(POOL)
    check(a)


def test_empty_cache_keeps_a_live_graphs_memory_and_frees_it_after_release():
    a = make()
    a.begin_allocate_to_pool(POOL, CAPTURE)
    out = a.malloc(3 * MiB, CAPTURE)  # a static output the caller keeps
    a.free(a.malloc(200 * KiB, CAPTURE))  # a temporary: its segment is free but the graph's
    a.end_allocate_to_pool(POOL)
    reserved = a.stats()["reserved_bytes.all.current"]
    assert reserved == 2 * MiB + 20 * MiB
    a.empty_cache()
    assert a.stats()["reserved_bytes.all.current"] == reserved  # the graph lives
    a.release_pool(POOL)  # graph reset: the free small segment may go, the output stays
    a.empty_cache()
    assert a.stats()["reserved_bytes.all.current"] == 20 * MiB
    assert a.graph_pools() == {POOL: {"use_count": 0, "segments": 1}}
    a.free(out)
    a.empty_cache()
    assert a.stats()["reserved_bytes.all.current"] == 0
    assert a.graph_pools() == {}
    check(a)


def test_shared_pool_lives_until_every_graph_using_it_is_released():
    a = make()
    for _ in range(2):  # two graphs captured into one graph_pool_handle()
        a.begin_allocate_to_pool(SHARED, CAPTURE)
        a.free(a.malloc(KiB, CAPTURE))
        a.end_allocate_to_pool(SHARED)
    assert a.graph_pools() == {SHARED: {"use_count": 2, "segments": 1}}
    a.release_pool(SHARED)
    a.empty_cache()
    assert a.stats()["segment.all.current"] == 1
    a.release_pool(SHARED)
    a.empty_cache()
    assert a.stats()["segment.all.current"] == 0 and a.graph_pools() == {}
    with pytest.raises(RuntimeError, match="not in use"):
        a.release_pool(SHARED)


def test_snapshot_shows_segment_pool_id():
    a = make()
    eager = a.malloc(KiB, CAPTURE)
    a.begin_allocate_to_pool(POOL, CAPTURE)
    graph = a.malloc(KiB, CAPTURE)
    a.end_allocate_to_pool(POOL)
    ids = {s["address"]: s["segment_pool_id"] for s in a.snapshot()["segments"]}
    assert ids == {eager.segment.ptr: (0, 0), graph.segment.ptr: POOL}
    streams = {s["stream"] for s in a.snapshot()["segments"]}
    assert streams == {CAPTURE}  # the real stream, not a pool key


def test_under_capture_no_event_is_queried_and_stream_frees_wait_for_the_end():
    made = []

    def events(stream, **kw):
        made.append(FakeEvent(stream, **kw))
        return made[-1]

    a = make(events=events)
    used = a.malloc(KiB, OTHER)
    a.record_stream(used, CAPTURE)
    a.free(used)  # an event on CAPTURE, pending
    assert len(made) == 1
    a.begin_allocate_to_pool(POOL, CAPTURE)
    a.malloc(KiB, OTHER)  # an eager malloc under capture must not query it
    assert made[0].queries == 0
    crossed = a.malloc(KiB, OTHER)
    a.record_stream(crossed, CAPTURE)
    a.free(crossed)  # no event recorded while capturing
    assert len(made) == 1
    with pytest.raises(RuntimeError, match="captur.*after capture_end"):
        a.empty_cache()
    a.end_allocate_to_pool(POOL)
    assert len(made) == 2 and made[1].stream == CAPTURE  # recorded at the capture's end
    a.empty_cache()
    check(a)


def test_capture_never_frees_cached_memory_to_make_room():
    a = CachingAllocator(
        HostRawSource(24 * MiB), 0, config=parse_alloc_conf("expandable_segments:False")
    )
    a.free(a.malloc(20 * MiB, OTHER))  # cached, would be freed by an eager OOM retry
    a.begin_allocate_to_pool(POOL, CAPTURE)
    with pytest.raises(Exception, match="out of memory|Out of memory|OutOfMemory"):
        a.malloc(8 * MiB, CAPTURE)
    a.end_allocate_to_pool(POOL)
    assert a.stats()["segment.all.current"] == 1  # nothing freed behind the capture's back
    assert a.malloc(3 * MiB, CAPTURE).segment.graph_pool is None  # usable afterwards
    check(a)


def test_a_stream_captures_into_one_pool_at_a_time():
    a = make()
    a.begin_allocate_to_pool(POOL, CAPTURE)
    with pytest.raises(RuntimeError, match="already capturing"):
        a.begin_allocate_to_pool(SHARED, CAPTURE)
    a.end_allocate_to_pool(POOL)
    assert not a.is_capturing()
