"""`DeviceStats`: the allocator's one stats record, in torch.cuda's vocabulary.

`as_dict()` flattens it exactly like `torch.cuda.memory_stats()`:
`<stat>.<all|large_pool|small_pool>.<current|peak|allocated|freed>` for the
array stats, `oversize_*.<metric>` and a few scalars. Every view (getters,
`memory_summary`, snapshots, the CLI) renders from that dict.
"""

from __future__ import annotations

__all__ = ["ARRAY_STATS", "POOLS", "METRICS", "SCALARS", "SLOT", "DeviceStats", "empty_stats"]

# Order matters only for readability; `as_dict` sorts keys like torch does.
ARRAY_STATS = (
    "allocation",  # blocks handed to callers (torch's key; its docstring says "allocated")
    "segment",  # raw allocations held
    "active",  # allocated + freed-but-waiting-on-stream-events blocks
    "inactive_split",  # free blocks inside split segments: empty_cache cannot release them
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",  # unrounded sizes; allocated - requested = rounding waste
)
POOLS = ("all", "large_pool", "small_pool")
METRICS = ("current", "peak", "allocated", "freed")
SINGLE_STATS = ("oversize_allocations", "oversize_segments")
SCALARS = (
    "num_alloc_retries",  # full flush-and-retry rounds
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",  # raw allocations (cudaMalloc)
    "num_device_free",  # raw frees (cudaFree)
)


# Slot of stat `name` in the 'all' row; +1 is its large_pool row, +2 its small_pool row.
SLOT = {name: 3 * i for i, name in enumerate(ARRAY_STATS)}
_SINGLE_SLOT = {name: 3 * len(ARRAY_STATS) + i for i, name in enumerate(SINGLE_STATS)}
_NSLOTS = 3 * len(ARRAY_STATS) + len(SINGLE_STATS)


class DeviceStats:
    """Counters the allocator updates in place (always under its lock).

    Four flat lists (current, peak, allocated, freed) indexed by slot: the allocator
    changes five stats per malloc, and this layout keeps that to one call."""

    def __init__(self):
        self.cur = [0] * _NSLOTS
        self.peak = [0] * _NSLOTS
        self.allocated = [0] * _NSLOTS
        self.freed = [0] * _NSLOTS
        self.scalars = dict.fromkeys(SCALARS, 0)

    def apply(self, is_small: bool, *changes: tuple[int, int]) -> None:
        """Apply (slot, amount) changes to the 'all' row and the block's pool row, with
        torch's update_stat rule: peak follows current; allocated/freed sum |amount|."""
        offset = 2 if is_small else 1
        cur, peak, allocated, freed = self.cur, self.peak, self.allocated, self.freed
        for slot, amount in changes:  # unrolled over the two rows: this is the hot path
            pool_slot = slot + offset
            if amount > 0:
                allocated[slot] += amount
                allocated[pool_slot] += amount
                value = cur[slot] = cur[slot] + amount
                if value > peak[slot]:
                    peak[slot] = value
                value = cur[pool_slot] = cur[pool_slot] + amount
                if value > peak[pool_slot]:
                    peak[pool_slot] = value
            elif amount:
                cur[slot] += amount
                cur[pool_slot] += amount
                freed[slot] -= amount
                freed[pool_slot] -= amount

    def update(self, name: str, is_small: bool, amount: int) -> None:
        """Change stat `name` by `amount` in the 'all' row and the block's pool row."""
        self.apply(is_small, (SLOT[name], amount))

    def update_single(self, name: str, amount: int) -> None:
        i = _SINGLE_SLOT[name]
        self.cur[i] += amount
        if amount > 0:
            self.allocated[i] += amount
            self.peak[i] = max(self.peak[i], self.cur[i])
        else:
            self.freed[i] -= amount

    def current(self, name: str, pool: str = "all") -> int:
        return self.cur[SLOT[name] + POOLS.index(pool)]

    def reset_peak(self) -> None:
        self.peak[:] = self.cur

    def reset_accumulated(self) -> None:
        self.allocated[:] = [0] * _NSLOTS
        self.freed[:] = [0] * _NSLOTS
        for key in self.scalars:
            self.scalars[key] = 0

    def as_dict(self, max_split_size: int) -> dict:
        columns = {"current": self.cur, "peak": self.peak, "allocated": self.allocated,
                   "freed": self.freed}
        out = {}
        for name, slot in SLOT.items():
            for p, pool in enumerate(POOLS):
                for metric in METRICS:
                    out[f"{name}.{pool}.{metric}"] = columns[metric][slot + p]
        for name, slot in _SINGLE_SLOT.items():
            for metric in METRICS:
                out[f"{name}.{metric}"] = columns[metric][slot]
        out.update(self.scalars)
        out["max_split_size"] = max_split_size
        return dict(sorted(out.items()))


def empty_stats(max_split_size: int = -1) -> dict:
    """All-zero stats, for a device whose allocator does not exist yet (reading stats must
    never initialise CUDA). torch reports max_split_size as -1 (SIZE_MAX) when unset."""
    return DeviceStats().as_dict(max_split_size)
