"""Giving cached memory back before (or instead of) asking the device for more.

Four policies the allocator calls on a cache miss, all under its lock:
`release_stale` (ours, GPU_TENSOR_ALLOC_CONF release_on_miss), `release_for_peak`
(ours, peak_guard), `garbage_collect`
(torch's garbage_collection_threshold) and `release_oversize` (torch's
release_available_cached_blocks, the first OOM fallback when max_split_size is set).
"""

from __future__ import annotations

from .config import UNLIMITED

__all__ = ["release_stale", "garbage_collect", "release_oversize"]


def release_oversize(alloc, size: int) -> bool:
    """torch's release_available_cached_blocks: free unsplit oversize blocks, the
    smallest one that covers `size` or else largest first, before a full flush."""
    max_split = alloc._max_split
    if max_split == UNLIMITED:
        return False
    candidates = sorted(
        (
            b
            for b in alloc._large
            if b.size >= max_split and not b.is_split() and not b.segment.expandable
        ),
        key=lambda b: b.size,
    )
    if not candidates:
        return False
    fit = next((b for b in candidates if b.size >= size), None)
    if fit is not None:
        alloc._release_block(fit)
        return True
    freed = 0
    for block in reversed(candidates):
        alloc._release_block(block)
        freed += block.size
        if freed >= size:
            break
    return True


def release_stale(alloc, stream: int, size: int, needed: int) -> None:
    """On a large-pool miss, return this stream's fully free segments that are smaller
    than the request (so could not serve it), largest first, until the new segment's
    size is covered. Requests that grow a little (longer sequences, bigger batches)
    then replace stale segments instead of piling new ones on top; torch frees its
    cache only at OOM time, after the device is already full."""
    stale = sorted(
        (
            b
            for b in alloc._large
            if b.stream == stream
            and b.size < size
            and not b.is_split()
            and not b.segment.expandable
        ),
        key=lambda b: -b.size,
    )
    freed = 0
    for block in stale:
        if freed >= needed:
            break
        alloc._release_block(block)
        freed += block.size


def release_for_peak(alloc, needed: int) -> None:
    """peak_guard: a new segment of `needed` bytes would raise reserved memory above its
    high-water mark, so first return whole free segments (any pool, any stream: they
    have no pending events, or they would not be free) until it no longer would."""
    free = sorted(
        (
            b
            for pool in (alloc._large, alloc._small)
            for b in pool
            if not b.is_split() and not b.segment.expandable
        ),
        key=lambda b: -b.size,
    )
    for block in free:  # largest first: the fewest device calls
        if alloc._reserved + needed <= alloc._high_water:
            break
        alloc._release_block(block)


def garbage_collect(alloc) -> None:
    """torch's garbage_collect_cached_blocks: free old unsplit large blocks (age = best-fit
    lookups since cached) while reserved memory is above threshold * limit."""
    threshold = int(alloc.config.garbage_collection_threshold * alloc._limit)
    if alloc._reserved <= threshold:
        return
    target = alloc._reserved - threshold
    clock = alloc._large.lookups
    candidates = [b for b in alloc._large if not b.is_split() and not b.segment.expandable]
    reclaimed = 0
    while candidates and reclaimed < target:
        average_age = sum(clock - b.gc_count_base for b in candidates) / len(candidates)
        old = [b for b in candidates if clock - b.gc_count_base >= average_age]
        for block in old:
            alloc._release_block(block)
            reclaimed += block.size
            if reclaimed >= target:
                break
        candidates = [b for b in candidates if b not in old]
