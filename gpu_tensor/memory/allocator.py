"""`CachingAllocator`: PyTorch's CUDACachingAllocator policy in plain Python.

The mechanism is injected: `raw` (alloc/free/mem_get_info, see raw.py) and
`event_factory(stream) -> event` with `query()`/`synchronize()` recorded on
that stream. Everything else (rounding, pools, split/merge, stream safety,
stats, OOM recovery) is here, runs on the CPU and is tested with host memory
and fake events. Constants and rules: shared/research/pytorch-memory.md §1.

Helpers that work on its state under the lock: sizes.py (size classes), events.py
(stream-use events), release.py (giving cache back), expandable.py (growing
segments), oom.py (the error report), stream_ids.py (the key a stream's cache lives
under: the handle, or a per-thread identity for cudaStreamPerThread), reuse.py (the
hot path: a free parked until the next operation, cancelled by a malloc that torch's
policy would answer with the same block).

One lock guards all state; every public method takes it. The lock is re-entrant
because frees arrive from finalisers (a cupy array or numpy buffer collected by the
garbage collector), which can run in the middle of another operation on the same
thread; such a free is queued and done when that operation ends (`_busy`).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from bisect import bisect_left

from . import events, expandable, graph_pool, live, release, reuse
from .block import Block, Segment
from .block_stats import BlockStats
from .config import UNLIMITED, AllocatorConfig
from .oom import OutOfMemoryError, oom_report
from .pool import BlockPool
from .raw import RawOutOfMemory
from .sizes import MIN_BLOCK_SIZE, SMALL_SIZE, allocation_size, round_size
from .stream_ids import PER_THREAD_STREAM, per_thread_key, stream_key

__all__ = ["CachingAllocator", "round_size", "allocation_size"]

_SPARES_KEPT = 64  # absorbed Blocks kept for splits to reuse (CachingAllocator._spares)


class CachingAllocator:
    """A per-device caching allocator. See the module docstring; API in CONTRACTS."""

    def __init__(
        self,
        raw,
        device_index: int = 0,
        event_factory=None,
        config: AllocatorConfig | None = None,
        kind: str = "cuda",
    ):
        self.raw = raw
        self.device_index = int(device_index)
        self.kind = kind  # 'cuda' | 'emulated' | anything a test likes
        self.config = config if config is not None else AllocatorConfig.from_env()
        # The config is read once here (changing it later has no effect).
        # round_size consults the config only when power-of-two divisions are configured.
        self._rounding = self.config if any(self.config.roundup_power2_divisions) else None
        # None: the device is synchronous (emulated), so a recorded use is complete at once.
        self._event_factory = event_factory
        self._lock = threading.RLock()
        self._busy = False  # an operation is under way on the thread that holds the lock
        self._deferred: list[Block] = []  # frees that arrived while _busy (finalisers)
        # A free not done yet (reuse.py): done by _unpark before any other operation, or
        # cancelled by a malloc that torch's policy would answer with the same block.
        self._parked: Block | None = None
        # reuse.park's last proof (see there)
        self._park_proof = None
        # Blocks that merges absorbed, for splits to reuse instead of making new ones:
        # nothing else holds them (a freed block is the allocator's: block.py). A split
        # makes a new Block only when none is spare. Blocks that splits did not make (new
        # segments, expandable growth) can be merged away too, so the list is cut back to
        # _SPARES_KEPT whenever such a block is made (_get_new_block), and emptied by
        # empty_cache.
        self._spares: list[Block] = []
        self._small = BlockPool(True)
        self._large = BlockPool(False)
        self._segments: dict[int, Segment] = {}
        # expandable segments: (is_small, stream) -> the reservation that grows; all of them
        self._es: dict[tuple[bool, int], expandable.Reservation] = {}
        self._ranges: list[expandable.Reservation] = []
        asked = self.config.expandable_segments  # None: wherever the source can map pages
        self._expandable = asked is not False and expandable.supported(raw)
        self._max_split = self.config.split_limit(self._expandable)  # torch's, or peak_guard's
        if asked and not self._expandable:
            warnings.warn(
                f"expandable_segments:True ignored: {type(raw).__name__} cannot map "
                "pages (on a GPU it needs NVIDIA's cuda-bindings: pip install "
                "'gpu-tensor[cuda12]' or [cuda13], and a device with virtual "
                "memory management); using plain segments",
                RuntimeWarning,
                stacklevel=2,
            )
        self._allocated: dict[int, Block] = {}
        self._events: dict = {}  # stream -> deque of (event, block); see events.py
        self._stats = BlockStats()
        self._reserved = 0
        self._high_water = 0  # most bytes ever reserved (peak_guard; not reset with the stats)
        self._limit: int | None = None  # per-process fraction cap in bytes
        self._fraction: float | None = None
        self.history = None  # snapshot.HistoryRecorder while _record_memory_history is on
        # CUDA graph capture (graph_pool.py): pool id -> GraphPool; capturing stream key ->
        # the GraphPool its mallocs go to; frees with stream uses waiting for the capture's end
        self._graph_pools: dict[tuple[int, int], graph_pool.GraphPool] = {}
        self._capturing: dict[int, graph_pool.GraphPool] = {}
        self._capture_deferred: list[Block] = []

    # ----------------------------------------------------------------- public API
    def malloc(self, nbytes: int, stream: int = 0, inside: int = 0) -> Block:
        """A block of at least `nbytes` bytes for use on `stream`; raises OutOfMemoryError.

        `stream`: an int handle or an object with `.ptr`. Handle 2 (cudaStreamPerThread) is
        keyed per calling thread, so threads on per-thread default streams never reuse each
        other's freed blocks without an event (stream_ids.py). `inside`: how many frames,
        from the caller up, lie in gpu_tensor for sure: the creation site's search
        (live.capture_site) starts above them, without looking at them."""
        if nbytes.__class__ is not int:
            nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
        if stream.__class__ is not int:
            stream = stream_key(stream)
        elif stream == PER_THREAD_STREAM:  # the calling thread's own stream: see stream_ids.py
            stream = per_thread_key()
        on = live._enabled  # live.enabled(), minus the call once the environment was read
        if on is None:
            on = live.enabled()
        site = live.capture_site(2 + inside) if on else None
        # acquire/release rather than `with`: half the cost (~75 ns each, measured), and
        # malloc and free are the per-tensor hot path
        self._lock.acquire()
        try:
            outer = not self._busy
            self._busy = True
            try:
                if self._rounding is not None:
                    size = round_size(nbytes, self._rounding)
                elif nbytes > MIN_BLOCK_SIZE:  # round_size's plain rule, inlined (hot path)
                    size = -(-nbytes // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE
                else:
                    size = MIN_BLOCK_SIZE
                if self._capturing and stream in self._capturing:  # graph_pool.py
                    return self._malloc_captured(
                        self._capturing[stream], stream, size, nbytes, site
                    )
                block = self._parked
                if block is not None:
                    if (
                        block.size == size
                        and block.stream == stream
                        and not self._events
                        and self.history is None
                    ):
                        # the last proof while its pool has not changed, else a new one
                        proof = self._park_proof
                        if proof is None or proof[0] is not block or proof[2] != proof[1].version:
                            proof = reuse.park(self, block)
                        if proof is not None:
                            return self._reuse_parked(block, nbytes, site, proof)
                    self._unpark()
                if self._events and not self._capturing:  # no event queries under capture
                    events.process(self)
                pool = self._small if size <= SMALL_SIZE else self._large
                max_split = self._max_split
                if size < max_split:
                    limit = max_split  # never hand an oversize block to a small request
                else:  # nor one far bigger than an oversize request
                    limit = size + self.config.max_non_split_rounding
                # pool.fit and pool.block_at, inlined (every malloc that is not a reuse)
                pool.lookups += 1
                keys = pool._keys
                i = bisect_left(keys, (stream, size))
                # keys[i] >= (stream, size): it is this stream's and under `limit` bytes
                # exactly when it sorts below (stream, limit)
                if i < len(keys) and keys[i] < (stream, limit):
                    block = pool._blocks[i]
                else:
                    i = -1
                    block = self._get_new_block(pool, stream, size, nbytes)
                return self._alloc_found_block(pool, i, block, size, nbytes, site)
            finally:
                if outer:
                    if self._deferred:
                        self._end_operation()
                    else:  # what _end_operation does with nothing queued, minus a call
                        self._busy = False
        finally:
            self._lock.release()

    def free(self, block: Block) -> None:
        """Return a block. If other streams used it (record_stream), it is reused only once
        events recorded on those streams now have completed."""
        self._lock.acquire()  # not `with`: see malloc
        try:
            if self._allocated.get(block.ptr) is not block:
                raise ValueError(
                    f"free of {block!r}: not allocated by this allocator "
                    "(double free, or a block from another device)"
                )
            del self._allocated[block.ptr]
            if self._busy:  # a finaliser inside another operation of this thread: queue it
                self._deferred.append(block)
                return
            self._busy = True
            try:
                if self._parked is not None:
                    self._unpark()
                if (
                    block.stream_uses
                    or self.history is not None
                    or block.segment.graph_pool is not None
                ):  # a graph's: never parked
                    self._release_allocated(block)
                else:  # proved (_proved) only when the next operation is a malloc of its size
                    self._parked = block
            finally:
                if self._deferred:
                    self._end_operation()
                else:
                    self._busy = False
        finally:
            self._lock.release()

    def record_stream(self, block: Block, stream, device: int | None = None) -> None:
        """Mark `block` as used on `stream` (torch's Tensor.record_stream). `device`: the
        stream's device when it is not this allocator's: the event at free is then made
        and recorded there (events.insert), as torch's insert_events does."""
        stream = stream_key(stream)  # handle 2: this thread's per-thread default stream
        if device is not None and int(device) != self.device_index:
            stream = (int(device), stream)  # another device's handle 0 is another stream
        with self._operation():
            if not block.allocated:
                raise ValueError(f"record_stream on {block!r}, which is not allocated")
            if stream == block.stream:
                return
            if block.stream_uses is None:
                block.stream_uses = set()
            block.stream_uses.add(stream)

    def empty_cache(self) -> None:
        """Wait for pending stream events, then release every fully free segment (a live
        CUDA graph's private pool keeps its memory: graph_pool.py)."""
        with self._operation():
            graph_pool.check_not_capturing(self, "empty_cache")
            self._release_cached_blocks()

    # ------------------------------------------------------- CUDA graphs (graph_pool.py)
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

    def set_memory_fraction(self, fraction: float) -> None:
        """Cap reserved memory at `fraction` of the device's total."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"memory fraction must be in [0, 1], got {fraction}")
        total = self.raw.mem_get_info()[1]
        with self._operation():
            self._fraction = float(fraction)
            self._limit = int(fraction * total)

    def stats(self) -> dict:
        """torch.cuda.memory_stats() for this device, plus fragmentation figures."""
        with self._operation():
            max_split = self._max_split
            out = self._stats.as_dict(-1 if max_split == UNLIMITED else max_split)
            out["largest_free_block_bytes"] = self._largest_free()
            out["reserved_unallocated_bytes"] = (
                out["reserved_bytes.all.current"] - out["allocated_bytes.all.current"]
            )
            return out

    def reset_peak_stats(self) -> None:
        with self._operation():
            self._stats.reset_peak()

    def reset_accumulated_stats(self) -> None:
        with self._operation():
            self._stats.reset_accumulated()

    def snapshot(self) -> dict:
        """torch's snapshot structure for this device (see snapshot.py)."""
        from .snapshot import build_snapshot

        with self._operation():
            return build_snapshot([self], device=self.device_index)

    def lookup(self, ptr: int) -> Block | None:
        """The allocated block starting at `ptr` (e.g. to tag a CuPy-made array)."""
        return self._allocated.get(ptr)

    def allocated_blocks(self) -> list[Block]:
        with self._operation():
            return list(self._allocated.values())

    def segments(self) -> list[Segment]:
        with self._operation():
            return sorted(self._segments.values(), key=lambda s: s.ptr)

    def mem_get_info(self) -> tuple[int, int]:
        return self.raw.mem_get_info()

    @property
    def memory_fraction(self) -> float | None:
        return self._fraction

    # ----------------------------------------------------------------- operations
    @contextlib.contextmanager
    def _operation(self):
        """Lock held and finaliser frees deferred for the duration (non-hot paths)."""
        with self._lock:
            outer = not self._busy
            self._busy = True
            try:
                if self._parked is not None:
                    self._unpark()
                yield
            finally:
                if outer:
                    self._end_operation()

    def _end_operation(self) -> None:
        try:
            if self._parked is not None:  # a finaliser's free follows the parked one
                self._unpark()
            while self._deferred:
                self._release_allocated(self._deferred.pop())
        finally:
            self._busy = False

    def _unpark(self) -> None:
        """Do the parked free now (reuse.py)."""
        block, self._parked = self._parked, None
        history = self.history
        if history is None:  # _release_allocated, inlined: a parked block has no stream uses
            block.allocated = False
            if block.size >= self._max_split:
                self._stats.update_single("oversize_allocations", -1)
            self._free_block(block, block.requested_size)
            return
        # history was turned on after the free (registry.set_history and the profiler's
        # memory tap set it directly; a free is never parked while it is on): the free
        # predates the recording, so it is not recorded, as when it was done at once
        self.history = None
        try:
            self._release_allocated(block)
        finally:
            self.history = history

    def _reuse_parked(self, block: Block, nbytes: int, site, proof) -> Block:
        """Cancel the parked free of `block` against this malloc (reuse.py; `proof`: what
        reuse.park proved): exactly what the free and then the malloc would have done to
        the stats and the gc clock."""
        self._parked = None
        _, pool, _, after, counts = proof
        pool.lookups += 1  # the malloc's best-fit search
        if after is not None:  # the malloc's split gives it back as the pool's free block
            after.gc_count_base = pool.lookups
        counts(block.requested_size, nbytes)  # the stats: DeviceStats.block_reused
        block.requested_size = nbytes
        block.tag = block.frames = None
        block.site = site
        self._allocated[block.ptr] = block
        return block

    def _release_allocated(self, block: Block) -> None:
        block.allocated = False
        if block.size >= self._max_split:
            self._stats.update_single("oversize_allocations", -1)
        if self.history is not None:
            self.history.record(
                "free_requested", block.ptr, block.size, block.stream, tag=block.tag
            )
        if not block.stream_uses:  # back to its pool now: one stats update for both steps
            self._free_block(block, block.requested_size)
            return
        self._stats.block_released(block.segment.is_small, block.size, block.requested_size)
        if self._capturing:  # no events under capture: wait for its end (graph_pool.py)
            self._capture_deferred.append(block)
        else:
            events.insert(self, block)

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

    # ----------------------------------------------------------------- policy
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

    def _alloc_found_block(self, pool, i: int, block: Block, size: int, nbytes: int, site) -> Block:
        """Hand out `block` (entry `i` of `pool`, or -1: not pooled), split if worth it."""
        segment = block.segment
        left = block.size - size  # what a split would leave free
        if segment.is_small or segment.expandable:  # small blocks split down to 512 B
            split_it = left >= MIN_BLOCK_SIZE
        else:  # large ones only below max_split and when the rest is not small
            split_it = size < self._max_split and left > SMALL_SIZE
        if split_it:
            # The front part is handed out; the remainder stays free after it.
            rest = block
            if self._spares:  # a block a merge let go: the fields that Block() would set
                # and that differ (a free block's others are already a new one's)
                block = self._spares.pop()
                block.ptr = rest.ptr
                block.size = size
                block.stream = rest.stream
                block.segment = segment
            else:
                block = Block(rest.ptr, size, rest.stream, segment)
            prev = block.prev = rest.prev
            if prev is not None:
                prev.next = block
            else:
                segment.head = block
            block.next = rest
            rest.prev = block
            rest.ptr += size
            rest.size = left
            if i < 0:
                pool.add(rest)
            else:  # pool.replace_at, its in-place case inlined (most splits): the rest's
                # key is below its old one, so only the entry before can sort after it
                key = (rest.stream, rest.size, rest.ptr)
                keys = pool._keys
                if i and key < keys[i - 1]:
                    pool.replace_at(i, rest)
                else:
                    keys[i] = key
                    pool._blocks[i] = rest
                    rest.gc_count_base = pool.lookups
                    pool.version += 1
            if prev is not None or rest.next is not None:  # a split free block shrinks
                split_blocks, split_bytes = 0, -size
            else:  # a new split free block appears
                split_blocks, split_bytes = 1, left
        else:
            if i >= 0:
                pool.pop(i)
            size = block.size
            if block.prev is not None or block.next is not None:  # a split free block
                split_blocks, split_bytes = -1, -size  # becomes active
            else:
                split_blocks = split_bytes = 0
        block.allocated = True
        block.requested_size = nbytes
        block.site = site
        self._allocated[block.ptr] = block
        self._stats.block_allocated(pool.is_small, size, nbytes, split_blocks, split_bytes)
        if size >= self._max_split:
            self._stats.update_single("oversize_allocations", 1)
        if self.history is not None:
            block.frames = self.history.frames_for("alloc")
            self.history.record("alloc", block.ptr, block.size, block.stream, block.frames)
        return block

    def _free_block(self, block: Block, requested: int = -1) -> None:
        """Put a no-longer-active block back in its pool, merging free neighbours.
        `requested`: the block's requested size when it is released here too (its free
        had no stream uses to wait for); -1: it was released before (events.py)."""
        segment = block.segment
        small = segment.is_small
        gp = segment.graph_pool
        if gp is None:  # _pool_of, inlined (every free)
            pool = self._small if small else self._large
        else:
            pool = gp.small if small else gp.large
        orig_ptr, orig_size = block.ptr, block.size
        prev, after = block.prev, block.next
        if prev is not None and (prev.allocated or prev.event_count or prev.stream_uses):
            prev = None  # not mergeable: in use, or waiting on stream events
        if after is not None and (after.allocated or after.event_count or after.stream_uses):
            after = None
        absorbed = 0
        if prev is not None:  # absorb the free block before
            block.ptr = prev.ptr
            first = block.prev = prev.prev
            if first is not None:
                first.next = block
            else:
                segment.head = block
            block.size += prev.size
            absorbed = 1
        if after is not None:  # and the one after
            last = block.next = after.next
            if last is not None:
                last.prev = block
            block.size += after.size
            absorbed += 1
        # The absorbed blocks leave the pool (their fields are untouched, so their keys
        # still find them) and the block takes the place of one of them.
        if after is not None:
            if prev is not None:
                pool.remove(prev)
                self._spares.append(prev)
            pool.replace(after, block)
            self._spares.append(after)  # for a split to reuse (_alloc_found_block)
        elif prev is not None:
            pool.replace(prev, block)
            self._spares.append(prev)
        else:
            pool.add(block)
        # inactive_split's change: the absorbed blocks were inactive splits (they had a
        # neighbour), and the merged block is one if it still shares its segment
        if block.prev is not None or block.next is not None:  # orig_size more bytes
            net_blocks, net_bytes = 1 - absorbed, orig_size
        else:  # the whole segment is free: all that was split is gone
            net_blocks, net_bytes = -absorbed, orig_size - block.size
        if requested < 0:
            self._stats.block_deactivated(small, orig_size, net_blocks, net_bytes)
        else:
            self._stats.block_freed(small, orig_size, requested, net_blocks, net_bytes)
        block.tag = block.site = block.frames = block.stream_uses = None
        if self.history is not None:
            self.history.record("free_completed", orig_ptr, orig_size, block.stream)

    # ----------------------------------------------------------------- segments
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

    # ----------------------------------------------------------------- OOM
    def _largest_free(self) -> int:
        return max(self._small.largest(), self._large.largest())

    def _out_of_memory(self, nbytes: int, stream: int) -> OutOfMemoryError:
        self._stats.scalars["num_ooms"] += 1
        return oom_report(self, nbytes, stream)
