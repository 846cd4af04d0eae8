"""Size classes: how a request is rounded and how big a segment it gets.

torch's CUDACachingAllocator constants (research/pytorch-memory.md §1.1).
"""

from __future__ import annotations

from .config import AllocatorConfig

__all__ = [
    "MIN_BLOCK_SIZE",
    "SMALL_SIZE",
    "SMALL_BUFFER",
    "MIN_LARGE_ALLOC",
    "LARGE_BUFFER",
    "ROUND_LARGE",
    "MID_SEGMENT_REQUESTS",
    "MID_SEGMENT_POOL_SHARE",
    "round_size",
    "allocation_size",
]

MIN_BLOCK_SIZE = 512  # every size is a multiple of this (cudaMalloc aligns to >= 256 B)
SMALL_SIZE = 1 << 20  # requests <= 1 MiB go to the small pool
SMALL_BUFFER = 2 << 20  # small pool segments are 2 MiB
MIN_LARGE_ALLOC = 10 << 20  # 1-10 MiB requests share LARGE_BUFFER segments
LARGE_BUFFER = 20 << 20  # segment size for 1-10 MiB requests
ROUND_LARGE = 2 << 20  # >= 10 MiB requests get segments rounded to 2 MiB
# adaptive_segments (ours): a 1-10 MiB segment holds at least this many such requests...
MID_SEGMENT_REQUESTS = 4
# ...and grows to this fraction of the large pool, so segment counts grow logarithmically;
# 4 and 4 measured best of {2,4,8}^2 on profiling/bench_allocator.py's small traces.
MID_SEGMENT_POOL_SHARE = 4


def _roundup_power2_next_division(size: int, divisions: int) -> int:
    if size & (size - 1) == 0:
        return size  # exact powers of two stay
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    low = size & ~(step - 1)
    return size if low == size else low + step


def round_size(nbytes: int, config: AllocatorConfig | None = None) -> int:
    """Block size for a request: 512 B multiples, or torch's power-of-two divisions."""
    if nbytes < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    if config is not None:
        divisions = config.divisions_for(nbytes)
        if divisions > 1 and nbytes > MIN_BLOCK_SIZE * divisions:
            return _roundup_power2_next_division(nbytes, divisions)
    return -(-nbytes // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE


def allocation_size(size: int, large_reserved: int | None = None) -> int:
    """Segment size to request from the raw source for a rounded block size.

    torch's rule when `large_reserved` is None. Given the large pool's reserved bytes
    (adaptive_segments, our default), a 1-10 MiB request gets a segment of
    max(4 x request, large_reserved / 4), in 2 MiB steps, at most torch's 20 MiB: a
    small workload does not pay 20 MiB per segment, a large one gets torch's segments."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        if large_reserved is None:
            return LARGE_BUFFER
        want = max(MID_SEGMENT_REQUESTS * size, large_reserved // MID_SEGMENT_POOL_SHARE)
        return min(LARGE_BUFFER, -(-want // ROUND_LARGE) * ROUND_LARGE)
    return -(-size // ROUND_LARGE) * ROUND_LARGE
