"""PinnedPool: the caching allocator for page-locked host memory (policy only).

The pool keeps segments, free blocks, event gating and stats in plain Python. The two
mechanisms it needs are injected, so every line runs on a CPU with fake pointers and events:

- ``raw``: the raw-source protocol of ``memory/raw.py``: ``alloc(nbytes) -> int`` (a
  page-locked address; raises ``RawOutOfMemory`` when the system refuses) and ``free(ptr)``.
  The page-locking ones live in ``gpu_tensor/backends/cuda_pinned.py``.
- ``event_factory(stream) -> event``: records an event on ``stream`` now and returns an object
  whose ``query()`` says whether the stream has passed it.

Beside it: pinned_block.py (the sizes and records this counts in) and pinned_free.py (the
free-block index, best fit, split and merge: a base class of the pool).

Reuse rule (the reason a pinned pool is subtle): a block freed while copies that read or
wrote it may still be in flight must not be handed out again. Every stream that used a
block is noted (``record_stream``); at ``free`` an event is recorded on each of them and the
block becomes free only once all of those events have completed. Pending blocks are polled
as a set, not only the oldest (CuPy's watcher checks the head only).

Sizes (why this wastes far less than torch's and CuPy's pools, which round every request to
a power of two and reuse only exact buckets: up to 100 % overhead, 10 GiB pins 16 GiB):

- A block is a whole number of 4 KiB pages: **less than one page of waste per live block.**
- A request above 1 MiB that finds no free block pins a new segment of ``round_size(n)``
  bytes: eight classes per power of two, so **a segment is at most 12.5 % larger than the
  request that created it** (n = 2**k + 1 -> 1.125 * 2**k); the tail is a free block that
  later requests use. Requests up to 1 MiB share 2 MiB segments (one driver call serves many
  small buffers, as in the device allocator's small pool).
- Free blocks are found best-fit and split; neighbours merge on free. A miss first releases
  the segments that are entirely free (too small for the request, or they would have fit),
  so a loader whose batch sizes vary does not accumulate stale sizes. On a varying-sequence-
  length loader trace this keeps pinned bytes at ~1.24x the live peak with 15 pins, where
  power-of-two buckets need ~2x (profiling/bench_transfer.py, "pool waste").
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import threading
import time

from gpu_tensor.memory.pinned_block import (
    SMALL_REQUEST,
    SMALL_SEGMENT,
    PinnedBlock,
    PinnedMemoryError,
    _pages,
    _Segment,
    _Timing,
    round_size,
)
from gpu_tensor.memory.pinned_free import PinnedFreeBlocks
from gpu_tensor.memory.raw import RawOutOfMemory
from gpu_tensor.memory.stats import DeviceStats

__all__ = [
    "PinnedBlock",
    "PinnedMemoryError",
    "PinnedPool",
    "round_size",
    "default_pool",
    "set_default_factory",
    "host_memory_stats",
    "empty_host_cache",
]


class PinnedPool(PinnedFreeBlocks):
    """Caching pool of page-locked host memory; thread-safe.

    ``max_cached_bytes`` caps the free bytes kept in wholly free segments (None: keep them
    until ``empty_cache`` or a miss releases them).
    """

    def __init__(self, raw, event_factory=None, *, max_cached_bytes: int | None = None):
        self._raw = raw
        self._event_factory = event_factory
        self._max_cached = max_cached_bytes
        self._lock = threading.RLock()
        self._busy = threading.local()  # depth of this thread's calls inside the pool
        self._deferred: collections.deque = collections.deque()  # frees from finalizers
        # free blocks per pool, sorted by (size, ptr) for best fit
        self._free = {True: [], False: []}
        self._free_blocks: dict[int, PinnedBlock] = {}  # ptr -> free block
        self._whole_free_segments: dict[int, _Segment] = {}  # ptr -> segment with no use
        self._pending: list[tuple[list, PinnedBlock]] = []  # (events, block) awaiting streams
        self._seg_starts: list[int] = []  # sorted segment ptrs, for owner lookup by address
        self._segments: dict[int, _Segment] = {}
        self._stats = DeviceStats()
        self._alloc_time = _Timing()
        self._free_time = _Timing()

    @contextlib.contextmanager
    def _locked(self):
        with self._lock:
            self._busy.depth = getattr(self._busy, "depth", 0) + 1
            try:
                self._drain_deferred()
                yield
                self._drain_deferred()
            finally:
                self._busy.depth -= 1

    def _drain_deferred(self) -> None:
        while self._deferred:
            self._free_locked(self._deferred.popleft())

    # -- allocation -------------------------------------------------------------------------
    def malloc(self, nbytes: int) -> PinnedBlock:
        """A block of at least ``nbytes`` page-locked bytes; reuses free pinned pages."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"pinned allocation size must be >= 0, got {nbytes}")
        size = _pages(nbytes)
        small = nbytes <= SMALL_REQUEST
        with self._locked():
            self._process_events()
            block = self._best_fit(small, size)
            if block is None:
                self._release_free_segments(small)
                block = self._new_segment(small, size, nbytes)
            self._split(block, size)
            block.allocated = True
            block.requested_size = nbytes
            block.streams = set()
            block.tag = None
            self._update(
                block,
                allocation=1,
                allocated_bytes=block.size,
                requested_bytes=nbytes,
                active=1,
                active_bytes=block.size,
            )
            return block

    def _new_segment(self, small: bool, size: int, requested: int) -> PinnedBlock:
        seg_size = SMALL_SEGMENT if small else round_size(requested)
        try:
            ptr = self._timed_raw_alloc(seg_size)
        except RawOutOfMemory:
            # Free pinned pages of the other pool are memory we are not using: give them
            # back and try once more before failing (the device allocator's retry rule).
            self._stats.scalars["num_alloc_retries"] += 1
            self._release_free_segments(None)
            try:
                ptr = self._timed_raw_alloc(seg_size)
            except RawOutOfMemory as exc:
                self._stats.scalars["num_ooms"] += 1
                raise PinnedMemoryError(
                    f"could not page-lock {seg_size} bytes of host memory (requested "
                    f"{requested}); this pool holds {self._stats.current('reserved_bytes')} "
                    f"bytes pinned, {self._stats.current('active_bytes')} of them in use or "
                    "awaiting copies. Free pinned tensors you no longer need, raise the "
                    "locked-memory limit (ulimit -l), or use pageable memory for this buffer."
                ) from exc
        seg = _Segment(ptr=ptr, size=seg_size, small=small)
        seg.first = PinnedBlock(ptr=ptr, size=seg_size, segment=seg)
        bisect.insort(self._seg_starts, ptr)
        self._segments[ptr] = seg
        self._update(seg.first, segment=1, reserved_bytes=seg_size)
        return seg.first

    def _timed_raw_alloc(self, size: int) -> int:
        start = time.perf_counter()
        ptr = self._raw.alloc(size)
        self._alloc_time.add((time.perf_counter() - start) * 1e6)
        return int(ptr)

    # -- stream use and free ----------------------------------------------------------------
    def record_stream(self, block: PinnedBlock, stream) -> None:
        """Note that work on ``stream`` reads or writes ``block``; reuse waits for it."""
        with self._locked():
            if not block.allocated:
                raise ValueError(f"record_stream on {block!r}, which is not allocated")
            block.streams.add(stream)

    def free(self, block: PinnedBlock) -> None:
        """Give ``block`` back. It becomes reusable once every stream that used it has passed
        an event recorded now."""
        if getattr(self._busy, "depth", 0):
            # Called from a finalizer that the garbage collector ran in the middle of one of
            # our own calls on this thread (the lock is reentrant): state may be half-updated,
            # so queue it; the running call drains the queue before it returns.
            self._deferred.append(block)
            return
        with self._locked():
            self._free_locked(block)

    def _free_locked(self, block: PinnedBlock) -> None:
        if not block.allocated or self._segments.get(block.segment.ptr) is not block.segment:
            raise ValueError(f"free of {block!r}, which this pool did not hand out")
        block.allocated = False
        self._update(
            block, allocation=-1, allocated_bytes=-block.size, requested_bytes=-block.requested_size
        )
        streams, block.streams = block.streams, set()
        if streams:
            if self._event_factory is None:
                raise RuntimeError("block used on streams but the pool has no event factory")
            self._pending.append(([self._event_factory(s) for s in streams], block))
        else:
            self._make_free(block)

    def _process_events(self) -> None:
        if not self._pending:
            return
        still = []
        for events, block in self._pending:
            remaining = [e for e in events if not e.query()]
            if remaining:
                still.append((remaining, block))
            else:
                self._make_free(block)
        self._pending = still

    def process_events(self) -> None:
        """Free the blocks whose copies have all completed."""
        with self._locked():
            self._process_events()

    def synchronize(self) -> None:
        """Wait for every pending event (blocks until in-flight copies are done)."""
        with self._locked():
            pending, self._pending = self._pending, []
            self._stats.scalars["num_sync_all_streams"] += 1
        for events, _ in pending:
            for event in events:
                event.synchronize()
        with self._locked():
            for _, block in pending:
                self._make_free(block)

    # -- release ----------------------------------------------------------------------------
    def empty_cache(self) -> None:
        """Return every wholly free segment to the system. Blocks awaiting copies stay."""
        with self._locked():
            self._process_events()
            self._release_free_segments(None)

    def _release_free_segments(self, small: bool | None) -> None:
        for seg in list(self._whole_free_segments.values()):
            if small in (None, seg.small):
                self._release_segment(seg)

    def _release_segment(self, seg: _Segment) -> None:
        self._remove_free(seg.first)
        start = time.perf_counter()
        self._raw.free(seg.ptr)
        self._free_time.add((time.perf_counter() - start) * 1e6)
        self._seg_starts.pop(bisect.bisect_left(self._seg_starts, seg.ptr))
        del self._segments[seg.ptr]
        self._update(seg.first, segment=-1, reserved_bytes=-seg.size)
        seg.first = None

    # -- queries ----------------------------------------------------------------------------
    def owner(self, ptr: int) -> PinnedBlock | None:
        """The block whose bytes contain address ``ptr`` (allocated or not), else None.
        This is how ``is_pinned`` answers without a driver call."""
        with self._locked():
            i = bisect.bisect_right(self._seg_starts, ptr) - 1
            if i < 0:
                return None
            seg = self._segments[self._seg_starts[i]]
            if ptr >= seg.ptr + seg.size:
                return None
            block = seg.first
            while block is not None and ptr >= block.ptr + block.size:
                block = block.next
            return block

    def _update(self, block: PinnedBlock, **amounts: int) -> None:
        small = block.segment.small
        for name, amount in amounts.items():
            self._stats.update(name, small, amount)

    def stats(self) -> dict:
        """Flat dict in the device allocator's vocabulary (`memory/stats.py`:
        'allocated_bytes.all.current', ...; small_pool = requests <= 1 MiB in 2 MiB segments)
        plus torch's host-only keys: num_host_alloc / num_host_free, host_alloc_time.* /
        host_free_time.* (µs); cached_bytes (pinned but not active) and pending_blocks
        (freed, awaiting stream events)."""
        with self._locked():
            self._process_events()
            out = self._stats.as_dict(max_split_size=-1)
            out["num_host_alloc"] = self._alloc_time.count
            out["num_host_free"] = self._free_time.count
            out.update(self._alloc_time.as_dict("host_alloc_time"))
            out.update(self._free_time.as_dict("host_free_time"))
            out["cached_bytes"] = self._stats.current("reserved_bytes") - self._stats.current(
                "active_bytes"
            )
            out["pending_blocks"] = len(self._pending)
            return out

    def reset_peak_stats(self) -> None:
        with self._locked():
            self._stats.reset_peak()


# -- the process-wide pool ------------------------------------------------------------------
_default: PinnedPool | None = None
_default_factory = None
_default_lock = threading.Lock()


def set_default_factory(factory) -> None:
    """Register how the process-wide pool is built (``factory() -> PinnedPool``).
    `gpu_tensor.transfer` does it on import: the page-locking source and the event type live
    in lower layers (backends/, cuda/streams), which this module must not import."""
    global _default_factory
    _default_factory = factory


def default_pool() -> PinnedPool:
    """The process's pinned pool, created on first use (page-locking through CUDA on a GPU
    machine, plain host pages when cuda is emulated)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                if _default_factory is None:
                    raise RuntimeError(
                        "the pinned pool has no page-locking source yet: import "
                        "gpu_tensor.transfer (it registers one) before asking for the pool"
                    )
                _default = _default_factory()
    return _default


def host_memory_stats() -> dict:
    """Stats of the pinned pool (zeros before first use; never initialises CUDA)."""
    if _default is None:
        return PinnedPool(raw=None).stats()
    return _default.stats()


def empty_host_cache() -> None:
    """Release cached pinned blocks to the system (blocks still used by copies stay)."""
    if _default is not None:
        _default.empty_cache()
