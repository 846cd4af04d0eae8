"""The cupy calls of the real-CUDA stream, event and allocator glue, driven on the CPU
against a recording fake that keeps the rules cupy 14 and the CUDA runtime enforce:

- ``with stream:`` raises unless the stream's device is current (cupy.cuda.stream's
  check_stream_device_match); cupy's singleton streams (device_id -1) go anywhere;
- an event is created on the current device and may only be recorded on a stream of that
  device (cudaEventRecord: cudaErrorInvalidResourceHandle otherwise);
- cudaStreamCreateWithPriority clamps an out-of-range priority into the device's range and
  cudaStreamGetPriority reports the clamped value;
- ``cupy.cuda.ExternalStream`` is deprecated in cupy 14 (it warns).

The real-GPU counterparts: tests/test_streams.py::test_real_streams_interoperate_with_cupy
and tests/backends/test_cuda_memory.py::test_install_counts_cupy_allocations."""

from __future__ import annotations

import types
import warnings

import pytest

from gpu_tensor.backends import _cupy, cuda_streams

PRIORITY_RANGE = (0, -3)  # (least, greatest); not the (0, -5) of recent GPUs: seen only if queried


class FakeCuda:
    def __init__(self, ndev: int = 2):
        self.ndev, self.current = ndev, 0
        self.streams: dict[int, int] = {}  # ptr -> device (0: legacy null stream)
        self.events: dict[int, int] = {}  # ptr -> device
        self.recorded: list[tuple[int, int]] = []
        self.malloc_fail = 0
        self._next = 0x1000
        fake = self

        class Device:
            def __init__(self, device=None):
                self.id = fake.current if device is None else int(device)
                self._stack = []

            def __enter__(self):
                self._stack.append(fake.current)
                fake.current = self.id
                return self

            def __exit__(self, *exc):
                fake.current = self._stack.pop()

        class Event:
            def __init__(self, block=False, disable_timing=False, interprocess=False):
                if interprocess and not disable_timing:
                    raise ValueError("Timing must be disabled for interprocess events")
                self.ptr = fake._new_handle(fake.events)
                self.done = True

            def record(self, stream=None):
                fake.runtime.eventRecord(self.ptr, stream.ptr)

            def synchronize(self):
                pass

        class Stream:
            null = None
            _stack: list = []

            def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
                self.ptr = 0 if null else fake._new_handle(fake.streams)
                self.device_id = -1 if null else fake.current

            def __enter__(self):
                if self.device_id not in (-1, fake.current):
                    raise RuntimeError(
                        f"The device that the stream is created on "
                        f"({self.device_id}) does not match with the current "
                        f"device ({fake.current})"
                    )
                Stream._stack.append(self)
                return self

            def __exit__(self, *exc):
                Stream._stack.pop()

            def wait_event(self, event):
                fake.waited = (self.ptr, event.ptr)

        Stream.null = Stream(null=True)

        def stream_create_with_priority(flags, priority):
            ptr = fake._new_handle(fake.streams)
            least, greatest = PRIORITY_RANGE
            fake.priorities[ptr] = min(least, max(greatest, priority))
            return ptr

        def event_record(event, stream):
            stream_dev = fake.current if stream == 0 else fake.streams[stream]
            if fake.events[event] != stream_dev:
                raise RuntimeError("cudaErrorInvalidResourceHandle")
            fake.recorded.append((event, stream))

        def malloc(nbytes):
            if fake.malloc_fail:
                fake.malloc_fail -= 1
                raise CUDARuntimeError(2)
            return fake._new_handle({})

        class CUDARuntimeError(RuntimeError):
            def __init__(self, status):
                super().__init__(f"cuda error {status}")
                self.status = status

        class ExternalStream:
            def __init__(self, ptr, device_id=-1):
                warnings.warn(
                    "ExternalStream is deprecated. Use Stream.from_external() instead",
                    DeprecationWarning,
                    stacklevel=2,
                )
                self.ptr = ptr

        self.priorities: dict[int, int] = {}
        self.pool_frees = 0
        self.runtime = types.SimpleNamespace(
            streamNonBlocking=1,
            streamCreateWithPriority=stream_create_with_priority,
            streamGetPriority=lambda ptr: self.priorities[ptr],
            streamDestroy=lambda ptr: self.priorities.pop(ptr),
            eventRecord=event_record,
            malloc=malloc,
            CUDARuntimeError=CUDARuntimeError,
            getDevice=lambda: self.current,
        )
        self.module = types.SimpleNamespace(
            cuda=types.SimpleNamespace(
                Device=Device,
                Event=Event,
                Stream=Stream,
                ExternalStream=ExternalStream,
                runtime=self.runtime,
                get_elapsed_time=lambda a, b: 1.5,
            ),
            get_default_memory_pool=lambda: types.SimpleNamespace(free_all_blocks=self._pool_free),
        )

    def _pool_free(self):
        self.pool_frees += 1

    def _new_handle(self, table: dict) -> int:
        self._next += 16
        table[self._next] = self.current
        return self._next


