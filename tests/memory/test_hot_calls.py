"""The allocator's warm paths, pinned by the Python calls they make (exact, unlike timings).

Each call the warm malloc+free pair makes costs host time on every tensor an op returns
(issue 23: an elementwise op's whole budget is ~20 calls). A change that adds one should
show here, on purpose. Creation sites are off: live.capture_site is counted by its own tests.
The values these paths compute are checked elsewhere: tests/memory/test_training_traces.py
replays real training traces against the plain path, test_stats.py the stats updates.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import pytest

from gpu_tensor.memory import live
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf

from .test_reuse import Addresses

CONFS = ["", "expandable_segments:False"]
MEMORY = os.path.dirname(os.path.abspath(live.__file__)) + os.sep  # gpu_tensor/memory/


def _calls(fn) -> Counter:
    """{function name: calls} of gpu_tensor/memory while `fn` runs."""
    seen: Counter = Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(MEMORY):
            seen[frame.f_code.co_name] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


@pytest.fixture
def sites_off():
    live.set_enabled(False)
    yield
    live.set_enabled(None)


@pytest.mark.parametrize("conf", CONFS)
def test_a_parked_free_and_the_same_malloc_cost_two_calls(conf, sites_off):
    """free parks the block; the malloc of the same request takes it back with no call:
    its proof holds (reuse.py), and the reuse is only counted. The first reuse after the
    proof is made adds the proof's calls, the reuse and its stats update (peaks tested);
    reading the stats settles the counted ones (reuse.settle), once."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(conf))
    a.malloc(4096)  # a neighbour, so the block is split from a segment
    held = [a.malloc(1024)]

    def pair():
        a.free(held.pop())
        held.append(a.malloc(1024))

    first = _calls(pair)  # the proof is made
    assert first["park"] == first["_reuse_parked"] == first["block_reused"] == 1
    assert _calls(pair) == {"free": 1, "malloc": 1}
    assert _calls(pair) == {"free": 1, "malloc": 1}
    assert a._reuses == 2
    assert _calls(a.stats)["settle"] == 1 and a._reuses == 0


@pytest.mark.parametrize("conf", CONFS)
def test_a_split_malloc_and_a_merging_free_cost_four_calls_each(conf, sites_off):
    """malloc splits a free block (its Block reused from an earlier merge, the pool entry
    replaced in place, one stats call); free merges it back (one pool call, one stats call)."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf(conf))
    a.malloc(4096)

    def pair():  # two sizes in turn: no parked reuse
        a.free(a.malloc(2048))
        a.free(a.malloc(1536))

    pair()
    pair()
    per_pair = {
        "malloc": 1,
        "_alloc_found_block": 1,
        "block_allocated": 1,
        "free": 1,
        "_unpark": 1,  # the next operation does the parked free
        "_free_block": 1,
        "replace": 1,
        "block_freed": 1,
    }
    assert _calls(pair) == {name: 2 * n for name, n in per_pair.items()}
