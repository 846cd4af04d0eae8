"""Parked frees: the allocator's fast path for a block freed and asked for again.

Most tensor programs free a block and soon ask for one of the same rounded size on
the same stream (every op's output, every loop iteration). torch's policy then does
a free (merge with the free neighbour, back into the pool) and a malloc (best fit
finds the merged block, splits the same range off again): the state ends where it
began, and only counters move. In Python that round trip is most of the cost.

So `free` *parks* the block instead: the free is recorded as pending, and done for
real (`CachingAllocator._unpark`) before any other operation, stats reads and
snapshots included, so nothing can observe the difference. When the next operation
is a malloc for the same stream and rounded size, and `park` proves that torch's
policy would hand back exactly this block, the free and the malloc cancel: the block
is handed back as is and `DeviceStats.block_reused` applies exactly the counter
changes that the two would have made (accumulated totals, requested bytes, and the
peak of inactive_split that the free's intermediate state could reach).

`park` proves it from the block's neighbours and one search of the pool: the free
must not merge backwards (the merged block would start lower), the best fit after
the free must be the merged block, and the split rule must cut off exactly this
block. When any of that fails the free is done then, before the malloc. The proof is
made only for a malloc of the parked block's size (most frees are followed by something
else, which simply does the free first: a proof at every free cost more than the reuses
saved on bench_train's deep MLP).

A proof depends only on the block's neighbours and the pools, so it holds until a pool of
the allocator changes (pool.py ends it: `alloc._proved = False`), events are recorded
(a malloc would process them first), a capture begins or the peaks are reset. While it
holds, `alloc._proved` is its block, and malloc's first test takes that block back for the
request it last served (same bytes, same stream, no history) with no more work: a loop that
frees and asks for the same block again proves it once. Such reuses are only counted
(`alloc._reuses`); `settle` adds what they did, n times over, before anything reads or
moves it: the accumulated stats totals, the gc clock of the block's pool, the gc age of
the free block after it, and the block's place in `alloc._allocated` (a parked block stays
listed there, so the first test lists nothing; each malloc lists its block last, so settle
moves it last: nothing was listed since, as a malloc that lists a block settles first).
Their current stats values end where they began, and their peaks
are those the first reuse tested: nothing that could move them (the pools' inactive_split,
a reset) can change while the proof holds.
"""

from __future__ import annotations

from .sizes import SMALL_SIZE

__all__ = ["park", "settle"]


def park(alloc, block):
    """Prove that torch's policy would give the parked `block` (freed, nothing since) to a
    malloc of its size and stream (see the module docstring); None: free it first.
    Returns the proof, also kept as `alloc._park_proof`: (block, its pool (the gc clock
    that a malloc's search advances), the free neighbour after it or None, whether it is
    small, inactive_split's change (blocks, bytes) in the free, which the malloc undoes,
    whether it is oversize), all that a reuse needs (CachingAllocator._reuse_parked,
    `settle`)."""
    prev = block.prev
    # (a neighbour merges when it is free and waits on no stream event: _free_block's test)
    if prev is not None and not (prev.allocated or prev.event_count or prev.stream_uses):
        return None  # the free merges backwards: the next malloc would start lower
    size = block.size
    after = block.next
    segment = block.segment
    small = segment.is_small
    if after is not None and not (after.allocated or after.event_count or after.stream_uses):
        merged = size + after.size
        rest_next = after.next
        if not (small or segment.expandable) and not (
            size < alloc._max_split and after.size > SMALL_SIZE
        ):
            return None  # a large block would not be split again: malloc takes it whole
    else:
        after = None
        merged = size
        rest_next = block.next
    max_split = alloc._max_split
    limit = max_split if size < max_split else size + alloc.config.max_non_split_rounding
    if merged >= limit:
        return None  # best fit would refuse the merged block (oversize rules)
    pool = alloc._pool_of(segment)
    if not pool.merged_wins(block.stream, size, merged, block.ptr, after):
        return None  # another free block is a better fit than the merged one
    # The free's net change to inactive_split: `after` leaves as a split block, and the
    # merged block is one if anything else shares its segment (CachingAllocator._free_block).
    if rest_next is None and prev is None:
        blocks, nbytes = (0, 0) if after is None else (-1, -after.size)
    else:
        blocks, nbytes = (1 if after is None else 0), size
    proof = alloc._park_proof = (block, pool, after, small, blocks, nbytes, size >= max_split)
    return proof


def settle(alloc) -> None:
    """Add what the `alloc._reuses` reuses made by malloc's first test did (see the module
    docstring): each was a best-fit search of the proof's pool, which gives the free block
    after it back aged from there, and the stats of block_reused with unchanged requested
    bytes."""
    n, alloc._reuses = alloc._reuses, 0
    block, pool, after, small, split_blocks, split_bytes, oversize = alloc._park_proof
    pool.lookups += n
    if after is not None:
        after.gc_count_base = pool.lookups
    # the block is allocated or parked since: its sizes are the reuses'
    alloc._stats.reuses_settled(
        small, block.size, block.requested_size, split_blocks, split_bytes, oversize, n
    )
    # each reuse was a malloc, which lists its block last in `_allocated` (the first test
    # leaves it where it is: nothing else was listed since). Unless a finaliser's free,
    # deferred, has taken it out.
    allocated = alloc._allocated
    if allocated.get(block.ptr) is block:
        del allocated[block.ptr]
        allocated[block.ptr] = block
