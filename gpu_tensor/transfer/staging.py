"""Chunked staging of pageable host memory through pooled pinned buffers.

Mechanism comes in as arguments: ``stream`` needs ``record_event() -> event`` (with
``synchronize()``) and ``synchronize()`` (a `gpu_tensor.cuda.Stream`, or a test's fake copy
engine); ``memcpy(dst, src, nbytes)`` enqueues one copy on it; ``pool`` is a PinnedPool.

A copy engine can only read or write page-locked memory at full speed, and the driver's own
staging of pageable memory is synchronous and serialised (research/performance.md §3.1). So
pageable transfers run as a pipeline over ``depth`` pinned slots taken from the pinned pool:

    H2D: worker threads copy chunk k+1.. of the source into free slots while the copy engine
         drains chunk k; each slot is refilled only after the event recorded behind its DMA.
    D2H: the copy engine fills slots ahead; workers wait on each slot's event and copy it out
         into the destination, then the slot takes the next chunk.

numpy releases the GIL for large copies and ctypes releases it around memmove, so the host
copies really run in parallel. Strided host arrays are gathered/scattered by the workers
straight into/out of the slots (no extra contiguous temporary): each piece is a sub-view
``a[i0, ..., i_{d-1}, lo:hi]`` whose C-order bytes are contiguous in the device buffer.

Chunk size and depth (chosen, not yet tuned on the H200 — see profiling/bench_transfer.py):
``CHUNK_BYTES`` = 8 MiB keeps the per-chunk cost (event + enqueue, a few µs) under ~5 % of the
~150 µs a chunk takes at ~55 GB/s, while a transfer of 32 MiB still splits into pieces that
overlap. ``WORKERS`` = min(6, cores): one thread copies ~8–12 GB/s into pinned memory, so about
five are needed to feed a PCIe Gen5 x16 link (~55 GB/s). ``DEPTH`` = WORKERS + 2 slots so every
worker has a slot while two chunks sit in the copy engine; that is 64 MiB of pinned memory
per in-flight transfer at 6 workers.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpu_tensor.memory.pinned import PinnedPool
from gpu_tensor.memory.raw import host_array

__all__ = ["StagingConfig", "config", "stage_h2d", "stage_d2h", "plan_pieces", "parallel_copy"]


class StagingConfig:
    """The pipeline's knobs (module-level `config`; the benchmark sweeps them)."""

    def __init__(self) -> None:
        self.chunk_bytes = 8 << 20  # see module docstring: <5 % per-chunk overhead at 55 GB/s
        self.min_chunk_bytes = 1 << 20  # below this a piece is not worth a thread handoff
        self.workers = max(1, min(6, os.cpu_count() or 1))  # ~5 copies feed one Gen5 link
        self.depth = self.workers + 2  # a slot per worker + two chunks inside the copy engine

    def pieces_for(self, nbytes: int) -> int:
        """Target chunk size for a transfer of ``nbytes``: at least ``depth`` pieces when the
        transfer is big enough, so filling overlaps DMA even for mid-sized tensors."""
        if nbytes <= self.min_chunk_bytes:
            return nbytes
        per_slot = -(-nbytes // self.depth)
        # A power of two between the bounds: slots of a few sizes only, so the pinned pool
        # reuses them across transfers of different sizes instead of pinning new ones.
        chunk = min(self.chunk_bytes, max(self.min_chunk_bytes, 1 << (per_slot - 1).bit_length()))
        return -(-chunk // 4096) * 4096  # whole pages: DMA and page-locking like them


config = StagingConfig()
_executor: ThreadPoolExecutor | None = None
_executor_workers = 0
_executor_lock = threading.Lock()


def _pool_of_workers() -> ThreadPoolExecutor:
    global _executor, _executor_workers
    if _executor is None or _executor_workers != config.workers:
        with _executor_lock:
            if _executor is None or _executor_workers != config.workers:
                _executor = ThreadPoolExecutor(config.workers, thread_name_prefix="gt-staging")
                _executor_workers = config.workers
    return _executor


def plan_pieces(a: np.ndarray, chunk: int) -> list[tuple[int, int, np.ndarray]]:
    """Split host array ``a`` into ``(byte_offset, nbytes, view)`` pieces of at most ``chunk``
    bytes (or one element), where ``byte_offset`` is the piece's place in ``a``'s C-order
    bytes. Contiguous arrays split as flat bytes; strided ones along one axis."""
    total = a.nbytes
    if total == 0:
        return []
    if a.flags.c_contiguous:
        flat = a.reshape(-1).view(np.uint8)
        return [
            (lo, min(chunk, total - lo), flat[lo : lo + chunk]) for lo in range(0, total, chunk)
        ]
    shape = a.shape
    # d: the first axis whose trailing block a[i0..i_{d-1}] fits in one chunk.
    inner = total
    d = 0
    while inner > chunk and d < len(shape):
        inner //= shape[d]
        d += 1
    if d == 0:
        return [(0, total, a)]
    rows = max(1, chunk // inner)  # how many consecutive indices of axis d-1 per piece
    pieces = []
    for prefix in np.ndindex(*shape[: d - 1]):
        base = 0
        for axis, i in enumerate(prefix):
            base = base * shape[axis] + i
        base *= shape[d - 1]
        for lo in range(0, shape[d - 1], rows):
            hi = min(lo + rows, shape[d - 1])
            view = a[prefix + (slice(lo, hi),)]
            pieces.append(((base + lo) * inner, (hi - lo) * inner, view))
    return pieces


def _slot_view(slot_bytes: np.ndarray, view: np.ndarray) -> np.ndarray:
    """A C-contiguous array in the slot with ``view``'s shape and dtype."""
    return np.ndarray(view.shape, view.dtype, buffer=slot_bytes, offset=0)


class _Slots:
    """``n`` pinned blocks of ``size`` bytes from the pool, with a host array over each."""

    def __init__(self, pool: PinnedPool, n: int, size: int):
        self.pool = pool
        self.blocks = []
        try:
            for _ in range(n):
                self.blocks.append(pool.malloc(size))
        except BaseException:
            self.release(None)
            raise
        self.arrays = [host_array(b.ptr, size) for b in self.blocks]

    def release(self, stream) -> None:
        """Back to the pool; with ``stream``, each waits for the copies queued there."""
        for block in self.blocks:
            if stream is not None:
                self.pool.record_stream(block, stream)
            self.pool.free(block)
        self.blocks = []


def _finish(futures, stream) -> None:
    """After a failure: stop queued work, wait for running work (it may be writing a slot),
    and let the stream drain before the slots can be reused."""
    for f in futures:
        f.cancel()
    for f in futures:
        if not f.cancelled():
            try:
                f.result()
            except BaseException:  # the first error is the one re-raised by the caller
                pass
    stream.synchronize()


def _staged(host: np.ndarray, pool: PinnedPool):
    """(pieces, depth, slots) for a copy to or from ``host``: its pieces, how many are in
    flight at once, and that many pinned slots of the largest piece's size; None when
    there is nothing to copy."""
    pieces = plan_pieces(host, config.pieces_for(host.nbytes))
    if not pieces:
        return None
    depth = min(config.depth, len(pieces))
    return pieces, depth, _Slots(pool, depth, max(n for _, n, _ in pieces))


def stage_h2d(src: np.ndarray, dst_ptr: int, stream, pool: PinnedPool, memcpy) -> None:
    """Copy host array ``src`` (any strides) into the C-contiguous device buffer at
    ``dst_ptr``. Returns once every byte of ``src`` has been read (the caller may then
    overwrite it); the last DMAs may still be in flight on ``stream``.
    ``memcpy(dst, src, nbytes)`` enqueues one async H2D copy on ``stream``."""
    staged = _staged(src, pool)
    if staged is None:
        return
    pieces, depth, slots = staged
    events: list = [None] * depth
    futures: dict = {}

    def fill(k: int) -> None:
        i = k % depth
        if events[i] is not None:
            events[i].synchronize()  # the slot's previous chunk has left for the device
        _, _, view = pieces[k]
        np.copyto(_slot_view(slots.arrays[i], view), view, casting="no")

    try:
        if len(pieces) == 1:
            fill(0)  # one piece: no thread handoff
            memcpy(dst_ptr, slots.blocks[0].ptr, pieces[0][1])
        else:
            workers = _pool_of_workers()
            for k in range(depth):
                futures[k] = workers.submit(fill, k)
            for k, (offset, nbytes, _) in enumerate(pieces):
                futures.pop(k).result()
                i = k % depth
                memcpy(dst_ptr + offset, slots.blocks[i].ptr, nbytes)
                events[i] = stream.record_event()
                if k + depth < len(pieces):
                    futures[k + depth] = workers.submit(fill, k + depth)
    except BaseException:
        _finish(list(futures.values()), stream)
        slots.release(None)
        raise
    slots.release(stream)


def stage_d2h(src_ptr: int, dst: np.ndarray, stream, pool: PinnedPool, memcpy) -> None:
    """Copy the C-contiguous device buffer at ``src_ptr`` into host array ``dst`` (any
    strides, pageable). Returns when ``dst`` holds the data.
    ``memcpy(dst, src, nbytes)`` enqueues one async D2H copy on ``stream``."""
    staged = _staged(dst, pool)
    if staged is None:
        return
    pieces, depth, slots = staged
    futures: dict = {}

    def drain(k: int, event) -> None:
        event.synchronize()  # the slot holds chunk k once the copy engine passed the event
        _, _, view = pieces[k]
        np.copyto(view, _slot_view(slots.arrays[k % depth], view), casting="no")

    try:
        workers = _pool_of_workers() if len(pieces) > 1 else None
        for k, (offset, nbytes, _) in enumerate(pieces):
            if k >= depth:
                futures.pop(k - depth).result()  # slot k % depth has been emptied
            memcpy(slots.blocks[k % depth].ptr, src_ptr + offset, nbytes)
            event = stream.record_event()
            if workers is None:
                drain(k, event)
            else:
                futures[k] = workers.submit(drain, k, event)
        for k in sorted(futures):
            futures.pop(k).result()
    except BaseException:
        _finish(list(futures.values()), stream)
        slots.release(None)
        raise
    slots.release(None)  # every DMA into the slots has completed (drains waited on them)


PARALLEL_COPY_FROM = 16 << 20  # below 16 MiB one thread's memcpy beats the handoff


def parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src (same shape and dtype) on the host, split across the staging workers
    when both are C-contiguous and large; strided copies take one numpy call."""
    big = dst.nbytes >= PARALLEL_COPY_FROM and config.workers > 1
    if not (big and dst.flags.c_contiguous and src.flags.c_contiguous and dst.shape == src.shape):
        np.copyto(dst, src, casting="no")
        return
    d, s = dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8)
    step = -(-d.nbytes // config.workers // 4096) * 4096
    workers = _pool_of_workers()
    futures = [
        workers.submit(np.copyto, d[lo : lo + step], s[lo : lo + step])
        for lo in range(0, d.nbytes, step)
    ]
    for f in futures:
        f.result()
