"""`gt.autocast` (context manager and decorator) and `custom_fwd` / `custom_bwd`.

Entering a region saves this thread's autocast state for the device type and sets the
region's; leaving restores it, so a nested `autocast(enabled=False)` forces float32 locally
and an inner dtype change ends with its region. The weight-cast cache empties when the
outermost region of the thread exits. The policies themselves are applied per op by
`cast.handle` (hung off the interception word).
"""

from __future__ import annotations

import collections.abc
import functools
import warnings

import numpy as np

from .. import dtype as _dt
from .._tensor import Tensor
from . import state as _st

__all__ = ["autocast", "custom_fwd", "custom_bwd"]

_LOWER = (_dt.bfloat16, _dt.float16)


class autocast:  # noqa: N801  (torch's name)
    """Run the ops of a region (or of a decorated function) in mixed precision on
    `device_type` ('cuda': float16 by default; 'cpu': bfloat16), following torch 2.13's
    per-op policies. Tensors created inside keep their dtype; backward runs in the dtypes
    its forward used (run it outside the region, as torch advises)."""

    def __init__(
        self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None
    ):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = (
            _st.get_autocast_dtype(device_type) if dtype is None else _dt.to_dtype(dtype)
        )
        self.device = device_type
        if not _st.is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        self._cache_enabled = (
            _st.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        )
        self._args = (device_type, dtype, enabled, cache_enabled)
        if enabled and device_type == "cuda":
            from .. import device as _device  # (reading availability never starts CUDA)

            if not _device.cuda_available():
                warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                enabled = False
        elif enabled and self.fast_dtype not in _LOWER:
            name = device_type.upper()
            warnings.warn(
                f"In {name} autocast, but the target dtype is not supported. Disabling "
                f"autocast.\n{name} Autocast only supports dtypes of torch.bfloat16, "
                "torch.float16 currently.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _st.is_autocast_cache_enabled()
        self.prev = _st.is_autocast_enabled(self.device)
        self.prev_fastdtype = _st.get_autocast_dtype(self.device)
        _st.set_autocast_enabled(self.device, self._enabled)
        _st.set_autocast_dtype(self.device, self.fast_dtype)
        _st.autocast_increment_nesting()
        _st.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _st.autocast_decrement_nesting() == 0:
            _st.clear_autocast_cache()
        _st.set_autocast_enabled(self.device, self.prev)
        _st.set_autocast_dtype(self.device, self.prev_fastdtype)
        _st.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)"
            )
        args = self._args

        @functools.wraps(func)
        def decorate_autocast(*a, **kw):
            # a fresh region per call, so a recursive call cannot overwrite the saved state
            with autocast(*args):
                return func(*a, **kw)

        return decorate_autocast


def _cast(value, device_type: str, dtype):
    """Floating tensors on `device_type` (not float64) as `dtype`, through containers;
    strings and numpy arrays pass as they are."""
    if isinstance(value, Tensor):
        ok = (
            value.is_floating_point()
            and value.device.type == device_type
            and value.dtype is not _dt.float64
        )
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {
            _cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()
        }
    if isinstance(value, collections.abc.Iterable):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate the `forward` of a custom `autograd.Function`. Inside an autocast region,
    `cast_inputs=dtype` casts its floating inputs to `dtype` and runs it with autocast off;
    `cast_inputs=None` runs it under the ambient state. Outside autocast: a no-op. The
    state is saved on ctx for `custom_bwd`."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _st.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _st.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not _st.is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(
                *_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs)
            )

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate the `backward` of a custom `autograd.Function`: it runs under the autocast
    state (enabled, dtype) that its forward saw."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
