"""Stream/event mechanism behind `gpu_tensor.cuda.streams`: one protocol, two leaves.

`CupyStreams` drives real CUDA through cupy (imported lazily through `_cupy.cupy()`);
`EmulatedStreams` is the emulated device's version: every enqueued operation has already
run when the call returns, so streams are always idle and events always complete, and the
host clock stands in for event timing.

The protocol (handles are opaque to the caller):
    new_stream(device, priority) / null_stream(device) / current(device)
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

__all__ = ["CupyStreams", "EmulatedStreams", "stream_backend"]


class CupyStreams:
    """Real streams and events: thin calls into cupy.cuda."""

    def __init__(self) -> None:
        self._cp = _cupy.cupy()
        self._rt = self._cp.cuda.runtime
        self._range: tuple[int, int] | None = None

    def new_stream(self, device: int, priority: int):
        with self._cp.cuda.Device(device):
            # non_blocking: our side streams must not serialise against the legacy null stream
            return self._cp.cuda.Stream(non_blocking=True, priority=priority)

    def null_stream(self, device: int):
        return self._cp.cuda.Stream.null

    def current(self, device: int):
        return self._cp.cuda.get_current_stream(device)

    def from_external(self, obj):
        return self._cp.cuda.Stream.from_external(obj)

    def enter(self, handle) -> None:
        handle.__enter__()

    def exit(self, handle) -> None:
        handle.__exit__(None, None, None)

    def ptr(self, handle) -> int:
        return int(handle.ptr)

    def priority(self, handle) -> int:
        return int(handle.priority)

    def query(self, handle) -> bool:
        return bool(handle.done)

    def synchronize(self, handle) -> None:
        handle.synchronize()

    def wait_event(self, handle, event) -> None:
        handle.wait_event(event)

    def new_event(self, enable_timing: bool, blocking: bool, interprocess: bool):
        return self._cp.cuda.Event(
            block=blocking, disable_timing=not enable_timing, interprocess=interprocess
        )

    def record(self, event, handle) -> None:
        event.record(handle)

    def event_query(self, event) -> bool:
        return bool(event.done)

    def event_synchronize(self, event) -> None:
        event.synchronize()

    def elapsed_ms(self, start, end) -> float:
        return float(self._cp.cuda.get_elapsed_time(start, end))

    def device_synchronize(self, device: int) -> None:
        with self._cp.cuda.Device(device):
            self._rt.deviceSynchronize()

    def priority_range(self) -> tuple[int, int]:
        if self._range is None:
            self._range = self._query_priority_range()
        return self._range

    @staticmethod
    def _query_priority_range() -> tuple[int, int]:
        # cupy does not wrap cudaDeviceGetStreamPriorityRange; ask libcudart directly.
        try:
            lib = ctypes.CDLL("libcudart.so.12")
            least, greatest = ctypes.c_int(), ctypes.c_int()
            if lib.cudaDeviceGetStreamPriorityRange(ctypes.byref(least),
                                                    ctypes.byref(greatest)) == 0:
                return least.value, greatest.value
        except OSError:
            pass
        return EmulatedStreams.PRIORITY_RANGE  # CUDA's range on every GPU since Volta

    def memcpy_async(self, dst: int, src: int, nbytes: int, kind: str, handle,
                     device: int) -> None:
        kinds = {"h2d": self._rt.memcpyHostToDevice, "d2h": self._rt.memcpyDeviceToHost,
                 "d2d": self._rt.memcpyDeviceToDevice}
        with self._cp.cuda.Device(device):  # the stream's device must be current
            self._rt.memcpyAsync(dst, src, nbytes, kinds[kind], handle.ptr)

    def memcpy_peer_async(self, dst: int, dst_device: int, src: int, src_device: int,
                          nbytes: int, handle) -> None:
        with self._cp.cuda.Device(dst_device):
            self._rt.memcpyPeerAsync(dst, dst_device, src, src_device, nbytes, handle.ptr)


class _EmuStream:
    __slots__ = ("device", "priority", "ptr")

    def __init__(self, device: int, priority: int, ptr: int):
        self.device, self.priority, self.ptr = device, priority, ptr


class _EmuEvent:
    __slots__ = ("time", "timing")

    def __init__(self, timing: bool):
        self.time = None
        self.timing = timing


class EmulatedStreams:
    """Synchronous streams for the emulated device: work is done when it is enqueued."""

    PRIORITY_RANGE = (0, -5)  # CUDA's range on recent GPUs (least, greatest); lower = sooner

    def __init__(self) -> None:
        self._handles = itertools.count(0x1000)  # fake stream pointers, never 0/1/2
        self._null: dict[int, _EmuStream] = {}
        self._local = threading.local()
        self._lock = threading.Lock()

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

    def from_external(self, obj) -> _EmuStream:
        version, ptr = obj.__cuda_stream__()
        return _EmuStream(0, 0, int(ptr))

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
        pass

    def wait_event(self, handle, event) -> None:
        pass

    def new_event(self, enable_timing: bool, blocking: bool, interprocess: bool) -> _EmuEvent:
        return _EmuEvent(enable_timing)

    def record(self, event: _EmuEvent, handle) -> None:
        event.time = time.perf_counter()

    def event_query(self, event) -> bool:
        return True

    def event_synchronize(self, event) -> None:
        pass

    def elapsed_ms(self, start: _EmuEvent, end: _EmuEvent) -> float:
        if not (start.timing and end.timing):
            raise RuntimeError("elapsed_time needs both events created with enable_timing=True")
        if start.time is None or end.time is None:
            raise RuntimeError("elapsed_time needs both events to be recorded first")
        return (end.time - start.time) * 1e3

    def device_synchronize(self, device: int) -> None:
        pass

    def priority_range(self) -> tuple[int, int]:
        return self.PRIORITY_RANGE

    def memcpy_async(self, dst: int, src: int, nbytes: int, kind: str, handle,
                     device: int) -> None:
        # Host memory on both sides; ctypes releases the GIL around the memmove.
        ctypes.memmove(dst, src, nbytes)

    def memcpy_peer_async(self, dst: int, dst_device: int, src: int, src_device: int,
                          nbytes: int, handle) -> None:
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
