"""Backends: the only code that knows numpy from cupy. `get_backend(device)` is the door;
`cuda_kind()` is the object of the kind cuda is here (a GPU, simulated, emulated: kinds.py),
which makes each cuda device's backend."""

from __future__ import annotations

from .. import device as _device
from ..device import Device, resolve

__all__ = ["get_backend", "cuda_kind", "Backend", "PIECE"]

from . import cudnn, mps  # noqa: E402, F401, I001  (torch.backends' flag modules)
from .base import PIECE, Backend  # noqa: E402
from .cpu import CpuBackend  # noqa: E402
from .kinds import KINDS  # noqa: E402

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
    else:
        b = cuda_kind().backend(d.index)
    _cache[d] = b
    d._backend = b
    return b


def cuda_kind():
    """The object of the kind cuda is in this process (backends/kinds.py), from
    `device.cuda_kind()`, the one place the kind is decided."""
    return KINDS[_device.cuda_kind()]
