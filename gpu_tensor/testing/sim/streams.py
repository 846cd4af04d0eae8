"""cupy.cuda.Stream / Event / get_current_stream over the simulated scheduler.

As in cupy (cupy/cuda/stream.pyx): `Stream.null` and `Stream.ptds` are singletons with
device_id -1 that name the legacy / per-thread default stream of whichever device is current
when they are used; `Stream.from_external` has device_id -1 too (its queue keeps its real
device); an event belongs to the device current when it is created, and recording it on a
stream of another device is cudaErrorInvalidResourceHandle; a created stream belongs to the device current at creation, and
entering it (`with stream:`) while another device is current raises; a stream's handle is
destroyed when the Stream object dies (using the handle afterwards is
cudaErrorInvalidResourceHandle); the current stream is per thread and per device.
"""

from __future__ import annotations

import weakref

from ... import _env
from .machine import machine
from .runtime import CUDARuntimeError
from .signatures import checked

__all__ = [
    "Stream",
    "Event",
    "get_current_stream",
    "get_elapsed_time",
    "new_queue",
    "event_by_handle",
]


def new_queue(handle: int, device: int, blocking: bool):
    kind = "blocking" if blocking else "non-blocking"
    return machine().sched.new_queue(
        f"stream {handle:#x} ({kind}, cuda:{device})", device, blocking
    )


class Stream:
    """cupy.cuda.Stream."""

    null = None  # set below: the legacy default stream
    ptds = None  # the per-thread default stream

    @checked("cuda.Stream", method=True)
    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        m = machine()
        self._owned, self._machine = False, m
        self._owned = not (null or ptds)
        self.device_id = -1
        if null:
            self.ptr = 0
        elif ptds:
            self.ptr = 2
        else:
            from . import runtime as rt

            self.ptr = rt.streamCreateWithPriority(
                1 if non_blocking else 0, 0 if priority is None else priority
            )
            self.device_id = m.current_device()
        self._machine = m

    @classmethod
    def _external(cls, ptr: int, device_id: int):
        s = cls.__new__(cls)
        s.ptr, s.device_id, s._owned, s._machine = int(ptr), device_id, False, machine()
        return s

    @staticmethod
    @checked("cuda.Stream.from_external")
    def from_external(obj):
        # cupy cannot know a foreign stream's device: device_id -1, as for the singletons
        # (cupy/cuda/stream.pyx), whichever device is current
        version, ptr = obj.__cuda_stream__()
        return Stream._external(ptr, -1)

    def _queue(self):
        return machine().queue(self.ptr)

    @property
    def priority(self) -> int:
        return getattr(self._queue(), "priority", 0)

    @property
    def done(self) -> bool:
        q = self._queue()
        return machine().sched.query({q: q.clock})

    def synchronize(self) -> None:
        m = machine()
        m.count("host_waits")
        m.sched.synchronize(self._queue())

    def wait_event(self, event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"wait_event takes a cupy.cuda.Event, got {type(event).__name__}")
        event._check_not_captured("another stream waiting for (a capture fork, not simulated)")
        q = self._queue()
        with machine().sched.lock:
            q.vc = {**q.vc, **{k: v for k, v in event._vc.items() if q.vc.get(k, 0) < v}}

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    @checked("cuda.Stream.begin_capture", method=True)
    def begin_capture(self, mode=None):
        # as cupy: the legacy stream cannot capture; relaxed mode unless told (graph.py)
        if self.ptr in (0, 1):
            raise RuntimeError("cannot capture on the default (legacy) stream")
        from . import runtime as rt

        rt.streamBeginCapture(self.ptr, rt.streamCaptureModeRelaxed if mode is None else mode)

    @checked("cuda.Stream.end_capture", method=True)
    def end_capture(self):
        from . import graph
        from . import runtime as rt

        return graph.graph_of(rt.streamEndCapture(self.ptr))

    @checked("cuda.Stream.is_capturing", method=True)
    def is_capturing(self):
        from . import runtime as rt

        return rt.streamIsCapturing(self.ptr)

    def _check_device(self) -> None:
        cur = machine().current_device()
        if self.device_id not in (-1, cur):
            raise RuntimeError(
                f"The device where the stream is created ({self.device_id}) "
                f"does not match the current device ({cur})"
            )

    def use(self):
        self._check_device()
        _stacks().setdefault(machine().current_device(), []).append(self)
        return self

    def __enter__(self):
        return self.use()

    def __exit__(self, *exc):
        _stacks()[machine().current_device()].pop()
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self):
        return hash(self.ptr)

    def __repr__(self):
        return f"<Stream {self.ptr:#x} (device {self.device_id})>"

    def __del__(self):
        if getattr(self, "_owned", False) and self._machine is machine():
            try:
                from . import runtime as rt

                rt.streamDestroy(self.ptr)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


