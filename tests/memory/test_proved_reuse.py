"""malloc's first test (reuse.py: a parked block whose proof holds goes back to the request
it last served, and the reuse is only counted) against the same allocator with every free
done at once, on random programs built around loops that free a block and ask for it again.

Between the loops come what ends a proof or moves what the counted reuses wait to change:
mallocs and frees in either pool, near-misses (the same rounded size, other bytes),
record_stream and completed events, peak and accumulated resets, history turned on and
off directly (as registry.set_history does), empty_cache, stats reads, and a memory cap
under which the gc ages of free blocks decide what is released. Every stats read, every
address, the final layout with the gc age of every free block and the history's records
must be equal; the first test must have taken the block back many times.
"""

from __future__ import annotations

import random

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.stats import DeviceStats

from .fakes import FakeEvent
from .test_reuse import Addresses, _layout

MiB = 1 << 20


class Log:
    """The HistoryRecorder calls the allocator makes, kept as (action, ptr, size)."""

    def __init__(self):
        self.actions = []

    def record(self, action, ptr, size, *args, **kwargs):
        self.actions.append((action, ptr, size))

    def frames_for(self, what):
        return None


def _program(seed, steps=700):
    rng = random.Random(seed)
    sizes = [
        rng.choice([100, 512, 1000, 4096, 70_000, MiB, 3 * MiB + 5, 12 * MiB]) for _ in range(5)
    ]
    ops = []
    for _ in range(steps):
        r = rng.random()
        if r < 0.3:
            ops.append(("malloc", rng.choice(sizes) + rng.choice([0, 0, 1]), rng.choice([0, 0, 1])))
        elif r < 0.42:
            ops.append(("free", rng.random()))
        elif r < 0.72:  # a loop: the same request again and again
            ops.append(("loop", rng.random(), rng.randint(1, 6)))
        elif r < 0.77:  # the same rounded size, other bytes
            ops.append(("near", rng.random(), rng.choice([-1, 1])))
        else:
            ops.append((rng.choice(
                ["record", "events", "reset_peak", "reset_acc", "history", "read", "empty"]
            ), rng.random()))  # fmt: skip
    return ops


def _run(ops, conf, eager, free=None):
    """Replay `ops`; returns (allocator, what every read saw, addresses, history records,
    reuses taken by the first test). `free(allocator, block)`: how blocks are freed (by
    default `allocator.free(block)`)."""
    events = []

    def factory(stream):
        events.append(FakeEvent(stream))
        return events[-1]

    a = CachingAllocator(Addresses(), 0, event_factory=factory, config=parse_alloc_conf(conf))
    if "garbage_collection_threshold" in conf:
        a.set_memory_fraction(0.003)  # ~200 MiB of the fake 64 GiB: the gc runs
    live, reads, ptrs, logs, first = [], [], [], [], [0]
    release = a.free if free is None else lambda block: free(a, block)

    def malloc(nbytes, stream):
        before = a._reuses
        try:
            block = a.malloc(nbytes, stream)
        except OutOfMemoryError:
            ptrs.append(None)
            return
        first[0] += a._reuses == before + 1
        ptrs.append(block.ptr)
        live.append(block)

    def step(op):
        kind = op[0]
        if kind == "malloc":
            malloc(op[1], op[2])
        elif kind in ("free", "loop", "near") and live:
            block = live.pop(int(op[1] * len(live)))
            nbytes, stream = block.requested_size, block.stream
            release(block)
            assert a.lookup(block.ptr) is None  # parked or freed: not found
            if kind == "near":
                nbytes = max(nbytes + op[2], 0)
            if kind != "free":
                malloc(nbytes, stream)
            if kind == "loop":
                for _ in range(op[2] - 1):
                    if eager:
                        a.stats()
                    block = live.pop()
                    release(block)
                    assert a.lookup(block.ptr) is None
                    if eager:
                        a.stats()
                    malloc(nbytes, stream)
        elif kind == "record" and live:
            a.record_stream(live[int(op[1] * len(live))], 1)
        elif kind == "events":
            for event in events:
                event.done = True
        elif kind == "reset_peak":
            a.reset_peak_stats()
        elif kind == "reset_acc":
            a.reset_accumulated_stats()
        elif kind == "history":  # turned on or off directly, as registry.set_history does
            if a.history is None:
                a.history = Log()
                logs.append(a.history)
            else:
                a.history = None
        elif kind == "read":  # the stats, and the allocated blocks in their order
            reads.append(a.stats())
            reads.append([b.ptr for b in a.allocated_blocks()])
        elif kind == "empty":
            a.empty_cache()

    for op in ops:
        step(op)
        if eager:
            a.stats()  # every parked free is done now
    return a, reads, ptrs, [log.actions for log in logs], first[0]


