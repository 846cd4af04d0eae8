"""Device memory API with torch.cuda's names, arguments and meanings.

Every getter reads the allocator's one stats record. Reading never creates an
allocator and so never initialises CUDA: a device that has not allocated yet
reports zeros. `device` may be None (the current cuda device), an int, a
'cuda:N' string or a Device.

Beyond torch: `live_tensors()` (who holds the memory, and where it was
created), fragmentation lines in `memory_summary()`, and `save_snapshot(path)`
(the `_dump_snapshot` content as JSON).
"""

from __future__ import annotations

import json
import pickle
import sys

from gpu_tensor import device as _device
from gpu_tensor.memory import live as _live
from gpu_tensor.memory import pinned as _pinned
from gpu_tensor.memory import registry as _registry
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.snapshot import build_snapshot
from gpu_tensor.memory.stats import empty_stats
from gpu_tensor.memory.summary import format_summary

__all__ = [
    "OutOfMemoryError",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_stats",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "memory_summary",
    "memory_snapshot",
    "empty_cache",
    "set_per_process_memory_fraction",
    "get_per_process_memory_fraction",
    "mem_get_info",
    "live_tensors",
    "record_creation_sites",
    "save_snapshot",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "get_allocator_backend",
]


def _index(device) -> int:
    if device is None:
        return _device.current_cuda_index()
    if isinstance(device, bool):
        raise TypeError("device must be None, an int, 'cuda:N' or a Device, not a bool")
    if isinstance(device, int):
        return device
    d = device if isinstance(device, _device.Device) else _device.device(device)
    if d.type != "cuda":
        raise ValueError(f"expected a cuda device, got {d}")
    return _device.current_cuda_index() if d.index is None else d.index


def _kind():
    from gpu_tensor.backends import cuda_kind

    return cuda_kind()  # owns the allocator's raw source (backends/kinds.py)


def _allocator(device=None, create: bool = False):
    index = _index(device)
    found = _registry.find(index)
    if found is None and create:
        _device.check_cuda(index)
        found = _kind().allocator(index)
    return found


def memory_stats(device=None) -> dict:
    """torch.cuda.memory_stats(): flat dict, keys like 'allocated_bytes.all.current'."""
    allocator = _allocator(device)
    return allocator.stats() if allocator is not None else empty_stats()


def memory_allocated(device=None) -> int:
    """Bytes held by live blocks (rounded sizes), including CuPy temporaries on a GPU."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    """Bytes the allocator holds from the device (allocated + cached)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    allocator = _allocator(device)
    if allocator is not None:
        allocator.reset_peak_stats()


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated in torch (resets all peaks); kept for old code."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    allocator = _allocator(device)
    if allocator is not None:
        allocator.reset_accumulated_stats()


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """torch's memory_summary() table, plus reserved-unallocated / largest free block /
    fragmentation lines, and the pinned host pool's table once it has been used."""
    text = format_summary(memory_stats(device), _index(device), abbreviated)
    host = _pinned.host_memory_stats()
    if host.get("segment.all.peak", 0) > 0:
        text += format_summary(
            host, abbreviated=abbreviated, title="gpu_tensor pinned host memory summary"
        )
    return text


def memory_snapshot() -> list[dict]:
    """torch.cuda.memory_snapshot(): the segment list (every device's allocator)."""
    return _snapshot()["segments"]


def empty_cache() -> None:
    """Release every fully free cached segment on every device to the driver.

    The trap (as in torch): memory held by live tensors, and free blocks inside
    segments that also hold live blocks, stay reserved; on a GPU this waits for
    pending stream events first, and cudaFree synchronises the device."""
    for allocator in _registry.existing_allocators().values():
        allocator.empty_cache()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap this process's reserved memory on `device` at `fraction` of its capacity.
    Allocations past it raise OutOfMemoryError (after freeing the cache)."""
    if not isinstance(fraction, (int, float)) or isinstance(fraction, bool):
        raise TypeError(f"fraction must be a float in [0, 1], got {fraction!r}")
    _allocator(device, create=True).set_memory_fraction(float(fraction))


def get_per_process_memory_fraction(device=None) -> float:
    allocator = _allocator(device)
    fraction = allocator.memory_fraction if allocator is not None else None
    return 1.0 if fraction is None else fraction


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) device bytes, like cudaMemGetInfo. On the emulated device: its
    GPU_TENSOR_EMULATED_MEMORY_MB capacity minus what the allocator reserved."""
    allocator = _allocator(device)
    if allocator is not None:
        return allocator.mem_get_info()
    return _kind().mem_get_info(_index(device))


_raw_blocks: dict[int, object] = {}  # ptr -> (allocator, Block) of caching_allocator_alloc


def caching_allocator_alloc(size: int, device=None, stream=None) -> int:
    """Raw device bytes from the caching allocator (torch's name); returns the pointer.
    The trap: nothing frees it for you; give it back with caching_allocator_delete(ptr)."""
    allocator = _allocator(device, create=True)
    block = allocator.malloc(size, 0 if stream is None else stream)
    _raw_blocks[block.ptr] = (allocator, block)
    return block.ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Return memory from caching_allocator_alloc."""
    try:
        allocator, block = _raw_blocks.pop(mem_ptr)
    except KeyError:
        raise ValueError(
            f"{mem_ptr:#x} did not come from caching_allocator_alloc (or was already deleted)"
        ) from None
    allocator.free(block)


def get_allocator_backend() -> str:
    """'native': our caching allocator (torch's name for its own)."""
    return "native"


def live_tensors(device=None, limit: int | None = None) -> list[dict]:
    """Live device blocks, largest first: address, size, requested_size, shape, dtype,
    device, stream, site ('file:line in function' of the user code that created it; None
    when capture is off), kind. Blocks without shape are CuPy temporaries or raw blocks."""
    allocator = _allocator(device)
    return _live.live_blocks(allocator, limit) if allocator is not None else []


def record_creation_sites(enabled: bool | None = True) -> None:
    """Switch creation-site capture for new blocks (None: back to GPU_TENSOR_RECORD_SITES)."""
    _live.set_enabled(enabled)


def _record_memory_history(
    enabled: str | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device=None,
    clear_history: bool = False,
    **_ignored,
) -> None:
    """torch.cuda.memory._record_memory_history: enabled None | 'state' | 'all'.

    Applies to every device (present and future). The legacy boolean form works too:
    True means 'all', False means None."""
    if enabled is True:
        enabled = "all"
    elif enabled is False:
        enabled = None
    if enabled is None:
        _registry.set_history(None)
        return
    _registry.set_history(
        {"enabled": enabled, "context": context, "stacks": stacks, "max_entries": int(max_entries)}
    )


def _host_memory_stats():
    try:
        return _pinned.host_memory_stats()
    except Exception:  # noqa: BLE001 - a snapshot must not fail on the host pool's stats
        return None


def _snapshot(device=None) -> dict:
    """torch.cuda.memory._snapshot(): {segments, device_traces, allocator_settings} plus
    the 'gpu_tensor' extension (memory_stats, live_tensors, host_memory_stats)."""
    return build_snapshot(
        _registry.existing_allocators().values(),
        device=_index(device),
        host_memory_stats=_host_memory_stats(),
    )


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickle the snapshot as torch does (plain builtins: pickle.load needs no gpu_tensor,
    and pytorch.org/memory_viz opens it)."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def save_snapshot(path: str) -> None:
    """The `_dump_snapshot` content as JSON (tuples become lists)."""
    with open(path, "w") as f:
        json.dump(_snapshot(), f)
