"""A simulated CuPy, so the real CUDA backend's own code runs in CI on a machine with no GPU.

`GPU_TENSOR_FALLBACK=sim` makes `cuda` the real `CudaBackend` over this module (the cupy door,
`gpu_tensor.backends._cupy`, hands it out instead of cupy). It is stricter than a fake:

- arrays live in simulated device memory: host bytes at real addresses (`data.ptr`), from
  cudaMalloc's stand-in or from the allocator given to `cuda.set_allocator`;
- every call is bound against the installed real cupy's signature (`signatures.py`);
- streams are asynchronous: queued work runs only when something orders it, unordered
  streams run in a seeded adversarial order, and unordered access to the same memory is a
  race (`SimRaceError`, naming both streams and the buffer; `set_race_mode("warn")` warns);
- kernels run their CUDA source under kernels/host_emulation.h (g++, cached);
- `counters()` counts kernel launches, driver calls, device syncs and bytes copied.

cupy's departures from numpy that are modelled (gpu_tensor reaches each of them):

| departure | where | reference |
|---|---|---|
| integer-array indices out of range wrap | indexing.py, `take` | docs.cupy.dev user_guide/difference.html "Out-of-bounds indices" |
| `ufunc.at` only for ufuncs with a scatter op (no `multiply.at`) | ufunc.py | cupy/_core/_kernel.pyx `ufunc.at` ("is not supported yet") |
| `add.at` only for int32/int64/uint32/uint64/float16/float32/float64 | ufunc.py | cupy v14.2.0 _routines_indexing.pyx:942-953 |
| float -> int casts saturate, NaN -> 0 | ndarray.saturating_cast | difference.html "Cast behavior from float to integer"; PTX cvt.rzi |
| `cupy.indices(dimensions, dtype=int)`: no `sparse` | signature binding | cupy/_indexing/generate.py `indices` |
| no implicit conversion to numpy | ndarray.__array__ | cupy/_core/core.pyx `__array__` |
| reductions / full integer indexing give 0-d arrays | ndarray.wrap | difference.html "Reduction methods return zero-dimension array" |
| no bfloat16 dtype | ndarray.check_dtype | cupy has no bfloat16 |

What it cannot show: real timing, hardware faults (misaligned vector access, ECC), NVML data,
driver/NVRTC installation problems, numerics of the real GPU (FMA contraction, -ftz).
"""

from __future__ import annotations

from .machine import COUNTERS, machine, reset
from .scheduler import SimRaceError, SimRaceWarning

__all__ = [
    "module",
    "set_null_device",
    "counters",
    "reset_counters",
    "reset",
    "machine",
    "set_race_mode",
    "races",
    "SimRaceError",
    "SimRaceWarning",
    "COUNTERS",
    "check_nvrtc",
    "synchronize",
]


def module():
    """The simulated cupy module (what `gpu_tensor.backends._cupy.cupy()` returns under
    GPU_TENSOR_FALLBACK=sim)."""
    from . import methods  # noqa: F401 - attaches ndarray's operators and methods
    from .namespace import cupy

    return cupy


def counters() -> dict:
    """kernel_launches, driver_calls, device_syncs, bytes_copied (and more) so far."""
    return dict(machine().counters)


def reset_counters() -> None:
    c = machine().counters
    for k in c:
        c[k] = 0


def set_null_device(on: bool) -> None:
    """Launches and async copies are counted but not run (to time gpu_tensor's own host-side
    cost per op, as tinygrad's null device does); results are then garbage."""
    machine().null = bool(on)


def set_race_mode(mode: str) -> None:
    """'raise' (default): a race raises SimRaceError; 'warn': SimRaceWarning instead."""
    if mode not in ("raise", "warn"):
        raise ValueError(f"race mode must be 'raise' or 'warn', got {mode!r}")
    machine().sched.mode = mode


def races() -> list[str]:
    """Every race reported so far (both modes)."""
    return list(machine().sched.races)


def synchronize() -> None:
    """Run everything queued on every stream (like cudaDeviceSynchronize on all devices)."""
    machine().sched.synchronize_device(None)


def check_nvrtc(on: bool = True) -> None:
    """Also compile every kernel with the real NVRTC (slower)."""
    from .kernels import check_nvrtc as _check

    _check(on)
