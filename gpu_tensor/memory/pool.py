"""`BlockPool`: free blocks ordered by (stream, size, address) for best-fit lookup.

PyTorch keeps a `std::set` ordered the same way and takes `lower_bound`; we keep
a sorted list of key tuples and use `bisect` (no new dependency). Inserts and
removals are O(n) memmoves of small tuples, which stays far below the cost of a
Python call for the pool sizes a device reaches (hundreds to a few thousand
free blocks).
"""

from __future__ import annotations

from bisect import bisect_left, insort

from .block import Block

__all__ = ["BlockPool"]


class BlockPool:
    """The free blocks of one pool (small or large)."""

    __slots__ = ("is_small", "_keys", "_blocks", "lookups")

    def __init__(self, is_small: bool):
        self.is_small = is_small
        self._keys: list[tuple[int, int, int]] = []
        self._blocks: dict[tuple[int, int, int], Block] = {}
        self.lookups = 0  # best-fit searches so far: the clock that ages cached blocks (gc)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter([self._blocks[k] for k in self._keys])

    def __contains__(self, block: Block) -> bool:
        return self._blocks.get((block.stream, block.size, block.ptr)) is block

    def add(self, block: Block) -> None:
        key = (block.stream, block.size, block.ptr)
        insort(self._keys, key)
        self._blocks[key] = block
        block.gc_count_base = self.lookups

    def remove(self, block: Block) -> None:
        key = (block.stream, block.size, block.ptr)
        i = bisect_left(self._keys, key)
        if i == len(self._keys) or self._keys[i] != key:
            raise AssertionError(f"{block!r} is not in the free pool")
        del self._keys[i]
        del self._blocks[key]

    def best_fit(self, stream: int, size: int) -> Block | None:
        """The smallest free block of `stream` with at least `size` bytes (lowest address wins)."""
        self.lookups += 1
        keys = self._keys
        i = bisect_left(keys, (stream, size))
        if i == len(keys):
            return None
        key = keys[i]
        if key[0] != stream:
            return None
        return self._blocks[key]

    def largest(self) -> int:
        """Size of the largest free block (any stream), 0 when empty."""
        return max((k[1] for k in self._keys), default=0)
