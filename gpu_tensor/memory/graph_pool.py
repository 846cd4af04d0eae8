"""Graph-private memory pools: where a CUDA graph's allocations live (torch's PrivatePool).

A captured graph bakes the addresses of every buffer it touches into its kernels. Those
buffers must stay the graph's while it lives: if eager code got one of them back from the
cache, the next replay would overwrite it. So while a stream is capturing, the allocator
serves that stream's mallocs from a pool of the graph's own (`begin`), whose free blocks
only later captures into the same pool may reuse (torch's `pool=` sharing), and which
`empty_cache` leaves alone until every graph using it has been reset (`release`).

Pool ids are torch's `MempoolId_t` pairs: (graph id, 0) for a graph's own pool,
(0, handle id) for `graph_pool_handle()`. Snapshots show them as `segment_pool_id`.

Rules carried over from torch's CUDACachingAllocator, all under the allocator's lock:
- a pool lives while `use_count` (graphs capturing into or holding it) is positive or it
  still owns segments; at zero use its free segments go back on the next `empty_cache`;
- only mallocs on a capturing stream go to the pool; other streams keep the device pool;
- while any capture is under way, stream-use events are neither queried nor recorded
  (querying is illegal under capture): a block freed with other streams' uses waits in
  `deferred` until no capture is left, then gets its events (torch's
  needs_events_deferred_until_no_capture);
- a pool never grows with expandable segments (mapping pages under capture is not a stream
  operation a graph could replay) and never frees memory while a capture is under way.
"""

from __future__ import annotations

from .pool import BlockPool

__all__ = [
    "GraphPool",
    "begin",
    "end",
    "release",
    "release_freeable",
    "check_not_capturing",
    "guard",
    "active_captures",
]


class GraphPool:
    """The private small and large free pools of one or more CUDA graphs."""

    __slots__ = ("id", "small", "large", "use_count", "segments")

    def __init__(self, pool_id: tuple[int, int], owner=None):
        self.id = pool_id
        # `owner`: the allocator (its parked-reuse proof ends with any change: pool.py)
        self.small = BlockPool(True, self, owner)
        self.large = BlockPool(False, self, owner)
        self.use_count = 1  # graphs that captured into it and were not reset
        self.segments = 0  # raw allocations it owns

    def __repr__(self) -> str:
        return f"GraphPool(id={self.id}, use_count={self.use_count}, segments={self.segments})"


def begin(alloc, pool_id: tuple[int, int], stream: int) -> GraphPool:
    """Route `stream`'s mallocs to pool `pool_id` (made here, or shared: one more use)."""
    pool_id = (int(pool_id[0]), int(pool_id[1]))
    if stream in alloc._capturing:
        raise RuntimeError(
            f"stream {stream:#x} is already capturing into graph pool "
            f"{alloc._capturing[stream].id}; end that capture first"
        )
    gp = alloc._graph_pools.get(pool_id)
    if gp is None:
        gp = alloc._graph_pools[pool_id] = GraphPool(pool_id, alloc)
    else:  # shared (torch's pool=): one more graph uses it
        gp.use_count += 1
    alloc._capturing[stream] = gp
    alloc._proved = False  # reuse.py: a proved block of `stream` must go to the graph's pool
    return gp


def end(alloc, pool_id: tuple[int, int]) -> None:
    """Stop routing mallocs to `pool_id`; when no capture is left, give deferred frees
    their stream-use events."""
    pool_id = (int(pool_id[0]), int(pool_id[1]))
    for stream in [s for s, gp in alloc._capturing.items() if gp.id == pool_id]:
        del alloc._capturing[stream]
    if not alloc._capturing:
        from . import events

        deferred, alloc._capture_deferred = alloc._capture_deferred, []
        for block in deferred:
            events.insert(alloc, block)


def release(alloc, pool_id: tuple[int, int]) -> None:
    """A graph using `pool_id` was reset or deleted: one use fewer. At zero its free
    segments go back to the device on the next empty_cache (its live blocks, the graph's
    outputs that the caller still holds, go back to it when freed)."""
    pool_id = (int(pool_id[0]), int(pool_id[1]))
    gp = alloc._graph_pools.get(pool_id)
    if gp is None or gp.use_count == 0:
        raise RuntimeError(f"graph pool {pool_id} is not in use (released twice?)")
    gp.use_count -= 1
    if gp.use_count == 0 and gp.segments == 0:
        del alloc._graph_pools[pool_id]


def release_freeable(alloc) -> None:
    """empty_cache's part: give back the free whole segments of pools no graph uses."""
    for pool_id, gp in list(alloc._graph_pools.items()):
        if gp.use_count:
            continue
        for pool in (gp.large, gp.small):
            for block in pool:
                if not block.is_split():
                    alloc._release_block(block)
        if gp.segments == 0:
            del alloc._graph_pools[pool_id]


# Captures under way in this process (gpu_tensor/cuda/graphs.py keeps it): what may not run
# during one (a kernel compile, a host sync) checks it with `guard`, one int compare.
active_captures = 0


def guard(what: str) -> None:
    """Raise torch-style when `what` would run during a CUDA graph capture."""
    if active_captures:
        raise RuntimeError(
            f"{what} during CUDA graph capture: captured work only runs at replay, and a "
            "capture cannot wait for the host, synchronize, load a new kernel or leave the "
            "device. Warm the step up first (run it eagerly once or a few times on the "
            "capture stream, as torch's docs ask: it compiles kernels and fills the "
            "allocator), and read results after replay()"
        )


def check_not_capturing(alloc, what: str) -> None:
    """Raise when `what` (which would free or sync device memory) runs during a capture."""
    if alloc._capturing:
        raise RuntimeError(
            f"{what} is not allowed while a CUDA graph is being captured (it would free or "
            "synchronize device memory, which stream capture forbids); call it before "
            "capture_begin or after capture_end"
        )