@pytest.mark.parametrize(
    "conf",
    [
        "",
        "expandable_segments:True",
        "max_split_size_mb:20,roundup_power2_divisions:4",
        "garbage_collection_threshold:0.5,release_on_miss:False,expandable_segments:False",
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_first_test_changes_nothing_observable(conf, seed):
    ops = _program(seed)
    fast, reads, ptrs, logs, first = _run(ops, conf, eager=False)
    slow, slow_reads, slow_ptrs, slow_logs, slow_first = _run(ops, conf, eager=True)
    assert slow_first == 0
    assert first > 100, first  # the first test really took blocks back
    assert ptrs == slow_ptrs
    assert reads == slow_reads
    assert logs == slow_logs
    assert fast.stats() == slow.stats()
    assert _layout(fast) == _layout(slow)
    assert fast.allocated_blocks() != [] and (
        [b.ptr for b in fast.allocated_blocks()] == [b.ptr for b in slow.allocated_blocks()]
    )
    verify.check(fast, accumulated=False)  # (reset_accumulated_stats ran)


@pytest.mark.parametrize("oversize", [False, True])
@pytest.mark.parametrize("split", [(0, 0), (1, 4096), (-1, -4096), (0, 512), (0, -512)])
def test_settled_reuses_equal_the_reuses_one_by_one(split, oversize):
    """DeviceStats.reuses_settled(n) adds what n calls of the reuse's counter with unchanged
    requested bytes do once its first call has tested the peaks."""
    one_by_one, settled = DeviceStats(), DeviceStats()
    for stats in (one_by_one, settled):
        stats.block_allocated(True, 8192, 8000, 1, 4096)
        stats.block_allocated(False, 3 << 20, 3 << 20)
        stats.block_reused(True, 8192, 8000, 8000, *split, oversize)  # the proof's reuse
    for _ in range(7):
        one_by_one.block_reused(True, 8192, 8000, 8000, *split, oversize)
    settled.reuses_settled(True, 8192, 8000, *split, oversize, 7)
    assert settled.as_dict(0) == one_by_one.as_dict(0)


def _twice(script, conf="expandable_segments:False"):
    """Run `script(a, done)` on an allocator as users run it and on one whose parked free
    is done after every call (`done` reads its stats): (stats, layout, what script returned)
    of both, and the reuses the first allocator's first test took."""
    out = []
    for eager in (False, True):
        events = []

        def factory(stream, events=events):
            events.append(FakeEvent(stream))
            return events[-1]

        a = CachingAllocator(Addresses(), 0, event_factory=factory, config=parse_alloc_conf(conf))
        a.events = events
        first = [0]
        malloc = a.malloc

        def counted(nbytes, stream=0, a=a, malloc=malloc, first=first):
            before = a._reuses
            block = malloc(nbytes, stream)
            first[0] += a._reuses == before + 1
            return block

        a.malloc = counted
        seen = script(a, a.stats if eager else lambda: None)
        out.append((a.stats(), _layout(a), seen, first[0]))
    (fast, *_, hits), (slow, *_, slow_hits) = out
    assert slow_hits == 0
    return out[0][:3], out[1][:3], hits


def _proved(a, done, nbytes=1000):
    """A block of `nbytes` proved and reused (reuse.py), with an allocated neighbour before
    it and the rest of its segment free after it."""
    a.malloc(nbytes)
    done()
    block = a.malloc(nbytes)
    done()
    a.free(block)
    done()
    block = a.malloc(nbytes)
    done()
    return block


def _again(a, done, block):
    a.free(block)
    done()
    block = a.malloc(block.requested_size)
    done()
    return block


@pytest.mark.parametrize("where", ["new segment", "split in place"])
def test_a_change_of_the_other_pool_ends_the_proof(where):
    """inactive_split grows in the large pool (a split of a new segment, or of a pooled block
    in place) while a small block's proof would still hold for its own pool: its next reuse
    must test the 'all' row's peak again (the excursion of its free reaches higher)."""

    def script(a, done):
        block = _proved(a, done)
        big = a.malloc(9 * MiB)  # a new 20 MiB segment, split: a free rest of 11 MiB
        done()
        if where == "split in place":
            a.free(big)  # the segment is whole again
            done()
            block = _again(a, done, block)  # (the free of `big` ended the proof: a new one)
            a.malloc(5 * MiB)  # split from the pooled segment in place
            done()
        for _ in range(3):
            block = _again(a, done, block)
        return block.ptr

    fast, slow, hits = _twice(script)
    assert fast == slow
    assert hits == 2
    assert fast[0]["inactive_split_bytes.all.peak"] > fast[0]["inactive_split_bytes.all.current"]


def test_a_peak_reset_ends_the_proof():
    """After reset_peak_stats the next reuse's excursion sets the inactive_split peaks anew."""

    def script(a, done):
        block = _proved(a, done)
        block = _again(a, done, block)
        a.reset_peak_stats()
        block = _again(a, done, block)
        return block.ptr

    fast, slow, hits = _twice(script)
    assert fast == slow
    assert hits == 1
    assert fast[0]["inactive_split_bytes.small_pool.peak"] > 0


def test_recorded_events_end_the_proof():
    """A block waiting on a stream event goes back to its pool in the next malloc, before its
    search: here it is the better fit, so the proved block must not be taken back."""

    def script(a, done):
        waiting = a.malloc(1000)  # lowest address: the best fit once free
        done()
        block = _proved(a, done)
        a.record_stream(waiting, 1)
        done()
        a.free(waiting)  # its event is recorded; the pools do not change
        done()
        for event in a.events:
            event.done = True
        a.free(block)
        done()
        return [a.malloc(1000).ptr, waiting.ptr]

    fast, slow, hits = _twice(script)
    assert fast == slow
    assert fast[2][0] == fast[2][1]  # the block whose event completed
    assert hits == 0


def test_history_turned_on_between_the_free_and_the_malloc_records_the_malloc():
    def script(a, done):
        block = _proved(a, done)
        a.free(block)
        done()
        a.history = Log()  # directly, as registry.set_history does
        a.malloc(1000)
        done()
        return a.history.actions

    fast, slow, hits = _twice(script)
    assert fast == slow
    assert [action for action, *_ in fast[2]] == ["alloc"]


def test_a_capture_on_the_blocks_stream_ends_the_proof():
    """A malloc on a capturing stream comes from the graph's pool, proved block or not."""

    def script(a, done):
        block = _proved(a, done)
        a.begin_allocate_to_pool((0, 1), 0)
        done()
        a.free(block)  # parked: not a graph's block
        done()
        inside = a.malloc(1000)
        done()
        a.free(inside)
        done()
        a.end_allocate_to_pool((0, 1))
        done()
        return [inside.ptr != block.ptr, inside.segment.graph_pool is not None]

    fast, slow, hits = _twice(script)
    assert fast == slow
    assert fast[2] == [True, True]


def test_a_free_of_another_allocators_block_at_the_same_address_keeps_ours():
    """A refused block of another allocator at the same address leaves ours allocated and
    findable."""
    ours, theirs = (CachingAllocator(Addresses(), 0, config=parse_alloc_conf("")) for _ in "ab")
    mine, foreign = ours.malloc(1000), theirs.malloc(1000)
    assert mine.ptr == foreign.ptr
    with pytest.raises(ValueError, match="not allocated by this allocator"):
        ours.free(foreign)
    assert ours.lookup(mine.ptr) is mine and ours.allocated_blocks() == [mine]
    ours.free(mine)
    assert ours.stats()["allocation.all.current"] == 0
    verify.check(ours)


def test_a_parked_block_stays_listed_unfound_and_its_reuses_keep_the_malloc_order():
    """The parked block stays in `_allocated` (its free is not done yet), so the first test
    does not list it again: lookup must not find it, and once settled the reused block
    stands last in allocated_blocks(), where the mallocs it stands for put it."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(""))
    first, second = a.malloc(1000), a.malloc(1000)
    a.free(first)
    assert a.lookup(first.ptr) is None
    assert a.malloc(1000) is first  # the proof is made (_reuse_parked)
    assert [b.ptr for b in a.allocated_blocks()] == [second.ptr, first.ptr]
    for _ in range(3):
        a.free(second)
        assert a.lookup(second.ptr) is None
        assert a.malloc(1000) is second  # the first test, from the second round on
    assert a._reuses == 2
    assert a.lookup(second.ptr) is second
    assert a.allocated_blocks() == [first, second]  # settled: `second` last
    verify.check(a)


def test_a_second_free_of_the_parked_block_inside_an_operation_raises():
    """A finaliser's free inside another operation of this thread (`_busy`) is queued; the
    parked block is listed in `_allocated`, so its second free is refused there too."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(""))
    block, other = a.malloc(1000), a.malloc(5000)
    a.free(block)
    a._busy = True  # as inside another operation of this thread
    try:
        with pytest.raises(ValueError, match="double free"):
            a.free(block)
        a.free(other)  # queued, and no longer listed
        assert a._deferred == [other] and a.lookup(other.ptr) is None
    finally:
        a._end_operation()
    assert a.stats()["allocation.all.current"] == 0
    verify.check(a)


def test_a_queued_free_of_a_reused_block_before_its_reuses_are_settled():
    """settle lists the reused block last again only while it is listed: a finaliser's free
    queued before the settle has taken it out."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(""))
    block = a.malloc(1000)
    a.malloc(1000)
    for _ in range(3):
        a.free(block)
        assert a.malloc(1000) is block
    assert a._reuses == 2  # (the first round made the proof)
    a._busy = True  # as inside another operation of this thread
    try:
        a.free(block)
    finally:
        a._end_operation()  # settles the reuse, then does the queued free
    assert a._reuses == 0 and a.lookup(block.ptr) is None
    assert a.stats()["allocation.all.current"] == 1
    verify.check(a)


def test_reuses_after_a_malloc_that_changed_no_pool_are_listed_after_it():
    """A malloc that takes a new segment whole changes no pool, so the proof holds across
    it; the reuses that follow it were mallocs after it, and settle lists them so."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf("expandable_segments:False"))
    block = a.malloc(1000)
    a.malloc(1000)
    a.free(block)
    assert a.malloc(1000) is block  # the proof is made
    whole = a.malloc(20 * MiB)  # a segment of its own, taken whole
    assert whole.prev is whole.next is None and a._proved is block
    a.free(block)
    assert a.malloc(1000) is block and a._reuses == 1  # the first test
    assert [b.ptr for b in a.allocated_blocks()][-2:] == [whole.ptr, block.ptr]
    verify.check(a)
