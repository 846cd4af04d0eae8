"""`BlockPool`: free blocks ordered by (stream, size, address) for best-fit lookup.

PyTorch keeps a `std::set` ordered the same way and takes `lower_bound`; we keep
a sorted list of key tuples, the blocks in a parallel list, and use `bisect` (no new
dependency). Inserts and removals are O(n) memmoves of small tuples, which stays far
below the cost of a Python call for the pool sizes a device reaches (hundreds to a few
thousand free blocks); the parallel list spares hashing a key tuple on every change.
"""

from __future__ import annotations

from bisect import bisect_left

from .block import Block

__all__ = ["BlockPool"]


class _Unowned:
    """The owner of a pool no allocator owns (tests)."""

    __slots__ = ("_proved",)


class BlockPool:
    """The free blocks of one pool (small or large)."""

    __slots__ = ("is_small", "_keys", "_blocks", "lookups", "owner", "graph_pool")

    def __init__(self, is_small: bool, graph_pool=None, owner=None):
        self.is_small = is_small
        self.graph_pool = graph_pool  # the graph_pool.GraphPool it belongs to; None: the device's
        self._keys: list[tuple[int, int, int]] = []  # (stream, size, ptr), ascending
        self._blocks: list[Block] = []  # _blocks[i] is the block of _keys[i]
        self.lookups = 0  # best-fit searches so far: the clock that ages cached blocks (gc)
        # The allocator whose parked-reuse proof (reuse.py) every change of the pool ends,
        # as does anything else that relinks its segments' blocks (expandable.grow):
        # `owner._proved = False`. A proof holds while no pool of its allocator changed.
        self.owner = owner if owner is not None else _Unowned()

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._blocks.copy())  # a snapshot: callers release blocks as they go

    def __contains__(self, block: Block) -> bool:
        key = (block.stream, block.size, block.ptr)
        i = bisect_left(self._keys, key)
        return i < len(self._keys) and self._keys[i] == key and self._blocks[i] is block

    def add(self, block: Block) -> None:
        key = (block.stream, block.size, block.ptr)
        i = bisect_left(self._keys, key)
        self._keys.insert(i, key)
        self._blocks.insert(i, block)
        block.gc_count_base = self.lookups
        self.owner._proved = False

    def remove(self, block: Block) -> None:
        i = self._index(block)
        del self._keys[i]
        del self._blocks[i]
        self.owner._proved = False

    def _index(self, block: Block) -> int:
        key = (block.stream, block.size, block.ptr)
        keys = self._keys
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            raise AssertionError(f"{block!r} is not in the free pool")
        return i

    def best_fit(self, stream: int, size: int) -> Block | None:
        """The smallest free block of `stream` with at least `size` bytes (lowest address wins)."""
        self.lookups += 1
        keys = self._keys
        i = bisect_left(keys, (stream, size))
        if i == len(keys) or keys[i][0] != stream:
            return None
        return self._blocks[i]

    def fit(self, stream: int, size: int, limit: int) -> int:
        """Index of `best_fit`, or -1 when there is none or it is `limit` bytes or bigger.
        The index stays valid until the pool next changes (see `pop`, `replace_at`)."""
        self.lookups += 1
        keys = self._keys
        i = bisect_left(keys, (stream, size))
        if i == len(keys):
            return -1
        key = keys[i]
        if key[0] != stream or key[1] >= limit:
            return -1
        return i

    def merged_wins(self, stream: int, size: int, merged: int, ptr: int, absorbed) -> bool:
        """Whether a free block (stream, `merged`, `ptr`), made by absorbing the pooled block
        `absorbed` (or None), would be `fit(stream, size)`'s answer (reuse.py)."""
        keys = self._keys
        i = bisect_left(keys, (stream, size))
        n = len(keys)
        if i < n and absorbed is not None and self._blocks[i] is absorbed:
            i += 1  # it leaves the pool in the merge; everything else sorts after it
        if i == n:
            return True
        key = keys[i]
        return key[0] != stream or key[1] > merged or (key[1] == merged and key[2] > ptr)

    def block_at(self, i: int) -> Block:
        return self._blocks[i]

    def pop(self, i: int) -> Block:
        self.owner._proved = False
        del self._keys[i]
        return self._blocks.pop(i)

    def replace_at(self, i: int, block: Block) -> None:
        """Put `block` (whose ptr/size may have changed) where entry `i` was: one list store
        when its key still sorts there, which a block split from or merged into its
        neighbour usually does, instead of a delete and a search-and-insert."""
        keys = self._keys
        key = (block.stream, block.size, block.ptr)
        if (i == 0 or keys[i - 1] < key) and (i + 1 == len(keys) or key < keys[i + 1]):
            keys[i] = key
            self._blocks[i] = block
        else:
            del keys[i]
            del self._blocks[i]
            j = bisect_left(keys, key)
            keys.insert(j, key)
            self._blocks.insert(j, block)
        block.gc_count_base = self.lookups
        self.owner._proved = False

    def replace(self, old: Block, block: Block) -> None:
        """remove(old) and add(block) (see `replace_at`, whose in-place case is written out
        here too: most frees merge, and this spares them a second call)."""
        key = (old.stream, old.size, old.ptr)  # _index, inlined
        keys = self._keys
        i = bisect_left(keys, key)
        n = len(keys)
        if i == n or keys[i] != key:
            raise AssertionError(f"{old!r} is not in the free pool")
        key = (block.stream, block.size, block.ptr)
        if (i == 0 or keys[i - 1] < key) and (i + 1 == n or key < keys[i + 1]):
            keys[i] = key
            self._blocks[i] = block
            block.gc_count_base = self.lookups
            self.owner._proved = False
        else:
            self.replace_at(i, block)

    def largest(self) -> int:
        """Size of the largest free block (any stream), 0 when empty."""
        return max((k[1] for k in self._keys), default=0)
