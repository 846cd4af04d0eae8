"""Who holds the memory: creation sites and live-block attribution.

`capture_site()` finds the first frame outside gpu_tensor (and cupy) on the
caller's stack: the user line that made the tensor. It walks frame objects
only (no traceback formatting), so it costs about a microsecond; it can be
switched off with GPU_TENSOR_RECORD_SITES=0 or `set_enabled(False)`.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from .. import _env

__all__ = [
    "enabled",
    "set_enabled",
    "capture_site",
    "site_from",
    "capture_frames",
    "format_site",
    "format_size",
    "live_blocks",
]

_enabled: bool | None = None  # None: not read from the environment yet
_skip_prefixes: tuple[str, ...] | None = None


def enabled() -> bool:
    global _enabled
    if _enabled is None:
        _enabled = _env.record_creation_sites()
    return _enabled


def set_enabled(flag: bool | None) -> None:
    """Switch creation-site capture on/off; None goes back to GPU_TENSOR_RECORD_SITES."""
    global _enabled
    _enabled = None if flag is None else bool(flag)


def _prefixes() -> tuple[str, ...]:
    global _skip_prefixes
    if _skip_prefixes is None:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gpu_tensor/
        prefixes = [here + os.sep]
        for name in ("cupy", "cupyx", "cupy_backends"):
            try:  # locate without importing: reading a site must never import cupy
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            for loc in (spec.submodule_search_locations or []) if spec else []:
                prefixes.append(os.path.abspath(loc) + os.sep)
        _skip_prefixes = tuple(prefixes)
    return _skip_prefixes


def capture_site(depth: int = 1):
    """(filename, line, function) of the nearest caller outside gpu_tensor and cupy."""
    return site_from(sys._getframe(depth))


def site_from(frame):
    """capture_site from `frame` up (CachingAllocator.malloc runs its first loop written
    out, and calls this for a file it has not seen before)."""
    inside = INSIDE
    try:
        while True:
            while frame.f_code.co_filename in inside:  # (the loop every malloc runs)
                frame = frame.f_back
            code = frame.f_code
            if code.co_filename in OUTSIDE or not _classify(code.co_filename):
                return (code.co_filename, frame.f_lineno, code.co_name)
    except AttributeError:  # past the outermost frame (None): every caller was inside
        return None


# The files seen so far, by whether they lie inside gpu_tensor or cupy. Every tensor's
# malloc walks the frames of the caller's stack (~15, ~20 in backward): a set test per
# frame costs half a dict lookup's call and a sixth of a `startswith` over the prefixes
# (and ~11 ns less than a subscript of a dict of both kinds with a __missing__, measured)
INSIDE: set[str] = set()
OUTSIDE: set[str] = set()


def _classify(filename: str) -> bool:
    """Whether `filename` is inside gpu_tensor or cupy (first sight: remembered)."""
    known = filename.startswith(_skip_prefixes or _prefixes())
    (INSIDE if known else OUTSIDE).add(filename)
    return known


def capture_frames(depth: int = 1, limit: int = 64) -> list[dict]:
    """The caller's stack, innermost first, as torch snapshot frames ({filename, line, name}).
    Frames inside gpu_tensor/memory are left out: they are the allocator itself."""
    mem_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frames = []
    frame = sys._getframe(depth)
    while frame is not None and len(frames) < limit:
        code = frame.f_code
        if not code.co_filename.startswith(mem_dir):
            frames.append(
                {"filename": code.co_filename, "line": frame.f_lineno, "name": code.co_name}
            )
        frame = frame.f_back
    return frames


def format_site(site) -> str:
    if not site:
        return "unknown (creation sites off: GPU_TENSOR_RECORD_SITES=0)"
    filename, line, name = site
    return f"{filename}:{line} in {name}"


def format_size(nbytes: int) -> str:
    """Binary units with two decimals, as torch's OOM message prints them."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _describe(block, device_index: int) -> dict:
    tag = block.tag or {}
    return {
        "address": block.ptr,
        "size": block.size,
        "requested_size": block.requested_size,
        "shape": tuple(tag["shape"]) if "shape" in tag else None,
        "dtype": str(tag["dtype"]) if "dtype" in tag else None,
        "device": device_index,
        "stream": block.stream,
        "site": format_site(block.site) if block.site else None,
        "kind": "tensor" if tag else "untagged (cupy temporary or raw block)",
    }


def live_blocks(allocator, limit: int | None = None) -> list[dict]:
    """Allocated blocks of `allocator`, largest first, with shape/dtype and creation site."""
    blocks = allocator.allocated_blocks()
    blocks.sort(key=lambda b: (-b.size, b.ptr))
    if limit is not None:
        blocks = blocks[:limit]
    return [_describe(b, allocator.device_index) for b in blocks]
