"""Devices: `gt.device('cpu' | 'cuda' | 'cuda:N')`, the default device, and CPU fallback.

Without a GPU, 'cuda' is refused unless GPU_TENSOR_FALLBACK=1, which turns it into an
emulated device on host memory. Nothing here imports cupy unless a GPU could exist
(the NVIDIA driver library is present); the answer is computed once.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import sys
import types

from . import _env

__all__ = [
    "Device",
    "device",
    "get_default_device",
    "set_default_device",
    "real_cuda_available",
    "cuda_kind",
    "cuda_is_emulated",
    "cuda_is_simulated",
    "cuda_available",
    "cuda_device_count",
]


class Device:
    """A device: `.type` ('cpu' | 'cuda') and `.index` (None for an unindexed 'cuda')."""

    __slots__ = ("type", "index", "_str", "_backend")

    def __init__(self, type: str, index: int | None = None):
        self.type = type
        self.index = index
        self._str = type if index is None or type == "cpu" else f"{type}:{index}"
        self._backend = None  # set by backends.get_backend (saves a dict lookup per op)

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (
            f", index={self.index})" if self.index is not None else ")"
        )

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self._str,))

    # `with gt.device("cuda"):` makes factories without device= use this device, as in
    # torch; a stack so nested blocks restore correctly
    def __enter__(self) -> Device:
        _DEVICE_STACK.append(_default_device)
        set_default_device(self)
        return self

    def __exit__(self, *exc) -> bool:
        set_default_device(_DEVICE_STACK.pop())
        return False


_DEVICE_STACK: list = []  # the defaults that `with device:` blocks replaced, innermost last


# Interned so tensors can compare devices with `is` on the hot path.
_interned: dict[tuple[str, int | None], Device] = {}


def _make(type: str, index: int | None) -> Device:
    key = (type, index)
    d = _interned.get(key)
    if d is None:
        d = _interned[key] = Device(type, index)
    return d


CPU = _make("cpu", None)
META = _make("meta", None)


def device(spec, index: int | None = None) -> Device:
    """Parse 'cpu', 'cuda', 'cuda:N' (or a Device, or an int meaning cuda:N)."""
    if type(spec) is Device:
        return spec
    if isinstance(spec, int) and not isinstance(spec, bool):
        return _make("cuda", spec)
    if isinstance(spec, Device):
        return _make(spec.type, spec.index)
    if not isinstance(spec, str):
        if type(spec).__name__ == "device" and hasattr(spec, "type"):  # a torch.device
            return device(str(spec))
        raise TypeError(f"expected a device string like 'cpu' or 'cuda:0', got {spec!r}")
    kind, sep, num = spec.strip().partition(":")
    if kind == "meta" and not sep:  # shapes without storage (backends/meta.py)
        return META
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(
            f"unsupported device {spec!r}; gpu_tensor knows 'cpu', 'cuda', 'cuda:N' and 'meta'"
        )
    if sep:
        if index is not None:
            raise RuntimeError(f"device {spec!r} already has an index; got index={index} too")
        if not num.isdigit():
            raise RuntimeError(f"invalid device index in {spec!r}; expected e.g. 'cuda:0'")
        index = int(num)
    if kind == "cpu":
        return CPU
    return _make("cuda", index)


@functools.lru_cache(maxsize=1)
def _real_cuda() -> tuple[int, str]:
    """(number of devices the real CUDA backend sees, 'cuda' or 'simulated'): 0 without
    driver or cupy. Imports cupy only when the NVIDIA driver library exists, so a GPU-less
    machine never pays for it. Cached: once cupy (or the simulator standing in for it) is
    imported, the process keeps it, and the warm path reads no environment variable."""
    from .backends import _cupy

    if _env.simulated():  # the real CUDA backend over gpu_tensor.testing.sim's GPUs
        return int(_cupy.cupy().cuda.runtime.getDeviceCount()), "simulated"
    if not (ctypes.util.find_library("cuda") or os.path.exists("/dev/nvidiactl")):
        return 0, "cuda"

    try:
        if not _cupy.cupy_installed():
            return 0, "cuda"
        return int(_cupy.cupy().cuda.runtime.getDeviceCount()), "cuda"
    except Exception:  # no usable driver/device: behave as a GPU-less machine
        return 0, "cuda"


def real_cuda_available() -> bool:
    """True when the real CUDA backend runs: on a GPU (with cupy), or over the simulated
    CuPy (GPU_TENSOR_FALLBACK=sim; `cuda_is_simulated()` tells the two apart)."""
    return _real_cuda()[0] > 0


def cuda_kind() -> str | None:
    """What 'cuda' is in this process, decided here and nowhere else: 'cuda' (a GPU),
    'simulated' (the real CUDA backend over gpu_tensor.testing.sim, GPU_TENSOR_FALLBACK=sim),
    'emulated' (host memory: no GPU and GPU_TENSOR_FALLBACK=1), or None (no cuda at all).
    `backends.cuda_kind()` turns the name into the kind's object, which every other module
    asks for what differs between kinds (streams, memory sources, NCCL, ...). Read when
    asked, past the driver's cached answer, so tests can switch emulation on and off."""
    n, kind = _real_cuda()
    if n:
        return kind
    return "emulated" if _env.fallback() else None


