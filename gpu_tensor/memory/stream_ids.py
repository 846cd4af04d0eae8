"""Stream identity: the key under which the caching allocator caches a stream's free blocks.

A block freed on a stream is handed again, without an event, only to a request on the same
stream: the stream's own order makes that safe. A stream handle (cudaStream_t value) names one
queue of work, except cudaStreamPerThread (handle 2): it names the *calling thread's* default
stream. CuPy hands that handle to every thread when CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 (and
for `cupy.cuda.Stream.ptds`), so keyed by its handle, a block thread A freed (its kernels maybe
still queued on A's stream) could go to thread B, whose stream is not ordered after A's.

So handle 2 is keyed per thread (`stream_key`): each thread gets its own identity, a negative
int (never a real handle: those are addresses or the small constants 0, 1, 2) drawn from a
counter, so no later thread inherits a finished thread's identity. Every other handle is its
own key, as before.

Events go the other way (`event_handle`): an event for a per-thread identity is recorded on
handle 2 by the thread that owns it. Another thread cannot name that stream (handle 2 would be
its own), so there the event goes on the legacy default stream (cudaStreamLegacy, 1), whose
work starts only after the earlier work of every blocking stream of the context, per-thread
default streams included: the event completes later than needed, never earlier.
"""

from __future__ import annotations

import itertools
import threading

__all__ = ["PER_THREAD_STREAM", "LEGACY_STREAM", "stream_key", "per_thread_key", "event_handle"]

PER_THREAD_STREAM = 2  # cudaStreamPerThread (CUDA's ABI constant, driver_types.h)
LEGACY_STREAM = 1  # cudaStreamLegacy: waits for all blocking streams, per-thread ones included

_local = threading.local()
_next_id = itertools.count(1)  # next() on a count is atomic under the GIL


def per_thread_key() -> int:
    """The calling thread's identity for its per-thread default stream (negative, unique)."""
    try:
        return _local.key
    except AttributeError:
        _local.key = key = -next(_next_id)
        return key


def stream_key(stream) -> int:
    """The cache key of `stream`: an int handle or an object with `.ptr`; handle 2 (the
    calling thread's per-thread default stream) becomes that thread's identity."""
    if stream.__class__ is not int:
        if isinstance(stream, int):
            stream = int(stream)
        else:
            ptr = getattr(stream, "ptr", None)
            if ptr is None:
                raise TypeError(
                    f"stream must be an int handle or have .ptr, got {type(stream).__name__}"
                )
            stream = int(ptr)
    return per_thread_key() if stream == PER_THREAD_STREAM else stream


def event_handle(key: int) -> int:
    """The stream handle to record an event on for cache key `key` (see the module doc)."""
    if key >= 0:
        return key
    return PER_THREAD_STREAM if getattr(_local, "key", None) == key else LEGACY_STREAM
