"""gpu_tensor/memory/stats.py: DeviceStats against a plain model of torch's update_stat.

The record stores some values and derives others (the 'all' row's current/allocated, every
freed) and has written-out fast paths for the allocator; a random sequence of every kind of
update must give exactly the dict the naive rule gives.
"""

from __future__ import annotations

import random

import pytest

from gpu_tensor.memory.block_stats import BlockStats
from gpu_tensor.memory.stats import ARRAY_STATS, METRICS, POOLS, SLOT, DeviceStats


class NaiveStats:
    """torch's rule, one counter per key: current += amount; peak = max(peak, current);
    allocated += amount if amount > 0 else freed -= amount."""

    def __init__(self):
        self.v = {}
        for name in ARRAY_STATS:
            for pool in POOLS:
                for metric in METRICS:
                    self.v[f"{name}.{pool}.{metric}"] = 0
        for name in ("oversize_allocations", "oversize_segments"):
            for metric in METRICS:
                self.v[f"{name}.{metric}"] = 0

    def _one(self, key: str, amount: int) -> None:
        v = self.v
        v[f"{key}.current"] += amount
        v[f"{key}.peak"] = max(v[f"{key}.peak"], v[f"{key}.current"])
        if amount > 0:
            v[f"{key}.allocated"] += amount
        else:
            v[f"{key}.freed"] -= amount

    def change(self, name: str, small: bool, amount: int) -> None:
        if amount:  # torch skips zero changes (a zero never moves any metric)
            self._one(f"{name}.all", amount)
            self._one(f"{name}.{'small_pool' if small else 'large_pool'}", amount)

    def reset_peak(self) -> None:
        for key in self.v:
            if key.endswith(".peak"):
                self.v[key] = self.v[key[: -len("peak")] + "current"]

    def reset_accumulated(self) -> None:
        for key in self.v:
            if key.endswith((".allocated", ".freed")):
                self.v[key] = 0


def _step(rng: random.Random, real: DeviceStats, model: NaiveStats) -> None:
    small = rng.random() < 0.5
    size = rng.choice([512, 4096, 1 << 20, 3 << 21])
    req = rng.randint(0, size)
    kind = rng.randrange(10)
    if kind == 0:
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        real.block_allocated(small, size, req, blocks, nbytes)
        model.change("inactive_split", small, blocks)
        model.change("inactive_split_bytes", small, nbytes)
        for name, amount in (
            ("allocation", 1),
            ("active", 1),
            ("allocated_bytes", size),
            ("active_bytes", size),
            ("requested_bytes", req),
        ):
            model.change(name, small, amount)
    elif kind == 1:
        real.block_released(small, size, req)
        for name, amount in (
            ("allocation", -1),
            ("allocated_bytes", -size),
            ("requested_bytes", -req),
        ):
            model.change(name, small, amount)
    elif kind == 2:
        real.block_deactivated(small, size)
        model.change("active", small, -1)
        model.change("active_bytes", small, -size)
    elif kind == 3:
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        real.split_changed(small, blocks, nbytes)
        model.change("inactive_split", small, blocks)
        model.change("inactive_split_bytes", small, nbytes)
    elif kind in (4, 5):
        changes = [
            (rng.choice(ARRAY_STATS), rng.choice([-size, -1, 0, 1, size]))
            for _ in range(rng.randint(1, 4))
        ]
        if kind == 4:
            real.apply(small, *((SLOT[name], amount) for name, amount in changes))
        else:
            for name, amount in changes:
                real.update(name, small, amount)
        for name, amount in changes:
            model.change(name, small, amount)
    elif kind == 6:
        name = rng.choice(["oversize_allocations", "oversize_segments"])
        amount = rng.choice([-1, 1])
        real.update_single(name, amount)
        model._one(name, amount)
    elif kind == 9:  # a free straight back to the pool: released and deactivated at once
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        real.block_freed(small, size, req, blocks, nbytes)
        for name, amount in (
            ("allocation", -1),
            ("allocated_bytes", -size),
            ("requested_bytes", -req),
            ("active", -1),
            ("active_bytes", -size),
            ("inactive_split", blocks),
            ("inactive_split_bytes", nbytes),
        ):
            model.change(name, small, amount)
    elif kind == 7 and rng.random() < 0.1:
        real.reset_peak()
        model.reset_peak()
    elif kind == 8 and rng.random() < 0.1:
        real.reset_accumulated()
        model.reset_accumulated()


