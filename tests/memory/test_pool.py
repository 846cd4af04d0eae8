"""gpu_tensor/memory/pool.py: BlockPool ordering, best fit and in-place replacement."""

from __future__ import annotations

import random

from gpu_tensor.memory.block import Block, Segment
from gpu_tensor.memory.pool import BlockPool

SEG = Segment(0, 1 << 30, 0, True)


def _block(ptr: int, size: int, stream: int = 0) -> Block:
    return Block(ptr, size, stream, SEG)


def _order(pool: BlockPool) -> list[tuple[int, int, int]]:
    return [(b.stream, b.size, b.ptr) for b in pool]


def test_fit_is_best_fit_with_limit_and_counts_lookups():
    pool = BlockPool(True)
    for ptr, size in ((0, 4096), (8192, 1024), (16384, 65536), (1 << 20, 1024)):
        pool.add(_block(ptr, size))
    pool.add(_block(1 << 21, 512, stream=1))
    i = pool.fit(0, 1000, limit=1 << 30)
    assert pool.block_at(i).ptr == 8192  # smallest that fits, lowest address first
    assert pool.best_fit(0, 1000) is pool.block_at(i)
    assert pool.fit(0, 5000, limit=65536) == -1  # best fit too big: none, pool unchanged
    assert pool.fit(1, 1024, limit=1 << 30) == -1  # other stream's blocks never fit
    assert pool.lookups == 4 and len(pool) == 5
    assert pool.pop(pool.fit(0, 5000, limit=1 << 30)).size == 65536
    assert len(pool) == 4


def test_replace_keeps_the_pool_sorted_in_place_or_moved():
    rng = random.Random(0)
    pool = BlockPool(False)
    blocks = [_block(i * (1 << 20), rng.randrange(512, 1 << 20, 512)) for i in range(40)]
    for b in blocks:
        pool.add(b)
    for _ in range(400):
        old = rng.choice([b for b in pool])
        new = _block(old.ptr, rng.randrange(512, 1 << 20, 512))  # may sort elsewhere
        pool.lookups += 1
        pool.replace(old, new)
        assert new in pool and old not in pool
        assert new.gc_count_base == pool.lookups
        assert _order(pool) == sorted(_order(pool)) and len(pool) == 40
