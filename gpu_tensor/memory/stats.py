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
# (The flat layout of `DeviceStats.cur`/`peak`/`allocated`/`freed` and of `apply`'s slots.)
SLOT = {name: 3 * i for i, name in enumerate(ARRAY_STATS)}
_SINGLE_SLOT = {name: 3 * len(ARRAY_STATS) + i for i, name in enumerate(SINGLE_STATS)}
_NSLOTS = 3 * len(ARRAY_STATS) + len(SINGLE_STATS)
_N = len(ARRAY_STATS)
# Stat numbers (ARRAY_STATS order): the index of a stat in one pool's row.
_ALLOCATION, _SEGMENT, _ACTIVE, _SPLIT = 0, 1, 2, 3
_ALLOCATED, _RESERVED, _ACTIVE_BYTES, _SPLIT_BYTES, _REQUESTED = 4, 5, 6, 7, 8
assert [SLOT[name] // 3 for name in ARRAY_STATS] == [
    _ALLOCATION,
    _SEGMENT,
    _ACTIVE,
    _SPLIT,
    _ALLOCATED,
    _RESERVED,
    _ACTIVE_BYTES,
    _SPLIT_BYTES,
    _REQUESTED,
]


def _changed(cur, other, acc, peak, peak_all, changes) -> None:
    """Stat k += amount for each (k, amount) on one pool's rows (`other`: the other pool's
    current values, for the 'all' row's peak), with torch's update_stat rule."""
    for k, amount in changes:
        v = cur[k] = cur[k] + amount
        if amount > 0:
            acc[k] += amount
            if v > peak[k]:
                peak[k] = v
            v += other[k]
            if v > peak_all[k]:
                peak_all[k] = v


