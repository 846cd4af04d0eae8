"""backends/host_malloc.py: glibc keeps freed memory for numpy's next temporaries."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys

import pytest

from gpu_tensor.backends import host_malloc


def _glibc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
    except (OSError, AttributeError):
        return None
    return libc


def test_settings_are_applied_once_and_zero_turns_them_off(monkeypatch):
    monkeypatch.setattr(host_malloc, "_done", False)
    monkeypatch.setenv("GPU_TENSOR_HOST_MALLOC_KEEP_MB", "0")
    assert host_malloc.keep_freed_memory() is False
    assert host_malloc.keep_freed_memory() is False  # once per process, whatever the outcome
    if _glibc() is None:
        pytest.skip("needs glibc's mallopt")
    monkeypatch.setattr(host_malloc, "_done", False)
    monkeypatch.setenv("GPU_TENSOR_HOST_MALLOC_KEEP_MB", "256")
    assert host_malloc.keep_freed_memory() is True


_PROBE = """
import ctypes, ctypes.util, numpy as np
import gpu_tensor  # the cpu backend applies the settings on import
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = MallInfo2
before = libc.mallinfo2().hblkhd
a = np.ones(3 << 20, np.float32)  # 12 MiB, the first large block of this process
mapped = libc.mallinfo2().hblkhd - before
del a
print(mapped >= 12 << 20, libc.mallinfo2().fordblks >= 12 << 20)
"""


@pytest.mark.parametrize("keep", ["256", "0"])
def test_a_freed_temporary_stays_in_the_heap(keep):
    libc = _glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("needs glibc >= 2.33 (mallinfo2)")
    env = dict(os.environ, GPU_TENSOR_HOST_MALLOC_KEEP_MB=keep)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    # kept: heap memory, still free for the next temporary; glibc's defaults: an mmap,
    # handed back to the kernel when freed
    assert out == (["False", "True"] if keep != "0" else ["True", "False"])
