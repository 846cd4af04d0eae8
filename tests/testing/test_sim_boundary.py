"""The clock at the simulator's boundary (gpu_tensor/testing/sim/boundary.py), which
profiling/bench_host_cost.py subtracts from wall time to get gpu_tensor's own host time."""

import time

import numpy as np
import pytest

from gpu_tensor.testing import sim
from gpu_tensor.testing.sim import cublas, runtime
from gpu_tensor.testing.sim.boundary import BoundaryTimer
from gpu_tensor.testing.sim.machine import machine


@pytest.fixture
def timed():
    cp = sim.module()
    m = machine()
    allocator = m.allocator
    timer = BoundaryTimer()
    try:
        yield cp, timer.install()
    finally:
        timer.uninstall()
        m.allocator = allocator


def test_nested_simulator_calls_are_one_crossing(timed):
    cp, timer = timed
    inner = cp.ndarray.__init__
    assert inner.__wrapped__ is not None  # the array constructor is an entry point too
    timer.reset()
    t0 = time.perf_counter_ns()
    a = cp.empty((3, 4), dtype=np.float32)  # binds, allocates, builds an ndarray inside
    wall = time.perf_counter_ns() - t0
    assert timer.crossings == 1
    assert 0 < timer.ns <= wall
    timer.reset()
    cp.ndarray((2,), np.float32, memptr=a.data)  # entered from outside: __new__, __init__
    assert timer.crossings == 2
    a.fill(2)
    assert timer.crossings == 3 and a.get().tolist() == [[2.0] * 4] * 3  # still the sim


def test_a_callback_of_ours_stops_the_clock(timed):
    cp, timer = timed
    spin_ns = 3_000_000
    block = cp.cuda.MemoryPointer(cp.cuda.Memory(64), 0)

    def allocator(nbytes):  # ours: the simulator calls it from inside cupy.empty
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < spin_ns:
            pass
        return block

    cp.cuda.set_allocator(allocator)
    timer.install()  # wraps the allocator just set
    timer.reset()
    t0 = time.perf_counter_ns()
    cp.empty(8, dtype=np.float32)
    wall = time.perf_counter_ns() - t0
    assert timer.crossings == 1
    assert 0 < timer.ns <= wall - spin_ns


def test_uncovered_names_entry_points_bound_before_install():
    cp = sim.module()
    early = cp.cuda.get_current_stream  # held by a caller before the clock was installed
    timer = BoundaryTimer().install()
    try:
        assert timer.uncovered(lambda: cp.empty(4, dtype=np.float32)) == []
        missed = timer.uncovered(early)
        assert missed and all(m.startswith("entered unwrapped: ") for m in missed), missed
        assert 0 <= timer.overhead_ns(loops=20, samples=5) < 100_000
    finally:
        timer.uninstall()
    assert cp.cuda.get_current_stream is early  # uninstall puts the originals back
    assert not hasattr(cp.ndarray.__init__, "__wrapped__")
    for cls in (cublas._Cublas, runtime.Device):  # static and class methods stay what they were
        for name, value in vars(cls).items():
            if isinstance(value, (staticmethod, classmethod)):
                assert not hasattr(value.__func__, "__wrapped__"), name
    assert any(isinstance(v, staticmethod) for v in vars(cublas._Cublas).values())


def test_an_objects_allocation_is_inside_the_clock(timed):
    cp, timer = timed
    mem = cp.cuda.Memory(64)
    assert isinstance(vars(cp.cuda.MemoryPointer)["__new__"], staticmethod)
    timer.reset()
    p = cp.cuda.MemoryPointer(mem, 8)  # __new__, then __init__: two windows from outside
    assert timer.crossings == 2 and timer.ns > 0 and p.ptr == mem.ptr + 8
    assert (p + 8).ptr == mem.ptr + 16  # made by the simulator itself (__new__ nested)
    timer.uninstall()
    assert not hasattr(cp.cuda.MemoryPointer.__new__, "__wrapped__")
    assert cp.cuda.MemoryPointer(mem, 0).ptr == mem.ptr  # constructors work as before
    assert cp.ndarray((2,), np.float32, memptr=p).data is p
    with pytest.raises(TypeError, match="takes no arguments"):
        cp.cuda.MemoryPool(1, 2, 3)  # and still refuse what object.__new__ refused


def _wrapped_block(cp, owner=None):
    """What the cuda backend's _result does: an ndarray over memory someone else owns."""
    mem = cp.cuda.UnownedMemory(0x1000, 16, owner, 0)
    return cp.ndarray((4,), np.float32, memptr=cp.cuda.MemoryPointer(mem, 0))


def test_the_life_of_objects_made_and_dropped_outside_is_the_simulators(timed):
    cp, timer = timed
    ns, classes = timer.objects_ns(lambda: _wrapped_block(cp), loops=20, samples=5)
    assert sorted(c.__name__ for c in classes) == ["MemoryPointer", "UnownedMemory", "ndarray"]
    assert 0 < ns < 1_000_000
    # made inside the simulator (cupy.empty makes the ndarray and its memory): on the clock
    assert timer.objects_ns(lambda: cp.empty(4, dtype=np.float32), loops=5, samples=2)[1] == []
    # an object still alive when fn returns is not dropped in it: nothing to take
    kept = []
    assert timer.objects_ns(lambda: kept.append(cp.cuda.Memory(16)), loops=5, samples=2)[1] == []


def _own_ns(timer, fn) -> float:
    """gpu_tensor's share of one call of fn, as bench_host_cost computes it."""
    objects = timer.objects_ns(fn, loops=3, samples=2)[0]
    timer.reset()
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0 - timer.ns - objects


def test_our_code_in_an_objects_life_stays_ours(timed):
    cp, timer = timed
    spin_ns = 2_000_000

    def spin():
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < spin_ns:
            pass

    class Owner:  # ours: the memory keeps it alive, and it runs when the memory is dropped
        def __del__(self):
            spin()

    assert _own_ns(timer, lambda: _wrapped_block(cp, Owner())) >= spin_ns

    block = cp.cuda.MemoryPointer(cp.cuda.Memory(64), 0)

    def allocator(nbytes):  # ours, called from inside the ndarray constructor
        spin()
        return block

    cp.cuda.set_allocator(allocator)
    timer.install()  # wraps the allocator just set
    assert _own_ns(timer, lambda: cp.ndarray((4,), np.float32)) >= spin_ns
