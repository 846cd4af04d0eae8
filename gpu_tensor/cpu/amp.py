"""`gt.cpu.amp`: torch.cpu.amp's deprecated aliases of gt.amp (FutureWarning, torch's text)."""

from __future__ import annotations

from .. import amp as _amp
from .. import dtype as _dt
from ..amp.device_aliases import DeviceGradScaler, deprecated

__all__ = ["autocast", "GradScaler"]


class autocast(_amp.autocast):  # noqa: N801  (torch's name)
    def __init__(self, enabled: bool = True, dtype=_dt.bfloat16, cache_enabled: bool = True):
        deprecated("cpu", "autocast", "autocast('cpu', args...)")
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(DeviceGradScaler):
    _device_type = "cpu"