@pytest.fixture
def fake(monkeypatch):
    f = FakeCuda()
    monkeypatch.setattr(_cupy, "cupy", lambda: f.module)
    return f


def test_stream_context_switches_to_the_streams_device_and_back(fake):
    backend = cuda_streams.CupyStreams()
    s1 = backend.new_stream(1, 0)
    assert s1.device_id == 1 and fake.current == 0
    backend.enter(s1)  # cupy alone would refuse: device 0 is current
    assert fake.current == 1
    backend.exit(s1)
    assert fake.current == 0
    null = backend.null_stream(1)
    backend.enter(null)  # cuda:1's default stream is the legacy stream *of device 1*
    assert fake.current == 1 and null.device_id == 1
    backend.exit(null)
    assert fake.current == 0


def test_event_is_made_on_the_recorded_streams_device(fake):
    backend = cuda_streams.CupyStreams()
    s1 = backend.new_stream(1, 0)
    ev = backend.new_event(enable_timing=True, blocking=False, interprocess=False)
    assert backend.event_query(ev)  # never recorded: done, like torch
    backend.record(ev, s1)  # device 0 is current; the event must still be device 1's
    assert fake.events[ev.ptr] == 1 and fake.recorded == [(ev.ptr, s1.ptr)]
    assert fake.current == 0
    backend.wait_event(backend.new_stream(1, 0), ev)
    assert fake.waited[1] == ev.ptr
    assert backend.elapsed_ms(ev, ev) == 1.5
    with pytest.raises(ValueError, match="interprocess"):
        backend.new_event(enable_timing=True, blocking=False, interprocess=True)


def test_priority_range_from_clamped_streams(fake):
    backend = cuda_streams.CupyStreams()
    assert backend.priority_range() == PRIORITY_RANGE
    assert not fake.priorities  # the probe streams were destroyed


def test_allocator_event_records_on_the_blocks_device_without_external_stream(fake):
    from gpu_tensor.backends import cuda_memory

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cuda_memory, "cupy", lambda: fake.module)
        fake.current = 1
        s0 = fake.module.cuda.Stream()  # created on device 1 ...
        fake.streams[s0.ptr] = 0  # ... pretend device 0's stream
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # ExternalStream would warn (deprecated in 14)
            ev = cuda_memory.CudaEvent(s0.ptr, device=0)
        assert fake.current == 1 and fake.recorded[-1][1] == s0.ptr
        assert ev.query()


def test_raw_source_flushes_cupys_pool_before_reporting_oom(fake):
    from gpu_tensor.backends import cuda_memory
    from gpu_tensor.memory.raw import RawOutOfMemory

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cuda_memory, "cupy", lambda: fake.module)
        raw = cuda_memory.CudaRawSource(0)
        fake.malloc_fail = 1
        assert raw.alloc(1 << 20) and fake.pool_frees == 1  # retried after the flush
        fake.malloc_fail = 2
        with pytest.raises(RawOutOfMemory):
            raw.alloc(1 << 20)
        assert fake.pool_frees == 2
