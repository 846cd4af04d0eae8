"""torch.cuda's device queries: is_available, device_count, current_device, set_device,
plus is_emulated (True when 'cuda' is the GPU_TENSOR_FALLBACK host emulation).

None of these imports cupy on a machine without the NVIDIA driver.
"""

from __future__ import annotations

from .. import device as _device

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "is_emulated",
    "get_device_name",
    "device",
]


def is_available() -> bool:
    """True when a real GPU is usable, or when fallback emulation is on."""
    return _device.cuda_available()


def is_emulated() -> bool:
    """True when 'cuda' tensors live in host memory (no GPU, GPU_TENSOR_FALLBACK=1)."""
    return _device.cuda_is_emulated()


def device_count() -> int:
    return _device.cuda_device_count()


def current_device() -> int:
    _device.check_cuda(_device.current_cuda_index())
    return _device.current_cuda_index()


def set_device(device) -> None:
    """Make `device` (an index, 'cuda:N' or a Device) the one plain 'cuda' refers to."""
    d = _device.device(device)
    if d.type != "cuda":
        raise ValueError(f"set_device expects a cuda device, got {d}")
    idx = 0 if d.index is None else d.index
    _device.set_current_cuda_index(idx)
    if _device.real_cuda_available():
        from ..backends._cupy import cupy

        cupy().cuda.Device(idx).use()


def get_device_name(device=None) -> str:
    idx = current_device() if device is None else (_device.device(device).index or 0)
    _device.check_cuda(idx)
    from ..backends import cuda_kind

    return cuda_kind().device_name(idx)


class device:
    """Context manager: `with gt.cuda.device(1): ...` makes plain 'cuda' mean cuda:1."""

    def __init__(self, device):
        d = _device.device(device)
        self.index = -1 if d.type != "cuda" else (0 if d.index is None else d.index)
        self.prev = None

    def __enter__(self):
        if self.index >= 0:
            self.prev = _device.current_cuda_index()
            set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device(self.prev)
        return False
