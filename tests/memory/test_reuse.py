"""Parked frees (memory/reuse.py) against the same allocator with every free done at once.

Two allocators replay the same random program: one as users run it, one whose parked
free is forced out after every step (reading its stats does that). The stats must be
equal (peaks and accumulated totals included), and so must the layout of every
segment and the gc age of every free block; the fast path must have been taken.
"""

from __future__ import annotations

import random

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf

from .fakes import FakeEvent

MiB = 1 << 20


class Addresses:
    """Deterministic raw source: both allocators see the same pointers."""

    def __init__(self):
        self.next, self.live = 1 << 32, {}

    def alloc(self, n):
        ptr, self.next = self.next, self.next + n + (1 << 21)
        self.live[ptr] = n
        return ptr

    def free(self, ptr):
        del self.live[ptr]

    def mem_get_info(self):
        return 64 << 30, 64 << 30

    def reserve(self, n):
        return self.alloc(n)

    def map(self, ptr, n, handle_size=None):
        pass

    def unmap(self, ptr, n):
        pass

    def unreserve(self, ptr):
        self.free(ptr)


def _layout(a):
    out = []
    for segment in a.segments():
        blocks = [
            (
                b.ptr - segment.ptr,
                b.size,
                b.allocated,
                b.event_count,
                None if b.allocated else b.gc_count_base,
            )
            for b in segment.blocks()
        ]
        out.append((segment.ptr, segment.size, segment.stream, blocks))
    return out


def _program(seed, steps=1500):
    """Ops in the shapes real programs have: a few sizes that recur, loops that free and
    reallocate, some record_stream, events completing, now and then an empty_cache."""
    rng = random.Random(seed)
    sizes = [
        rng.choice([0, 100, 512, 4096, 70_000, MiB, 3 * MiB + 5, 12 * MiB, 25 * MiB])
        for _ in range(6)
    ]
    ops = []
    for _ in range(steps):
        r = rng.random()
        if r < 0.45:
            ops.append(
                (
                    "malloc",
                    rng.choice(sizes) + rng.choice([0, 0, 0, 1, 700]),
                    rng.choice([0, 0, 0, 1]),
                )
            )
        elif r < 0.7:
            ops.append(("free", rng.random()))
        elif r < 0.88:  # a loop iteration: free one, ask for about the same again
            ops.append(("cycle", rng.random(), rng.choice([0, 0, 1, 600])))
        elif r < 0.93:
            ops.append(("record", rng.random()))
        elif r < 0.97:
            ops.append(("events",))
        elif r < 0.99:
            ops.append(("reset_peak",))
        else:
            ops.append(("empty",))
    return ops


def count_reuses(a) -> list[int]:
    """[n]: how many mallocs of `a` took a parked block from now on (n counts up)."""
    hits = [0]
    malloc = a.malloc

    def counted(*args):
        parked = a._parked
        block = malloc(*args)
        hits[0] += block is parked
        return block

    a.malloc = counted
    return hits


def _run(ops, conf, eager):
    events = []

    def factory(stream):
        events.append(FakeEvent(stream))
        return events[-1]

    a = CachingAllocator(Addresses(), 0, event_factory=factory, config=parse_alloc_conf(conf))
    hits = count_reuses(a)
    live = []
    for op in ops:
        if op[0] == "malloc":
            live.append(a.malloc(op[1], op[2]))
        elif op[0] == "free" and live:
            a.free(live.pop(int(op[1] * len(live))))
        elif op[0] == "cycle" and live:
            block = live.pop(int(op[1] * len(live)))
            nbytes, stream = block.requested_size + op[2], block.stream
            a.free(block)
            if eager:
                a.stats()
            live.append(a.malloc(nbytes, stream))
        elif op[0] == "record" and live:
            a.record_stream(live[int(op[1] * len(live))], 1)
        elif op[0] == "events":
            for event in events:
                event.done = True
        elif op[0] == "reset_peak":
            a.reset_peak_stats()
        elif op[0] == "empty":
            a.empty_cache()
        if eager:
            a.stats()  # any operation first does a parked free for real
    return a, hits[0]


@pytest.mark.parametrize(
    "conf",
    [
        "",
        "max_split_size_mb:20",
        "expandable_segments:True",
        "roundup_power2_divisions:4,release_on_miss:False",
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parked_frees_change_nothing_observable(conf, seed):
    ops = _program(seed)
    fast, hits = _run(ops, conf, eager=False)
    slow, slow_hits = _run(ops, conf, eager=True)
    assert slow_hits == 0
    assert hits > 50, hits  # the fast path really ran
    assert fast.stats() == slow.stats()
    assert _layout(fast) == _layout(slow)
    verify.check(fast)


def test_double_free_of_a_parked_block_raises():
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(""))
    block = a.malloc(1000)
    a.free(block)
    with pytest.raises(ValueError, match="double free"):
        a.free(block)
    assert a.malloc(1000) is block  # the parked free is cancelled by the same request
    assert a.lookup(block.ptr) is block


def test_warm_pair_reuses_the_block_and_counts_it():
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(""))
    first = a.malloc(4096)
    a.free(first)
    for _ in range(10):
        block = a.malloc(4000)
        assert block is first and block.requested_size == 4000
        a.free(block)
    s = a.stats()
    assert s["allocation.all.allocated"] == 11 and s["allocation.all.freed"] == 11
    assert s["requested_bytes.all.allocated"] == 4096 + 10 * 4000
    assert s["allocated_bytes.all.current"] == 0 and s["num_device_alloc"] == 1


def test_a_proof_is_dropped_when_an_expandable_segment_grows_past_the_block():
    # The block is the whole segment when first proved; growing the segment gives it a
    # neighbour without touching the pool, and its free then makes a split free block.
    ops = [("malloc", 8 * MiB, 0), ("cycle", 0.0, 0), ("malloc", 8 * MiB, 0), ("cycle", 0.0, 0)]
    fast, hits = _run(ops, "expandable_segments:True", eager=False)
    slow, _ = _run(ops, "expandable_segments:True", eager=True)
    assert hits == 2
    assert fast.stats() == slow.stats()
    assert fast.stats()["inactive_split.all.allocated"] == 2


def test_a_free_parked_before_history_was_turned_on_is_not_recorded():
    class Log:  # the HistoryRecorder calls the allocator makes
        def __init__(self):
            self.actions = []

        def record(self, action, *args, **kwargs):
            self.actions.append(action)

        def frames_for(self, what):
            return None

    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(""))
    keep, block = a.malloc(1000), a.malloc(1000)
    a.free(block)  # parked: done at the next operation
    a.history = Log()  # turned on directly, as registry.set_history and the memory tap do
    a.stats()
    assert a.history.actions == []  # the free came before the recording
    a.free(a.malloc(1000))
    assert a.history.actions == ["alloc", "free_requested", "free_completed"]
    assert keep.allocated
    verify.check(a)
