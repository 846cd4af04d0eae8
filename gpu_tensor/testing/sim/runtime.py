"""cupy.cuda.runtime and cupy.cuda.Device over the simulated machine.

Each function is bound against cupy's own signature (signatures.CYTHON) and checks what the
CUDA runtime checks: memcpy kinds against where the pointers live, ranges inside one
allocation, stream handles that exist, a stream used on its own device. cudaFree
synchronises the device (as the real one does); a pageable host side makes memcpyAsync
synchronous with the host (CUDA stages pageable copies); the counters see every call.
"""

from __future__ import annotations

import ctypes
import types

from cupy_backends.cuda.api.runtime import CUDARuntimeError as _RealError

from .machine import SM_COUNT, machine
from .signatures import checked

__all__ = ["CUDARuntimeError", "Device", "runtime"]

memcpyHostToHost, memcpyHostToDevice, memcpyDeviceToHost, memcpyDeviceToDevice = 0, 1, 2, 3
memcpyDefault = 4
memoryTypeUnregistered, memoryTypeHost, memoryTypeDevice = 0, 1, 2
streamDefault, streamNonBlocking = 0, 1
streamCaptureModeGlobal, streamCaptureModeThreadLocal, streamCaptureModeRelaxed = 0, 1, 2
_KIND_NAMES = {
    0: "HostToHost",
    1: "HostToDevice",
    2: "DeviceToHost",
    3: "DeviceToDevice",
    4: "Default",
}


class CUDARuntimeError(_RealError):
    """cupy's CUDARuntimeError (a subclass, so `except` clauses for the real one match),
    with the simulator's reason appended."""

    def __init__(self, status: int, detail: str | None = None):
        super().__init__(status)
        self.detail = detail

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} ({self.detail})" if self.detail else base

    def __reduce__(self):
        return (CUDARuntimeError, (self.status, self.detail))


class Device:
    """cupy.cuda.Device: `with Device(i)` makes i current for the block (per thread)."""

    @checked("cuda.Device", method=True)
    def __init__(self, device=None):
        m = machine()
        self.id = m.current_device() if device is None else int(device)
        m.check_device(self.id)
        self._stack = []

    def __enter__(self):
        m = machine()
        self._stack.append(m.current_device())
        m.set_device(self.id)
        return self

    def __exit__(self, *exc):
        machine().set_device(self._stack.pop())
        return False

    def use(self) -> None:
        machine().set_device(self.id)

    def synchronize(self) -> None:
        _device_sync(self.id)

    @property
    def compute_capability(self) -> str:
        return "90"

    @property
    def attributes(self) -> dict:
        return {
            "MultiProcessorCount": SM_COUNT,
            "ComputeCapabilityMajor": 9,
            "ComputeCapabilityMinor": 0,
            "WarpSize": 32,
            "MaxThreadsPerBlock": 1024,
        }

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def _device_sync(device=None) -> None:
    m = machine()
    m.count("device_syncs")
    m.sched.synchronize_device(device)


def _where(ptr: int):
    """'device' (with the allocation) or 'host' (with pinned info) for a pointer."""
    m = machine()
    hit = m.space.find(ptr)
    return ("device", hit) if hit is not None else ("host", m.space.find_pinned(ptr))


@checked("cuda.runtime.malloc")
def malloc(size):
    from .graph import check_malloc

    check_malloc()
    m = machine()
    m.count("driver_calls")
    m.count("mallocs")
    return m.space.malloc(m.current_device(), int(size))


@checked("cuda.runtime.free")
def free(ptr):
    m = machine()
    m.count("driver_calls")
    m.count("frees")
    _device_sync(m.current_device())  # cudaFree synchronises the device first
    m.space.free(int(ptr))


@checked("cuda.runtime.memGetInfo")
def memGetInfo():  # noqa: N802 - cupy's name
    m = machine()
    m.count("driver_calls")
    dev = m.current_device()
    return m.space.capacity - m.space.used[dev], m.space.capacity


