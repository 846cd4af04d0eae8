"""What `gt.cpu.amp` and `gt.cuda.amp` share: torch's deprecated per-device aliases of gt.amp
warn with torch's FutureWarning text, naming what to use instead."""

from __future__ import annotations

import warnings

from .grad_scaler import GradScaler as _GradScaler


def deprecated(device: str, old: str, new: str, stacklevel: int = 3) -> None:
    """`torch.<device>.amp.<old>(args...)` is deprecated in favour of `torch.amp.<new>`."""
    warnings.warn(
        f"`torch.{device}.amp.{old}(args...)` is deprecated. Please use `torch.amp.{new}` instead.",
        FutureWarning,
        stacklevel=stacklevel,
    )


class DeviceGradScaler(_GradScaler):
    """torch.cpu.amp.GradScaler and torch.cuda.amp.GradScaler: gt.amp.GradScaler for the
    class's `_device_type`, with torch's signature (no `device` argument)."""

    _device_type = "cuda"

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        deprecated(self._device_type, "GradScaler", f"GradScaler('{self._device_type}', args...)")
        super().__init__(
            self._device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )
