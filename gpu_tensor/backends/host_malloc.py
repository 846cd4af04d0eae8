"""glibc malloc tuned so numpy's large temporaries are reused instead of page-faulted back.

A training step on a host-memory device makes and frees the same megabyte-sized numpy
temporaries every step. glibc's defaults hand each one back to the kernel (mmap'd blocks
are unmapped; the heap top is trimmed past twice the largest freed block), so the next
step touches fresh pages: a 3x3 conv2d forward of bench_train's CNN took 9.0 ms that way
against 2.8 ms with freed memory kept (one thread, measured, 2026-12-04). Here blocks up
to 32 MiB (glibc's largest mmap threshold) come from the heap, and up to
GPU_TENSOR_HOST_MALLOC_KEEP_MB of free heap is kept for reuse (0: glibc's defaults).
Set once per process, when the cpu backend is imported; elsewhere than glibc, nothing.
"""

from __future__ import annotations

import ctypes
import sys

from .. import _env

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_HEAP_BLOCKS_UP_TO = 32 << 20  # glibc caps M_MMAP_THRESHOLD at 32 MiB on 64-bit
_done = False


def keep_freed_memory() -> bool:
    """Apply the settings (once); True when glibc took them."""
    global _done
    if _done:
        return False
    _done = True
    keep = _env.host_malloc_keep_bytes()
    if keep <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        # the process's own symbols: libc is loaded already, and find_library("c") would
        # run `ldconfig -p` in a subprocess on every import
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _HEAP_BLOCKS_UP_TO)) and bool(
        mallopt(_M_TRIM_THRESHOLD, min(keep, (1 << 31) - 1))
    )
