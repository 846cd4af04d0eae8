"""One `CachingAllocator` per (kind, device index), created on first use.

kind 'emulated': the cuda device of fallback mode, on `HostRawSource` with
GPU_TENSOR_EMULATED_MEMORY_MB of capacity. kind 'cuda': a real GPU; its factory
(raw source, events, CuPy hook) is registered by gpu_tensor/backends/cuda_memory.py
when that module is imported (it sits in a lower layer, so the registry cannot
import it).
`existing_allocators()` and `find()` never create one, so reading stats never
initialises CUDA.
"""

from __future__ import annotations

import contextlib
import threading

from .. import _env
from .allocator import CachingAllocator
from .config import AllocatorConfig
from .raw import HostRawSource

__all__ = [
    "KINDS",
    "get_allocator",
    "existing_allocators",
    "find",
    "register_factory",
    "set_history",
    "history",
]

KINDS = ("emulated", "cuda")
_lock = threading.Lock()
_allocators: dict[tuple[str, int], CachingAllocator] = {}
_history_settings: dict | None = None  # kwargs for HistoryRecorder while recording is on


def _emulated(index: int, config: AllocatorConfig) -> CachingAllocator:
    return CachingAllocator(
        HostRawSource(_env.emulated_memory_bytes()),
        index,
        event_factory=None,
        config=config,
        kind="emulated",
    )


# kind -> factory(index, config). The CUDA mechanism lives in a lower layer
# (backends/cuda_memory.py), so it registers itself here when it is imported.
_factories = {"emulated": _emulated}


def register_factory(kind: str, factory) -> None:
    """Make `factory(device_index, config) -> CachingAllocator` the maker for `kind`."""
    _factories[kind] = factory


def _create(kind: str, index: int) -> CachingAllocator:
    factory = _factories.get(kind)
    if factory is None:
        if kind in KINDS:
            raise RuntimeError(
                f"no allocator factory for kind {kind!r} yet: import "
                "gpu_tensor.backends.cuda_memory first (the cuda backend and "
                "gpu_tensor.cuda.memory do this before they ask for a real GPU allocator)"
            )
        raise ValueError(f"allocator kind must be one of {KINDS}, got {kind!r}")
    allocator = factory(index, AllocatorConfig.from_env())
    if _history_settings is not None:
        from .snapshot import HistoryRecorder

        allocator.history = HistoryRecorder(**_history_settings)
    return allocator


def get_allocator(device_index: int = 0, kind: str = "cuda") -> CachingAllocator:
    """The allocator of device `device_index` of `kind`, created on first use."""
    key = (kind, int(device_index))
    allocator = _allocators.get(key)
    if allocator is None:
        with _lock:
            allocator = _allocators.get(key)
            if allocator is None:
                allocator = _allocators[key] = _create(kind, key[1])
    return allocator


def existing_allocators() -> dict[tuple[str, int], CachingAllocator]:
    """{(kind, index): allocator} for those created so far. Creates nothing."""
    return dict(_allocators)


def find(device_index: int) -> CachingAllocator | None:
    """The existing allocator for cuda device `device_index` (real before emulated), or None."""
    for kind in ("cuda", "emulated"):
        allocator = _allocators.get((kind, int(device_index)))
        if allocator is not None:
            return allocator
    return None


def set_history(settings: dict | None) -> None:
    """Turn history recording on (HistoryRecorder kwargs) or off (None) for every allocator,
    present and future. Turning it on again keeps no old entries (torch's clear_history
    is implied here: a new recorder starts empty)."""
    global _history_settings
    from .snapshot import HistoryRecorder

    with _lock:
        _history_settings = dict(settings) if settings is not None else None
        for allocator in _allocators.values():
            with allocator._lock:
                allocator.history = HistoryRecorder(**settings) if settings is not None else None


def history() -> dict | None:
    return None if _history_settings is None else dict(_history_settings)


@contextlib.contextmanager
def _isolated():
    """Tests only: an empty registry inside, the previous allocators and history setting
    restored after (backends may hold on to those allocators, so they are never dropped)."""
    global _history_settings
    with _lock:
        saved, saved_history = dict(_allocators), _history_settings
        _allocators.clear()
        _history_settings = None
    try:
        yield
    finally:
        with _lock:
            for allocator in _allocators.values():
                try:
                    allocator.empty_cache()
                except Exception:  # noqa: BLE001 - best effort in teardown
                    pass
            _allocators.clear()
            _allocators.update(saved)
            _history_settings = saved_history
