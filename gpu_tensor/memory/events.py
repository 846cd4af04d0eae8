"""Stream-use events: a block used on other streams (record_stream) returns to its pool
only after events recorded on those streams, when it was freed, have completed.

The allocator keeps `_events`: stream key (stream_ids.py; (device, key) for another device's
stream) -> FIFO of (event, block). Events come from the injected `event_factory(stream)`, or
`event_factory(stream, device=d)` for a stream of device d (query()/synchronize()); with no
factory the device is synchronous and a freed block returns at once. All of it runs under
the allocator's lock.

`StreamUses`, a mixin of CachingAllocator, holds its record_stream and the release of an
allocated block, which may have to wait on those events.
"""

from __future__ import annotations

from collections import deque

from .block import Block
from .stream_ids import event_handle, stream_key

__all__ = ["StreamUses", "insert", "process", "synchronize_all"]


def insert(alloc, block) -> None:
    """Record an event on every stream that used `block`; it stays active until they
    complete (or at once when the device is synchronous: no event factory)."""
    streams, block.stream_uses = block.stream_uses, None
    # a malloc processes events before its search, which a proved reuse (reuse.py) skips
    alloc._proved = False
    if alloc._event_factory is None:  # synchronous device: every use is already done
        alloc._free_block(block)
        return
    for stream in sorted(streams, key=_order):
        # keys are handles, except per-thread default streams: see stream_ids.event_handle;
        # (device, key) for a stream of another device, whose event must be made there
        if isinstance(stream, tuple):
            event = alloc._event_factory(event_handle(stream[1]), device=stream[0])
        else:
            event = alloc._event_factory(event_handle(stream))
        block.event_count += 1
        alloc._events.setdefault(stream, deque()).append((event, block))


def _order(key) -> tuple:
    """This device's streams first, then other devices' (a fixed order for the events)."""
    return (0, 0, key) if not isinstance(key, tuple) else (1, *key)


def process(alloc) -> None:
    """Return blocks whose recorded events have all completed (FIFO per stream)."""
    for stream in list(alloc._events):
        queue = alloc._events[stream]
        while queue:
            event, block = queue[0]
            if not event.query():
                break
            queue.popleft()
            block.event_count -= 1
            if block.event_count == 0:
                alloc._free_block(block)
        if not queue:
            del alloc._events[stream]


def synchronize_all(alloc) -> None:
    """Wait for every pending event and free its blocks (empty_cache, OOM retry)."""
    if not alloc._events:
        return
    alloc._stats.scalars["num_sync_all_streams"] += 1
    events, alloc._events = alloc._events, {}
    for queue in events.values():
        for event, block in queue:
            event.synchronize()
            block.event_count -= 1
            if block.event_count == 0:
                alloc._free_block(block)


class StreamUses:
    """CachingAllocator's stream uses (a mixin: allocator.py): record_stream marks them,
    and a released block with any waits for their events before it is pooled again."""

    __slots__ = ()

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
            insert(self, block)
