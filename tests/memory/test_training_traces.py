"""The allocator's hot path against its plain path, on malloc/free traces of real training.

tests/memory/data/training_traces.json holds the allocator calls of profiling/bench_train.py's
models on emulated cuda (recorded 2026-12-04: two steps of the 17-layer MLP and of the
784-256-256-10 MLP, one of the CNN), a malloc as its byte count and a free as -(1 + the
index of the malloc it frees). Replayed through:
- the allocator as users run it (parked frees, one stats update per free), and
- a reference: every free done at once (its stats read after every call, which forces a
  parked free out), released and deactivated as two stats updates, as before
  `DeviceStats.block_freed` joined them, into a `DeviceStats` that stores `active` (the
  allocator's `BlockStats` derives it).
Every stat (peaks and accumulated totals included), the layout of every segment and every
address handed out must be equal after every call; the hot path must have been taken.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.stats import DeviceStats

from .test_reuse import Addresses, _layout, count_reuses

TRACES = json.loads((Path(__file__).parent / "data" / "training_traces.json").read_text())
CONFS = [
    "",  # emulated cuda's default: expandable segments over host pages
    "expandable_segments:False",
    "release_on_miss:False,adaptive_segments:False,peak_guard:False,expandable_segments:False",
]


class Reference(CachingAllocator):
    """The free path with released and deactivated as two stats updates (the old path),
    into the plain DeviceStats, which stores active rather than deriving it (BlockStats)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._stats = DeviceStats()

    def _free_block(self, block, requested=-1):
        if requested >= 0:
            self._stats.block_released(block.segment.is_small, block.size, requested)
        super()._free_block(block)


class Pages(Addresses):
    """Deterministic addresses that can restitch pages too (as HostRawSource can)."""

    def alias(self, dst, src, nbytes):
        pass


def _allocator(cls, conf):
    return cls(Pages(), 0, config=parse_alloc_conf(conf))


def _replay(a, ops, observe=None):
    """Run `ops` on `a`; `observe(a, i, block or None)` after call i. Returns the mallocs'
    addresses in order."""
    held, ptrs = {}, []
    for i, op in enumerate(ops):
        if op >= 0:
            block = held[len(ptrs)] = a.malloc(op)
            ptrs.append(block.ptr)
        else:
            block = None
            a.free(held.pop(-1 - op))
        if observe is not None:
            observe(a, i, block)
    for block in held.values():
        a.free(block)
    return ptrs


@pytest.mark.parametrize("conf", CONFS)
@pytest.mark.parametrize("model", sorted(TRACES))
def test_hot_path_equals_the_plain_path_after_every_call(model, conf):
    ops = TRACES[model]
    seen = []  # (stats, layout) of the reference after every call
    ref = _allocator(Reference, conf)
    ref_ptrs = _replay(ref, ops, lambda a, i, b: seen.append((a.stats(), _layout(a))))
    verify.check(ref)

    fast = _allocator(CachingAllocator, conf)
    hits = count_reuses(fast)
    assert _replay(fast, ops) == ref_ptrs  # the same address for every malloc
    assert hits[0] >= 10, hits  # parked frees were reused
    assert fast.stats() == ref.stats()
    verify.check(fast)

    # after every 8th call: a fresh allocator run up to there undisturbed (reading the
    # stats ends a parked free, so reading them as it goes would skip the hot path)
    for stop in range(4, len(ops), 8):
        a = _allocator(CachingAllocator, conf)
        held, n = {}, 0
        for op in ops[: stop + 1]:
            if op >= 0:
                held[n] = a.malloc(op)
                n += 1
            else:
                a.free(held.pop(-1 - op))
        stats, layout = seen[stop]
        assert a.stats() == stats, (model, stop)
        assert _layout(a) == layout, (model, stop)


class FreshBlocks(CachingAllocator):
    """Every split makes a new Block (as before absorbed blocks were kept as spares)."""

    @property
    def _spares(self):
        return []

    @_spares.setter
    def _spares(self, value):
        pass


@pytest.mark.parametrize("conf", CONFS[:2])
@pytest.mark.parametrize("model", sorted(TRACES))
def test_splits_reuse_absorbed_blocks_without_changing_anything(model, conf, monkeypatch):
    """A split takes a Block that a merge absorbed (CachingAllocator._spares) rather than a
    new one: the same addresses, stats, layout and live-block attributes as with a new
    Block every time, and far fewer Block objects made."""
    from gpu_tensor.memory import allocator as allocator_module
    from gpu_tensor.memory import segments as segments_module

    made = [0]
    real = allocator_module.Block

    def counted(*args):
        made[0] += 1
        return real(*args)

    # splits make Blocks in allocator.py, new segments in segments.py
    monkeypatch.setattr(allocator_module, "Block", counted)
    monkeypatch.setattr(segments_module, "Block", counted)
    ops = TRACES[model]
    seen = []

    def observe(a, i, block):
        if i % 7 == 0 or block is not None and i % 3 == 0:
            held = sorted(
                (b.ptr, b.size, b.requested_size, b.tag, b.frames, b.stream_uses)
                for b in a.allocated_blocks()
            )
            seen.append((held, a.stats(), _layout(a)))

    ref = _allocator(FreshBlocks, conf)
    ref_ptrs = _replay(ref, ops, observe)
    ref_seen, seen[:] = seen[:], []
    ref_made, made[0] = made[0], 0
    fast = _allocator(CachingAllocator, conf)
    assert _replay(fast, ops, observe) == ref_ptrs
    assert seen == ref_seen
    verify.check(fast)
    assert 2 * made[0] < ref_made, (made[0], ref_made)  # most splits took spare blocks


def test_spare_blocks_are_cut_back_when_a_block_is_made_otherwise():
    """Merges of blocks that no split made (new segments, expandable growth) could feed the
    spares without a split to take them: a new segment or growth cuts them back to a few."""
    from gpu_tensor.memory import segments as segments_module
    from gpu_tensor.memory.block import Block

    a = _allocator(CachingAllocator, "")
    a.malloc(1024)
    a._spares.extend(Block(0, 512, 0, None) for _ in range(1000))
    before = len(a._spares)
    a.malloc(64 << 20)  # no free block fits: the segment grows
    assert before == 1000 and len(a._spares) <= segments_module._SPARES_KEPT
    verify.check(a)
