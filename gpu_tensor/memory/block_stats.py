"""`BlockStats`: the caching allocator's stats, with `active` read off `allocation`.

A block is active from its malloc until it is back in its pool; it is allocated from its
malloc until its free. The two differ only while a freed block waits on stream events
(record_stream). So the record stores, for `active` and `active_bytes`, only what waits
(active minus allocation, in blocks and bytes), and a warm malloc+free, where nothing
waits, updates three stats instead of five. Every value torch defines is derived exactly
when read (`_stored`):
- current active = current allocation + waiting (and likewise in bytes);
- allocated (the sum of increases) of active equals allocation's: both rise only at a
  malloc, by the same amount, and both are reset together;
- peak of active = the larger of allocation's peak and the highest active value seen
  while something waited. Active never falls below allocation, so allocation's peak is
  reached by active too; and while nothing waits (in either pool, for the 'all' row) the
  two are equal, so only a malloc made while a block waits can set a peak of its own.

Only the allocator's block_* updates keep that invariant, so `apply`/`update` refuse the
four stats involved (the pinned host pool, which updates them one by one, keeps the plain
`DeviceStats`). tests/memory/test_stats.py checks it against `DeviceStats` on random block
lifecycles, tests/memory/test_training_traces.py on the recorded training traces.
"""

from __future__ import annotations

from .stats import (
    _ACTIVE,
    _ACTIVE_BYTES,
    _ALLOCATED,
    _ALLOCATION,
    _REQUESTED,
    _SPLIT,
    _SPLIT_BYTES,
    DeviceStats,
    _changed,
)

__all__ = ["BlockStats"]

# (stat, the stat it is read from): active from allocation, active_bytes from allocated_bytes
_TIED = ((_ACTIVE, _ALLOCATION), (_ACTIVE_BYTES, _ALLOCATED))
_OWN_SLOTS = frozenset(3 * k for k in (_ACTIVE, _ALLOCATION, _ACTIVE_BYTES, _ALLOCATED))


def _active(row: list[int]) -> list[int]:
    """A copy of a stored current (or base) row with active = allocation + waiting."""
    row = row.copy()
    for k, a in _TIED:
        row[k] += row[a]
    return row


def _rise_two(cur, other, acc, peak, peak_all, k: int, dk: int, m: int, dm: int) -> None:
    """_changed(rows, ((k, dk), (m, dm))) for two increases dk, dm > 0, written out: the
    warm malloc's and free's update (a loop over a tuple of pairs costs twice as much)."""
    vk = cur[k] + dk
    vm = cur[m] + dm
    cur[k] = vk
    cur[m] = vm
    acc[k] += dk
    acc[m] += dm
    if vk > peak[k]:
        peak[k] = vk
    if vm > peak[m]:
        peak[m] = vm
    vk += other[k]
    vm += other[m]
    if vk > peak_all[k]:
        peak_all[k] = vk
    if vm > peak_all[m]:
        peak_all[m] = vm


