"""`GraphCapture`: the allocator's CUDA-graph capture API (torch's beginAllocateToPool & co).

A part of `CachingAllocator` (allocator.py), split off by noun: a mixin whose methods
run on the allocator's state under its lock. The pools themselves and the rules of
capture are graph_pool.py's; here are the allocator's public entry points to them, the
malloc that serves a capturing stream from its graph's pool, and the lookups of which
pool a segment's blocks return to (the device's, or a graph's).
"""

from __future__ import annotations

from . import graph_pool
from .block import Block, Segment
from .pool import BlockPool
from .sizes import SMALL_SIZE
from .stream_ids import stream_key

__all__ = ["GraphCapture"]


class GraphCapture:
    """CachingAllocator's capture API and graph-pool lookups (see the module docstring)."""

    __slots__ = ()

    def begin_allocate_to_pool(self, pool_id: tuple[int, int], stream) -> None:
        """From now on, mallocs on `stream` (capturing a graph) come from pool `pool_id`,
        made here or shared with the graphs that already use it (torch's beginAllocateToPool)."""
        with self._operation():
            graph_pool.begin(self, pool_id, stream_key(stream))

    def end_allocate_to_pool(self, pool_id: tuple[int, int]) -> None:
        """The capture into `pool_id` ended: its stream's mallocs use the device pool again."""
        with self._operation():
            graph_pool.end(self, pool_id)

    def release_pool(self, pool_id: tuple[int, int]) -> None:
        """A graph using `pool_id` is gone (reset or deleted): once no graph uses the pool,
        empty_cache gives its free segments back (torch's releasePool)."""
        with self._operation():
            graph_pool.release(self, pool_id)

    def graph_pools(self) -> dict:
        """{pool id: {'use_count', 'segments'}} of the graph-private pools that exist."""
        with self._operation():
            return {
                pid: {"use_count": gp.use_count, "segments": gp.segments}
                for pid, gp in self._graph_pools.items()
            }

    def is_capturing(self, stream=None) -> bool:
        """Whether `stream` (None: any stream) is capturing into a graph pool."""
        if stream is None:
            return bool(self._capturing)
        return stream_key(stream) in self._capturing

    def _malloc_captured(self, gp, stream: int, size: int, nbytes: int, site) -> Block:
        """malloc on a capturing stream: the graph's private pool, best fit as usual."""
        if self._parked is not None:
            self._unpark()
        pool = gp.small if size <= SMALL_SIZE else gp.large
        limit = (
            self._max_split
            if size < self._max_split
            else (size + self.config.max_non_split_rounding)
        )
        i = pool.fit(stream, size, limit)
        block = pool.block_at(i) if i >= 0 else self._get_new_block(pool, stream, size, nbytes)
        return self._alloc_found_block(pool, i, block, size, nbytes, site)

    def _pool_of(self, segment: Segment) -> BlockPool:
        """The free pool a segment's blocks return to: the device's, or its graph's."""
        gp = segment.graph_pool
        if gp is None:
            return self._small if segment.is_small else self._large
        return gp.small if segment.is_small else gp.large

    def _all_pools(self) -> list[BlockPool]:
        pools = [self._small, self._large]
        for gp in self._graph_pools.values():
            pools += [gp.small, gp.large]
        return pools
