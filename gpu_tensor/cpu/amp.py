"""`gt.cpu.amp`: torch.cpu.amp's deprecated aliases of gt.amp (FutureWarning, torch's text)."""

from __future__ import annotations

import warnings

from .. import amp as _amp
from .. import dtype as _dt

__all__ = ["autocast", "GradScaler"]


class autocast(_amp.autocast):  # noqa: N801  (torch's name)
    def __init__(self, enabled: bool = True, dtype=_dt.bfloat16, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