class BlockStats(DeviceStats):
    """DeviceStats whose `active` stats are derived (see the module docstring)."""

    _derived = frozenset((_ACTIVE, _ACTIVE_BYTES))

    def apply(self, is_small: bool, *changes: tuple[int, int]) -> None:
        for slot, _ in changes:
            if slot in _OWN_SLOTS:
                raise AssertionError("allocation/active stats move only by the block_* updates")
        super().apply(is_small, *changes)

    def block_allocated(
        self, is_small: bool, size: int, requested: int, split_blocks: int = 0, split_bytes: int = 0
    ) -> None:
        rows = self._rows[is_small]
        cur, other, acc, peak, peak_all = rows
        if split_blocks > 0 and split_bytes > 0:  # a fresh split: its rest is a new split
            _rise_two(*rows, _SPLIT, split_blocks, _SPLIT_BYTES, split_bytes)
        elif split_blocks > 0 or split_bytes > 0:
            _changed(*rows, ((_SPLIT, split_blocks), (_SPLIT_BYTES, split_bytes)))
        else:  # falls (or nothing): no peak to test for them
            cur[_SPLIT] += split_blocks
            cur[_SPLIT_BYTES] += split_bytes
        # allocation +1, allocated_bytes +size, requested_bytes +requested: the three rises
        # of every malloc that is not a reuse, written out side by side (one call, no loop;
        # a rise of 0 requested bytes tests peaks that current cannot pass, and adds 0)
        n = cur[_ALLOCATION] = cur[_ALLOCATION] + 1
        nb = cur[_ALLOCATED] = cur[_ALLOCATED] + size
        nr = cur[_REQUESTED] = cur[_REQUESTED] + requested
        if n > peak[_ALLOCATION]:
            peak[_ALLOCATION] = n
        if nb > peak[_ALLOCATED]:
            peak[_ALLOCATED] = nb
        if nr > peak[_REQUESTED]:
            peak[_REQUESTED] = nr
        if n + other[_ALLOCATION] > peak_all[_ALLOCATION]:
            peak_all[_ALLOCATION] = n + other[_ALLOCATION]
        if nb + other[_ALLOCATED] > peak_all[_ALLOCATED]:
            peak_all[_ALLOCATED] = nb + other[_ALLOCATED]
        if nr + other[_REQUESTED] > peak_all[_REQUESTED]:
            peak_all[_REQUESTED] = nr + other[_REQUESTED]
        acc[_ALLOCATION] += 1
        acc[_ALLOCATED] += size
        acc[_REQUESTED] += requested
        if cur[_ACTIVE] or other[_ACTIVE]:  # blocks wait on events: active is above allocation
            for k, a in _TIED:
                v = cur[a] + cur[k]
                if v > peak[k]:
                    peak[k] = v
                v += other[a] + other[k]
                if v > peak_all[k]:
                    peak_all[k] = v

    def block_freed(
        self, is_small: bool, size: int, requested: int, split_blocks: int, split_bytes: int
    ) -> None:
        cur, other, acc, peak, peak_all = self._rows[is_small]
        cur[_ALLOCATION] -= 1  # (active too: nothing more waits)
        cur[_ALLOCATED] -= size
        cur[_REQUESTED] -= requested
        if split_bytes > 0 and split_blocks >= 0:
            # it becomes an inactive split (+1), or merges into one (+0): the usual frees,
            # written out (a rise of 0 blocks tests peaks that current cannot pass)
            n = cur[_SPLIT] = cur[_SPLIT] + split_blocks
            nb = cur[_SPLIT_BYTES] = cur[_SPLIT_BYTES] + split_bytes
            if n + other[_SPLIT] > peak_all[_SPLIT]:
                peak_all[_SPLIT] = n + other[_SPLIT]
            if nb + other[_SPLIT_BYTES] > peak_all[_SPLIT_BYTES]:
                peak_all[_SPLIT_BYTES] = nb + other[_SPLIT_BYTES]
            if n > peak[_SPLIT]:
                peak[_SPLIT] = n
            if nb > peak[_SPLIT_BYTES]:
                peak[_SPLIT_BYTES] = nb
            acc[_SPLIT] += split_blocks
            acc[_SPLIT_BYTES] += split_bytes
        elif split_blocks > 0 or split_bytes > 0:
            changes = ((_SPLIT, split_blocks), (_SPLIT_BYTES, split_bytes))
            _changed(cur, other, acc, peak, peak_all, changes)
        else:  # decreases (or nothing): no peak to test
            cur[_SPLIT] += split_blocks
            cur[_SPLIT_BYTES] += split_bytes

    def block_released(self, is_small: bool, size: int, requested: int) -> None:
        cur = self._cur[1 if is_small else 0]
        cur[_ALLOCATION] -= 1
        cur[_ALLOCATED] -= size
        cur[_REQUESTED] -= requested
        cur[_ACTIVE] += 1  # it waits: still active
        cur[_ACTIVE_BYTES] += size

    # block_deactivated is DeviceStats's (it lowers what waits). A reuse leaves out what
    # block_reused adds to active's accumulated totals: they are read off allocation's
    _counts_active = False

    def _stored(self):
        cur = tuple(_active(row) for row in self._cur)
        base = tuple(_active(row) for row in self._base)
        acc = tuple(row.copy() for row in self._acc)
        peak = tuple(row.copy() for row in self._peak)
        peak_all = self._peak_all.copy()
        for k, a in _TIED:
            for i in (0, 1):
                acc[i][k] = acc[i][a]
                peak[i][k] = max(peak[i][k], peak[i][a])
            peak_all[k] = max(peak_all[k], peak_all[a])
        return cur, acc, base, peak, peak_all

    def reset_peak(self) -> None:
        super().reset_peak()
        cur = tuple(_active(row) for row in self._cur)
        for k, _ in _TIED:
            for i in (0, 1):
                self._peak[i][k] = cur[i][k]
            self._peak_all[k] = cur[0][k] + cur[1][k]