def _copy_task(dst, src, size, kind, queue, what):
    m = machine()
    dwhere, dhit = _where(dst)
    swhere, shit = _where(src)
    want = {
        1: ("device", "host"),
        2: ("host", "device"),
        3: ("device", "device"),
        0: ("host", "host"),
    }.get(kind)
    if kind not in _KIND_NAMES:
        raise CUDARuntimeError(21, f"{what}: kind {kind} is not a cudaMemcpyKind")
    if want is not None and (dwhere, swhere) != want:
        raise CUDARuntimeError(
            21,
            f"{what} with kind {_KIND_NAMES[kind]}: the destination "
            f"is {dwhere} memory and the source is {swhere} memory",
        )
    accesses = []
    for ptr, where, hit, write in ((dst, dwhere, dhit, True), (src, swhere, shit, False)):
        if where == "device":
            m.space.check_range(ptr, size, what)
            accesses.append((ptr, ptr + size, write, f"device buffer {hit[0]:#x}"))
        else:
            accesses.append((ptr, ptr + size, write, f"host buffer {ptr:#x}"))
    pageable = any(w == "host" and h is None for w, h in ((dwhere, dhit), (swhere, shit)))
    m.count("memcpy_calls")
    m.count("bytes_copied", size)
    if m.null:
        return m.sched.enqueue(queue, None, what)
    task = m.sched.enqueue(
        queue,
        lambda: ctypes.memmove(dst, src, size) if size else None,
        f"{what} of {size} bytes",
        accesses,
    )
    if pageable:  # CUDA stages pageable host memory: the call returns once it is done
        m.sched.run_through(task)
    return task


@checked("cuda.runtime.memcpyAsync")
def memcpyAsync(dst, src, size, kind, stream):  # noqa: N802
    m = machine()
    _copy_task(int(dst), int(src), int(size), int(kind), m.queue(stream), "cudaMemcpyAsync")


@checked("cuda.runtime.memcpy")
def memcpy(dst, src, size, kind):
    m = machine()
    task = _copy_task(int(dst), int(src), int(size), int(kind), m.queue(0), "cudaMemcpy")
    m.count("device_syncs")
    m.sched.synchronize(task.queue)


@checked("cuda.runtime.memcpyPeerAsync")
def memcpyPeerAsync(dst, dstDevice, src, srcDevice, size, stream):  # noqa: N802,N803
    m = machine()
    for ptr, dev, what in ((dst, dstDevice, "destination"), (src, srcDevice, "source")):
        hit = m.space.check_range(int(ptr), int(size), "cudaMemcpyPeerAsync")
        if hit[2] != dev:
            raise CUDARuntimeError(
                1, f"cudaMemcpyPeerAsync: the {what} is on cuda:{hit[2]}, not cuda:{dev}"
            )
    _copy_task(int(dst), int(src), int(size), 3, m.queue(stream), "cudaMemcpyPeerAsync")


@checked("cuda.runtime.hostRegister")
def hostRegister(ptr, size, flags):  # noqa: N802
    m = machine()
    m.count("driver_calls")
    m.space.register(int(ptr), int(size))


@checked("cuda.runtime.hostUnregister")
def hostUnregister(ptr):  # noqa: N802
    m = machine()
    m.count("driver_calls")
    m.space.unregister(int(ptr))


@checked("cuda.runtime.hostAlloc")
def hostAlloc(size, flags):  # noqa: N802
    m = machine()
    m.count("driver_calls")
    return m.space.host_alloc(int(size))


@checked("cuda.runtime.freeHost")
def freeHost(ptr):  # noqa: N802
    m = machine()
    m.count("driver_calls")
    _device_sync()  # cudaFreeHost synchronises, as cudaFree does
    m.space.free_host(int(ptr))


@checked("cuda.runtime.pointerGetAttributes")
def pointerGetAttributes(ptr):  # noqa: N802
    m = machine()
    m.count("driver_calls")
    where, hit = _where(int(ptr))
    if where == "device":
        return types.SimpleNamespace(
            type=memoryTypeDevice, device=hit[2], devicePointer=ptr, hostPointer=0
        )
    # CUDA >= 11: unregistered host memory is type 0, not an error
    kind = memoryTypeHost if hit is not None else memoryTypeUnregistered
    return types.SimpleNamespace(
        type=kind, device=-2 if hit is None else 0, devicePointer=0, hostPointer=ptr
    )


