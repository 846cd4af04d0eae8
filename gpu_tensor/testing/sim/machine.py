"""The simulated machine: devices, their memory, the stream scheduler, counters.

One `Machine` is current per process (`machine()`); `reset()` makes a fresh one (tests).
Stream handles are opaque integers like CUDA's; 0 and 1 name the legacy default stream of
the *current* device, 2 the calling thread's per-thread default stream (cudaStreamLegacy /
cudaStreamPerThread), exactly as the runtime resolves them.
"""

from __future__ import annotations

import itertools
import threading

from .memory import AddressSpace
from .scheduler import Scheduler

__all__ = ["Machine", "machine", "reset", "COUNTERS"]

COUNTERS = (
    "kernel_launches",
    "cupy_routines",
    "driver_calls",
    "device_syncs",
    "bytes_copied",
    "mallocs",
    "frees",
    "memcpy_calls",
    "host_waits",
    "graph_launches",
)
DEFAULT_CAPACITY = 4 << 30  # per simulated device
SM_COUNT = 4  # reported multiProcessorCount: grids stay small under host emulation


class Machine:
    def __init__(
        self, devices: int = 1, capacity: int = DEFAULT_CAPACITY, seed: int = 0, mode: str = "raise"
    ):
        self.ndevices = devices
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.space = AddressSpace(devices, capacity, self.counters)
        self.sched = Scheduler(seed, mode)
        self.local = threading.local()
        self.legacy = [self.sched.new_queue(f"the legacy default stream of cuda:{d}", d,
                                            blocking=True, legacy=True)
                       for d in range(devices)]  # fmt: skip
        self._ptds: dict = {}
        self.streams: dict = {}  # handle -> Queue (streams created and not destroyed)
        self.events: dict = {}  # handle -> sim Event
        self._handles = itertools.count(0x7F00_0000_1000, 0x100)
        self.allocator = None  # set_allocator's function; None: cupy's default pool
        self.pinned_allocator = None
        self.modules: dict = {}  # emulation libraries by source digest
        # null device (host-cost measurements): launches and copies are counted, not run
        self.null = False

    def handle(self) -> int:
        return next(self._handles)

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] += n

    # -- current device (per thread, as the CUDA runtime's) ------------------------------

    def current_device(self) -> int:
        return getattr(self.local, "device", 0)

    def set_device(self, device: int) -> None:
        self.check_device(device)
        self.local.device = device

    def check_device(self, device: int) -> None:
        from .runtime import CUDARuntimeError

        if not 0 <= device < self.ndevices:
            raise CUDARuntimeError(101, f"device {device} of {self.ndevices}")  # invalid device

    # -- streams ------------------------------------------------------------------------

    def ptds_queue(self, device: int):
        key = (threading.get_ident(), device)
        q = self._ptds.get(key)
        if q is None:
            q = self._ptds[key] = self.sched.new_queue(
                f"the per-thread default stream of thread {key[0]:#x} on cuda:{device}",
                device,
                blocking=True,
            )
        return q

    def queue(self, handle: int):
        """The queue a raw cudaStream_t value names (resolved as the runtime does)."""
        from .runtime import CUDARuntimeError

        handle = int(handle)
        if handle in (0, 1):
            return self.legacy[self.current_device()]
        if handle == 2:
            return self.ptds_queue(self.current_device())
        q = self.streams.get(handle)
        if q is None:
            raise CUDARuntimeError(400, f"stream {handle:#x} does not exist (destroyed?)")
        return q


_lock = threading.RLock()
_machine: Machine | None = None


def machine() -> Machine:
    global _machine
    if _machine is None:
        with _lock:
            if _machine is None:
                from ... import _env

                _machine = Machine(devices=_env.sim_devices())
    return _machine


def reset(**kwargs) -> Machine:
    """A fresh machine (devices, capacity, seed, mode); the old one's memory stays valid
    for arrays still alive, but nothing new is placed there."""
    global _machine
    with _lock:
        _machine = Machine(**kwargs)
    return _machine
