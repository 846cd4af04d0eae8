"""`SegmentSupply`: where the allocator's new blocks come from, and where whole segments go.

A part of `CachingAllocator` (allocator.py), split off by noun: a mixin whose methods
run on the allocator's state under its lock, as the helpers beside it do. It holds the
cache-miss path (`_get_new_block`: grow an expandable reservation, or ask the raw source
for a new segment after the release steps torch's policy takes before a retry), the
segment's lifecycle against the raw source (`_alloc_segment`, `_release_block`), giving
the whole cache back (`_release_cached_blocks`, public `empty_cache`) and the OOM error.
The malloc/free hot path stays in allocator.py.
"""

from __future__ import annotations

from . import events, expandable, graph_pool, release
from .block import Block, Segment
from .oom import OutOfMemoryError, oom_report
from .pool import BlockPool
from .raw import RawOutOfMemory
from .sizes import allocation_size

__all__ = ["SegmentSupply"]

_SPARES_KEPT = 64  # absorbed Blocks kept for splits to reuse (CachingAllocator._spares)


class SegmentSupply:
    """CachingAllocator's segments: new blocks on a cache miss, segments made and released."""

    __slots__ = ()

    def empty_cache(self) -> None:
        """Wait for pending stream events, then release every fully free segment (a live
        CUDA graph's private pool keeps its memory: graph_pool.py)."""
        with self._operation():
            graph_pool.check_not_capturing(self, "empty_cache")
            self._release_cached_blocks()

    def _get_new_block(self, pool: BlockPool, stream: int, size: int, nbytes: int) -> Block:
        if len(self._spares) > _SPARES_KEPT:  # see __init__
            del self._spares[_SPARES_KEPT:]
        if pool.graph_pool is not None or self._capturing:
            # under capture: a plain segment for a graph pool (graph_pool.py), and never a
            # release of cached memory (freeing or syncing is illegal while capturing)
            if pool.graph_pool is None and self._expandable:
                block = expandable.grow(self, pool, stream, size)
            else:
                block = self._alloc_segment(
                    allocation_size(size, None), pool.is_small, stream, pool.graph_pool
                )
            if block is None:
                raise self._out_of_memory(nbytes, stream)
            return block
        if self._expandable:
            block = expandable.grow(self, pool, stream, size)
            if block is None:
                self._release_cached_blocks()
                self._stats.scalars["num_alloc_retries"] += 1
                block = expandable.grow(self, pool, stream, size)
            if block is None:
                raise self._out_of_memory(nbytes, stream)
            return block
        alloc_size = allocation_size(
            size,
            self._stats.current("reserved_bytes", "large_pool")
            if self.config.adaptive_segments
            else None,
        )
        if self._limit is not None and self.config.garbage_collection_threshold > 0:
            release.garbage_collect(self)
        if self.config.release_on_miss and not pool.is_small:
            release.release_stale(self, stream, size, alloc_size)
        if self.config.peak_guard and self._reserved + alloc_size > self._high_water:
            release.release_for_peak(self, alloc_size)
        block = self._alloc_segment(alloc_size, pool.is_small, stream)
        if block is None and release.release_oversize(self, size):
            block = self._alloc_segment(alloc_size, pool.is_small, stream)
        if block is None:
            self._release_cached_blocks()
            self._stats.scalars["num_alloc_retries"] += 1
            block = self._alloc_segment(alloc_size, pool.is_small, stream)
        if block is None:
            raise self._out_of_memory(nbytes, stream)
        return block

    def _alloc_segment(
        self, size: int, small: bool, stream: int, graph: graph_pool.GraphPool | None = None
    ) -> Block | None:
        if self._limit is not None and self._reserved + size > self._limit:
            return None
        try:
            ptr = self.raw.alloc(size)
        except RawOutOfMemory:
            return None
        segment = Segment(ptr, size, stream, small)
        if graph is not None:
            segment.graph_pool = graph
            graph.segments += 1
        block = Block(ptr, size, stream, segment)
        segment.head = block
        self._segments[ptr] = segment
        self._reserved += size
        if self._reserved > self._high_water:
            self._high_water = self._reserved
        stats = self._stats
        stats.update("segment", small, 1)
        stats.update("reserved_bytes", small, size)
        if size >= self._max_split:
            stats.update_single("oversize_segments", 1)
        stats.scalars["num_device_alloc"] += 1
        if self.history is not None:
            segment.frames = self.history.frames_for("segment_alloc")
            self.history.record("segment_alloc", ptr, size, stream, segment.frames)
        return block

    def _release_block(self, block: Block) -> None:
        """Give a whole free segment back to the raw source."""
        pool = self._pool_of(block.segment)
        self.raw.free(block.ptr)  # first: if the source fails, our state is unchanged
        pool.remove(block)
        segment = self._segments.pop(block.ptr)
        if segment.graph_pool is not None:
            segment.graph_pool.segments -= 1
        self._reserved -= segment.size
        stats = self._stats
        stats.update("segment", segment.is_small, -1)
        stats.update("reserved_bytes", segment.is_small, -segment.size)
        if segment.size >= self._max_split:
            stats.update_single("oversize_segments", -1)
        stats.scalars["num_device_free"] += 1
        if self.history is not None:
            self.history.record("segment_free", block.ptr, segment.size, segment.stream)

    def _release_cached_blocks(self) -> None:
        events.synchronize_all(self)
        self._spares.clear()  # they may name segments released below: let them all go
        for pool in (self._large, self._small):
            for block in pool:
                if not block.is_split() and not block.segment.expandable:
                    self._release_block(block)
        if self._graph_pools:
            graph_pool.release_freeable(self)
        if self._ranges:
            expandable.shrink(self)

    def _out_of_memory(self, nbytes: int, stream: int) -> OutOfMemoryError:
        self._stats.scalars["num_ooms"] += 1
        return oom_report(self, nbytes, stream)
