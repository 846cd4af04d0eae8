"""CachingAllocator policy: rounding, pools, split/merge, streams, OOM, threads."""

from __future__ import annotations

import threading

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator, allocation_size, round_size
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import FaultInjectingRawSource, HostRawSource, host_array

from .fakes import source_books

KiB, MiB = 1 << 10, 1 << 20


class FakeEvent:
    def __init__(self, stream, device=None):
        self.stream, self.device = stream, device
        self.done = False

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


class EventLog:
    """event_factory that remembers every event it made."""

    def __init__(self):
        self.events = []

    def __call__(self, stream, **kw):
        event = FakeEvent(stream, **kw)
        self.events.append(event)
        return event


def make(capacity=512 * MiB, conf="", events=None, raw=None):
    """An allocator over host memory with cudaMalloc-style segments (the policy these tests
    check; HostRawSource can map pages, so expandable segments would be the default)."""
    raw = raw if raw is not None else HostRawSource(capacity)
    if "expandable_segments" not in conf:
        conf = ",".join(filter(None, ["expandable_segments:False", conf]))
    return CachingAllocator(raw, 0, event_factory=events, config=parse_alloc_conf(conf))


def check(a):
    verify.check(a)
    assert a.raw.outstanding() == source_books(a)


def test_round_size_and_segment_sizes():
    assert round_size(0) == round_size(1) == round_size(512) == 512
    assert round_size(513) == 1024
    assert round_size(MiB + 1) == MiB + 512
    assert allocation_size(512) == allocation_size(MiB) == 2 * MiB
    assert allocation_size(MiB + 512) == allocation_size(10 * MiB - 512) == 20 * MiB
    assert allocation_size(10 * MiB) == 10 * MiB
    assert allocation_size(11 * MiB + 1) == 12 * MiB


def test_roundup_power2_divisions():
    conf = parse_alloc_conf("roundup_power2_divisions:4")
    # 9 MiB + 1 lies between 8 and 16 MiB, divided at 8/10/12/14 MiB -> 10 MiB
    assert round_size(9 * MiB + 1, conf) == 10 * MiB
    assert round_size(8 * MiB, conf) == 8 * MiB  # exact powers of two are kept
    # torch's code applies divisions only above 512 B * divisions (its docs' 1200 -> 1280
    # example skips that guard): 1200 keeps plain 512 B rounding.
    assert round_size(1200, conf) == 1536


@pytest.mark.parametrize("conf", ["", "roundup_power2_divisions:4"])
def test_malloc_sizes_blocks_as_round_size_does_and_refuses_negative_sizes(conf):
    """malloc writes round_size's plain rule out and tests the sign only at 512 B and below:
    the same sizes, the same refusal, nothing allocated by a refused request."""
    a = make(conf=conf)
    rounding = parse_alloc_conf(conf)
    for nbytes in (0, 1, 511, 512, 513, 1200, 5000, 9 * MiB + 1, True, 700.0):
        block = a.malloc(nbytes)
        assert block.size == round_size(int(nbytes), rounding), nbytes
        assert block.requested_size == int(nbytes)
        a.free(block)
    for nbytes in (-1, -512, -513, -(3 * MiB), -1.0):
        with pytest.raises(ValueError, match="negative size"):
            a.malloc(nbytes)
    assert a.stats()["allocation.all.allocated"] == 10  # the refused ones never counted
    check(a)


def test_small_requests_share_a_2mib_segment_and_merge_back():
    a = make()
    blocks = [a.malloc(100 * KiB) for _ in range(5)]
    assert len(a.segments()) == 1 and a.segments()[0].size == 2 * MiB
    assert [b.ptr - blocks[0].ptr for b in blocks] == [i * 100 * KiB for i in range(5)]
    s = a.stats()
    assert s["allocated_bytes.small_pool.current"] == 500 * KiB
    assert s["requested_bytes.all.current"] == 500 * KiB
    assert s["inactive_split_bytes.small_pool.current"] == 2 * MiB - 500 * KiB
    check(a)
    for b in blocks[::2] + blocks[1::2]:
        a.free(b)
        check(a)
    seg = a.segments()[0]
    assert [b.size for b in seg.blocks()] == [2 * MiB]  # fully merged again
    assert a.stats()["inactive_split.all.current"] == 0
    a.empty_cache()
    assert a.stats()["reserved_bytes.all.current"] == 0 and a.raw.outstanding() == {}


