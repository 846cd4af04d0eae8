"""`check(allocator)`: recount the allocator's state from its blocks and compare.

Used by the tests after every step, and useful when debugging the allocator
itself. It recomputes each stat from the segment lists, independently of the
counters the allocator updates as it goes, and checks the structure: blocks
tile each segment exactly, segments do not overlap, free blocks are exactly
the pool contents and never sit next to another mergeable free block.
"""

from __future__ import annotations

from .stats import ARRAY_STATS, POOLS

__all__ = ["recount", "check"]


def recount(allocator) -> dict:
    """Current values of every stat, recomputed from the blocks: {'<stat>.<pool>': n}."""
    counts: dict[str, int] = {}

    def add(name, small, amount):
        for pool in ("all", "small_pool" if small else "large_pool"):
            key = f"{name}.{pool}"
            counts[key] = counts.get(key, 0) + amount

    for name in ARRAY_STATS:
        for pool in POOLS:
            counts[f"{name}.{pool}"] = 0
    max_split = allocator._max_split
    counts["oversize_allocations"] = counts["oversize_segments"] = 0
    for segment in allocator._segments.values():
        small = segment.is_small
        add("segment", small, 1)
        add("reserved_bytes", small, segment.size)
        counts["oversize_segments"] += segment.size >= max_split and not segment.expandable
        for block in segment.blocks():
            if block.allocated:
                add("allocation", small, 1)
                add("allocated_bytes", small, block.size)
                add("requested_bytes", small, block.requested_size)
                counts["oversize_allocations"] += block.size >= max_split
            if block.allocated or block.event_count:
                add("active", small, 1)
                add("active_bytes", small, block.size)
            elif block.is_split():
                add("inactive_split", small, 1)
                add("inactive_split_bytes", small, block.size)
    return counts


def check(allocator, accumulated: bool = True) -> None:
    """Raise AssertionError describing the first inconsistency found.

    accumulated=False skips `allocated - freed == current` (after a reset of the
    accumulated stats it no longer holds)."""
    with allocator._operation():
        _check_structure(allocator)
        stats = allocator._stats.as_dict(0)
        for key, value in recount(allocator).items():
            current = stats[f"{key}.current"]
            if current != value:
                raise AssertionError(f"stat {key}.current is {current}, recount says {value}")
            if stats[f"{key}.peak"] < current:
                raise AssertionError(f"stat {key}.peak {stats[f'{key}.peak']} < current")
            if accumulated and stats[f"{key}.allocated"] - stats[f"{key}.freed"] != current:
                raise AssertionError(f"stat {key}: allocated - freed != current")
        reserved = sum(s.size for s in allocator._segments.values())
        if reserved != allocator._reserved:
            raise AssertionError(f"reserved total {allocator._reserved} != segments {reserved}")


def _check_structure(allocator) -> None:
    pooled = {id(b) for pool in allocator._all_pools() for b in pool}
    seen_free = set()
    pending = {id(b) for queue in allocator._events.values() for _, b in queue}
    end = None
    for segment in sorted(allocator._segments.values(), key=lambda s: s.ptr):
        if end is not None and segment.ptr < end:
            raise AssertionError(f"{segment!r} overlaps the previous segment")
        end = segment.ptr + segment.size
        if segment.head is None or segment.head.prev is not None:
            raise AssertionError(f"{segment!r}: bad head block")
        cursor = segment.ptr
        prev = None
        for block in segment.blocks():
            if block.segment is not segment or block.prev is not prev:
                raise AssertionError(f"{block!r}: broken links in {segment!r}")
            if block.ptr != cursor or block.size <= 0:
                raise AssertionError(f"{block!r}: does not start where the previous one ends")
            cursor += block.size
            if block.stream != segment.stream:
                raise AssertionError(f"{block!r}: stream differs from its segment's")
            pool = allocator._pool_of(segment)
            if block.allocated:
                if allocator._allocated.get(block.ptr) is not block:
                    raise AssertionError(f"{block!r}: allocated but not in the allocated map")
                if id(block) in pooled:
                    raise AssertionError(f"{block!r}: allocated and in a free pool")
            elif block.event_count:
                if id(block) in pooled or id(block) not in pending:
                    raise AssertionError(f"{block!r}: pending free but pooled or not queued")
            else:
                if block not in pool:
                    raise AssertionError(f"{block!r}: free but not in its pool")
                seen_free.add(id(block))
                if prev is not None and not prev.allocated and not prev.event_count:
                    raise AssertionError(f"{block!r}: two adjacent free blocks not merged")
            prev = block
        if cursor != segment.ptr + segment.size:
            raise AssertionError(f"{segment!r}: blocks do not tile the segment")
    _check_reservations(allocator)
    if seen_free != pooled:
        raise AssertionError("free pools hold blocks that are not in any segment")
    if len(allocator._allocated) != sum(
        1 for s in allocator._segments.values() for b in s.blocks() if b.allocated
    ):
        raise AssertionError("allocated map holds blocks that are not in any segment")


def _check_reservations(allocator) -> None:
    """Expandable segments (expandable.py): each run lies inside its reservation below its
    end and overlaps no other run and no restitched page's old address, and `last` is the
    run that ends at the end."""
    ranges = allocator._ranges
    if any(res not in ranges for res in allocator._es.values()):
        raise AssertionError("a growing reservation is not in the allocator's list")
    runs: dict[int, list] = {id(res): [] for res in ranges}
    for segment in allocator._segments.values():
        if segment.expandable:
            if id(segment.reservation) not in runs:
                raise AssertionError(f"{segment!r}: its reservation is not in the list")
            runs[id(segment.reservation)].append((segment.ptr, segment.size))
    for res in ranges:
        mine = runs[id(res)]
        if len(mine) != res.runs:
            raise AssertionError(f"{res!r} counts {res.runs} runs, has {len(mine)}")
        if res.last is not None and (
            res.last.reservation is not res
            or res.last.ptr + res.last.size != res.end
            or allocator._segments.get(res.last.ptr) is not res.last
        ):
            raise AssertionError(f"{res!r}: its last run {res.last!r} does not end at its end")
        spans = sorted(mine + list(res.aliases.items()))
        cursor = res.base
        for ptr, size in spans:
            if ptr < cursor or size <= 0:
                raise AssertionError(f"{res!r}: {ptr:#x}+{size} overlaps or is empty")
            cursor = ptr + size
        if cursor > res.end or res.end > res.base + res.size:
            raise AssertionError(f"{res!r}: mapped beyond its end")
