"""Simulated device memory: host bytes at real addresses, so `data.ptr` values are real
pointers and the host emulation of a kernel can dereference them.

`AddressSpace` is cudaMalloc/cudaFree (256-byte aligned, per-device capacity, out of memory
as cudaErrorMemoryAllocation) plus the page-locked host ranges (cudaHostRegister /
cudaHostAlloc). `Memory`, `UnownedMemory`, `MemoryPointer`, `MemoryPool`, `set_allocator`
and `set_pinned_memory_allocator` behave as cupy.cuda's (cupy/cuda/memory.pyx): an array
asks the current allocator for its bytes (0 bytes too), UnownedMemory keeps its owner alive
exactly as long as itself, a MemoryPointer keeps its memory alive.
"""

from __future__ import annotations

import bisect
import threading

import numpy as np

from .signatures import checked

__all__ = [
    "live_block",
    "AddressSpace",
    "BaseMemory",
    "Memory",
    "UnownedMemory",
    "MemoryPointer",
    "MemoryPool",
    "host_bytes",
]

ALIGN = 256  # cudaMalloc's alignment


class _Bytes:
    """numpy's view of an address range; keeps `owner` alive as long as an array over it."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr: int, size: int, owner):
        self.__array_interface__ = {
            "data": (ptr, False),
            "shape": (size,),
            "typestr": "|u1",
            "version": 3,
        }
        self.owner = owner


def host_bytes(ptr: int, size: int, owner=None) -> np.ndarray:
    """A uint8 numpy array over [ptr, ptr + size) (keeps `owner` alive)."""
    if size <= 0:
        return np.empty(0, np.uint8)
    return np.asarray(_Bytes(ptr, size, owner))


class AddressSpace:
    """Device allocations of every simulated device, and registered host ranges."""

    def __init__(self, devices: int, capacity: int, counters: dict):
        self.devices = devices
        self.capacity = capacity
        self.used = [0] * devices
        self._bufs: dict[int, tuple[int, int, np.ndarray]] = {}  # ptr -> (device, size, buf)
        self._starts: list[int] = []
        self.pinned: dict[int, int] = {}  # host ptr -> size
        self._pinned_starts: list[int] = []
        self._host_allocs: dict[int, np.ndarray] = {}
        self.lock = threading.RLock()  # a finaliser may free while we hold it
        self.counters = counters

    def malloc(self, device: int, size: int) -> int:
        from .runtime import CUDARuntimeError

        if size == 0:
            return 0
        with self.lock:
            if self.used[device] + size > self.capacity:
                raise CUDARuntimeError(2)  # cudaErrorMemoryAllocation
            buf = np.empty(size + ALIGN, np.uint8)
            ptr = buf.ctypes.data + (-buf.ctypes.data) % ALIGN
            self._bufs[ptr] = (device, size, buf)
            bisect.insort(self._starts, ptr)
            self.used[device] += size
            return ptr

    def free(self, ptr: int) -> None:
        from .runtime import CUDARuntimeError

        if ptr == 0:
            return
        with self.lock:
            entry = self._bufs.pop(ptr, None)
            if entry is None:
                raise CUDARuntimeError(1)  # cudaErrorInvalidValue: not a cudaMalloc pointer
            self._starts.remove(ptr)
            self.used[entry[0]] -= entry[1]

    def find(self, ptr: int):
        """(base, size, device) of the device allocation holding `ptr`, or None."""
        i = bisect.bisect_right(self._starts, ptr) - 1
        if i >= 0:
            base = self._starts[i]
            device, size, _ = self._bufs[base]
            if ptr < base + size:
                return base, size, device
        return None

    def check_range(self, ptr: int, size: int, what: str):
        """The allocation [ptr, ptr + size) lies in, or CUDARuntimeError(invalid value)."""
        from .runtime import CUDARuntimeError

        hit = self.find(ptr)
        if hit is None or ptr + size > hit[0] + hit[1]:
            raise CUDARuntimeError(
                1, f"{what}: [{ptr:#x}, +{size}) is not inside one device allocation"
            )
        return hit

    def register(self, ptr: int, size: int) -> None:
        from .runtime import CUDARuntimeError

        with self.lock:
            if self.find_pinned(ptr) is not None:
                raise CUDARuntimeError(712)  # cudaErrorHostMemoryAlreadyRegistered
            self.pinned[ptr] = size
            bisect.insort(self._pinned_starts, ptr)

    def unregister(self, ptr: int) -> None:
        from .runtime import CUDARuntimeError

        with self.lock:
            if self.pinned.pop(ptr, None) is None:
                raise CUDARuntimeError(713)  # cudaErrorHostMemoryNotRegistered
            self._pinned_starts.remove(ptr)

    def host_alloc(self, size: int) -> int:
        buf = np.empty(max(size, 1) + 4096, np.uint8)
        ptr = buf.ctypes.data + (-buf.ctypes.data) % 4096
        self._host_allocs[ptr] = buf
        self.register(ptr, size)
        return ptr

    def free_host(self, ptr: int) -> None:
        self.unregister(ptr)
        del self._host_allocs[ptr]

    def find_pinned(self, ptr: int):
        i = bisect.bisect_right(self._pinned_starts, ptr) - 1
        if i >= 0:
            base = self._pinned_starts[i]
            if ptr < base + self.pinned[base]:
                return base, self.pinned[base]
        return None


_live: dict[int, list] = {}  # ptr -> [size, count] of live memory objects (kernel footprints)
_live_starts: list[int] = []
_live_lock = threading.RLock()  # finalisers forget blocks while it may be held


def live_block(ptr: int, allocation) -> tuple[int, int]:
    """[lo, hi) of the live memory object holding `ptr` (our allocator's block), else the
    whole device allocation `allocation` (base, size, device)."""
    with _live_lock:
        i = bisect.bisect_right(_live_starts, ptr) - 1
        while i >= 0:
            start = _live_starts[i]
            size = _live[start][0]
            if ptr < start + size:
                return start, start + size
            if start < allocation[0]:
                break
            i -= 1
    return allocation[0], allocation[0] + allocation[1]


class BaseMemory:
    """cupy.cuda.memory.BaseMemory: ptr, size, device_id."""

    def __init__(self, ptr: int, size: int, device_id: int):
        self.ptr, self.size, self.device_id = int(ptr), int(size), int(device_id)
        if self.size:
            with _live_lock:
                entry = _live.get(self.ptr)
                if entry is None:
                    _live[self.ptr] = [self.size, 1]
                    bisect.insort(_live_starts, self.ptr)
                else:
                    entry[0], entry[1] = max(entry[0], self.size), entry[1] + 1

    def _forget(self) -> None:
        if self.size:
            with _live_lock:
                entry = _live.get(self.ptr)
                if entry is not None:
                    entry[1] -= 1
                    if entry[1] == 0:
                        del _live[self.ptr]
                        _live_starts.remove(self.ptr)

    def __del__(self):
        try:
            self._forget()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    @property
    def device(self):
        from .runtime import Device

        return Device(self.device_id)


class Memory(BaseMemory):
    """cupy.cuda.Memory: cudaMalloc'd bytes freed when the object dies."""

    def __init__(self, size: int):
        from .machine import machine

        m = machine()
        dev = m.current_device()
        from . import runtime

        super().__init__(runtime.malloc(size) if size else 0, size, dev)

    def __del__(self):
        super().__del__()
        if self.ptr:
            try:
                from . import runtime

                runtime.free(self.ptr)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


class UnownedMemory(BaseMemory):
    """cupy.cuda.UnownedMemory: bytes someone else owns; `owner` lives as long as this."""

    @checked("cuda.UnownedMemory", method=True)
    def __init__(self, ptr, size, owner, device_id=-1):
        if device_id < 0:  # cupy asks cudaPointerGetAttributes for the device
            from .machine import machine

            hit = machine().space.find(int(ptr)) if ptr else None
            device_id = hit[2] if hit else machine().current_device()
        super().__init__(ptr, size, device_id)
        self.owner = owner


class MemoryPointer:
    """cupy.cuda.MemoryPointer: a point in a memory object (keeps it alive)."""

    __slots__ = ("mem", "ptr", "device_id", "__weakref__")

    @checked("cuda.MemoryPointer", method=True)
    def __init__(self, mem, offset):
        if not isinstance(mem, BaseMemory):
            raise TypeError(
                f"Argument 'mem' has incorrect type (expected "
                f"cupy.cuda.memory.BaseMemory, got {type(mem).__name__})"
            )
        self.mem = mem
        self.ptr = mem.ptr + int(offset)
        self.device_id = mem.device_id

    def _at(self, offset: int) -> MemoryPointer:
        p = MemoryPointer.__new__(MemoryPointer)
        p.mem, p.ptr, p.device_id = self.mem, self.ptr + offset, self.device_id
        return p

    def __add__(self, offset: int) -> MemoryPointer:
        return self._at(int(offset))

    def __sub__(self, offset: int) -> MemoryPointer:
        return self._at(-int(offset))

    def __int__(self) -> int:
        return self.ptr

    @property
    def device(self):
        return self.mem.device


class MemoryPool:
    """cupy.cuda.MemoryPool: cupy's own pool (here it caches nothing: every free goes back
    to the driver, so `free_all_blocks` has nothing to give)."""

    def malloc(self, size: int) -> MemoryPointer:
        return MemoryPointer(Memory(size), 0)

    @checked("cuda.MemoryPool.free_all_blocks", method=True)
    def free_all_blocks(self, stream=None) -> None:
        pass

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0
