"""BlockOwner: the object a cuda result's memory holds, whose finaliser is the allocator's
`free` itself (one Python call per result's free, not two). Dropping an owner must do what
`free(block)` does, and a failing free must stay silent there, as a finaliser's must."""

from __future__ import annotations

import sys
import threading
from collections import Counter

import pytest

from gpu_tensor.memory import live, verify
from gpu_tensor.memory.allocator import BlockOwner, CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf

from .test_proved_reuse import _program, _run
from .test_reuse import Addresses, _layout


def _drop(a, block) -> None:
    """What cupy does when a result's memory dies: its owner goes with it."""
    BlockOwner((a, block))  # (never bound: its refcount falls to zero here)


@pytest.fixture
def unraisable(monkeypatch):
    """What reaches sys.unraisablehook (an exception out of a finaliser)."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


@pytest.mark.parametrize("conf", ["", "expandable_segments:True"])
@pytest.mark.parametrize("eager", [False, True])
def test_dropping_owners_equals_freeing_blocks_on_random_programs(conf, eager, unraisable):
    """h10's random programs (test_proved_reuse.py), every free done by dropping an owner,
    against the same program freeing with `free(block)`: every read, address and stats."""
    ops = _program(3, steps=400)
    by_owner = _run(ops, conf, eager, free=_drop)
    by_free = _run(ops, conf, eager)
    assert by_owner[1:] == by_free[1:]  # reads, addresses, history records, first-test reuses
    assert by_owner[0].stats() == by_free[0].stats()
    assert _layout(by_owner[0]) == _layout(by_free[0])
    verify.check(by_owner[0], accumulated=False)
    assert unraisable == []


def test_the_owner_is_the_block_and_its_allocator():
    a = CachingAllocator(Addresses(), 0)
    block = a.malloc(1000)
    owner = BlockOwner((a, block))
    assert owner.allocator is a and owner.block is block and owner == (a, block)
    assert a.stats()["allocation.all.current"] == 1
    del owner
    assert a.stats()["allocation.all.current"] == 0


def test_a_dropped_owner_frees_in_one_python_call():
    """The finaliser is `free`: no frame of its own in between (issue 23's call budget)."""
    live.set_enabled(False)
    try:
        a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf("expandable_segments:False"))
        a.malloc(4096)
        block = a.malloc(1024)
        calls: Counter = Counter()

        def profile(frame, event, arg):
            if event == "call":
                calls[frame.f_code.co_qualname] += 1

        sys.setprofile(profile)
        try:
            _drop(a, block)
        finally:
            sys.setprofile(None)
        assert calls == {"_drop": 1, "CachingAllocator.free": 1}
        assert a._parked is block  # parked, as free(block) parks it
    finally:
        live.set_enabled(None)


def test_a_double_free_raises_from_free_and_is_silent_from_an_owner(unraisable):
    a = CachingAllocator(Addresses(), 0)
    block = a.malloc(1000)
    a.free(block)  # parked
    with pytest.raises(ValueError, match="double free"):
        a.free(block)
    _drop(a, block)  # a finaliser never raises, nor reports
    assert unraisable == []
    assert a.stats()["allocation.all.current"] == 0
    with pytest.raises(ValueError, match="double free"):  # the block was freed once only
        a.free(block)
    verify.check(a)


def test_a_failing_free_from_an_owner_is_silent_and_lets_the_lock_go(monkeypatch, unraisable):
    """What the owner's finaliser swallowed before (an error in free's body, the kind that
    interpreter exit brings) is swallowed still, with the lock released."""
    a = CachingAllocator(Addresses(), 0)
    first, second, third = a.malloc(1000), a.malloc(1000), a.malloc(1000)
    a.free(first)  # parked: the next free does it first

    def broken():
        raise RuntimeError("the free failed")

    monkeypatch.setattr(a, "_unpark", broken)
    _drop(a, second)
    assert unraisable == []
    with pytest.raises(RuntimeError, match="the free failed"):  # free(block) raises it
        a.free(third)
    got = []
    other = threading.Thread(target=lambda: got.append(a._lock.acquire(timeout=5)))
    other.start()
    other.join()
    assert got == [True]  # released by this thread each time


def test_free_without_a_block_is_an_error_not_a_silent_finaliser():
    a = CachingAllocator(Addresses(), 0)
    with pytest.raises(TypeError, match=r"free\(\) needs the Block to return"):
        a.free()
    with pytest.raises(TypeError, match=r"free\(\) needs the Block to return"):
        a.free(None)


def test_an_owner_dropped_inside_an_operation_is_deferred_like_a_free():
    """A finaliser that runs in the middle of malloc (here: the raw source's alloc) waits for
    it, as `free(block)` does (test_allocator.py's finaliser test)."""
    a = CachingAllocator(Addresses(), 0, config=parse_alloc_conf("expandable_segments:False"))
    victim = a.malloc(5 << 20)
    inner, dropped = a.raw, []

    class Reentrant:
        def alloc(self, nbytes):
            _drop(a, victim)
            dropped.extend(a._deferred)
            return inner.alloc(nbytes)

        def __getattr__(self, name):
            return getattr(inner, name)

    a.raw = Reentrant()
    new = a.malloc(50 << 20)  # a new segment: the raw alloc drops the owner
    a.raw = inner
    assert dropped == [victim]
    assert a._deferred == [] and not a._busy
    assert a.stats()["allocated_bytes.all.current"] == new.size
    verify.check(a)
