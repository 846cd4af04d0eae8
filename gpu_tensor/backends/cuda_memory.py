"""Our caching allocator on a real GPU, installed as CuPy's allocator.

- `CudaRawSource`: the raw mechanism (cudaMalloc / cudaFree / cudaMemGetInfo
  through cupy.cuda.runtime); cudaErrorMemoryAllocation becomes RawOutOfMemory
  so the allocator can free its cache and retry.
- `CudaEvent`: an event recorded on a stream (record_stream safety).
- `install(device_index)`: the device's CachingAllocator, with
  `cupy.cuda.set_allocator` pointed at it (once per process), so every cupy
  allocation, ours and CuPy's own temporaries, is counted. CuPy gets a
  MemoryPointer over `UnownedMemory(ptr, nbytes, owner)`; CuPy keeps the owner
  alive exactly as long as the memory, and the owner's finaliser returns the
  block to us. The hook passes cupy's current stream handle as is; under
  CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 that is cudaStreamPerThread (2) in every
  thread, which the allocator keys per thread (memory/stream_ids.py), so one
  thread's freed blocks never go to another thread's per-thread stream unordered.

Expandable segments: the policy is memory/expandable.py; its pages are mapped (and
restitched, `alias`) by backends/cuda_vmm.py through NVIDIA's cuda-bindings (cupy's
driver bindings have no virtual-memory calls). `create_allocator` picks the source by
the `expandable_segments` option:

- unset (auto, None): virtual memory where cuda-bindings is installed and the device
  has virtual memory management, once `cuda_vmm.self_test` has passed on the device
  (map, write, alias, read back through the alias; once per device and process). A
  failed self-test warns once and gives cudaMalloc segments; a missing capability
  gives them silently;
- `True`: virtual memory without the self-test; where it is missing, the allocator
  warns and uses cudaMalloc segments;
- `False`: cudaMalloc segments.

The simulated CuPy (GPU_TENSOR_FALLBACK=sim) has no virtual memory, so it always gets
cudaMalloc segments: pages mapped by the real driver would mean nothing to it.
"""

from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from ..memory import registry
from ..memory.allocator import BlockOwner as _BlockOwner
from ..memory.allocator import CachingAllocator
from ..memory.config import AllocatorConfig
from ..memory.raw import RawOutOfMemory
from ._cupy import cupy

__all__ = [
    "CudaRawSource",
    "CudaEvent",
    "create_allocator",
    "install",
    "mem_get_info",
    "memory_pointer",
]

_CUDA_ERROR_MEMORY_ALLOCATION = 2  # cudaErrorMemoryAllocation
_install_lock = threading.Lock()
_installed = False
_self_test_passed: dict[int, bool] = {}  # device index -> cuda_vmm.self_test verdict


class CudaRawSource:
    """cudaMalloc/cudaFree on one device."""

    def __init__(self, device_index: int):
        self.device_index = int(device_index)

    def alloc(self, nbytes: int) -> int:
        cp = cupy()
        runtime = cp.cuda.runtime
        with cp.cuda.Device(self.device_index):
            try:
                return runtime.malloc(nbytes)
            except runtime.CUDARuntimeError as exc:
                if exc.status != _CUDA_ERROR_MEMORY_ALLOCATION:
                    raise
            # Blocks cupy's own pool cached before `install` (or that it still gets back from
            # arrays made then) are invisible to our allocator's cache flush: give them back
            # to the driver and try once more before reporting out-of-memory.
            cp.get_default_memory_pool().free_all_blocks()
            try:
                return runtime.malloc(nbytes)
            except runtime.CUDARuntimeError as exc:
                if exc.status == _CUDA_ERROR_MEMORY_ALLOCATION:
                    raise RawOutOfMemory(str(exc)) from exc
                raise

    def free(self, ptr: int) -> None:
        cp = cupy()
        with cp.cuda.Device(self.device_index):
            cp.cuda.runtime.free(ptr)

    def mem_get_info(self) -> tuple[int, int]:
        cp = cupy()
        with cp.cuda.Device(self.device_index):
            return tuple(cp.cuda.runtime.memGetInfo())


