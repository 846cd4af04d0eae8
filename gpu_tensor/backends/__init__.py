"""Backends: the only code that knows numpy from cupy. `get_backend(device)` is the door."""

from __future__ import annotations

from ..device import Device, cuda_is_emulated, resolve

__all__ = ["get_backend", "Backend", "PIECE"]

from . import cudnn, mps  # noqa: E402, F401, I001  (torch.backends' flag modules)
from .base import PIECE, Backend  # noqa: E402
from .cpu import CpuBackend  # noqa: E402

_CPU = CpuBackend()
_cache: dict[Device, Backend] = {}


def get_backend(device) -> Backend:
    """The backend for a device (cpu, emulated cuda, or real cuda via cupy)."""
    b = getattr(device, "_backend", None)
    if b is not None:
        return b
    d = resolve(device)
    if d._backend is not None:
        return d._backend
    if d.type == "cpu":
        b = _CPU
    elif d.type == "meta":
        from .meta import MetaBackend

        b = MetaBackend()
    elif cuda_is_emulated():
        from .emulated import EmulatedCudaBackend

        b = EmulatedCudaBackend(d.index)
    else:
        from .cuda import CudaBackend

        b = CudaBackend(d.index)
    _cache[d] = b
    d._backend = b
    return b
