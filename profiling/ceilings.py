"""Physical ceilings measured in the same run as the benchmark they judge.

The buffers come from raw cudaMalloc / cudaHostAlloc, never from a pool, so the
ceiling does not depend on whichever allocator a benchmark installed under cupy.

Byte conventions (the percentage a row shows is its GB/s over the ceiling's GB/s,
so a benchmark must count its bytes the same way):
- d2d:  read + write. A copy of N bytes counts 2N (nvbandwidth's device_local_copy).
- h2d, d2h: bytes moved across PCIe once. N bytes count N (nvbandwidth's *_memcpy_ce).
- host: read + write of a numpy copy on the CPU, 2N.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["KINDS", "CONVENTIONS", "ceiling_bytes", "measure"]

GiB = 1 << 30
MiB = 1 << 20
# Buffers far beyond the H200's 50 MiB L2 (and a CPU's LLC), so the ceiling is DRAM's.
FULL_BYTES = {"d2d": GiB, "h2d": GiB, "d2h": GiB, "host": 256 * MiB}
QUICK_BYTES = {"d2d": 256 * MiB, "h2d": 256 * MiB, "d2h": 256 * MiB, "host": 64 * MiB}
CONVENTIONS = {
    "d2d": "read+write",
    "h2d": "bytes moved once",
    "d2h": "bytes moved once",
    "host": "read+write",
}
KINDS = tuple(CONVENTIONS)
_MEMCPY_KIND = {"h2d": 1, "d2h": 2, "d2d": 3}  # cudaMemcpyKind values


def ceiling_bytes(kind: str, quick: bool) -> int:
    return (QUICK_BYTES if quick else FULL_BYTES)[kind]


def _bytes_counted(kind: str, nbytes: int) -> int:
    return 2 * nbytes if CONVENTIONS[kind] == "read+write" else nbytes


def measure(kind: str, quick: bool, time_fn: Callable, cp=None) -> dict:
    """Measure one ceiling; `time_fn(fn, sync)` is Suite.time. Returns the JSON record."""
    nbytes = ceiling_bytes(kind, quick)
    repeat = 10 if quick else 20  # research/performance.md: medians over >= 20 repeats
    if kind == "host":
        import numpy as np

        src = np.ones(nbytes, dtype=np.uint8)  # touched, so page faults stay out of the clock
        dst = np.zeros(nbytes, dtype=np.uint8)
        timing = time_fn(lambda: np.copyto(dst, src), sync="cpu", warmup=2, repeat=repeat)
        del src, dst
    else:
        timing = _measure_cuda(kind, nbytes, repeat, time_fn, cp)
    counted = _bytes_counted(kind, nbytes)
    return {
        "gbps": counted / timing.median / 1e9,
        "buffer_bytes": nbytes,
        "bytes_counted": counted,
        "convention": CONVENTIONS[kind],
        "timing": timing.as_dict(),
        "method": "numpy.copyto" if kind == "host" else "cudaMemcpyAsync, raw buffers",
    }


def _measure_cuda(kind: str, nbytes: int, repeat: int, time_fn: Callable, cp):
    rt = cp.cuda.runtime
    stream = cp.cuda.get_current_stream()
    dev_a = rt.malloc(nbytes)
    dev_b = host = 0
    try:
        rt.memset(dev_a, 1, nbytes)
        if kind == "d2d":
            dev_b = rt.malloc(nbytes)
            dst, src = dev_b, dev_a
        else:
            host = rt.hostAlloc(nbytes, 0)  # cudaHostAllocDefault: page-locked
            dst, src = (dev_a, host) if kind == "h2d" else (host, dev_a)
        code = _MEMCPY_KIND[kind]
        return time_fn(
            lambda: rt.memcpyAsync(dst, src, nbytes, code, stream.ptr),
            sync="cuda",
            warmup=3,
            repeat=repeat,
        )
    finally:
        rt.deviceSynchronize()
        rt.free(dev_a)
        if dev_b:
            rt.free(dev_b)
        if host:
            rt.freeHost(host)