class CudaEvent:
    """A timing-free CUDA event recorded on `stream` (a cudaStream_t value of `device`).

    The allocator makes these when a block is freed, which may happen in a finaliser while
    another device is current; an event must be created on its stream's device, so the
    device is switched here. The raw handle is recorded with cudaEventRecord directly
    (cupy 14 deprecates ExternalStream, and it would warn on every free)."""

    __slots__ = ("_event",)

    def __init__(self, stream: int, device: int | None = None):
        cp = cupy()
        with cp.cuda.Device(device):
            self._event = cp.cuda.Event(block=False, disable_timing=True)
            cp.cuda.runtime.eventRecord(self._event.ptr, int(stream))

    def query(self) -> bool:
        return self._event.done

    def synchronize(self) -> None:
        self._event.synchronize()


def create_allocator(device_index: int, config=None) -> CachingAllocator:
    """A CachingAllocator over cudaMalloc on `device_index` (registry calls this); with
    expandable segments (asked for, or auto where the self-test passes), over cuda_vmm's
    virtual memory."""
    config = config if config is not None else AllocatorConfig.from_env()
    raw = CudaRawSource(device_index)
    mode = config.expandable_segments  # None: auto
    if mode is not False:
        raw = _vmm_source(raw, device_index, self_test=mode is None) or raw
    return CachingAllocator(
        raw,
        device_index,
        event_factory=functools.partial(CudaEvent, device=device_index),
        config=config,
        kind="cuda",
    )


def _vmm_source(raw: CudaRawSource, device_index: int, self_test: bool = False):
    """cuda_vmm.VmmSource over `raw`, or None without cuda-bindings, VMM support, a real
    CUDA (the simulator), or (`self_test`) a passing cuda_vmm.self_test on the device."""
    from . import cuda_kind, cuda_vmm

    if not cuda_kind().virtual_memory:  # the simulator maps no virtual memory
        return None
    driver = cuda_vmm.load_driver()
    if not cuda_vmm.available(driver, device_index):
        return None
    cp = cupy()

    def make():
        _make_context_current(device_index)
        source = cuda_vmm.VmmSource(
            raw,
            driver,
            device_index,
            synchronize=cp.cuda.runtime.deviceSynchronize,
            activate=lambda: cp.cuda.Device(device_index),
        )
        with _peers_lock:
            for peer in sorted(_peers_of.get(device_index, ())):
                source.add_peer(peer)
        return source

    if not self_test:
        return make()
    if device_index not in _self_test_passed:
        _self_test_passed[device_index] = _passes_self_test(make, device_index)
    return make() if _self_test_passed[device_index] else None


def _make_context_current(device_index: int) -> None:
    """Create the device's primary context and make it current (cudaSetDevice, then
    cudaFree(0)) before the first virtual-memory call: cupy's Device(i) switches only
    when another device is current, so in a fresh process nothing has created a context
    yet, and the cuMem* driver calls act on the current one. The previous device comes
    back on leaving `Device`."""
    runtime = cupy().cuda.runtime
    with cupy().cuda.Device(device_index):
        runtime.setDevice(device_index)
        runtime.free(0)


# device -> the devices given access to its expandable-segment memory (grant_peer_access)
_peers_of: dict[int, set[int]] = {}
_peers_lock = threading.Lock()


def grant_peer_access(a: int, b: int) -> None:
    """Let cuda:a and cuda:b access each other's expandable-segment memory, where the
    driver allows it (VmmSource.add_peer), before a copy between them: with peer access
    enabled (cupy enables it for its own cross-device copies) a peer copy reads and
    writes the other device's pages directly, and virtual memory is only accessible to
    the devices granted access. Once per pair; allocators made later get it too. torch
    grants the same way, when peer access is enabled, never by default."""
    if a == b:
        return
    with _peers_lock:
        if b in _peers_of.get(a, ()):
            return
        _peers_of.setdefault(a, set()).add(b)
        _peers_of.setdefault(b, set()).add(a)
    for owner, user in ((a, b), (b, a)):
        add = getattr(getattr(registry.find(owner), "raw", None), "add_peer", None)
        if add is not None:
            add(user)


