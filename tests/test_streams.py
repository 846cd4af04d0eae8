"""gpu_tensor.cuda.streams: the torch.cuda stream/event API (emulated here, real on a GPU)."""

from __future__ import annotations

import threading
import time

import pytest

from gpu_tensor.cuda import streams
from gpu_tensor.cuda.streams import Event, Stream
from gpu_tensor.device import cuda_is_emulated, real_cuda_available

try:
    from gpu_tensor.testing import requires_real_cuda
except ImportError:  # the core's marker not there yet
    requires_real_cuda = pytest.mark.skipif(
        not real_cuda_available(), reason="needs a real CUDA GPU (none on this machine)"
    )


@pytest.fixture(autouse=True)
def _cuda_available(monkeypatch):
    if not real_cuda_available():
        monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")  # conftest does this too


def test_default_and_current_stream():
    d = streams.default_stream()
    assert streams.current_stream() == d
    assert d.cuda_stream == 0 and d.ptr == 0
    assert d.device.type == "cuda" and d.device.index == 0
    assert streams.current_stream("cuda:0") == streams.current_stream(0) == d


def test_stream_context_is_nested_and_restored():
    s1, s2 = Stream(), Stream()
    assert s1 != s2 and len({s1, s2, streams.default_stream()}) == 3
    with streams.stream(s1):
        assert streams.current_stream() == s1
        with streams.stream(s2):
            assert streams.current_stream() == s2
        assert streams.current_stream() == s1
        with streams.stream(None):  # torch allows None: no change
            assert streams.current_stream() == s1
    assert streams.current_stream() == streams.default_stream()


def test_current_stream_is_per_thread():
    s = Stream()
    seen = []
    with streams.stream(s):
        t = threading.Thread(target=lambda: seen.append(streams.current_stream()))
        t.start()
        t.join()
        assert streams.current_stream() == s
    assert seen == [streams.default_stream()]


def test_stream_protocol_and_identity():
    s = Stream(priority=-1)
    assert s.__cuda_stream__() == (0, s.cuda_stream)
    assert s.priority == -1
    wrapped = Stream.from_external(s)
    assert wrapped == s and hash(wrapped) == hash(s)
    assert "cuda:0" in repr(s)
    with pytest.raises(TypeError, match="__cuda_stream__"):
        Stream.from_external(object())


def test_priority_outside_range_is_refused():
    least, greatest = Stream.priority_range()
    assert greatest <= least
    with pytest.raises(ValueError, match="priority .* outside"):
        Stream(priority=greatest - 1)
    with pytest.raises(ValueError, match="priority .* outside"):
        Stream(priority=least + 1)


def test_streams_refuse_cpu():
    with pytest.raises(ValueError, match="cuda device"):
        Stream("cpu")
    with pytest.raises(ValueError, match="cuda device"):
        streams.current_stream("cpu")


def test_event_lifecycle():
    s = Stream()
    e = Event()
    assert e.query()  # never recorded: nothing to wait for (torch)
    e.synchronize()
    e.record(s)
    e.synchronize()
    assert e.query()
    e.wait()  # current stream waits on it
    s.wait_event(e)
    s.wait_stream(streams.default_stream())
    ev = s.record_event()
    assert isinstance(ev, Event)
    s.synchronize()
    assert s.query()
    streams.synchronize()


def test_elapsed_time_needs_timing_and_records():
    a, b = Event(), Event()
    a.record()
    b.record()
    with pytest.raises(RuntimeError, match="enable_timing"):
        a.elapsed_time(b)
    c, d = Event(enable_timing=True), Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="recorded"):
        c.elapsed_time(d)


@pytest.mark.skipif(
    not cuda_is_emulated() and real_cuda_available(),
    reason="host time between records: emulated semantics only",
)
def test_emulated_elapsed_time_is_host_time():
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    assert 15.0 <= start.elapsed_time(end) < 2000.0


@pytest.mark.cuda
@requires_real_cuda
def test_real_streams_interoperate_with_cupy():
    from gpu_tensor.testing import cupy_module

    cupy = cupy_module()

    s = Stream()
    assert cupy.cuda.Stream.from_external(s).ptr == s.cuda_stream
    with streams.stream(s):
        assert cupy.cuda.get_current_stream().ptr == s.cuda_stream
        x = cupy.arange(1 << 20, dtype=cupy.float32)
        start, end = Event(enable_timing=True), Event(enable_timing=True)
        start.record()
        for _ in range(10):
            x = x * 1.0001
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
    outside = cupy.cuda.Stream(non_blocking=True)
    with outside:
        assert streams.current_stream().cuda_stream == outside.ptr  # cupy's choice is seen
