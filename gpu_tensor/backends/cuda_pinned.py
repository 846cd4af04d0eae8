"""Page-locking mechanisms for the pinned pool (`memory/pinned.py` holds the policy).

Each source follows the raw-source protocol of `memory/raw.py` (`alloc(nbytes) -> int`,
`free(ptr)`, `RawOutOfMemory` when the system refuses):

- `HostAllocSource`: `cudaHostAlloc(portable)` / `cudaFreeHost`. The driver allocates and
  pins in one call under its global lock.
- `RegisterSource`: anonymous mmap (page aligned), pages pre-faulted by worker threads, then
  `cudaHostRegister(portable)`; `cudaHostUnregister` + munmap on free. Faulting the pages
  ourselves, in parallel, is reported ~2x faster than cudaHostAlloc for large buffers
  (research/performance.md §3.4); profiling/bench_transfer.py measures both.
  With no ``register``/``unregister`` hooks it is the emulated device's source: real host
  pages, so the pool's logic and the staging path run unchanged on a CPU machine.

Which one backs the default pool: GPU_TENSOR_PINNED_ALLOC ('register', the default, or
'hostalloc'); the emulated device always uses host pages.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpu_tensor.backends import _cupy
from gpu_tensor.memory.raw import HostMapping, RawOutOfMemory, map_host_pages, pop_mapping

__all__ = ["HostAllocSource", "RegisterSource", "default_raw_source", "prefault", "is_host_pinned"]

PAGE = 4096
PREFAULT_THREADS = 4  # page faults are kernel work per page; 4 threads cover 1 socket's rate
PREFAULT_PARALLEL_FROM = 64 << 20  # below 64 MiB a thread handoff costs more than it saves
_CUDA_HOST_ALLOC_PORTABLE = 1  # cudaHostAllocPortable: pinned for every context/device
_CUDA_HOST_REGISTER_PORTABLE = 1  # cudaHostRegisterPortable, same meaning


def prefault(ptr: int, nbytes: int) -> None:
    """Touch one byte per page so the kernel backs every page before it is pinned."""

    def touch(start: int, stop: int) -> None:
        if stop > start:
            view = np.frombuffer(
                (ctypes.c_uint8 * (stop - start)).from_address(ptr + start), dtype=np.uint8
            )
            view[::PAGE] = 0

    if nbytes < PREFAULT_PARALLEL_FROM:
        touch(0, nbytes)
        return
    step = -(-nbytes // PREFAULT_THREADS // PAGE) * PAGE
    with ThreadPoolExecutor(PREFAULT_THREADS) as pool:
        list(pool.map(lambda s: touch(s, min(s + step, nbytes)), range(0, nbytes, step)))


class RegisterSource:
    """mmap + pre-fault + register. ``register(ptr, n)`` / ``unregister(ptr)`` are injected
    (None: plain host pages, as on the emulated device)."""

    def __init__(self, register=None, unregister=None, *, capacity_bytes: int | None = None):
        self._register = register
        self._unregister = unregister
        self.capacity = capacity_bytes
        self.used = 0
        self._maps: dict[int, HostMapping] = {}
        self._lock = threading.Lock()

    def alloc(self, nbytes: int) -> int:
        nbytes = int(nbytes)
        with self._lock:
            if self.capacity is not None and self.used + nbytes > self.capacity:
                raise RawOutOfMemory(
                    f"pinned capacity reached: {nbytes} requested, "
                    f"{self.capacity - self.used} of {self.capacity} left"
                )
            self.used += nbytes  # reserve now; the slow part below runs unlocked
        try:
            # Private anonymous pages: Python's default for fileno -1 is MAP_SHARED, i.e.
            # shmem-backed pages (no transparent huge pages, counted as shmem by cgroups).
            mapping = map_host_pages(nbytes, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except RawOutOfMemory:
            with self._lock:
                self.used -= nbytes
            raise
        try:
            prefault(mapping.ptr, nbytes)
            if self._register is not None:
                self._register(mapping.ptr, nbytes)
        except BaseException:
            # Page-locking failed: give the pages back so nothing leaks, then report.
            mapping.close()
            with self._lock:
                self.used -= nbytes
            raise
        with self._lock:
            self._maps[mapping.ptr] = mapping
        return mapping.ptr

    def free(self, ptr: int) -> None:
        with self._lock:
            mapping = pop_mapping(self._maps, ptr, "pinned")
            self.used -= len(mapping)
        if self._unregister is not None:
            self._unregister(ptr)
        mapping.close()

    def outstanding(self) -> dict[int, int]:
        with self._lock:
            return {ptr: len(mapping) for ptr, mapping in self._maps.items()}


def _runtime():
    return _cupy.cupy().cuda.runtime


def _as_oom(what: str, nbytes: int, exc: Exception) -> RawOutOfMemory:
    return RawOutOfMemory(f"{what} of {nbytes} bytes failed: {exc}")


def cuda_register(ptr: int, nbytes: int) -> None:
    try:
        _runtime().hostRegister(ptr, nbytes, _CUDA_HOST_REGISTER_PORTABLE)
    except Exception as exc:  # cupy's CUDARuntimeError: out of lockable memory, ulimit -l
        raise _as_oom("cudaHostRegister", nbytes, exc) from exc


def cuda_unregister(ptr: int) -> None:
    _runtime().hostUnregister(ptr)


class HostAllocSource:
    """cudaHostAlloc / cudaFreeHost."""

    def __init__(self) -> None:
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()

    def alloc(self, nbytes: int) -> int:
        try:
            ptr = int(_runtime().hostAlloc(nbytes, _CUDA_HOST_ALLOC_PORTABLE))
        except Exception as exc:
            raise _as_oom("cudaHostAlloc", nbytes, exc) from exc
        with self._lock:
            self._sizes[ptr] = nbytes
        return ptr

    def free(self, ptr: int) -> None:
        with self._lock:
            self._sizes.pop(ptr)
        _runtime().freeHost(ptr)

    def outstanding(self) -> dict[int, int]:
        with self._lock:
            return dict(self._sizes)


def is_host_pinned(ptr: int) -> bool:
    """Whether the driver knows host address ``ptr`` as page-locked (a µs-scale driver call:
    only for memory that is not our pool's)."""
    rt = _runtime()
    try:
        kind = rt.pointerGetAttributes(ptr).type  # CUDA >= 11: 0 (unregistered), no error
    except Exception:  # unregistered memory on old drivers raises cudaErrorInvalidValue
        return False
    return int(kind) == getattr(rt, "memoryTypeHost", 1)  # cudaMemoryTypeHost: page-locked


def default_raw_source():
    """The source for the process-wide pinned pool: the cuda kind's (backends/kinds.py)."""
    from gpu_tensor.backends import cuda_kind

    return cuda_kind().pinned_source()