def cuda_is_simulated() -> bool:
    """True when 'cuda' is the real CUDA backend over gpu_tensor.testing.sim."""
    return cuda_kind() == "simulated"


def cuda_is_emulated() -> bool:
    """True when 'cuda' is the emulated host device (no GPU, GPU_TENSOR_FALLBACK=1)."""
    return cuda_kind() == "emulated"


def cuda_available() -> bool:
    return real_cuda_available() or _env.fallback()


def cuda_device_count() -> int:
    n = _real_cuda()[0]
    if n:
        return n
    return 1 if _env.fallback() else 0


_NO_CUDA_HINT = (
    "no CUDA GPU is available (no driver or cupy found). To run cuda code on the CPU, set "
    "GPU_TENSOR_FALLBACK=1 before importing gpu_tensor: cuda then becomes an emulated device "
    "on host memory (gt.cuda.is_emulated() tells)."
)

_current_cuda = 0


def current_cuda_index() -> int:
    return _current_cuda


def set_current_cuda_index(i: int) -> None:
    global _current_cuda
    check_cuda(i)
    _current_cuda = i


def check_cuda(index: int) -> None:
    n = cuda_device_count()
    if n == 0:
        raise RuntimeError(f"cannot use device 'cuda:{index}': {_NO_CUDA_HINT}")
    if not 0 <= index < n:
        raise RuntimeError(
            f"invalid device 'cuda:{index}': {n} cuda device(s) available (cuda:0..cuda:{n - 1})"
        )


def resolve(spec) -> Device:
    """The concrete device a tensor lives on: 'cuda' -> 'cuda:<current>'; checks it exists."""
    if spec is None:
        return get_default_device()
    if type(spec) is str:
        d = _parsed.get(spec)
        if d is None:
            d = _parsed[spec] = device(spec)  # parsing costs ~1 us; device strings repeat
    else:
        d = spec if type(spec) is Device else device(spec)
    if d.type == "cpu":
        return CPU
    if d.type == "meta":
        return META
    idx = d.index
    if idx is None:
        idx = _current_cuda
    d = _make("cuda", idx)
    if d not in _checked:
        check_cuda(idx)
        _checked.add(d)
    return d


_checked: set[Device] = set()
_parsed: dict[str, Device] = {}
_default_device: Device | None = None


def get_default_device() -> Device:
    """cuda when a real GPU is available, else cpu (GPU_TENSOR_DEFAULT_DEVICE overrides;
    fallback alone does not make the emulated cuda the default)."""
    global _default_device
    if _default_device is None:
        env = _env.default_device()
        if env:
            _default_device = resolve(env)
        else:
            _default_device = _make("cuda", 0) if real_cuda_available() else CPU
    return _default_device


def set_default_device(spec) -> None:
    """Set the device factory functions use when `device=` is not given."""
    global _default_device
    _default_device = None if spec is None else resolve(spec)


class _CallableModule(types.ModuleType):
    """This module is callable: `gpu_tensor.device('cuda:0')` is `device('cuda:0')`.

    Why: `gt.device(...)` is torch's spelling, and `from gpu_tensor import device` is how
    other modules reach this one; re-exporting the function under the module's own name
    would silently replace the module for all of them. A callable module serves both."""

    def __call__(self, spec, index: int | None = None) -> Device:
        return device(spec, index)


sys.modules[__name__].__class__ = _CallableModule