def _passes_self_test(make, device_index: int) -> bool:
    from . import cuda_vmm

    try:
        with cupy().cuda.Device(device_index):
            cuda_vmm.self_test(make(), _fill, _read)
    except Exception as exc:  # noqa: BLE001 - any failure means: do not trust it by default
        warnings.warn(
            f"expandable_segments: CUDA virtual memory failed its self-test on "
            f"cuda:{device_index} ({type(exc).__name__}: {exc}), so the allocator uses "
            f"cudaMalloc segments. Set GPU_TENSOR_ALLOC_CONF=expandable_segments:False to "
            f"skip the test, or expandable_segments:True to use virtual memory anyway.",
            RuntimeWarning,
            stacklevel=4,
        )
        return False
    return True


def _fill(ptr: int, byte: int, nbytes: int) -> None:
    """cudaMemset, waited for (the self-test reads the bytes right after)."""
    runtime = cupy().cuda.runtime
    runtime.memset(ptr, byte, nbytes)
    runtime.deviceSynchronize()


def _read(ptr: int, nbytes: int) -> np.ndarray:
    """`nbytes` of device memory at `ptr`, copied to the host (cudaMemcpy, synchronous)."""
    runtime = cupy().cuda.runtime
    host = np.empty(nbytes, dtype=np.uint8)
    runtime.memcpy(host.ctypes.data, ptr, nbytes, runtime.memcpyDeviceToHost)
    return host


def memory_pointer(allocator: CachingAllocator, nbytes: int, stream: int, device_id: int):
    """A cupy MemoryPointer over a fresh block of `allocator` (no CUDA call of its own)."""
    cp = cupy()
    if nbytes == 0:  # cupy asks for 0 bytes for empty arrays; give no block, as cupy does
        return cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(0, 0, None, device_id), 0)
    block = allocator.malloc(nbytes, stream)
    mem = cp.cuda.UnownedMemory(block.ptr, nbytes, _BlockOwner((allocator, block)), device_id)
    return cp.cuda.MemoryPointer(mem, 0)


def _cupy_malloc(nbytes: int):
    """The function given to cupy.cuda.set_allocator: nbytes -> MemoryPointer."""
    cp = cupy()
    device_id = cp.cuda.runtime.getDevice()
    allocator = registry.get_allocator(device_id, "cuda")
    # Handle 2 (per-thread default stream) is resolved to this thread by the allocator.
    return memory_pointer(allocator, nbytes, cp.cuda.get_current_stream().ptr, device_id)


def install(device_index: int = 0) -> CachingAllocator:
    """The caching allocator of `device_index`, with CuPy routed through it (idempotent).

    The trap: cupy memory allocated before this call stays in CuPy's own pool; call it
    before creating cupy arrays (the cuda backend does, on first use of a device)."""
    global _installed
    allocator = registry.get_allocator(device_index, "cuda")
    with _install_lock:
        if not _installed:
            cp = cupy()
            cp.cuda.set_allocator(_cupy_malloc)
            # What cupy's default pool cached so far (free blocks only; live arrays keep
            # theirs) goes back to the driver, so our allocator can have it.
            with cp.cuda.Device(device_index):
                cp.get_default_memory_pool().free_all_blocks()
            _installed = True
    return allocator


registry.register_factory("cuda", create_allocator)


def mem_get_info(device_index: int) -> tuple[int, int]:
    """(free, total) bytes of a real device; initialises CUDA on it (as torch's does)."""
    return CudaRawSource(device_index).mem_get_info()