@pytest.mark.parametrize("seed", range(5))
def test_device_stats_equal_the_naive_rule(seed):
    rng = random.Random(seed)
    real, model = DeviceStats(), NaiveStats()
    for _ in range(2000):
        _step(rng, real, model)
        got = real.as_dict(-1)
        assert got.pop("max_split_size") == -1
        for key in real.scalars:
            assert got.pop(key) == 0
        assert got == model.v
    for name in ARRAY_STATS:
        for pool in POOLS:
            assert real.current(name, pool) == model.v[f"{name}.{pool}.current"]


def test_flat_views_follow_the_slot_layout():
    stats = DeviceStats()
    stats.block_allocated(True, 4096, 100)
    stats.block_allocated(False, 2 << 20, 2 << 20)
    stats.block_released(True, 4096, 100)
    slot = SLOT["allocated_bytes"]
    assert stats.cur[slot : slot + 3] == [2 << 20, 2 << 20, 0]
    assert stats.peak[slot : slot + 3] == [(2 << 20) + 4096, 2 << 20, 4096]
    assert stats.allocated[slot : slot + 3] == [(2 << 20) + 4096, 2 << 20, 4096]
    assert stats.freed[slot : slot + 3] == [4096, 0, 4096]


def _lifecycle_step(rng: random.Random, stats: list, live: list, waiting: list) -> None:
    """One valid allocator event on every record of `stats`: a malloc, a free straight back
    to the pool, a free that waits on events, the end of a wait, a reuse, a split change,
    a segment change or a reset."""
    kind = rng.randrange(12)
    if kind < 4 or not live and kind < 8:
        small = rng.random() < 0.5
        size = rng.choice([512, 4096, 1 << 20, 3 << 21])
        req = rng.randint(0, size)
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        live.append((small, size, req))
        for s in stats:
            s.block_allocated(small, size, req, blocks, nbytes)
    elif kind < 6:
        small, size, req = live.pop(rng.randrange(len(live)))
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        for s in stats:
            s.block_freed(small, size, req, blocks, nbytes)
    elif kind == 6:
        small, size, req = live.pop(rng.randrange(len(live)))
        waiting.append((small, size))
        for s in stats:
            s.block_released(small, size, req)
    elif kind == 7:
        small, size, req = live.pop(rng.randrange(len(live)))
        new = rng.randint(0, size)
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        live.append((small, size, new))
        oversize = rng.random() < 0.3
        for s in stats:
            s.block_reused(small, size, req, new, blocks, nbytes, oversize)
    elif kind == 8 and waiting:
        small, size = waiting.pop(rng.randrange(len(waiting)))
        blocks, nbytes = rng.choice([-1, 0, 1]), rng.choice([-size, 0, size])
        for s in stats:
            s.block_deactivated(small, size, blocks, nbytes)
    elif kind == 9:
        small = rng.random() < 0.5
        name, amount = rng.choice([("segment", 1), ("reserved_bytes", 1 << 21)])
        amount *= rng.choice([-1, 1])
        blocks = rng.choice([-1, 1])
        for s in stats:
            s.update(name, small, amount)
            s.split_changed(small, blocks, 512 * blocks)
    elif kind == 10 and rng.random() < 0.1:
        for s in stats:
            s.reset_peak()
    elif kind == 11 and rng.random() < 0.1:
        for s in stats:
            s.reset_accumulated()


@pytest.mark.parametrize("seed", range(3))
def test_block_stats_equal_device_stats_on_block_lifecycles(seed):
    """BlockStats derives active from allocation: on any valid sequence of the allocator's
    updates (frees that wait on events included) every stat, peaks and accumulated totals
    too, is DeviceStats's, and so the naive rule's."""
    rng = random.Random(seed)
    plain, tied = DeviceStats(), BlockStats()
    live, waiting = [], []
    waited = 0
    for _ in range(1200):
        _lifecycle_step(rng, [plain, tied], live, waiting)
        waited += bool(waiting)
        assert tied.as_dict(-1) == plain.as_dict(-1)
        for name in ("active", "active_bytes", "allocation"):
            for pool in POOLS:
                assert tied.current(name, pool) == plain.current(name, pool)
    assert waited > 200  # the derived peak of active was exercised while blocks waited


def test_block_stats_refuse_direct_updates_of_the_tied_stats():
    stats = BlockStats()
    stats.update("segment", True, 1)
    for name in ("allocation", "active", "allocated_bytes", "active_bytes"):
        with pytest.raises(AssertionError):
            stats.update(name, True, 1)
