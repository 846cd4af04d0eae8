"""The records of expandable segments and the one cut that changes them (expandable.py grows
and shrinks with these).

A `Reservation` is one reserved address range of a (pool, stream); the mapped parts of it
that the allocator owns are `Segment`s ("runs"), tiled by blocks. Pages are whole units of a
pool's page size (`_page`); `_free_pages` finds the whole pages inside a free block, and
`_carve` takes such pages out of it, cutting its run in two, for both growing (the pages are
restitched elsewhere) and shrinking (they are unmapped). A cut changes segment counts,
inactive_split and reserved bytes of up to both pools at once: `_add` sums those changes per
pool and `_apply` applies them in an order no peak can see through.

Its own file because these are what both directions share: growing and shrinking are
policy, this is the bookkeeping of ranges and runs they rely on.
"""

from __future__ import annotations

from .block import Block, Segment
from .sizes import SMALL_BUFFER

__all__ = ["LARGE_PAGE", "Reservation"]

# Large-pool page, unless the source names its own (`large_page`): the GPU's granularity.
# A page is what a hole's edges strand: on profiling/bench_allocator.py's 24 generated
# traces (seeds 0-3, 10-13) the worst peak reserved / peak allocated with restitching was
# 1.069 with 2 MiB pages, 1.109 with 4 MiB and 1.178 with 8 MiB. But a page is also one
# physical handle, and on a GPU the cost of mapping grows with the number of handles
# (torch measured 10 separate 2 MiB pages at 10x the time of one 20 MiB one, and map
# changes sync with the GPU in part; 2 MiB handles made growing by 10 GB 5k cuMemCreate +
# 5k cuMemMap calls): cuda_vmm's VmmSource asks 20 MiB, as torch. On the same 24 traces
# today (2026-12-04) 20 MiB pages gave a worst ratio of 1.090 (2 MiB: 1.033) for 10x fewer
# handles (15,027 vs 147,953). Host pages cost nothing to map, so HostRawSource keeps the
# granularity.
LARGE_PAGE = 2 << 20


class Reservation:
    """One reserved address range of a (pool, stream): [base, base + size)."""

    __slots__ = ("base", "size", "end", "last", "runs", "aliases", "host")

    def __init__(self, base: int, size: int):
        self.base = base
        self.size = size
        self.end = base  # addresses from here on were never mapped since the last shrink
        self.last: Segment | None = None  # the run that ends at `end`: it grows in place
        self.runs = 0  # Segments in this range
        self.aliases: dict[int, int] = {}  # ptr -> bytes: old addresses of restitched pages
        self.host = None  # the caller's view of the whole range, made once (emulated cuda)

    def __repr__(self) -> str:
        return (
            f"Reservation(base={self.base:#x}, size={self.size}, "
            f"used={self.end - self.base}, runs={self.runs})"
        )


def _page(alloc, small: bool) -> int:
    """The pool's page, a whole number of the source's mapping granularity (a CUDA device's,
    backends/cuda_vmm.py; HostRawSource's 2 MiB); the large pool's is the source's
    `large_page` where it has one."""
    page = SMALL_BUFFER if small else getattr(alloc.raw, "large_page", LARGE_PAGE)
    granularity = getattr(alloc.raw, "granularity", 1)
    return -(-page // granularity) * granularity


def _round(n: int, page: int) -> int:
    return -(-n // page) * page


def _free_pages(block: Block, page: int) -> tuple[int, int]:
    """The whole pages inside `block`, [start, stop) (empty when start >= stop)."""
    base = block.segment.reservation.base
    start = base + _round(block.ptr - base, page)
    stop = base + (block.ptr + block.size - base) // page * page
    return start, stop


def _split_part(block: Block | None) -> tuple[int, int]:
    """(blocks, bytes) `block` adds to inactive_split, as verify.recount counts it."""
    if block is None or block.allocated or block.event_count or not block.is_split():
        return 0, 0
    return 1, block.size


def _add(row: list, changes) -> None:
    for i, change in enumerate(changes):
        row[i] += change


def _apply(stats, totals: dict) -> None:
    """Apply per-pool changes {is_small: [segments, inactive_split blocks, inactive_split
    bytes, reserved bytes]} at once, every fall before any rise, so no stat's peak sees a
    state that never existed (a cut may split a run in two, another remove one)."""
    for small, (segments, split_blocks, split_bytes, reserved) in totals.items():
        if reserved < 0:
            stats.update("reserved_bytes", small, reserved)
        if segments < 0:
            stats.update("segment", small, segments)
        if split_blocks or split_bytes:
            stats.split_changed(small, split_blocks, split_bytes)
    for small, (segments, _, _, reserved) in totals.items():
        if reserved > 0:
            stats.update("reserved_bytes", small, reserved)
        if segments > 0:
            stats.update("segment", small, segments)


def _carve(alloc, block: Block, start: int, stop: int) -> tuple[int, int, int]:
    """Take [start, stop) (whole pages) out of the free pooled `block`: its run is cut in
    two there, and the pieces of `block` on either side stay free in their runs. Returns
    the changes of the segment count and of inactive_split (blocks, bytes), for the caller
    to apply."""
    segment = block.segment
    small = segment.is_small
    pool = alloc._small if small else alloc._large
    res = segment.reservation
    prev, after = block.prev, block.next
    before = [_split_part(b) for b in (prev, block, after)]
    pool.remove(block)
    end, seg_end = block.ptr + block.size, segment.ptr + segment.size
    upper = Block(stop, end - stop, block.stream, None) if stop < end else None
    if upper is not None:
        upper.next = after
        if after is not None:
            after.prev = upper
    runs = 0
    upper_run = None
    if stop < seg_end:  # what follows the cut becomes its own run
        first = upper if upper is not None else after
        first.prev = None
        upper_run = Segment(stop, seg_end - stop, segment.stream, small)
        upper_run.expandable, upper_run.reservation = True, res
        upper_run.site, upper_run.frames = segment.site, segment.frames
        upper_run.head = first
        b = first
        while b is not None:
            b.segment = upper_run
            b = b.next
        alloc._segments[stop] = upper_run
        runs += 1
    lower = block if start > block.ptr else None
    if lower is not None:
        lower.size = start - block.ptr
        lower.next = None
        segment.size = start - segment.ptr
    elif prev is not None:
        prev.next = None
        segment.size = start - segment.ptr
    else:  # the cut starts the run: nothing of it is left below
        del alloc._segments[segment.ptr]
        block.segment = None
        runs -= 1
    if res.last is segment:  # the run that ends at res.end, if any, is what follows the cut
        res.last = upper_run
    res.runs += runs
    for piece in (lower, upper):
        if piece is not None:
            pool.add(piece)
    after_parts = [_split_part(b) for b in (prev, lower, upper, after)]
    return (
        runs,
        sum(n for n, _ in after_parts) - sum(n for n, _ in before),
        sum(b for _, b in after_parts) - sum(b for _, b in before),
    )
