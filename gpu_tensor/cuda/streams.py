"""CUDA streams and events with torch.cuda's names: `Stream`, `Event`, `stream(s)`,
`current_stream()`, `default_stream()`, `synchronize()`.

On a GPU these wrap cupy's streams, so `with gt.cuda.stream(s):` also makes `s` cupy's
current stream (cupy kernels and our copies land on it), and `current_stream()` reports a
stream a user made current through cupy. Streams speak the CUDA stream protocol
(`__cuda_stream__`), so `cupy.cuda.Stream.from_external(s)` works, and
`Stream.from_external(obj)` takes any object that speaks it (torch, cupy, cuda-python).

On the emulated device the same API runs with synchronous semantics: every operation has
finished when its call returns, `query()` is always True, waits are no-ops and
`elapsed_time` measures host time between the two `record` calls.
"""

from __future__ import annotations

import contextlib

from gpu_tensor import device as _device
from gpu_tensor.backends import cuda_kind

__all__ = [
    "Stream",
    "Event",
    "stream",
    "current_stream",
    "default_stream",
    "synchronize",
]


def _backend():
    return cuda_kind().streams()  # the kind's mechanism: cupy streams, or synchronous ones


def _cuda_index(device) -> int:
    """Index of a cuda device given as None / int / 'cuda:N' / Device; refuses cpu."""
    if isinstance(device, int) and not isinstance(device, bool):
        d = _device.resolve(_device.device("cuda", device))
    else:
        d = _device.resolve("cuda" if device is None else device)
    if d.type != "cuda":
        raise ValueError(f"streams and events live on a cuda device, not on '{d}'")
    return d.index


class Stream:
    """An ordered queue of device work (torch.cuda.Stream).

    ``priority``: lower numbers run sooner; the valid range is `Stream.priority_range()`
    (CUDA's (0, -5) on recent GPUs). Streams compare equal when they wrap the same handle.
    """

    __slots__ = ("_handle", "_index", "_ptr")

    def __init__(self, device=None, priority: int = 0):
        index = _cuda_index(device)
        least, greatest = _backend().priority_range()
        if not greatest <= priority <= least:
            raise ValueError(
                f"stream priority {priority} is outside this device's range "
                f"[{greatest}, {least}] (lower numbers are higher priority)"
            )
        self._init(_backend().new_stream(index, priority), index)

    def _init(self, handle, index: int) -> None:
        self._handle = handle
        self._index = index
        self._ptr = _backend().ptr(handle)

    @classmethod
    def _wrap(cls, handle, index: int) -> Stream:
        obj = cls.__new__(cls)
        obj._init(handle, index)
        return obj

    @classmethod
    def from_external(cls, obj, device=None) -> Stream:
        """Wrap a stream owned by another library (anything with `__cuda_stream__`)."""
        if not hasattr(obj, "__cuda_stream__"):
            raise TypeError(f"{type(obj).__name__} does not implement __cuda_stream__")
        index = _cuda_index(device)
        return cls._wrap(_backend().from_external(obj, index), index)

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(least, greatest) priority, as torch.cuda.Stream.priority_range()."""
        return _backend().priority_range()

    @property
    def device(self) -> _device.Device:
        return _device.device("cuda", self._index)

    @property
    def priority(self) -> int:
        return _backend().priority(self._handle)

    @property
    def cuda_stream(self) -> int:
        """The raw cudaStream_t (0 for the legacy default stream)."""
        return self._ptr

    @property
    def ptr(self) -> int:
        """Same as `cuda_stream` (cupy's spelling; the device allocator keys streams by it)."""
        return self._ptr

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self._ptr)

    def query(self) -> bool:
        """True when all work queued so far has finished."""
        return _backend().query(self._handle)

    def synchronize(self) -> None:
        """Block the calling thread until all work queued so far has finished."""
        _capture_guard("Stream.synchronize()")
        _backend().synchronize(self._handle)

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream after this call waits for ``event`` (no host block)."""
        if event._handle is None:  # never recorded: nothing to wait for (torch does the same)
            return
        _backend().wait_event(self._handle, event._handle)

    def wait_stream(self, other: Stream) -> None:
        """Work queued after this call waits for everything queued on ``other`` so far."""
        self.wait_event(other.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        _backend().enter(self._handle)
        return self

    def __exit__(self, *exc) -> None:
        _backend().exit(self._handle)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and (self._index, self._ptr) == (other._index, other._ptr)

    def __hash__(self) -> int:
        return hash((self._index, self._ptr))

    def __repr__(self) -> str:
        return f"<gpu_tensor.cuda.Stream device=cuda:{self._index} cuda_stream=0x{self._ptr:x}>"


class Event:
    """A marker in a stream's work (torch.cuda.Event). Created lazily on first `record`.

    ``enable_timing`` is needed for `elapsed_time`; ``blocking`` makes `synchronize` sleep
    instead of spin; ``interprocess`` allows sharing across processes.
    """

    __slots__ = ("_handle", "_index", "enable_timing", "blocking", "interprocess")

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._handle = None
        self._index = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream``'s work (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        if self._handle is None:
            self._handle = _backend().new_event(
                self.enable_timing, self.blocking, self.interprocess
            )
            self._index = stream._index
        elif self._index != stream._index:
            raise ValueError(
                f"event was recorded on cuda:{self._index}; it cannot be recorded on "
                f"cuda:{stream._index} (make a new Event for that device)"
            )
        _backend().record(self._handle, stream._handle)

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` (default: current) wait for this event, without blocking the host."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """True when the work before `record` has finished (or it was never recorded)."""
        return True if self._handle is None else _backend().event_query(self._handle)

    def synchronize(self) -> None:
        """Block the host until the work before `record` has finished."""
        if self._handle is not None:
            _backend().event_synchronize(self._handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, timing on)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time needs both events created with enable_timing=True")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("elapsed_time needs both events to be recorded first")
        return _backend().elapsed_ms(self._handle, end_event._handle)

    def __repr__(self) -> str:
        state = "unrecorded" if self._handle is None else f"cuda:{self._index}"
        return f"<gpu_tensor.cuda.Event {state}>"


def current_stream(device=None) -> Stream:
    """The stream this thread's work on ``device`` goes to (default: the current device)."""
    index = _cuda_index(device)
    return Stream._wrap(_backend().current(index), index)


def default_stream(device=None) -> Stream:
    """The device's legacy default (null) stream."""
    index = _cuda_index(device)
    return Stream._wrap(_backend().null_stream(index), index)


@contextlib.contextmanager
def stream(s: Stream | None):
    """`with gt.cuda.stream(s):` makes ``s`` current for this thread; None is a no-op."""
    if s is None:
        yield None
        return
    with s:
        yield s


def synchronize(device=None) -> None:
    """Block until all work on ``device`` (default: current), on every stream, is done."""
    _capture_guard("gt.cuda.synchronize()")
    _backend().device_synchronize(_cuda_index(device))


def _cai_stream(device=None) -> int | None:
    """The `stream` value for `__cuda_array_interface__` v3: the current stream's handle,
    with the legacy default stream spelled 1 (0 is forbidden by the spec)."""
    ptr = current_stream(device).cuda_stream
    return 1 if ptr == 0 else ptr


def _capture_guard(what: str) -> None:
    from gpu_tensor.memory import graph_pool

    if graph_pool.active_captures:
        graph_pool.guard(what)
