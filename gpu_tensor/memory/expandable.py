"""Expandable segments: reserved address space, mapped in pages, restitched without syncs.

torch's expandable_segments (research/pytorch-memory.md §1.7) reserves address space per
(pool, stream) and maps physical pages into it on demand, so memory freed at the end of a
segment can serve a bigger request without a new segment. This one does that and one thing
more. When a request fits no free block, it is served at the end of the reservation, and
the pages it needs are taken first from the whole free pages inside other free blocks of the
same stream (this pool's first, then the other pool's): those physical pages are mapped
again at the new address (`alias`, a cuMemMap of a page that is already mapped; no new
memory, no device sync), and their old addresses leave the allocator. Only what is still missing is new memory. A hole between two
live blocks therefore never strands memory: peak reserved follows peak allocated to within
the partly used pages. The idea is GMLake's "virtual memory stitching" (ASPLOS 2024).

Records: a `Reservation` is one reserved range; its mapped parts that the allocator owns
are `Segment`s ("runs", each with its blocks, as torch's snapshot splits an expandable
segment at unmapped pages). Taking pages out of a free block cuts its run in two
(`_carve`). Those records and the cut live in reservation.py; this file is the policy that
grows and shrinks with them. The old address of a restitched page stays mapped (the driver's undo is
cuMemUnmap, which may wait for the device) until `shrink`, which runs on empty_cache and
before an OOM retry, where torch synchronises anyway: it unmaps those old addresses, then
every whole free page (torch unmaps free pages anywhere in a segment too), and gives back
reservations that hold nothing. Address space is not reused before then: a full reservation
is followed by a new one (as torch's list of expandable segments).

Needs a raw source with `reserve(nbytes) -> ptr`, `map(ptr, nbytes)`, `unmap(ptr, nbytes)`
and `unreserve(ptr)`, and may have `alias(dst, src, nbytes)` to restitch (without it, new
requests map new pages, as torch's) and `unmap_many(spans)` (one device sync for a shrink). HostRawSource has them, and on a GPU backends/cuda_vmm.py's
VmmSource through cuda-bindings. Pages are 2 MiB in the small pool; in the large pool 20 MiB
on a GPU (VmmSource.large_page, as torch's) and 2 MiB on the host (reservation.LARGE_PAGE). Each page
is one physical handle (`map(..., handle_size=page)`), unmapped and restitched whole, so a
reservation's mappings never cross its pages' boundaries (pages restitched from the other
pool come in whole pages of both pools).
"""

from __future__ import annotations

import math
from bisect import bisect_left

from .block import Block, Segment
from .raw import RawOutOfMemory
from .reservation import (
    Reservation,
    _add,
    _apply,
    _carve,
    _free_pages,
    _page,
    _round,
)

__all__ = ["Reservation", "supported", "grow", "shrink"]


def supported(raw) -> bool:
    return all(
        callable(getattr(raw, name, None)) for name in ("reserve", "map", "unmap", "unreserve")
    )


def _is_free(alloc, block: Block) -> bool:
    pool = alloc._small if block.segment.is_small else alloc._large
    return not block.allocated and not block.event_count and block in pool


def _record(alloc, action: str, ptr: int, nbytes: int, stream: int) -> None:
    if alloc.history is not None:
        alloc.history.record(action, ptr, nbytes, stream)


# ------------------------------------------------------------------------------- growing
def grow(alloc, pool, stream: int, size: int) -> Block | None:
    """A free block of at least `size` at the end of the (pool, stream) reservation, its pages
    restitched from free ones where it can and mapped new otherwise; None when the device (or
    the per-process limit) says no."""
    small = pool.is_small
    page = _page(alloc, small)
    key = (small, stream)
    res = alloc._es.get(key)
    last = res.last if res is not None else None
    tail = last.tail() if last is not None else None
    free_tail = tail if tail is not None and _is_free(alloc, tail) else None
    # (at least a page: a free end that max_split_size_mb made unfit for `size` still grows)
    need = max(_round(size - (free_tail.size if free_tail is not None else 0), page), page)
    fresh_res = res is None or res.end + need > res.base + res.size
    if fresh_res:  # none yet, or this one is full: a new range, as torch's next segment
        free_tail, need = None, _round(size, page)
        va_size = _round(alloc.raw.mem_get_info()[1], page)
        if need > va_size:
            return None
        try:
            res = Reservation(alloc.raw.reserve(va_size), va_size)
        except RawOutOfMemory:  # no address space left: a shrink gives empty ranges back
            return None
    plan = _harvest(alloc, pool, stream, need, page, free_tail)
    at = res.end
    if not _back(alloc, at, need, plan, small, stream):
        if fresh_res:
            alloc.raw.unreserve(res.base)
        return None
    # per pool: segment count, inactive_split blocks and bytes, and reserved bytes that
    # change pools (_apply)
    totals = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}
    for block, start, nbytes in plan:
        block.segment.reservation.aliases[start] = nbytes
        source = block.segment.is_small
        _add(totals[source], _carve(alloc, block, start, start + nbytes))
        if source != small:  # the page now serves the other pool
            totals[source][3] -= nbytes
            totals[small][3] += nbytes
    if fresh_res:
        alloc._es[key] = res
        alloc._ranges.append(res)
    res.end += need
    run = res.last
    mine = totals[small]
    if run is None:  # a new run at the end
        run = Segment(at, need, stream, small)
        run.expandable, run.reservation = True, res
        block = Block(at, need, stream, run)
        run.head = block
        alloc._segments[at] = run
        res.last = run
        res.runs += 1
        mine[0] += 1
    else:
        run.size += need
        if free_tail is not None:  # the free end grows: merged with the new pages at once
            pool.remove(free_tail)
            free_tail.size += need
            if free_tail.is_split():
                mine[2] += need
            block = free_tail
        else:
            tail = run.tail()
            block = Block(at, need, stream, run)
            block.prev, tail.next = tail, block
            pool.owner._proved = False  # the tail has a new neighbour (reuse.py)
            _add(mine, (0, 1, need))  # a free block of a split segment
    _apply(alloc._stats, totals)
    return block


