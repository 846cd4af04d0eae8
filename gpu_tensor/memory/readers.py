"""`AllocatorReaders`: what a `CachingAllocator` tells about itself, and its memory cap.

A part of `CachingAllocator` (allocator.py), split off by noun: a mixin of the public
readers (torch.cuda.memory_stats' record, the snapshot, the allocated blocks and the
segments, device memory info) and of the one setting that may change after
construction, the per-process memory fraction. Each takes the allocator's lock.
"""

from __future__ import annotations

from .block import Block, Segment
from .config import UNLIMITED

__all__ = ["AllocatorReaders"]


class AllocatorReaders:
    """CachingAllocator's readers and memory-fraction cap (see the module docstring)."""

    __slots__ = ()

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
            # a proved reuse (reuse.py) tests no peak: its first reuse did, before this
            self._proved = False

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
        if self._parked is None:
            return self._allocated.get(ptr)
        block = self._allocated.get(ptr)  # the parked block is listed, but freed
        return None if block is self._parked else block

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

    def _largest_free(self) -> int:
        return max(self._small.largest(), self._large.largest())