@checked("cuda.runtime.eventRecord")
def eventRecord(event, stream):  # noqa: N802
    from .streams import event_by_handle

    event_by_handle(int(event))._record_queue(machine().queue(stream))


@checked("cuda.runtime.eventQuery")
def eventQuery(event):  # noqa: N802
    from .streams import event_by_handle

    return 0 if event_by_handle(int(event)).done else 600  # cudaErrorNotReady


@checked("cuda.runtime.streamQuery")
def streamQuery(stream):  # noqa: N802
    q = machine().queue(stream)
    return 0 if machine().sched.query({q: q.clock}) else 600


@checked("cuda.runtime.streamCreateWithPriority")
def streamCreateWithPriority(flags, priority):  # noqa: N802
    from .streams import new_queue

    m = machine()
    m.count("driver_calls")
    handle = m.handle()
    m.streams[handle] = new_queue(handle, m.current_device(), not (flags & streamNonBlocking))
    m.streams[handle].priority = max(-5, min(0, int(priority)))  # CUDA clamps to its range
    return handle


@checked("cuda.runtime.streamGetPriority")
def streamGetPriority(stream):  # noqa: N802
    return getattr(machine().queue(stream), "priority", 0)


@checked("cuda.runtime.streamDestroy")
def streamDestroy(stream):  # noqa: N802
    m = machine()
    m.count("driver_calls")
    m.queue(stream)  # must exist
    # Work already queued still completes (cudaStreamDestroy does not wait, nor cancel);
    # the handle is dead from now on.
    del m.streams[int(stream)]


@checked("cuda.runtime.deviceSynchronize")
def deviceSynchronize():  # noqa: N802
    m = machine()
    m.count("driver_calls")
    _device_sync(m.current_device())


@checked("cuda.runtime.getDevice")
def getDevice():  # noqa: N802
    return machine().current_device()


@checked("cuda.runtime.setDevice")
def setDevice(device):  # noqa: N802
    machine().set_device(int(device))


@checked("cuda.runtime.getDeviceCount")
def getDeviceCount():  # noqa: N802
    return machine().ndevices


@checked("cuda.runtime.getDeviceProperties")
def getDeviceProperties(device):  # noqa: N802
    m = machine()
    m.check_device(int(device))
    return {
        "name": b"gpu_tensor simulated GPU (host emulation, not a real device)",
        "totalGlobalMem": m.space.capacity,
        "major": 9,
        "minor": 0,
        "multiProcessorCount": SM_COUNT,
        "warpSize": 32,
        "pciBusID": 0,
        "pciDeviceID": int(device),
        "uuid": b"\0" * 16,
    }


@checked("cuda.runtime.streamBeginCapture")
def streamBeginCapture(stream, mode=streamCaptureModeRelaxed):  # noqa: N802
    from . import graph

    graph.begin(machine().queue(stream), int(mode))


@checked("cuda.runtime.streamEndCapture")
def streamEndCapture(stream):  # noqa: N802
    from . import graph

    return graph.end(machine().queue(stream))


@checked("cuda.runtime.streamIsCapturing")
def streamIsCapturing(stream):  # noqa: N802
    from . import graph

    return graph.is_capturing(machine().queue(stream))


@checked("cuda.runtime.graphLaunch")
def graphLaunch(graphExec, stream):  # noqa: N802,N803
    from . import graph

    graph.launch(graphExec, machine().queue(stream))


@checked("cuda.runtime.graphUpload")
def graphUpload(graphExec, stream):  # noqa: N802,N803
    from . import graph

    graph.graph_of(graphExec)
    machine().queue(stream)
    machine().count("driver_calls")


runtime = types.SimpleNamespace(
    CUDARuntimeError=CUDARuntimeError,
    **{
        k: v
        for k, v in dict(globals()).items()
        if k[:1].islower()
        and (callable(v) or isinstance(v, int))
        and k not in ("machine", "checked", "ctypes", "types", "annotations")
    },
)
runtime.__name__ = "gpu_tensor.testing.sim.runtime"
