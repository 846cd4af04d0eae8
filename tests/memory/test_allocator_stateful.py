"""Hypothesis state machine: >= 10,000 random allocator steps, invariants after each.

Steps: malloc (small, mid and large sizes, three streams), free, record_stream,
completing fake stream events, empty_cache. After every step the allocator's
structure and every stat are recounted (gpu_tensor.memory.verify); at the end
everything is freed and the raw source must hold nothing.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import HostRawSource
from gpu_tensor.memory.stream_ids import stream_key

from .fakes import FakeEvent, source_books

MiB = 1 << 20
STEPS_PER_RUN = 250
RUNS = 60  # runs end early at random, so ~12,000 steps; the test asserts >= 10,000
COUNTS = {"steps": 0, "ooms": 0, "events": 0}

ACCUMULATED = ("allocation", "allocated_bytes", "requested_bytes")
MONOTONE_IN_MALLOC = (
    "allocation",
    "allocated_bytes",
    "requested_bytes",
    "active",
    "active_bytes",
    "segment",
    "reserved_bytes",
)

sizes = st.one_of(
    st.integers(0, 4096),  # tiny: 512 B rounding
    st.integers(4096, MiB),  # small pool
    st.integers(MiB + 1, 10 * MiB),  # shares 20 MiB segments
    st.integers(10 * MiB, 48 * MiB),  # own segment, 2 MiB rounded
)
streams = st.sampled_from([0, 1, 2])  # 2: this thread's per-thread default stream


class AllocatorMachine(RuleBasedStateMachine):
    CONF = "max_split_size_mb:40,expandable_segments:False"
    CAPACITY = 160 * MiB  # small enough that OOM paths are exercised

    def __init__(self):
        super().__init__()
        self.events = []
        self.raw = HostRawSource(self.CAPACITY)
        conf = parse_alloc_conf(self.CONF)
        self.a = CachingAllocator(self.raw, 0, event_factory=self._event, config=conf)
        self.live = []
        # Accumulated totals counted here, independently of the allocator's counters:
        # stat -> [allocated, freed] ('all' row).
        self.totals = {name: [0, 0] for name in ACCUMULATED}
        self.highest: dict[str, int] = {}  # recounted current values, max over the steps

    def _event(self, stream):
        event = FakeEvent(stream)
        self.events.append(event)
        return event

    @rule(size=sizes, stream=streams)
    def malloc(self, size, stream):
        try:
            block = self.a.malloc(size, stream)
        except OutOfMemoryError as err:
            # Legitimate only if, after freeing all cache, the request really cannot fit.
            assert err.requested == size
            assert self.a.stats()["num_ooms"] >= 1
            COUNTS["ooms"] += 1
            return
        assert block.size >= size and block.stream == stream_key(stream) and block.allocated
        self.live.append(block)
        for name, amount in zip(ACCUMULATED, (1, block.size, size), strict=True):
            self.totals[name][0] += amount

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data):
        self._free(self.live.pop(data.draw(st.integers(0, len(self.live) - 1))))

    def _free(self, block):
        amounts = (1, block.size, block.requested_size)  # read before: free recycles the block
        self.a.free(block)
        for name, amount in zip(ACCUMULATED, amounts, strict=True):
            self.totals[name][1] += amount

    @precondition(lambda self: self.live)
    @rule(data=st.data(), stream=streams)
    def record_stream(self, data, stream):
        block = self.live[data.draw(st.integers(0, len(self.live) - 1))]
        self.a.record_stream(block, stream)

    @precondition(lambda self: any(not e.done for e in self.events))
    @rule(data=st.data())
    def complete_events(self, data):
        pending = [e for e in self.events if not e.done]
        for event in data.draw(st.lists(st.sampled_from(pending), max_size=4)):
            event.done = True

    @rule()
    def empty_cache(self):
        self.a.empty_cache()
        # Only segments holding live or pending blocks may remain.
        for segment in self.a.segments():
            assert any(b.allocated or b.event_count for b in segment.blocks())

    @invariant()
    def consistent(self):
        COUNTS["steps"] += 1
        verify.check(self.a)
        assert self.raw.outstanding() == source_books(self.a)
        stats = self.a.stats()
        for name, (allocated, freed) in self.totals.items():
            assert stats[f"{name}.all.allocated"] == allocated, name
            assert stats[f"{name}.all.freed"] == freed, name
        # These stats only rise inside malloc and only fall elsewhere (or before the rise),
        # so their peaks are exactly the highest recount seen after a step.
        for key, value in verify.recount(self.a).items():
            if key.split(".")[0] in MONOTONE_IN_MALLOC:
                self.highest[key] = max(self.highest.get(key, 0), value)
                assert stats[f"{key}.peak"] == self.highest[key], key

    def teardown(self):
        for block in self.live:
            self.a.free(block)
        self.live.clear()
        self.a.empty_cache()
        verify.check(self.a)
        stats = self.a.stats()
        assert stats["reserved_bytes.all.current"] == 0
        assert stats["active_bytes.all.current"] == 0
        assert self.raw.outstanding() == {}
        COUNTS["events"] += len(self.events)


SETTINGS = settings(
    max_examples=RUNS,
    stateful_step_count=STEPS_PER_RUN,
    deadline=None,
    derandomize=True,  # the same 11,000 steps every run: CI stays reproducible
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class ExpandableMachine(AllocatorMachine):
    CONF = "expandable_segments:True"

    @rule(size=st.integers(2 * MiB, 16 * MiB), stream=streams)
    def hole_then_bigger(self, size, stream):
        """A hole between live blocks, then a request bigger than any free block: the
        request restitches free pages (memory/expandable.py) when it does not OOM."""
        start = len(self.live)
        for _ in range(3):
            self.malloc(size, stream)
            self.consistent()  # one malloc per check: its peaks are the recounts seen
        if len(self.live) - start == 3:
            self._free(self.live.pop(start + 1))
            self.consistent()
        self.malloc(min(self.a.stats()["largest_free_block_bytes"] + 2 * MiB, 64 * MiB), stream)


def test_allocator_state_machine_10k_steps():
    COUNTS.update(steps=0, ooms=0, events=0)
    run_state_machine_as_test(AllocatorMachine, settings=SETTINGS)
    assert COUNTS["steps"] >= 10_000, COUNTS
    assert COUNTS["ooms"] > 0 and COUNTS["events"] > 0, COUNTS  # both hard paths were taken


def test_expandable_segments_state_machine():
    COUNTS.update(steps=0, ooms=0, events=0)
    run_state_machine_as_test(ExpandableMachine, settings=settings(SETTINGS, max_examples=25))
    assert COUNTS["steps"] >= 4_000 and COUNTS["ooms"] > 0, COUNTS
