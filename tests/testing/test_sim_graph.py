"""Stream capture in the simulated CuPy: recorded not run, replayed in order on the launch
stream, race-checked, counted once per launch, and strict about what CUDA forbids."""

import gc

import numpy as np
import pytest

from gpu_tensor.testing import sim


@pytest.fixture
def cp():
    # earlier tests' garbage first: a finaliser that frees or syncs would otherwise act on
    # the fresh machine mid-test (a host-seen completion orders work the test expects to race)
    gc.collect()
    sim.reset(devices=1, seed=3)
    return sim.module()


def _capture_stream(cp):
    """A non-blocking stream to capture on, once the legacy stream's work (the test's array
    fill) is done."""
    cp.cuda.runtime.deviceSynchronize()
    return cp.cuda.Stream(non_blocking=True)


def test_capture_records_and_replay_runs_in_order(cp):
    x = cp.arange(4, dtype=cp.float32)
    s = _capture_stream(cp)
    with s:
        s.begin_capture()
        assert s.is_capturing()
        x *= 2  # a cupy routine writing its argument
        y = x + 1  # a new result: allocated now, filled at replay
        x += y
        g = s.end_capture()
    assert not s.is_capturing()
    assert isinstance(g, cp.cuda.Graph)
    assert x.get().tolist() == [0, 1, 2, 3]  # nothing ran during capture
    sim.reset_counters()
    g.launch(s)
    s.synchronize()
    assert x.get().tolist() == [1, 5, 9, 13]  # x=2x; y=x+1; x+=y
    assert y.get().tolist() == [1, 3, 5, 7]
    c = sim.counters()
    assert c["graph_launches"] == 1 and c["kernel_launches"] == 0
    assert c["cupy_routines"] == 0
    g.launch(s)
    s.synchronize()
    assert x.get().tolist() == [5, 21, 37, 53]  # the same steps again, from [1, 5, 9, 13]


def test_replays_are_race_checked(cp):
    x = cp.zeros(1000, cp.float32)
    s, other = _capture_stream(cp), cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        x += 1
        g = s.end_capture()
    with other:
        x *= 3  # queued on another stream, not ordered with the replay
    with pytest.raises(sim.SimRaceError, match="race.*graph"):
        g.launch(s)


@pytest.mark.parametrize("illegal", ["sync", "query", "get", "set", "device_sync", "event"])
def test_what_cuda_forbids_under_capture_fails_and_invalidates(cp, illegal):
    rt = cp.cuda.runtime
    x = cp.ones(4, cp.float32)
    s = _capture_stream(cp)
    with s:
        s.begin_capture()
        x += 1
        with pytest.raises(rt.CUDARuntimeError, match="during stream capture"):
            if illegal == "sync":
                s.synchronize()
            elif illegal == "query":
                rt.streamQuery(s.ptr)
            elif illegal == "get":
                x.get()  # a pageable device-to-host copy waits for the stream
            elif illegal == "set":
                x.set(np.zeros(4, np.float32))  # a pageable host-to-device copy
            elif illegal == "device_sync":
                rt.deviceSynchronize()
            else:
                s.record().synchronize()
        with pytest.raises(rt.CUDARuntimeError, match="invalidated"):
            s.end_capture()
    assert not s.is_capturing()
    x += 1  # the stream is usable again
    assert x.get().tolist() == [2.0] * 4


def test_malloc_is_unsafe_outside_relaxed_mode(cp):
    rt = cp.cuda.runtime
    s = cp.cuda.Stream(non_blocking=True)
    s.begin_capture(rt.streamCaptureModeGlobal)
    with pytest.raises(rt.CUDARuntimeError, match="cudaMalloc"):
        rt.malloc(1024)
    with pytest.raises(rt.CUDARuntimeError, match="invalidated"):
        s.end_capture()
    s.begin_capture()  # cupy's default, relaxed: cudaMalloc is allowed
    rt.free_ptr = rt.malloc(1024)
    s.end_capture()
    rt.free(rt.free_ptr)
    with pytest.raises(RuntimeError, match="legacy"):
        cp.cuda.Stream.null.begin_capture()


def test_legacy_stream_work_while_a_blocking_stream_captures(cp):
    rt = cp.cuda.runtime
    s = cp.cuda.Stream()  # blocking: synchronizes with the legacy stream
    s.begin_capture()
    with pytest.raises(rt.CUDARuntimeError, match="legacy"):
        cp.ones(3)  # on the legacy stream: an implicit dependency on the capture
    with pytest.raises(rt.CUDARuntimeError, match="invalidated"):
        s.end_capture()