def test_mid_size_requests_share_20mib_segments_large_ones_are_exact():
    a = make(conf="adaptive_segments:False")  # torch's rule
    b1, b2 = a.malloc(3 * MiB), a.malloc(5 * MiB)
    assert [s.size for s in a.segments()] == [20 * MiB]
    assert b2.ptr == b1.ptr + 3 * MiB
    big = a.malloc(25 * MiB + 3)
    # 26 MiB segment; the 1 MiB - 512 B left is <= 1 MiB, so the large pool does not split
    # it off: the caller's block is the whole segment (counted so in allocated_bytes).
    assert big.size == 26 * MiB and big.requested_size == 25 * MiB + 3
    assert sorted(s.size for s in a.segments()) == [20 * MiB, 26 * MiB]
    assert len(list(a.segments()[0].blocks()) + list(a.segments()[1].blocks())) == 4
    check(a)


def test_adaptive_mid_size_segments_grow_with_the_pool():
    assert allocation_size(3 * MiB, 0) == 12 * MiB  # 4 requests' worth, 2 MiB steps
    assert allocation_size(3 * MiB + 512, 0) == 14 * MiB
    assert allocation_size(3 * MiB, 60 * MiB) == 16 * MiB  # a quarter of the large pool
    assert allocation_size(3 * MiB, 400 * MiB) == 20 * MiB  # never past torch's 20 MiB
    assert allocation_size(9 * MiB, 0) == 20 * MiB
    assert allocation_size(MiB, 0) == 2 * MiB and allocation_size(12 * MiB, 0) == 12 * MiB
    a = make()
    b1, b2 = a.malloc(3 * MiB), a.malloc(5 * MiB)
    assert [s.size for s in a.segments()] == [12 * MiB] and b2.ptr == b1.ptr + 3 * MiB
    check(a)


def test_best_fit_picks_smallest_sufficient_block_then_lowest_address():
    a = make()
    hold = [a.malloc(12 * MiB), a.malloc(16 * MiB), a.malloc(14 * MiB)]
    ptrs = {b.size: b.ptr for b in hold}
    for b in hold:
        a.free(b)
    got = a.malloc(13 * MiB)
    assert got.ptr == ptrs[14 * MiB]  # 14 MiB is the best fit for 13 MiB
    check(a)


def test_blocks_are_not_shared_across_streams():
    a = make(conf="peak_guard:False")  # keep the freed segment cached, to see it is not shared
    b = a.malloc(4 * MiB, stream=1)
    ptr, segment = b.ptr, b.segment
    a.free(b)  # from here on the Block object is the allocator's again
    c = a.malloc(4 * MiB, stream=3)  # not 2: cudaStreamPerThread is keyed per thread
    assert c.segment is not segment and c.stream == 3
    d = a.malloc(4 * MiB, stream=1)
    assert d.ptr == ptr
    check(a)


def test_real_memory_can_be_written_through_numpy():
    a = make()
    b = a.malloc(3000)
    arr = host_array(b.ptr, 3000)
    arr[:] = 7
    assert int(arr.sum()) == 21000
    del arr
    a.free(b)


def test_double_free_and_foreign_block_are_errors():
    a, other = make(), make()
    b = a.malloc(1000)
    with pytest.raises(ValueError, match="double free"):
        other.free(b)
    a.free(b)
    with pytest.raises(ValueError, match="double free"):
        a.free(b)
    with pytest.raises(ValueError):
        a.malloc(-1)
    check(a)


