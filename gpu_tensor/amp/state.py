"""Autocast state: per thread, per device type (enabled, dtype), the cache switch, the
nesting count, and the process-wide weight-cast cache; torch's getters and setters.

The state is thread-local, as in torch: a thread started inside an autocast region starts
with autocast off. Whether this thread has autocast on for ANY device type is mirrored into
the per-op interception word (`gpu_tensor/_modes.py`, bit AUTOCAST), so ops outside
autocast pay the word's one read and nothing more.

The weight-cast cache is process-wide (torch made it so after issue #86136: a per-thread
cache left other threads' casts alive) and emptied when a thread's outermost region exits.
"""

from __future__ import annotations

import threading
import warnings
import weakref

from .. import _modes
from .. import dtype as _dt

__all__ = [
    "is_autocast_available",
    "is_autocast_enabled",
    "set_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "autocast_increment_nesting",
    "autocast_decrement_nesting",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_gpu_dtype",
]

DEVICE_TYPES = ("cpu", "cuda")  # the device types gpu_tensor has (torch's other keys: none here)
_DEFAULT_DTYPE = {"cpu": _dt.bfloat16, "cuda": _dt.float16}  # torch's defaults


class _State(threading.local):
    def __init__(self):  # runs once per thread: every thread starts with autocast off
        self.enabled = dict.fromkeys(DEVICE_TYPES, False)
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        self.holding = False  # does this thread hold the AUTOCAST bit of the modes word?


STATE = _State()


def _sync_word() -> None:
    """Hold the word's AUTOCAST bit exactly while some device type has autocast on."""
    st = STATE
    want = any(st.enabled.values())
    if want and not st.holding:
        _modes.enter(_modes.AUTOCAST)
        st.holding = True
    elif st.holding and not want:
        _modes.exit(_modes.AUTOCAST)
        st.holding = False


def _device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Can autocast run on `device_type` ('cpu' and 'cuda' here)?"""
    return device_type in DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Is autocast on for `device_type` in this thread? No argument: cuda (torch's legacy
    meaning)."""
    return STATE.enabled[_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type, enabled=None) -> None:
    """set_autocast_enabled(device_type, enabled), or the legacy set_autocast_enabled(enabled)
    for cuda."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    STATE.enabled[_device_type(device_type)] = bool(enabled)
    _sync_word()


def get_autocast_dtype(device_type: str):
    return STATE.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype) -> None:
    STATE.dtype[_device_type(device_type)] = _dt.to_dtype(dtype)


def is_autocast_cache_enabled() -> bool:
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    STATE.cache_enabled = bool(enabled)


def autocast_increment_nesting() -> int:
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    STATE.nesting -= 1
    return STATE.nesting


# -- the weight-cast cache: {id(source): (weakref to source, cast tensor)} -------------------
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def cache_get(src, dtype):
    """The cast of `src` to `dtype` made earlier in this region, or None."""
    with _CACHE_LOCK:
        hit = _CACHE.get((id(src), dtype))
    if hit is not None and hit[0]() is src:
        return hit[1]
    return None


def cache_put(src, dtype, cast) -> None:
    with _CACHE_LOCK:
        _CACHE[(id(src), dtype)] = (weakref.ref(src), cast)


def clear_autocast_cache() -> None:
    """Drop every cached weight cast (autocast does this when the outermost region exits)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def cache_size() -> int:
    """How many casts the cache holds (for tests and reports)."""
    return len(_CACHE)


# -- torch's legacy per-device names (DeprecationWarning, as torch 2.13 gives) --------------
def _legacy(old: str, new: str) -> None:
    old = old if old.endswith(")") else old + "()"
    warnings.warn(
        f"torch.{old} is deprecated. Please use torch.{new} instead.",
        DeprecationWarning,
        stacklevel=3,
    )


def get_autocast_cpu_dtype():
    _legacy("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    _legacy("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def is_autocast_cpu_enabled() -> bool:
    _legacy("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _legacy("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype) -> None:
    _legacy("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype) -> None:
    _legacy("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
