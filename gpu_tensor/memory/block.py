"""`Block` and `Segment`: the allocator's bookkeeping records.

A segment is one raw allocation (one cudaMalloc on a GPU). Its blocks tile it
exactly, in address order, as a doubly linked list (`prev`/`next`); a block
with neither neighbour is an unsplit segment. Only `CachingAllocator` mutates
these records, under its lock; callers read `ptr`, `size`, `requested_size`,
`stream` and own `tag`.
"""

from __future__ import annotations

__all__ = ["Block", "Segment"]


class Segment:
    """One raw allocation: base address, size, pool and the stream it was made for."""

    __slots__ = (
        "ptr",
        "size",
        "stream",
        "is_small",
        "head",
        "site",
        "frames",
        "expandable",
        "reservation",
        "graph_pool",
        "host",
    )

    def __init__(self, ptr: int, size: int, stream: int, is_small: bool):
        self.ptr = ptr
        self.size = size  # bytes (for an expandable segment: one mapped run of its reservation)
        self.stream = stream
        self.is_small = is_small
        self.head: Block | None = None
        self.site = None  # creation site of the allocation that caused the segment
        self.frames = None  # full stack, only while history with stacks is recorded
        self.expandable = False  # True: a run of mapped pages in a reservation (expandable.py)
        self.reservation = None  # expandable.Reservation of an expandable segment
        self.graph_pool = None  # graph_pool.GraphPool owning it (CUDA graph capture), or None
        self.host = None  # the caller's view of its bytes, made once (emulated cuda: a memoryview)

    def blocks(self):
        """The segment's blocks in address order."""
        block = self.head
        while block is not None:
            yield block
            block = block.next

    def tail(self):
        """The last block (expandable segments grow and shrink at their end)."""
        block = self.head
        while block is not None and block.next is not None:
            block = block.next
        return block

    def __repr__(self) -> str:
        pool = "small" if self.is_small else "large"
        return f"Segment(ptr={self.ptr:#x}, size={self.size}, stream={self.stream}, {pool})"


class Block:
    """A range of a segment, either handed to a caller or free in a pool.

    The trap: once freed, the object is the allocator's again and its fields change
    (it may be merged, split, or handed out anew); keep nothing from it after `free`.
    """

    __slots__ = (
        "ptr",
        "size",
        "requested_size",
        "stream",
        "segment",
        "prev",
        "next",
        "allocated",
        "stream_uses",
        "event_count",
        "gc_count_base",
        "tag",
        "_site",
        "frames",
        "__weakref__",
    )

    def __init__(self, ptr: int, size: int, stream: int, segment: Segment):
        self.ptr = ptr
        self.size = size
        self.requested_size = 0
        self.stream = stream
        self.segment = segment
        self.prev: Block | None = None
        self.next: Block | None = None
        self.allocated = False
        self.stream_uses: set | None = None  # other streams that used it (record_stream)
        self.event_count = 0  # events still pending before it may return to its pool
        self.gc_count_base = 0  # pool's lookup counter when cached; age = counter - base
        self.tag: dict | None = None  # caller's description, e.g. {"shape":..., "dtype":...}
        self._site = None  # see `site`
        self.frames = None  # full stack, only while history with stacks is recorded

    @property
    def site(self):
        """(filename, line, function) of the user code that asked for the block, or None.
        malloc stores (code object, f_lasti) instead, on every call: a frame's f_lineno walks
        its code's line table (~0.1 us in a small function, more in a long one), so the line
        is worked out here, when the site is first read, as f_lineno would have given it."""
        site = self._site
        if site is not None and len(site) == 2:
            site = self._site = decode_site(*site)
        return site

    @site.setter
    def site(self, value) -> None:
        self._site = value

    @property
    def is_small(self) -> bool:
        return self.segment.is_small

    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None

    def __repr__(self) -> str:
        state = "allocated" if self.allocated else "free"
        return f"Block(ptr={self.ptr:#x}, size={self.size}, stream={self.stream}, {state})"


def decode_site(code, lasti: int) -> tuple:
    """(filename, line, function) of a frame running `code` at byte offset `lasti` (its
    f_lasti): the line f_lineno gives there (the code's line table, co_lines)."""
    line = None  # (f_lineno is None there too)
    for start, end, at in code.co_lines():
        if start <= lasti < end:
            line = at
            break
    return (code.co_filename, line, code.co_name)