def test_max_split_size_keeps_oversize_blocks_whole():
    a = make(conf="max_split_size_mb:40,peak_guard:False")  # torch's rules alone
    big = a.malloc(100 * MiB)
    assert a.stats()["oversize_allocations.current"] == 1
    assert a.stats()["oversize_segments.current"] == 1
    a.free(big)
    small = a.malloc(15 * MiB)  # may not carve up the 100 MiB oversize block
    assert small.segment is not big.segment
    near = a.malloc(90 * MiB)  # within max_non_split_rounding (20 MiB): reused, unsplit
    assert near is big and near.size == 100 * MiB
    assert len(list(near.segment.blocks())) == 1
    a.free(near)
    far = a.malloc(60 * MiB)  # 100 >= 60 + 20: not reused
    assert far.segment is not big.segment
    check(a)


def test_oom_path_frees_oversize_cache_before_a_full_flush():
    # release_on_miss off: it would free the stale 20 MiB segment first (tested elsewhere)
    a = make(capacity=200 * MiB, conf="max_split_size_mb:40,release_on_miss:False,peak_guard:False")
    small = a.malloc(5 * MiB)
    a.free(small)  # a cached 20 MiB segment that a full flush would release
    for size in (60, 70):
        a.free(a.malloc(size * MiB))  # two cached oversize segments: 130 MiB
    big = a.malloc(100 * MiB)  # needs room: frees oversize blocks only, no retry round
    s = a.stats()
    assert s["num_alloc_retries"] == 0 and s["num_device_free"] >= 1
    assert (
        s["reserved_bytes.small_pool.current"] + s["reserved_bytes.large_pool.current"] <= 200 * MiB
    )
    assert any(seg.size == 20 * MiB for seg in a.segments())  # the non-oversize cache stayed
    a.free(big)
    check(a)


def test_record_stream_delays_reuse_until_event_completes():
    log = EventLog()
    a = make(events=log)
    b = a.malloc(4 * MiB, stream=0)
    a.record_stream(b, 7)
    a.record_stream(b, 0)  # the allocation stream itself is ignored
    ptr = b.ptr
    a.free(b)
    assert len(log.events) == 1 and log.events[0].stream == 7
    s = a.stats()
    assert s["allocated_bytes.all.current"] == 0 and s["active_bytes.all.current"] == 4 * MiB
    assert a.snapshot()["segments"][0]["blocks"][0]["state"] == "active_pending_free"
    check(a)
    c = a.malloc(4 * MiB, stream=0)  # event not done: must not get the same memory
    assert c.ptr != ptr
    log.events[0].done = True
    d = a.malloc(4 * MiB, stream=0)  # events are processed at the next malloc
    assert d.ptr == ptr
    assert a.stats()["active_bytes.all.current"] == 8 * MiB
    check(a)


def test_record_stream_of_another_device_makes_its_event_there():
    # torch's insert_events switches to the stream's device: an event made on the block's
    # device and recorded on another device's stream is an error, and at free (a finaliser)
    # it would be swallowed with the block never returned
    log = EventLog()
    a = make(events=log)  # cuda:0's
    b = a.malloc(4 * MiB, stream=0)
    a.record_stream(b, 0, device=1)  # cuda:1's legacy stream: handle 0 too, another stream
    a.record_stream(b, 9, device=1)
    a.record_stream(b, 7, device=0)  # this device's: as before
    a.free(b)
    assert [(e.stream, e.device) for e in log.events] == [(7, None), (0, 1), (9, 1)]
    assert a.stats()["active_bytes.all.current"] == 4 * MiB
    check(a)
    for e in log.events:
        e.done = True
    a.malloc(512)  # events are processed at the next malloc
    assert a.stats()["active_bytes.all.current"] == 512
    check(a)


def test_empty_cache_synchronizes_pending_events():
    log = EventLog()
    a = make(events=log)
    b = a.malloc(4 * MiB)
    a.record_stream(b, 3)
    a.free(b)
    a.empty_cache()
    assert log.events[0].done and a.stats()["num_sync_all_streams"] == 1
    assert a.stats()["reserved_bytes.all.current"] == 0
    check(a)


def test_record_stream_without_events_is_synchronous():
    a = make(events=None)  # emulated device: every stream use has completed already
    b = a.malloc(4 * MiB)
    a.record_stream(b, 5)
    a.free(b)
    assert a.stats()["active_bytes.all.current"] == 0
    check(a)


