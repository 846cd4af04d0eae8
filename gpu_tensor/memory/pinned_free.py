"""The pinned pool's free blocks: best fit, splitting, merging, and their index.

`PinnedPool` (pinned.py) decides when a block is free (its streams have passed their events)
and when a segment goes back; this holds what being free means for the pages. Free blocks
are indexed per pool by (size, ptr), so a request takes the smallest block that fits
(`_best_fit`) and cuts it to whole pages (`_split`); a block that becomes free merges with
free neighbours in its segment (`_make_free`), and a segment whose one free block spans it
is listed as wholly free, which is what a miss or `max_cached_bytes` releases. The
inactive_split stats follow every insertion and removal.

Its own file because the free-block bookkeeping is a noun of its own: a base class of
`PinnedPool`, written against the state its ``__init__`` sets (``_free``, ``_free_blocks``,
``_whole_free_segments``, ``_max_cached``) and its ``_update`` and ``_release_segment``.
Methods found on a base class cost the same lookups as the pool's own.
"""

from __future__ import annotations

import bisect

from gpu_tensor.memory.pinned_block import PAGE, PinnedBlock, _Segment

__all__ = ["PinnedFreeBlocks"]


class PinnedFreeBlocks:
    """Free-block index and merging of a `PinnedPool` (see the module docstring)."""

    def _best_fit(self, small: bool, size: int) -> PinnedBlock | None:
        index = self._free[small]
        i = bisect.bisect_left(index, (size, 0))
        if i == len(index):
            return None
        block = self._free_blocks[index[i][1]]
        self._remove_free(block)
        return block

    def _split(self, block: PinnedBlock, size: int) -> None:
        """Keep ``size`` bytes in ``block``; the rest becomes a free block after it."""
        rest = block.size - size
        if rest < PAGE:
            return
        tail = PinnedBlock(
            ptr=block.ptr + size, size=rest, segment=block.segment, prev=block, next=block.next
        )
        if block.next is not None:
            block.next.prev = tail
        block.next = tail
        block.size = size
        self._insert_free(tail)

    def _make_free(self, block: PinnedBlock) -> None:
        """An inactive block joins the free blocks, merged with free neighbours."""
        self._update(block, active=-1, active_bytes=-block.size)
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.ptr in self._free_blocks:
                self._remove_free(neighbour)
                if neighbour is block.prev:
                    neighbour.size += block.size
                    neighbour.next = block.next
                    if block.next is not None:
                        block.next.prev = neighbour
                    block = neighbour
                else:
                    block.size += neighbour.size
                    block.next = neighbour.next
                    if neighbour.next is not None:
                        neighbour.next.prev = block
        self._insert_free(block)
        seg = block.segment
        if (
            self._max_cached is not None
            and self._whole_free(seg)
            and self._cached_whole_bytes() > self._max_cached
        ):
            self._release_segment(seg)

    def _insert_free(self, block: PinnedBlock) -> None:
        bisect.insort(self._free[block.segment.small], (block.size, block.ptr))
        self._free_blocks[block.ptr] = block
        if block.size == block.segment.size:
            self._whole_free_segments[block.segment.ptr] = block.segment
        self._note_split_change(block, +1)

    def _remove_free(self, block: PinnedBlock) -> None:
        index = self._free[block.segment.small]
        index.pop(bisect.bisect_left(index, (block.size, block.ptr)))
        del self._free_blocks[block.ptr]
        self._whole_free_segments.pop(block.segment.ptr, None)
        self._note_split_change(block, -1)

    def _note_split_change(self, block: PinnedBlock, sign: int) -> None:
        """inactive_split: free blocks in segments that are split (cannot be released)."""
        if block.size != block.segment.size:
            self._update(block, inactive_split=sign, inactive_split_bytes=sign * block.size)

    def _whole_free(self, seg: _Segment) -> bool:
        """One free block spans the segment (not allocated, not awaiting events)."""
        return seg.ptr in self._whole_free_segments

    def _cached_whole_bytes(self) -> int:
        return sum(seg.size for seg in self._whole_free_segments.values())
