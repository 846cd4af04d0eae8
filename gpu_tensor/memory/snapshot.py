"""Snapshots in torch's structure, and the allocation history behind them.

`build_snapshot(allocators)` returns the dict `torch.cuda.memory._snapshot()`
returns (`segments`, `device_traces`, `allocator_settings`; see
shared/research/pytorch-memory.md §3.2) plus our `gpu_tensor` extension key.
It holds only dicts, lists, tuples, str, int, float, bool and None, so
`pickle.load` needs no gpu_tensor import and pytorch.org/memory_viz opens it.

`HistoryRecorder` is the ring buffer `_record_memory_history` turns on.
"""

from __future__ import annotations

import sys
import time
from collections import deque

from . import live

__all__ = ["HistoryRecorder", "build_snapshot", "SNAPSHOT_VERSION"]

SNAPSHOT_VERSION = 1  # of the "gpu_tensor" extension key


class HistoryRecorder:
    """Trace entries (a ring buffer of `max_entries`) and which events carry stacks.

    enabled: 'all' records trace entries and live-block stacks; 'state' only the
    stacks of live blocks. context: None | 'state' | 'alloc' | 'all' (torch's
    meaning: which events get stacks). stacks: 'python' or 'all' (the same here:
    there are no C++ frames to add).
    """

    def __init__(
        self,
        enabled: str = "all",
        context: str | None = "all",
        stacks: str = "all",
        max_entries: int = sys.maxsize,
    ):
        if enabled not in ("all", "state"):
            raise ValueError(f"enabled must be 'all', 'state' or None, got {enabled!r}")
        if context not in (None, "state", "alloc", "all"):
            raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
        if stacks not in ("python", "all"):
            raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
        self.enabled = enabled
        self.context = context
        self.stacks = stacks
        self.max_entries = max_entries
        self.trace: deque = deque(maxlen=None if max_entries >= sys.maxsize else max_entries)
        self._open: dict[int, dict] = {}  # addr -> its latest 'alloc' entry, until freed

    def frames_for(self, action: str) -> list[dict]:
        """Stack to attach to a block or trace entry of this kind, or [] when not wanted."""
        if self.context is None:
            return []
        if self.context in ("state", "alloc") and action not in ("alloc", "segment_alloc"):
            return []
        return live.capture_frames(depth=3)

    def record(
        self,
        action: str,
        addr: int,
        size: int,
        stream: int,
        frames=None,
        device_free: int | None = None,
        tag: dict | None = None,
    ) -> None:
        """Append a trace entry. `tag` (with free_requested): the freed block's shape and
        dtype, which are known only after its alloc entry was written; they are added to
        that entry (keys torch's entries lack; its tools ignore them)."""
        if self.enabled != "all":
            return
        if action == "free_requested":
            opened = self._open.pop(addr, None)
            if opened is not None and tag:
                opened.update((k, tag[k]) for k in ("shape", "dtype") if k in tag)
        if frames is None:
            frames = self.frames_for(action) if self.context == "all" else []
        entry = {
            "action": action,
            "addr": addr,
            "size": size,
            "stream": stream,
            "time_us": time.time_ns() // 1000,
            "frames": frames,
        }
        if action == "oom":
            entry["device_free"] = device_free if device_free is not None else 0
        elif action == "alloc":
            self._open[addr] = entry
        self.trace.append(entry)


def _block_state(block) -> str:
    if block.allocated:
        return "active_allocated"
    if block.event_count:
        return "active_pending_free"
    return "inactive"


def _segment_dict(allocator, segment) -> dict:
    blocks = []
    allocated = active = requested = 0
    for block in segment.blocks():
        state = _block_state(block)
        entry = {
            "address": block.ptr,
            "size": block.size,
            "requested_size": block.requested_size if state != "inactive" else 0,
            "state": state,
            "frames": list(block.frames or []),
        }
        if state == "active_allocated":
            allocated += block.size
            requested += block.requested_size
        if state != "inactive":
            active += block.size
        blocks.append(entry)
    return {
        "device": allocator.device_index,
        "address": segment.ptr,
        "total_size": segment.size,
        "allocated_size": allocated,
        "active_size": active,
        "requested_size": requested,
        "stream": segment.stream,
        "segment_type": "small" if segment.is_small else "large",
        # torch's MempoolId_t: (0, 0) the device pool, else a CUDA graph's (graph_pool.py)
        "segment_pool_id": segment.graph_pool.id if segment.graph_pool is not None else (0, 0),
        "is_expandable": segment.expandable,
        "frames": list(segment.frames or []),
        "blocks": blocks,
    }


def _settings(config, expandable: bool | None = None) -> dict:
    from .config import UNLIMITED

    divisions = config.roundup_power2_divisions
    if expandable is None:  # no allocator yet: what one would do over a source that can map
        expandable = config.expandable_segments is not False
    split = config.split_limit(expandable)
    return {
        "PYTORCH_CUDA_ALLOC_CONF": config.text,
        "max_split_size": -1 if split == UNLIMITED else split,
        "garbage_collection_threshold": config.garbage_collection_threshold,
        "expandable_segments": expandable,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "roundup_power2_divisions": {str(1 << i): n for i, n in enumerate(divisions)},
    }


def build_snapshot(allocators, device: int = 0, host_memory_stats: dict | None = None) -> dict:
    """torch's snapshot dict over `allocators` (one per device), extension for `device`."""
    allocators = sorted(allocators, key=lambda a: a.device_index)
    n_devices = max([a.device_index + 1 for a in allocators] + [device + 1])
    segments = []
    traces: list[list[dict]] = [[] for _ in range(n_devices)]
    settings = None
    own = None
    for allocator in allocators:
        with allocator._operation():  # finaliser frees wait until the walk is done
            for segment in allocator.segments():
                segments.append(_segment_dict(allocator, segment))
            if allocator.history is not None:
                traces[allocator.device_index] = [dict(e) for e in allocator.history.trace]
            if allocator.device_index == device:
                own = allocator
            settings = settings or _settings(allocator.config, allocator._expandable)
    if settings is None:
        from .config import AllocatorConfig

        settings = _settings(AllocatorConfig.from_env())
    from .stats import empty_stats

    ext = {
        "version": SNAPSHOT_VERSION,
        "device": device,
        "memory_stats": own.stats() if own is not None else empty_stats(),
        "live_tensors": live.live_blocks(own) if own is not None else [],
    }
    if host_memory_stats is not None:
        ext["host_memory_stats"] = host_memory_stats
    return {
        "segments": segments,
        "device_traces": traces,
        "allocator_settings": settings,
        "gpu_tensor": ext,
    }