def test_oom_reports_and_recovers():
    a = make(capacity=64 * MiB)
    keep = a.malloc(30 * MiB)
    keep.tag = {"shape": (30, MiB), "dtype": "uint8"}
    cached = a.malloc(20 * MiB)
    a.free(cached)  # 20 MiB cached, unused
    with pytest.raises(OutOfMemoryError) as info:
        a.malloc(40 * MiB)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.requested == 40 * MiB and err.total == 64 * MiB
    assert err.allocated == 30 * MiB
    text = str(err)
    assert "Tried to allocate 40.00 MiB" in text and "shape (30, 1048576) uint8" in text
    assert __file__ in text  # the creation site names this test
    assert "Hint:" in text
    s = a.stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    assert s["reserved_bytes.all.current"] == 30 * MiB  # the cache was freed while retrying
    check(a)
    ok = a.malloc(30 * MiB)  # fits: must succeed after the OOM
    a.free(ok)
    a.free(keep)
    check(a)


def test_oom_hint_names_fragmentation():
    a = make(capacity=44 * MiB)
    blocks = [a.malloc(2 * MiB) for _ in range(20)]  # two 20 MiB segments, split
    for b in blocks[::2]:
        a.free(b)  # 20 MiB free, but in 2 MiB holes
    with pytest.raises(OutOfMemoryError) as info:
        a.malloc(12 * MiB)
    assert "fragmentation" in str(info.value)
    assert info.value.largest_free_block == 2 * MiB
    check(a)


def test_fault_injection_at_every_raw_alloc_position():
    """Fail raw alloc #i (alone, and a run of three) for every i a workload reaches."""

    def workload(a):
        live = []
        for i, size in enumerate([100, 3 * MiB, 12 * MiB, 700 * KiB, 30 * MiB, 5 * MiB] * 3):
            try:
                live.append(a.malloc(size, stream=i % 2))
            except OutOfMemoryError:
                pass
            check(a)
            if i % 3 == 2:
                a.free(live.pop(0))
                check(a)
            if i % 7 == 6:
                a.empty_cache()
        return live

    clean = make(capacity=128 * MiB, raw=FaultInjectingRawSource(HostRawSource(128 * MiB)))
    workload(clean)
    total_calls = clean.raw.calls
    assert total_calls > 5
    for i in range(total_calls):
        for run in (1, 3):
            a = make(
                raw=FaultInjectingRawSource(HostRawSource(128 * MiB), fail_at=range(i, i + run))
            )
            live = workload(a)
            assert a.raw.failures >= 1
            for b in live:
                a.free(b)
            a.empty_cache()
            check(a)
            assert a.stats()["reserved_bytes.all.current"] == 0
            assert a.raw.outstanding() == {}


def test_oom_hint_for_a_request_larger_than_the_device():
    a = make(capacity=64 * MiB)
    with pytest.raises(OutOfMemoryError, match="larger than the device"):
        a.malloc(100 * MiB)
    check(a)


def test_per_process_fraction_caps_reserved():
    a = make(capacity=100 * MiB)
    a.set_memory_fraction(0.5)
    a.malloc(30 * MiB)
    with pytest.raises(OutOfMemoryError, match="per-process limit"):
        a.malloc(30 * MiB)
    a.set_memory_fraction(1.0)
    a.malloc(30 * MiB)
    check(a)


def test_garbage_collection_threshold_frees_old_segments_before_growing():
    a = make(capacity=200 * MiB, conf="garbage_collection_threshold:0.5")
    a.set_memory_fraction(1.0)
    for size in (40, 42, 44):
        a.free(a.malloc(size * MiB))
    before = a.stats()["num_device_free"]
    a.malloc(60 * MiB)
    assert a.stats()["num_device_free"] > before
    assert a.stats()["reserved_bytes.all.current"] <= 200 * MiB
    check(a)


