"""The profiler's view of the caching allocator: every malloc and free, exactly.

The allocator reports each block it hands out or takes back to its `history` recorder (the
one `_record_memory_history` installs). While a profile with profile_memory=True records,
a `MemoryTap` sits in that slot: it tells the profiler (signed bytes, the block's address,
the allocator's totals) and passes everything on to the recorder that was there, if any,
so a memory history being recorded at the same time loses nothing. With a recorder in the
slot the allocator takes its plain (non-parking) free path, so every free is seen.
"""

from __future__ import annotations

from collections import deque

__all__ = ["MemoryTap", "install", "remove"]


class MemoryTap:
    def __init__(self, allocator, previous, sink):
        self.allocator = allocator
        self.previous = previous
        self.sink = sink  # sink(allocator, signed bytes, addr)

    # the HistoryRecorder protocol (memory/snapshot.py) -------------------------------
    def frames_for(self, action):
        return self.previous.frames_for(action) if self.previous is not None else []

    def record(self, action, addr, size, stream, frames=None, device_free=None, tag=None):
        if self.previous is not None:
            self.previous.record(action, addr, size, stream, frames, device_free, tag)
        if action == "alloc":
            self.sink(self.allocator, size, addr)
        elif action == "free_requested":
            self.sink(self.allocator, -size, addr)

    @property
    def trace(self):
        return self.previous.trace if self.previous is not None else deque()

    @property
    def enabled(self):
        return self.previous.enabled if self.previous is not None else "none"


def install(allocators, sink):
    """Put a tap on each allocator; returns what `remove` needs."""
    taps = []
    for allocator in allocators:
        with allocator._lock:
            tap = MemoryTap(allocator, allocator.history, sink)
            allocator.history = tap
        taps.append(tap)
    return taps


def remove(taps):
    for tap in taps:
        with tap.allocator._lock:
            if tap.allocator.history is tap:
                tap.allocator.history = tap.previous