class DeviceStats:
    """Counters the allocator updates in place (always under its lock).

    Stored, per pool (index 0 large, 1 small) and stat number: current, allocated (sum of
    increases) and peak; plus the 'all' row's peak. Derived when read, exactly:
    - the 'all' row's current and allocated are the two pools' sum (every change hits
      'all' and exactly one pool);
    - freed = allocated - (current - base), `base` being current at the last
      reset_accumulated (every change adds |amount| to allocated or to freed).
    So a decrease writes one counter instead of four (current and freed, two rows each), and
    an increase two instead of four (plus the two peak tests): a warm malloc+free pair
    changes fourteen stats, half of them decreases."""

    def __init__(self):
        self._cur = ([0] * _N, [0] * _N)
        self._acc = ([0] * _N, [0] * _N)
        self._base = ([0] * _N, [0] * _N)
        self._peak = ([0] * _N, [0] * _N)
        self._peak_all = [0] * _N
        # Per pool: the lists an update touches, (current, other pool's current, allocated,
        # peak, 'all' peak), so an update fetches them with one index.
        self._rows = tuple(
            (self._cur[i], self._cur[1 - i], self._acc[i], self._peak[i], self._peak_all)
            for i in (0, 1)
        )
        # oversize_allocations / oversize_segments: one row each, stored as is
        self._single = {"cur": [0, 0], "peak": [0, 0], "acc": [0, 0], "base": [0, 0]}
        self.scalars = dict.fromkeys(SCALARS, 0)

    # ------------------------------------------------------------------ updates
    def apply(self, is_small: bool, *changes: tuple[int, int]) -> None:
        """Apply (slot, amount) changes (slot from SLOT) to the 'all' row and the block's
        pool row, with torch's update_stat rule: peak follows current; allocated/freed
        sum |amount|."""
        _changed(*self._rows[1 if is_small else 0], [(slot // 3, n) for slot, n in changes])

    def update(self, name: str, is_small: bool, amount: int) -> None:
        """Change stat `name` by `amount` in the 'all' row and the block's pool row."""
        self.apply(is_small, (SLOT[name], amount))

    # The allocator's per-block changes: each does exactly what `apply` does with the
    # changes it names (block_stats.BlockStats, the allocator's, derives active instead).
    def block_allocated(
        self, is_small: bool, size: int, requested: int, split_blocks: int = 0, split_bytes: int = 0
    ) -> None:
        """allocation +1, active +1, allocated_bytes +size, active_bytes +size,
        requested_bytes +requested; inactive_split(_bytes) +split_blocks/+split_bytes."""
        rows = self._rows[1 if is_small else 0]
        _changed(
            *rows,
            (
                (_SPLIT, split_blocks),
                (_SPLIT_BYTES, split_bytes),
                (_ALLOCATION, 1),
                (_ACTIVE, 1),
                (_ALLOCATED, size),
                (_ACTIVE_BYTES, size),
                (_REQUESTED, requested),
            ),
        )

    def block_freed(
        self, is_small: bool, size: int, requested: int, split_blocks: int, split_bytes: int
    ) -> None:
        """block_released and then block_deactivated(split_blocks, split_bytes): a free
        that returns the block to its pool at once (no stream events), in one call."""
        self.block_released(is_small, size, requested)
        self.block_deactivated(is_small, size, split_blocks, split_bytes)

    def block_released(self, is_small: bool, size: int, requested: int) -> None:
        """allocation -1, allocated_bytes -size, requested_bytes -requested."""
        cur = self._cur[1 if is_small else 0]
        cur[_ALLOCATION] -= 1
        cur[_ALLOCATED] -= size
        cur[_REQUESTED] -= requested

    _counts_active = True  # whether a reuse adds to active's accumulated totals (BlockStats
    # derives them)

    def block_reused(
        self,
        is_small: bool,
        size: int,
        old_requested: int,
        requested: int,
        split_blocks: int,
        split_bytes: int,
        oversize: bool = False,
    ) -> None:
        """block_released + block_deactivated(split_blocks, split_bytes) and then
        block_allocated(-split_blocks, -split_bytes) of the same block, for a parked free
        (reuse.py): current values end where they began, so only the accumulated totals,
        requested bytes and the peaks the free's intermediate state reaches can move."""
        cur, other, acc, peak, peak_all = self._rows[is_small]
        if oversize:  # oversize_allocations -1 then +1
            self._single["acc"][0] += 1
        if self._counts_active:
            acc[_ACTIVE] += 1
            acc[_ACTIVE_BYTES] += size
        acc[_ALLOCATION] += 1
        acc[_ALLOCATED] += size
        acc[_REQUESTED] += requested
        if requested > old_requested:
            v = cur[_REQUESTED] = cur[_REQUESTED] - old_requested + requested
            if v > peak[_REQUESTED]:
                peak[_REQUESTED] = v
            v += other[_REQUESTED]
            if v > peak_all[_REQUESTED]:
                peak_all[_REQUESTED] = v
        elif requested != old_requested:  # a fall: no peak to test
            cur[_REQUESTED] += requested - old_requested
        # inactive_split(_bytes): the free moved them by split_*, the malloc moves them back
        for k, amount in ((_SPLIT, split_blocks), (_SPLIT_BYTES, split_bytes)):
            if amount > 0:  # up and back down: allocated counts the rise, the peaks the top
                acc[k] += amount
                v = cur[k] + amount
                if v > peak[k]:
                    peak[k] = v
                v += other[k]
                if v > peak_all[k]:
                    peak_all[k] = v
            else:  # down and back up (or nothing): the way up is what allocated counts
                acc[k] -= amount

    def reuses_settled(
        self, small, size, requested, split_blocks, split_bytes, oversize, n: int
    ) -> None:
        """What `n` calls of `block_reused(small, size, requested, requested, split_blocks,
        split_bytes, oversize)` add once a first one has tested the peaks, with nothing
        changed since (reuse.settle): the accumulated totals, `n` times over.
        (Their current values end where they began, and their peaks are those tested.)"""
        acc = self._acc[small]
        if oversize:
            self._single["acc"][0] += n
        if self._counts_active:
            acc[_ACTIVE] += n
            acc[_ACTIVE_BYTES] += n * size
        acc[_ALLOCATION] += n
        acc[_ALLOCATED] += n * size
        acc[_REQUESTED] += n * requested
        # inactive_split(_bytes): down and back up, or up and back down; allocated counts
        # the way up
        acc[_SPLIT] += n * abs(split_blocks)
        acc[_SPLIT_BYTES] += n * abs(split_bytes)

    def block_deactivated(
        self, is_small: bool, size: int, split_blocks: int = 0, split_bytes: int = 0
    ) -> None:
        """active -1, active_bytes -size; inactive_split(_bytes) +split_blocks/+split_bytes."""
        rows = self._rows[1 if is_small else 0]
        cur = rows[0]
        cur[_ACTIVE] -= 1
        cur[_ACTIVE_BYTES] -= size
        if split_blocks or split_bytes:
            _changed(*rows, ((_SPLIT, split_blocks), (_SPLIT_BYTES, split_bytes)))

    def split_changed(self, is_small: bool, blocks: int, nbytes: int) -> None:
        """inactive_split +blocks, inactive_split_bytes +nbytes (either sign)."""
        _changed(*self._rows[1 if is_small else 0], ((_SPLIT, blocks), (_SPLIT_BYTES, nbytes)))

    def update_single(self, name: str, amount: int) -> None:
        i = _SINGLE_SLOT[name] - 3 * _N
        single = self._single
        cur = single["cur"]
        cur[i] += amount
        if amount > 0:
            single["acc"][i] += amount
            single["peak"][i] = max(single["peak"][i], cur[i])

    # ------------------------------------------------------------------ reads
    _derived = frozenset()  # stat numbers whose current value `_stored` derives

    def _stored(self):
        """(current, allocated, base, peak) pairs (large, small) and the 'all' peak row, as
        every read sees them (block_stats.BlockStats derives some of them)."""
        return self._cur, self._acc, self._base, self._peak, self._peak_all

    def current(self, name: str, pool: str = "all") -> int:
        k = SLOT[name] // 3
        cur = self._stored()[0] if k in self._derived else self._cur
        if pool == "all":
            return cur[0][k] + cur[1][k]
        return cur[POOLS.index(pool) - 1][k]

    def _flat(
        self, large: list[int], small: list[int], total: list[int] | None, single: list[int]
    ) -> list[int]:
        """One metric in the flat slot layout (see SLOT); total None: the pools' sum."""
        out = []
        for k in range(_N):
            out += (large[k] + small[k] if total is None else total[k], large[k], small[k])
        return out + single

    @staticmethod
    def _freed(acc: list[int], cur: list[int], base: list[int]) -> list[int]:
        return [a - c + b for a, c, b in zip(acc, cur, base, strict=True)]

    @property
    def cur(self) -> list[int]:
        """Current values by slot (a fresh list)."""
        return self._flat(*self._stored()[0], None, self._single["cur"])

    @property
    def peak(self) -> list[int]:
        stored = self._stored()
        return self._flat(*stored[3], stored[4], self._single["peak"])

    @property
    def allocated(self) -> list[int]:
        return self._flat(*self._stored()[1], None, self._single["acc"])

    @property
    def freed(self) -> list[int]:
        s = self._single
        cur, acc, base = self._stored()[:3]
        return self._flat(
            *(self._freed(*rows) for rows in zip(acc, cur, base, strict=True)),
            None,
            self._freed(s["acc"], s["cur"], s["base"]),
        )

    # ------------------------------------------------------------------ resets
    def reset_peak(self) -> None:
        for peak, cur in zip(self._peak, self._cur, strict=True):
            peak[:] = cur
        self._peak_all[:] = [a + b for a, b in zip(*self._cur, strict=True)]
        self._single["peak"][:] = self._single["cur"]

    def reset_accumulated(self) -> None:
        for acc, base, cur in zip(self._acc, self._base, self._cur, strict=True):
            acc[:] = [0] * _N
            base[:] = cur  # freed = allocated - (current - base) is 0 again
        self._single["acc"][:] = [0, 0]
        self._single["base"][:] = self._single["cur"]
        for key in self.scalars:
            self.scalars[key] = 0

    def as_dict(self, max_split_size: int) -> dict:
        columns = {
            "current": self.cur,
            "peak": self.peak,
            "allocated": self.allocated,
            "freed": self.freed,
        }
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
