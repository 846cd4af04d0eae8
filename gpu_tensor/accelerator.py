"""torch.accelerator: the device-agnostic view of "the GPU" that current tutorials start with
(`torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else
"cpu"`). gpu_tensor has one accelerator kind, cuda (real, or the GPU_TENSOR_FALLBACK host
emulation), so every function here forwards to `gpu_tensor.cuda`.

Like torch, `current_accelerator()` is None when no accelerator is usable, and asking the
index of a device that is not there raises. None of these imports cupy without a GPU.
"""

from __future__ import annotations

from . import cuda as _cuda
from . import device as _device

__all__ = [
    "is_available",
    "current_accelerator",
    "device_count",
    "current_device_index",
    "set_device_index",
    "current_device_idx",
    "set_device_idx",
    "synchronize",
    "device_index",
]


def is_available() -> bool:
    """True when a cuda device is usable (a real GPU, or fallback emulation)."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """`gt.device('cuda')` when an accelerator is usable, else None (torch's contract;
    `check_available` is accepted for torch's signature: the answer is already checked)."""
    if not _cuda.is_available():
        return None
    return _device.device("cuda")


def device_count() -> int:
    """How many accelerator devices are usable (0 without one)."""
    return _cuda.device_count() if _cuda.is_available() else 0


def _need() -> None:
    if not _cuda.is_available():
        raise RuntimeError(
            "no accelerator is available: gpu_tensor found no CUDA device (set "
            "GPU_TENSOR_FALLBACK=1 to emulate one on the host); check "
            "gt.accelerator.is_available() first"
        )


def current_device_index() -> int:
    """The index plain 'cuda' refers to."""
    _need()
    return _cuda.current_device()


def set_device_index(device) -> None:
    """Make `device` (an index, 'cuda:N' or a Device) the current accelerator device; a
    negative index is a no-op, as in torch."""
    _need()
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        return
    _cuda.set_device(device)


# torch's earlier spellings, still accepted there
current_device_idx = current_device_index
set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for all work queued on the accelerator device (the current one by default)."""
    _need()
    _cuda.synchronize(device)


class device_index:
    """Context manager: the current accelerator device is `device` inside the block
    (None: unchanged), restored on exit."""

    def __init__(self, device):
        self.device = device
        self._prev = None

    def __enter__(self):
        if self.device is not None:
            self._prev = current_device_index()
            set_device_index(self.device)
        return self

    def __exit__(self, *exc):
        if self._prev is not None:
            set_device_index(self._prev)
        return False