def _harvest(alloc, pool, stream: int, need: int, page: int, skip) -> list:
    """[(free block, start, bytes)]: whole free pages of this stream to restitch, at most
    `need` bytes: this pool's first, then the other pool's (a page is a page; torch keeps
    the pools apart so that small blocks do not split large ones, which stays true), from
    the smallest free blocks up (the holes least likely to fit a later request). `skip`:
    the free block the request grows (its pages serve it already)."""
    if not callable(getattr(alloc.raw, "alias", None)):
        return []
    plan, left = [], need
    other = alloc._large if pool.is_small else alloc._small
    for source in (pool, other):
        # whole pages of both pools: a handle is aliased whole, and the pages after these
        # in the new range must start on this pool's page boundary
        unit = math.lcm(page, _page(alloc, source.is_small))
        keys, blocks = source._keys, source._blocks
        i = bisect_left(keys, (stream, unit))
        while left >= unit and i < len(keys) and keys[i][0] == stream:
            block = blocks[i]
            i += 1
            if block is skip or not block.segment.expandable or block.event_count:
                continue
            start, stop = _free_pages(block, unit)
            if stop - start >= unit:
                nbytes = min(stop - start, left // unit * unit)
                plan.append((block, start, nbytes))
                left -= nbytes
    return plan


def _back(alloc, at: int, need: int, plan, small: bool, stream: int) -> bool:
    """Map [at, at + need): the planned pages restitched first, the rest new. On failure
    nothing stays mapped and False is returned."""
    raw = alloc.raw
    stitched = sum(nbytes for _, _, nbytes in plan)
    fresh = need - stitched
    if fresh:
        if alloc._limit is not None and alloc._reserved + fresh > alloc._limit:
            return False
        try:  # (whole pages: `stitched` is whole pages of this pool, see _harvest)
            raw.map(at + stitched, fresh, _page(alloc, small))
        except RawOutOfMemory:
            return False
    done = at
    try:
        for _, start, nbytes in plan:
            raw.alias(done, start, nbytes)
            done += nbytes
    except RawOutOfMemory:
        if done > at:
            raw.unmap(at, done - at)
        if fresh:
            raw.unmap(at + stitched, fresh)
        return False
    stats = alloc._stats
    if fresh:
        alloc._reserved += fresh
        stats.update("reserved_bytes", small, fresh)
        stats.scalars["num_device_alloc"] += 1
        _record(alloc, "segment_map", at + stitched, fresh, stream)
    done = at
    for _, start, nbytes in plan:  # for a viewer: the pages left one place for another
        _record(alloc, "segment_unmap", start, nbytes, stream)
        _record(alloc, "segment_map", done, nbytes, stream)
        done += nbytes
    return True


# ------------------------------------------------------------------------------- shrinking
def shrink(alloc) -> None:
    """Give back what expandable segments hold unused: the old addresses of restitched pages,
    every whole free page, and reservations left empty. Callers have synchronised. The
    source gets every span in one `unmap_many` call where it has one (VmmSource: one device
    synchronize for all), old addresses first (then every page has one mapping left)."""
    raw = alloc.raw
    stats = alloc._stats
    spans = [span for res in alloc._ranges for span in sorted(res.aliases.items())]
    free = []  # (pool, block, start, stop): whole free pages to give back
    for pool in (alloc._large, alloc._small):
        page = _page(alloc, pool.is_small)
        for block in pool:
            if block.segment.expandable and not block.event_count:
                start, stop = _free_pages(block, page)
                if stop > start:
                    free.append((pool, block, start, stop))
                    spans.append((start, stop - start))
    many = getattr(raw, "unmap_many", None)
    if many is not None and spans:
        many(spans)
    else:
        for ptr, nbytes in spans:
            raw.unmap(ptr, nbytes)
    for res in alloc._ranges:
        res.aliases.clear()
    totals = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}  # as in grow (_apply)
    for pool, block, start, stop in free:
        segment = block.segment
        res = segment.reservation
        row = totals[pool.is_small]
        _add(row, _carve(alloc, block, start, stop))
        row[3] -= stop - start
        if stop == res.end:  # the end of the range was unmapped: it grows from here again
            res.end = start
            kept = alloc._segments.get(segment.ptr) is segment
            res.last = segment if kept and segment.ptr + segment.size == start else None
        alloc._reserved -= stop - start
        stats.scalars["num_device_free"] += 1
        _record(alloc, "segment_unmap", start, stop - start, segment.stream)
    _apply(stats, totals)
    for key, res in list(alloc._es.items()):
        if not res.runs:
            del alloc._es[key]
    for res in [r for r in alloc._ranges if not r.runs]:
        raw.unreserve(res.base)
        alloc._ranges.remove(res)