def test_release_on_miss_bounds_growth_of_stale_segments():
    def peak_reserved(conf):
        a = make(capacity=2048 * MiB, conf=conf)
        for step in range(8):  # activations grow a little each step
            blocks = [a.malloc((12 + step) * MiB) for _ in range(6)]
            for b in reversed(blocks):
                a.free(b)
        check(a)
        return a.stats()["reserved_bytes.all.peak"]

    assert peak_reserved("release_on_miss:True,peak_guard:False") < peak_reserved(
        "release_on_miss:False,peak_guard:False"
    )


@pytest.mark.parametrize("conf", ["", "expandable_segments:True"])
def test_eight_threads_stress(conf):
    a = make(capacity=4096 * MiB, conf=conf)  # address space only: one page touched a block
    errors = []

    def worker(seed):
        import random

        rng = random.Random(seed)
        live = []
        try:
            for _ in range(400):
                if live and rng.random() < 0.6:  # live sets stay small: no OOM
                    a.free(live.pop(rng.randrange(len(live))))
                else:
                    size = rng.choice([rng.randrange(1, MiB), rng.randrange(MiB, 12 * MiB)])
                    b = a.malloc(size, stream=seed % 3)
                    host_array(b.ptr, 64)[:] = seed  # the memory is ours alone
                    live.append(b)
                    if (host_array(b.ptr, 64) != seed).any():
                        errors.append("memory handed to two threads at once")
                if rng.random() < 0.02:
                    a.empty_cache()
            for b in live:
                a.free(b)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check(a)
    assert a.stats()["allocated_bytes.all.current"] == 0
    a.empty_cache()
    assert a.raw.outstanding() == {}


def test_reset_stats():
    a = make()
    b = a.malloc(5 * MiB)
    a.free(b)
    a.reset_peak_stats()
    assert a.stats()["allocated_bytes.all.peak"] == 0
    a.reset_accumulated_stats()
    s = a.stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["num_device_alloc"] == 0
    assert s["reserved_bytes.all.current"] == 20 * MiB
    verify.check(a, accumulated=False)


def test_free_from_a_finaliser_during_malloc_is_deferred():
    """The garbage collector can run a finaliser (cupy owner, numpy buffer) in the middle of
    malloc on the same thread; its free must wait until malloc's bookkeeping is done."""
    a = make()
    victim = a.malloc(5 * MiB)
    victim_ptr = victim.ptr
    inner = a.raw

    class ReentrantSource:
        def alloc(self, nbytes):
            a.free(victim)  # what a finaliser would do, mid-malloc
            assert a.lookup(victim_ptr) is None and a._deferred == [victim]
            return inner.alloc(nbytes)

        def __getattr__(self, name):
            return getattr(inner, name)

    a.raw = ReentrantSource()
    new = a.malloc(50 * MiB)  # needs a new segment: the raw alloc runs the "finaliser"
    assert a._deferred == [] and not a._busy
    assert a.stats()["allocated_bytes.all.current"] == new.size
    a.raw = inner
    check(a)
    with pytest.raises(ValueError, match="double free"):
        a.free(victim)


def test_lookup_and_stream_objects():
    class S:
        ptr = 9

    a = make()
    b = a.malloc(1000, stream=S())
    assert b.stream == 9 and a.lookup(b.ptr) is b
    a.free(b)
    assert a.lookup(b.ptr) is None


def test_peak_guard_returns_whole_free_segments_before_growing_the_peak():
    def run(conf):
        a = make(capacity=2048 * MiB, conf=conf)
        for step in range(4):  # the work moves between streams: caches are per stream
            blocks = [a.malloc(300 * MiB, stream=1 + step % 2) for _ in range(2)]
            for b in blocks:
                a.free(b)
        check(a)
        return a.stats()

    guarded, plain = run("peak_guard:True"), run("")  # off by default (config.py)
    assert guarded["max_split_size"] == 256 * MiB and plain["max_split_size"] == -1
    assert guarded["reserved_bytes.all.peak"] == guarded["allocated_bytes.all.peak"]
    assert plain["reserved_bytes.all.peak"] > plain["allocated_bytes.all.peak"]
    assert guarded["num_device_free"] > plain["num_device_free"]  # the price: device calls
