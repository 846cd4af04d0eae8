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
policy would answer with the same block; while its proof holds, malloc's first test takes
the block back for the same request, and what such reuses change waits in a count).

Parts of the class itself, mixins it inherits (their methods keep their names, so a
call costs what it did when they were written here): segments.py (`SegmentSupply`:
new blocks on a cache miss, segments made and given back, empty_cache), capture.py
(`GraphCapture`: the CUDA-graph capture API and which pool a block returns to),
readers.py (`AllocatorReaders`: stats, snapshot, blocks, segments, the memory
fraction), events.py (`StreamUses`: record_stream, and the release of a block that
may wait for stream uses). malloc, free and what they call per tensor stay here.

One lock guards all state; every public method takes it. The lock is re-entrant
because frees arrive from finalisers (a cupy array or numpy buffer collected by the
garbage collector), which can run in the middle of another operation on the same
thread; such a free is queued and done when that operation ends (`_busy`). The memory
of a cuda result holds a `BlockOwner((allocator, block))`, whose finaliser is `free`
itself: a result's free is one Python call.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from bisect import bisect_left
from sys import _getframe

from . import events, expandable, graph_pool, live, reuse
from .block import Block, Segment
from .block_stats import BlockStats
from .capture import GraphCapture
from .config import AllocatorConfig
from .live import INSIDE, OUTSIDE
from .pool import BlockPool
from .readers import AllocatorReaders
from .segments import SegmentSupply
from .sizes import MIN_BLOCK_SIZE, SMALL_SIZE, allocation_size, round_size
from .stream_ids import PER_THREAD_STREAM, per_thread_key, stream_key

__all__ = ["BlockOwner", "CachingAllocator", "round_size", "allocation_size"]

# round_size's plain rule as one add and one mask (MIN_BLOCK_SIZE is a power of two)
_BELOW_BLOCK = MIN_BLOCK_SIZE - 1
_BLOCK_MASK = -MIN_BLOCK_SIZE