def _stacks() -> dict:
    local = machine().local
    if not hasattr(local, "streams"):
        local.streams = {}
    return local.streams


@checked("cuda.get_current_stream")
def get_current_stream(device_id=-1):
    m = machine()
    dev = m.current_device() if device_id is None or device_id < 0 else device_id
    stack = _stacks().get(dev)
    if stack:
        return stack[-1]
    return Stream.ptds if _env.cupy_per_thread_default_stream() else Stream.null


_events: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def event_by_handle(handle: int):
    ev = _events.get(handle)
    if ev is None:
        raise CUDARuntimeError(400, f"event {handle:#x} does not exist")
    return ev


class Event:
    """cupy.cuda.Event: `record` marks everything queued on a stream so far."""

    @checked("cuda.Event", method=True)
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        m = machine()
        m.count("driver_calls")
        self.ptr = m.handle()
        self.device = m.current_device()  # an event belongs to the device current at creation
        self.block, self.disable_timing = block, disable_timing
        self._vc: dict = {}
        self._recorded = False
        _events[self.ptr] = self

    def _record_queue(self, queue) -> None:
        if queue.device != self.device:  # cudaEventRecord: event and stream of one device
            raise CUDARuntimeError(
                400, f"an event of cuda:{self.device} recorded on a stream of cuda:{queue.device}"
            )
        # An empty task: recording on the legacy stream orders after the blocking streams.
        task = machine().sched.enqueue(queue, None, "cudaEventRecord")
        self._vc, self._recorded = dict(task.vc), True
        # recorded into a capture (graph.py): the host cannot wait for it
        self._captured = queue.capture if task.clock is None else None

    @checked("cuda.Event.record", method=True)
    def record(self, stream=None):
        stream = get_current_stream() if stream is None else stream
        if stream.device_id not in (-1, machine().current_device()):
            raise CUDARuntimeError(
                400, "an event must be recorded on a stream of the current device"
            )
        self._record_queue(stream._queue())

    def _check_not_captured(self, what: str) -> None:
        cap = getattr(self, "_captured", None)
        if cap is not None:
            machine().sched.capture_error(
                cap,
                900,
                f"{what} an event recorded during stream capture (it completes when a graph runs)",
            )

    @property
    def done(self) -> bool:
        self._check_not_captured("querying")
        return machine().sched.query(self._vc)

    def synchronize(self) -> None:
        self._check_not_captured("waiting for")
        m = machine()
        m.count("host_waits")
        m.sched.wait_clock(self._vc)


@checked("cuda.get_elapsed_time")
def get_elapsed_time(start_event, end_event):
    for e in (start_event, end_event):
        if e.disable_timing:
            raise CUDARuntimeError(6, "an event was created with disable_timing=True")
        if not e._recorded or not machine().sched.complete(e._vc):
            raise CUDARuntimeError(600, "an event has not completed")  # cudaErrorNotReady
    # No clock exists here: the simulated time is the number of operations between the two.
    return 1e-3 * (sum(end_event._vc.values()) - sum(start_event._vc.values()))
