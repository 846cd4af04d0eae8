"""Expandable segments: one segment per (pool, stream) that grows and shrinks in pages.

torch's expandable_segments (research/pytorch-memory.md §1.7) reserves address space
and maps physical pages into it on demand, so memory freed at the end of a segment
can serve a bigger request without a new segment. Here a segment grows at its end
(mapping pages right after the last block, merged with a free last block) and
shrinks at its end (unmapping the whole free pages of a free last block) on
empty_cache or before an OOM. torch can also unmap free pages in the middle of a
segment; this simpler form cannot.

Needs a raw source with `reserve(nbytes) -> ptr`, `map(ptr, nbytes)`,
`unmap(ptr, nbytes)` and `unreserve(ptr)` (HostRawSource has them, and on a GPU
backends/cuda_vmm.py's VmmSource through cuda-bindings). Pages are 2 MiB in the small pool (as
torch's) and 8 MiB in the large pool (torch: 20 MiB).
"""

from __future__ import annotations

from .block import Block, Segment
from .raw import RawOutOfMemory
from .sizes import SMALL_BUFFER

__all__ = ["supported", "grow", "shrink"]

# Large-pool page. torch uses 20 MiB to amortise one cuMemCreate per page; smaller pages
# waste less at a segment's end: on profiling/bench_allocator.py's traces 8 MiB beat 4, 6,
# 10, 16 and 20 MiB (transformer 1.037 vs 1.039, random 1.32 vs 1.44, recorded MLP 1.48
# vs 2.04 peak reserved / peak allocated) at the same number of map calls.
LARGE_PAGE = 8 << 20


def supported(raw) -> bool:
    return all(callable(getattr(raw, name, None)) for name in ("reserve", "map", "unmap",
                                                                "unreserve"))


def _page(alloc, small: bool) -> int:
    """The pool's page, a whole number of the source's mapping granularity (a CUDA device's,
    backends/cuda_vmm.py; host sources have none)."""
    page = SMALL_BUFFER if small else LARGE_PAGE
    granularity = getattr(alloc.raw, "granularity", 1)
    return -(-page // granularity) * granularity


def _round(n: int, page: int) -> int:
    return -(-n // page) * page


def _is_free(alloc, block: Block) -> bool:
    pool = alloc._small if block.segment.is_small else alloc._large
    return not block.allocated and not block.event_count and block in pool


def _map(alloc, segment_ptr: int, at: int, nbytes: int, small: bool, stream: int) -> bool:
    if alloc._limit is not None and alloc._reserved + nbytes > alloc._limit:
        return False
    try:
        alloc.raw.map(at, nbytes)
    except RawOutOfMemory:
        return False
    alloc._reserved += nbytes
    alloc._stats.update("reserved_bytes", small, nbytes)
    alloc._stats.scalars["num_device_alloc"] += 1
    if alloc.history is not None:
        alloc.history.record("segment_map", at, nbytes, stream)
    return True


def grow(alloc, pool, stream: int, size: int) -> Block | None:
    """A free block of at least `size` made by mapping pages at the end of the (pool,
    stream) segment; None when the device (or the per-process limit) says no."""
    small = pool.is_small
    page = _page(alloc, small)
    key = (small, stream)
    segment = alloc._es.get(key)
    if segment is None:
        need = _round(size, page)
        va_size = _round(alloc.raw.mem_get_info()[1], page)
        if need > va_size:
            return None
        base = alloc.raw.reserve(va_size)
        if not _map(alloc, base, base, need, small, stream):
            alloc.raw.unreserve(base)
            return None
        segment = Segment(base, need, stream, small)
        segment.expandable, segment.va_size = True, va_size
        block = Block(base, need, stream, segment)
        segment.head = block
        alloc._segments[base] = segment
        alloc._es[key] = segment
        alloc._stats.update("segment", small, 1)
        return block
    tail = segment.tail()
    free_tail = tail if _is_free(alloc, tail) else None
    need = _round(size - (free_tail.size if free_tail else 0), page)
    end = segment.ptr + segment.size
    if segment.size + need > segment.va_size or not _map(alloc, segment.ptr, end, need, small,
                                                          stream):
        return None
    segment.size += need
    if free_tail is not None:  # the free end grows: merged with the new pages at once
        pool.remove(free_tail)
        free_tail.size += need
        if free_tail.is_split():
            alloc._stats.split_changed(small, 0, need)
        return free_tail
    block = Block(end, need, stream, segment)
    block.prev, tail.next = tail, block
    pool.version += 1  # the tail has a new neighbour (reuse.py)
    alloc._stats.split_changed(small, 1, need)  # a free block of a split segment
    return block


def shrink(alloc) -> None:
    """Unmap the whole free pages at the end of every expandable segment; drop empty ones."""
    for key, segment in list(alloc._es.items()):
        tail = segment.tail()
        if not _is_free(alloc, tail):
            continue
        small = segment.is_small
        keep = _round(tail.ptr - segment.ptr, _page(alloc, small))
        cut = segment.size - keep
        if cut <= 0:
            continue
        alloc.raw.unmap(segment.ptr + keep, cut)
        alloc._reserved -= cut
        stats = alloc._stats
        stats.update("reserved_bytes", small, -cut)
        stats.scalars["num_device_free"] += 1
        if alloc.history is not None:
            alloc.history.record("segment_unmap", segment.ptr + keep, cut, segment.stream)
        pool = alloc._small if small else alloc._large
        pool.remove(tail)
        was_split = tail.is_split()
        segment.size = keep
        if tail.size > cut:  # part of the block stays mapped (its first page is shared)
            tail.size -= cut
            pool.add(tail)
            if was_split:
                stats.split_changed(small, 0, -cut)
            continue
        if was_split:  # the free end block disappears entirely
            stats.split_changed(small, -1, -tail.size)
        if tail.prev is not None:
            tail.prev.next = None
            continue
        alloc.raw.unreserve(segment.ptr)  # nothing left mapped: give the address range back
        del alloc._segments[segment.ptr]
        del alloc._es[key]
        stats.update("segment", small, -1)