class CachingAllocator(SegmentSupply, GraphCapture, AllocatorReaders, events.StreamUses):
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
        # reuse.park's last proof (see there); `_proved`: its block while the proof holds
        # (False when none does: never the parked block, never None), so that malloc's first
        # test takes the block back; `_reuses`: the reuses of it made by that test since
        # their counts were last settled (reuse.settle)
        self._park_proof = None
        self._proved = False
        self._reuses = 0
        # Blocks that merges absorbed, for splits to reuse instead of making new ones:
        # nothing else holds them (a freed block is the allocator's: block.py). A split
        # makes a new Block only when none is spare. Blocks that splits did not make (new
        # segments, expandable growth) can be merged away too, so the list is cut back to
        # segments._SPARES_KEPT whenever such a block is made (_get_new_block), emptied by
        # empty_cache.
        self._spares: list[Block] = []
        self._small = BlockPool(True, owner=self)
        self._large = BlockPool(False, owner=self)
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
        # address -> allocated block, in the order of the mallocs that handed them out; the
        # parked block is listed until its free is done (_unpark), so that the first test
        # does not list it again (reuse.settle puts it last, where those mallocs did)
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
        from the caller up, lie in gpu_tensor for sure: the creation site's search starts
        above them, without looking at them."""
        # The creation site: live.capture_site, written out (every malloc runs it). First,
        # as there: a finaliser that the walk's allocations set off frees before any state
        # is read.
        if live._enabled or live._enabled is None and live.enabled():
            try:
                frame = _getframe(1 + inside)
                while frame.f_code.co_filename in INSIDE:
                    frame = frame.f_back
                code = frame.f_code
                if code.co_filename in OUTSIDE:
                    site = (code, frame.f_lasti)  # the line when read (Block.site)
                else:  # a file not seen before
                    site = live.site_from(frame)
            except (AttributeError, ValueError):  # past the outermost frame (an op called
                site = None  # by C, as an atexit callback): every Python caller was inside
        else:
            site = None
        # acquire/release rather than `with`: half the cost (~75 ns each, measured), and
        # malloc and free are the per-tensor hot path
        self._lock.acquire()
        try:
            outer = not self._busy
            self._busy = True
            try:
                block = self._parked
                if (
                    block is self._proved
                    and nbytes == block.requested_size
                    and stream == block.stream
                    and self.history is None
                ):
                    # The parked block's proof holds (reuse.py: `_proved`) and this is the
                    # request it last served: the free and this malloc cancel, and their
                    # counts wait in `_reuses` (reuse.settle; the block is still listed in
                    # `_allocated`, its place there settled too). (`_busy` is set first: a
                    # finaliser that a trace function's gc sets off between two lines of
                    # this test would otherwise free in its middle.)
                    self._parked = None
                    self._reuses += 1
                    block.tag = None
                    block._site = site
                    return block
                if self._reuses:  # what follows reads or moves what they wait to change
                    reuse.settle(self)
                if nbytes.__class__ is not int:
                    nbytes = int(nbytes)
                # round_size's plain rule, inlined (most requests), before the sign test:
                # a size above 512 B needs none
                if nbytes > MIN_BLOCK_SIZE and self._rounding is None:
                    size = (nbytes + _BELOW_BLOCK) & _BLOCK_MASK
                elif nbytes < 0:
                    raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
                elif self._rounding is None:
                    size = MIN_BLOCK_SIZE
                else:
                    size = round_size(nbytes, self._rounding)
                if stream.__class__ is not int:
                    stream = stream_key(stream)
                elif stream == PER_THREAD_STREAM:  # the calling thread's own stream: see
                    stream = per_thread_key()  # stream_ids.py
                if self._capturing and stream in self._capturing:  # graph_pool.py
                    return self._malloc_captured(
                        self._capturing[stream], stream, size, nbytes, site
                    )
                if block is not None:
                    if (
                        block.size == size
                        and block.stream == stream
                        and not self._events
                        and self.history is None
                    ):
                        # the last proof while it holds, else a new one
                        if block is self._proved:
                            proof = self._park_proof
                        else:
                            proof = reuse.park(self, block)
                        if proof is not None:
                            return self._reuse_parked(block, nbytes, site, proof)
                    self._unpark()
                if self._events and not self._capturing:  # no event queries under capture
                    events.process(self)
                pool = self._small if size <= SMALL_SIZE else self._large
                limit = self._max_split  # never hand an oversize block to a small request,
                if size >= limit:  # nor one far bigger than an oversize request
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

    def free(self, block: Block | None = None) -> None:
        """Return a block. If other streams used it (record_stream), it is reused only once
        events recorded on those streams now have completed.

        Also the finaliser of `BlockOwner((allocator, block))` (its `__del__`): called with
        the owner as `self` and no block, it frees that block and never raises (a finaliser
        runs wherever the last reference goes, late at interpreter exit too). One function
        for both, so that a cuda result's free is one Python call, not two."""
        if block is None:  # the owner's finaliser
            try:
                self, block = self
            except TypeError:  # (free() on an allocator: no block given)
                raise TypeError("CachingAllocator.free() needs the Block to return") from None
            quiet = True
        else:
            quiet = False
        self._lock.acquire()  # not `with`: see malloc
        try:
            if self._allocated.get(block.ptr) is not block:
                self._not_allocated(block)
            if self._busy:  # a finaliser inside another operation of this thread: queue it
                if block is self._parked:
                    self._not_allocated(block)
                del self._allocated[block.ptr]
                self._deferred.append(block)
                return
            self._busy = True
            try:
                if self._parked is not None:
                    if block is self._parked:  # (listed until its free is done)
                        self._not_allocated(block)
                    self._unpark()
                if (
                    block.stream_uses
                    or self.history is not None
                    or block.segment.graph_pool is not None
                ):  # a graph's: never parked
                    if self._reuses:
                        reuse.settle(self)
                    del self._allocated[block.ptr]
                    self._release_allocated(block)
                else:  # proved (_proved) only when the next operation is a malloc of its size;
                    self._parked = block  # listed in `_allocated` until its free is done
            finally:
                if self._deferred:
                    self._end_operation()
                else:
                    self._busy = False
        except Exception:
            if not quiet:
                raise
        finally:
            self._lock.release()

    def _not_allocated(self, block: Block) -> None:
        """free's refusal of a block that is not allocated here (`_allocated` does not list
        it, or it is the parked one: freed already)."""
        raise ValueError(
            f"free of {block!r}: not allocated by this allocator "
            "(double free, or a block from another device)"
        )

    # ----------------------------------------------------------------- operations
    @contextlib.contextmanager
    def _operation(self):
        """Lock held and finaliser frees deferred for the duration (non-hot paths)."""
        with self._lock:
            outer = not self._busy
            self._busy = True
            try:
                if self._reuses:
                    reuse.settle(self)
                if self._parked is not None:
                    self._unpark()
                yield
            finally:
                if outer:
                    self._end_operation()

    def _end_operation(self) -> None:
        try:
            if self._reuses:  # the deferred frees may move what they wait to change
                reuse.settle(self)
            if self._parked is not None:  # a finaliser's free follows the parked one
                self._unpark()
            while self._deferred:
                self._release_allocated(self._deferred.pop())
        finally:
            self._busy = False

    def _unpark(self) -> None:
        """Do the parked free now (reuse.py)."""
        if self._reuses:  # the free moves what they wait to change
            reuse.settle(self)
        block = self._parked
        self._parked = None
        del self._allocated[block.ptr]
        if self.history is None:  # _release_allocated, inlined: a parked block has no stream uses
            block.allocated = False
            if block.size >= self._max_split:
                self._stats.update_single("oversize_allocations", -1)
            self._free_block(block, block.requested_size)
            return
        # history was turned on after the free (registry.set_history and the profiler's
        # memory tap set it directly; a free is never parked while it is on): the free
        # predates the recording, so it is not recorded, as when it was done at once
        history, self.history = self.history, None
        try:
            self._release_allocated(block)
        finally:
            self.history = history

    def _reuse_parked(self, block: Block, nbytes: int, site, proof) -> Block:
        """Cancel the parked free of `block` against this malloc (reuse.py; `proof`: what
        reuse.park proved): exactly what the free and then the malloc would have done to
        the stats and the gc clock. The proof then holds for the same request again
        (`_proved`): malloc's first test."""
        self._parked = None
        _, pool, after, small, split_blocks, split_bytes, oversize = proof
        pool.lookups += 1  # the malloc's best-fit search
        if after is not None:  # the malloc's split gives it back as the pool's free block
            after.gc_count_base = pool.lookups
        self._stats.block_reused(
            small, block.size, block.requested_size, nbytes, split_blocks, split_bytes, oversize
        )
        block.requested_size = nbytes
        block.tag = block.frames = None
        block._site = site
        del self._allocated[block.ptr]  # last in the order, where a malloc puts its block
        self._allocated[block.ptr] = block
        self._proved = block
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
                    pool.owner._proved = False  # (pool.py)
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
        block._site = site
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
        block.tag = block._site = block.frames = block.stream_uses = None
        if self.history is not None:
            self.history.record("free_completed", orig_ptr, orig_size, block.stream)


class BlockOwner(tuple):
    """`BlockOwner((allocator, block))`: the object that holds a block for as long as the
    memory over it lives (cupy's UnownedMemory keeps its owner exactly that long), and
    returns the block when it dies: its finaliser is `CachingAllocator.free` itself (see
    there; a subclass's own `free`, were there one, is not called). A tuple, so that
    making one (once per cuda result) runs no Python code."""

    __slots__ = ()

    allocator = property(lambda self: self[0])
    block = property(lambda self: self[1])

    __del__ = CachingAllocator.free
