"""Stream/event mechanism behind `gpu_tensor.cuda.streams`: one protocol, two leaves.

`CupyStreams` drives real CUDA through cupy (imported lazily through `_cupy.cupy()`);
`EmulatedStreams` is the emulated device's version: every enqueued operation has already
run when the call returns, so streams are always idle and events always complete, and the
host clock stands in for event timing.

The protocol (handles are opaque to the caller):
    new_stream(device, priority) / null_stream(device) / current(device) /
    from_external(obj, device)
    enter(handle) / exit(handle)          -- make a stream current for this thread
    ptr(handle) / query(h) / synchronize(h) / wait_event(h, ev)
    new_event(enable_timing, blocking, interprocess) / record(ev, h) / event_query(ev) /
    event_synchronize(ev) / elapsed_ms(start, end)
    device_synchronize(device) / priority_range()
    memcpy_async(dst_ptr, src_ptr, nbytes, kind, h, device)   -- kind 'h2d' | 'd2h' | 'd2d'
    memcpy_peer_async(dst_ptr, dst_device, src_ptr, src_device, nbytes, h)
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time

from gpu_tensor.backends import _cupy

__all__ = ["CupyStreams", "EmulatedStreams", "stream_backend", "HOST_WAITS"]

# [count]: the host waits on device work asked of this layer (stream, event and device
# synchronize), on either leaf: the profiler's sync column reads it around each op
HOST_WAITS = [0]


class _CupyEvent:
    """A cupy Event made on first `record`, on the recorded stream's device: an event and
    the stream it is recorded on must belong to the same device (cudaEventRecord)."""

    __slots__ = ("event", "flags")

    def __init__(self, flags: dict):
        self.flags = flags
        self.event = None

    @property
    def ptr(self) -> int:
        return 0 if self.event is None else self.event.ptr


class _OnDevice:
    """cupy's singleton streams (Stream.null, Stream.ptds) name the default stream of
    whichever device is current (device_id -1). gpu_tensor's default stream of cuda:N is
    that stream *on device N*: this pins it, so records, waits and syncs switch to N.
    Streams wrapped with from_external (device_id -1 too) are pinned the same way."""

    __slots__ = ("stream", "device_id")

    def __init__(self, stream, device_id: int):
        self.stream, self.device_id = stream, device_id

    ptr = property(lambda self: self.stream.ptr)
    priority = property(lambda self: self.stream.priority)

    def __eq__(self, other):
        return (
            isinstance(other, _OnDevice)
            and other.stream is self.stream
            and other.device_id == self.device_id
        )

    def __hash__(self):
        return hash((self.stream.ptr, self.device_id))


def _raw(handle):
    """The cupy stream behind a handle."""
    return handle.stream if type(handle) is _OnDevice else handle


class CupyStreams:
    """Real streams and events: thin calls into cupy.cuda."""

    def __init__(self) -> None:
        self._cp = _cupy.cupy()
        self._rt = self._cp.cuda.runtime
        self._range: tuple[int, int] | None = None
        self._local = threading.local()  # per thread: devices to restore at stream exit
        self._null: dict = {}
        self._pool: dict = {}
        self._turn: dict = {}
        self._lock = threading.RLock()  # finalisers (a block freed by the collector) may re-enter

    def _device_of(self, handle):
        """A `with` target for the stream's device (cupy's singleton streams have
        device_id -1: any device, so the current one)."""
        dev = getattr(handle, "device_id", -1)
        return self._cp.cuda.Device(dev if dev is not None and dev >= 0 else None)

    POOL_SIZE = 32  # streams per (device, priority), handed out round-robin (torch's pool)

    def new_stream(self, device: int, priority: int):
        """A stream from a pool that is never destroyed, as torch.cuda.Stream() does: the
        caching allocator remembers the streams that used a block (record_stream) by handle,
        so a handle must outlive every block it touched (a destroyed one would be
        recorded on later, and could be reused by a new stream while old work runs)."""
        key = (device, priority)
        with self._lock:
            pool = self._pool.setdefault(key, [])
            turn = self._turn.get(key, 0)
            self._turn[key] = turn + 1
            if len(pool) < self.POOL_SIZE:
                with self._cp.cuda.Device(device):
                    # non_blocking: side streams must not serialise against the legacy stream
                    pool.append(self._cp.cuda.Stream(non_blocking=True, priority=priority))
                return pool[-1]
            return pool[turn % self.POOL_SIZE]

    def null_stream(self, device: int):
        with self._lock:
            s = self._null.get(device)
            if s is None:
                s = self._null[device] = _OnDevice(self._cp.cuda.Stream.null, device)
            return s

    def current(self, device: int):
        s = self._cp.cuda.get_current_stream(device)
        if getattr(s, "device_id", -1) in (-1, None):  # a singleton: pin it to `device`
            if s.ptr == 0:
                return self.null_stream(device)
            return _OnDevice(s, device)
        return s

    def from_external(self, obj, device: int):
        """`obj`'s stream, pinned to `device`: cupy's wrapper has device_id -1 (it cannot
        know the device), which would put its events, waits and syncs on whichever device
        is current (an event of another device: cudaErrorInvalidResourceHandle)."""
        stream_cls = self._cp.cuda.Stream
        if hasattr(stream_cls, "from_external"):  # cupy >= 14 (ExternalStream deprecated)
            stream = stream_cls.from_external(obj)
        else:
            stream = self._cp.cuda.ExternalStream(int(obj.__cuda_stream__()[1]))  # cupy 13
        return _OnDevice(stream, device)

    def enter(self, handle) -> None:
        # cupy refuses to make a stream current while another device is current (its
        # check_stream_device_match); like torch.cuda.stream, switch to the stream's device
        # for the duration of the block.
        dev = self._device_of(handle)
        dev.__enter__()
        try:
            _raw(handle).__enter__()
        except BaseException:
            dev.__exit__(None, None, None)
            raise
        self._local.__dict__.setdefault("devices", []).append(dev)

    def exit(self, handle) -> None:
        try:
            _raw(handle).__exit__(None, None, None)
        finally:
            devices = self._local.__dict__.get("devices")
            if devices:
                devices.pop().__exit__(None, None, None)

    def ptr(self, handle) -> int:
        return int(handle.ptr)

    def priority(self, handle) -> int:
        return int(handle.priority)

    def query(self, handle) -> bool:
        with self._device_of(handle):
            return bool(_raw(handle).done)

    def synchronize(self, handle) -> None:
        HOST_WAITS[0] += 1
        with self._device_of(handle):
            _raw(handle).synchronize()

    def wait_event(self, handle, event) -> None:
        if event.event is not None:
            with self._device_of(handle):
                _raw(handle).wait_event(event.event)

    def new_event(self, enable_timing: bool, blocking: bool, interprocess: bool):
        if interprocess and enable_timing:  # cupy.cuda.Event raises the same, but later
            raise ValueError(
                "an interprocess event cannot time: pass enable_timing=False with interprocess=True"
            )
        return _CupyEvent(
            {"block": blocking, "disable_timing": not enable_timing, "interprocess": interprocess}
        )

    def record(self, event, handle) -> None:
        with self._device_of(handle):
            if event.event is None:
                event.event = self._cp.cuda.Event(**event.flags)
            event.event.record(_raw(handle))

    def event_query(self, event) -> bool:
        return True if event.event is None else bool(event.event.done)

    def event_synchronize(self, event) -> None:
        if event.event is not None:
            HOST_WAITS[0] += 1
            event.event.synchronize()

    def elapsed_ms(self, start, end) -> float:
        return float(self._cp.cuda.get_elapsed_time(start.event, end.event))

    def device_synchronize(self, device: int) -> None:
        HOST_WAITS[0] += 1
        with self._cp.cuda.Device(device):
            self._rt.deviceSynchronize()

    # stream capture (gpu_tensor/cuda/graphs.py): cupy's Stream.begin_capture/end_capture
    def begin_capture(self, handle, mode: int) -> None:
        with self._device_of(handle):
            _raw(handle).begin_capture(mode)

    def end_capture(self, handle):
        """The captured cupy.cuda.Graph (raises when the capture was invalidated)."""
        with self._device_of(handle):
            return _raw(handle).end_capture()

    def is_capturing(self, handle) -> bool:
        if _raw(handle).ptr in (0, 1):  # the legacy stream never captures
            return False
        with self._device_of(handle):
            return bool(_raw(handle).is_capturing())

    def graph_launcher(self, device: int):
        """f(graph): launch a captured graph on `device`'s current stream. The replay hot
        path: two cupy calls when `device` is current, nothing of ours in between."""
        cuda = self._cp.cuda
        get_device, current = self._rt.getDevice, cuda.get_current_stream

        def launch(graph) -> None:
            if get_device() == device:
                graph.launch(current(device))
            else:
                with cuda.Device(device):
                    graph.launch(current(device))

        return launch

    def priority_range(self) -> tuple[int, int]:
        if self._range is None:
            self._range = self._query_priority_range()
        return self._range

    def _query_priority_range(self) -> tuple[int, int]:
        # cupy does not wrap cudaDeviceGetStreamPriorityRange, and its runtime is linked
        # statically (no libcudart to dlopen). CUDA clamps an out-of-range priority to the
        # nearest end of the range and cudaStreamGetPriority reports the clamped value, so
        # two throwaway streams with extreme priorities reveal both ends.
        rt = self._rt
        ends = []
        try:
            for asked in (1 << 20, -(1 << 20)):  # far beyond any device's range, both ways
                ptr = rt.streamCreateWithPriority(rt.streamNonBlocking, asked)
                try:
                    ends.append(int(rt.streamGetPriority(ptr)))
                finally:
                    rt.streamDestroy(ptr)
        except rt.CUDARuntimeError:  # a driver that refuses instead of clamping
            return EmulatedStreams.PRIORITY_RANGE
        return ends[0], ends[1]

    def memcpy_async(self, dst: int, src: int, nbytes: int, kind: str, handle, device: int) -> None:
        kinds = {
            "h2d": self._rt.memcpyHostToDevice,
            "d2h": self._rt.memcpyDeviceToHost,
            "d2d": self._rt.memcpyDeviceToDevice,
        }
        with self._cp.cuda.Device(device):  # the stream's device must be current
            self._rt.memcpyAsync(dst, src, nbytes, kinds[kind], handle.ptr)

    def memcpy_peer_async(
        self, dst: int, dst_device: int, src: int, src_device: int, nbytes: int, handle
    ) -> None:
        from .cuda_memory import grant_peer_access  # (lazily: streams load without it)

        grant_peer_access(dst_device, src_device)  # expandable segments: access both ways
        with self._cp.cuda.Device(dst_device):
            self._rt.memcpyPeerAsync(dst, dst_device, src, src_device, nbytes, handle.ptr)


class _EmuStream:
    __slots__ = ("device", "priority", "ptr")

    def __init__(self, device: int, priority: int, ptr: int):
        self.device, self.priority, self.ptr = device, priority, ptr


class _EmuEvent:
    __slots__ = ("time",)

    def __init__(self):
        self.time = None


class EmulatedStreams:
    """Synchronous streams for the emulated device: work is done when it is enqueued."""

    PRIORITY_RANGE = (0, -5)  # CUDA's range on recent GPUs (least, greatest); lower = sooner

    def __init__(self) -> None:
        self._handles = itertools.count(0x1000)  # fake stream pointers, never 0/1/2
        self._null: dict[int, _EmuStream] = {}
        self._local = threading.local()
        self._lock = threading.RLock()  # as CupyStreams: finalisers may re-enter

    def new_stream(self, device: int, priority: int) -> _EmuStream:
        return _EmuStream(device, priority, next(self._handles))

    def null_stream(self, device: int) -> _EmuStream:
        with self._lock:
            if device not in self._null:
                self._null[device] = _EmuStream(device, 0, 0)
            return self._null[device]

    def _stack(self, device: int) -> list:
        stacks = self._local.__dict__.setdefault("stacks", {})
        return stacks.setdefault(device, [])

    def current(self, device: int) -> _EmuStream:
        stack = self._stack(device)
        return stack[-1] if stack else self.null_stream(device)

    def from_external(self, obj, device: int) -> _EmuStream:
        version, ptr = obj.__cuda_stream__()
        return _EmuStream(device, 0, int(ptr))

    def enter(self, handle: _EmuStream) -> None:
        self._stack(handle.device).append(handle)

    def exit(self, handle: _EmuStream) -> None:
        stack = self._stack(handle.device)
        if not stack or stack[-1] is not handle:
            raise RuntimeError("stream contexts exited out of order")
        stack.pop()

    def ptr(self, handle: _EmuStream) -> int:
        return handle.ptr

    def priority(self, handle: _EmuStream) -> int:
        return handle.priority

    def query(self, handle) -> bool:
        return True

    def synchronize(self, handle) -> None:
        HOST_WAITS[0] += 1  # nothing to wait for here, but a GPU would: counted alike

    def wait_event(self, handle, event) -> None:
        pass

    def new_event(self, enable_timing: bool, blocking: bool, interprocess: bool) -> _EmuEvent:
        return _EmuEvent()

    def record(self, event: _EmuEvent, handle) -> None:
        event.time = time.perf_counter()

    def event_query(self, event) -> bool:
        return True

    def event_synchronize(self, event) -> None:
        HOST_WAITS[0] += 1

    def elapsed_ms(self, start: _EmuEvent, end: _EmuEvent) -> float:
        # Event.elapsed_time has checked that both were made with timing on and recorded.
        return (end.time - start.time) * 1e3

    def device_synchronize(self, device: int) -> None:
        HOST_WAITS[0] += 1

    def priority_range(self) -> tuple[int, int]:
        return self.PRIORITY_RANGE

    def memcpy_async(self, dst: int, src: int, nbytes: int, kind: str, handle, device: int) -> None:
        # Host memory on both sides; ctypes releases the GIL around the memmove.
        ctypes.memmove(dst, src, nbytes)

    def memcpy_peer_async(
        self, dst: int, dst_device: int, src: int, src_device: int, nbytes: int, handle
    ) -> None:
        ctypes.memmove(dst, src, nbytes)


_backends: dict[bool, object] = {}
_backends_lock = threading.Lock()


def stream_backend(emulated: bool):
    """The stream mechanism for the emulated device or for real CUDA (one of each)."""
    backend = _backends.get(emulated)
    if backend is None:
        with _backends_lock:
            backend = _backends.get(emulated)
            if backend is None:
                backend = _backends[emulated] = EmulatedStreams() if emulated else CupyStreams()
    return backend
