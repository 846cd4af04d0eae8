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
    cp.ndarray((2,), np.float32, memptr=a.data)  # the same constructor, entered from outside
    assert timer.crossings == 1
    a.fill(2)
    assert timer.crossings == 2 and a.get().tolist() == [[2.0] * 4] * 3  # still the sim


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
