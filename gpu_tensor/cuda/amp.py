"""`gt.cuda.amp`: torch.cuda.amp's deprecated aliases of gt.amp (FutureWarning, torch's text).

Old code and tutorials (the pytorch/tutorials AMP recipe among them) still use these, so
they keep working; each construction says what to use instead.
"""

from __future__ import annotations

import functools

from .. import amp as _amp
from .. import dtype as _dt
from ..amp.device_aliases import DeviceGradScaler, deprecated

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):  # noqa: N801  (torch's name)
    def __init__(self, enabled: bool = True, dtype=_dt.float16, cache_enabled: bool = True):
        deprecated("cuda", "autocast", "autocast('cuda', args...)")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(DeviceGradScaler):
    _device_type = "cuda"


def custom_fwd(fwd=None, *, cast_inputs=None):
    deprecated("cuda", "custom_fwd", "custom_fwd(args..., device_type='cuda')")
    if fwd is None:
        return functools.partial(_amp.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    deprecated("cuda", "custom_bwd", "custom_bwd(args..., device_type='cuda')")
    if bwd is None:
        return functools.partial(_amp.custom_bwd, device_type="cuda")
    return _amp.custom_bwd(bwd, device_type="cuda")
