"""Observers (torch.ao.quantization.observer): modules that watch tensors go by and turn
their range into (scale, zero_point), with torch's float32 arithmetic."""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor.nn import Module
from gpu_tensor.quantized import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)

__all__ = [
    "ObserverBase",
    "MinMaxObserver",
    "PerChannelMinMaxObserver",
    "PlaceholderObserver",
    "default_observer",
    "default_weight_observer",
    "default_per_channel_weight_observer",
    "default_dynamic_quant_observer",
]

_EPS = float(np.finfo(np.float32).eps)  # torch.finfo(torch.float32).eps, the scale floor
_AFFINE = (per_tensor_affine, per_channel_affine)
_SYMMETRIC = (per_tensor_symmetric, per_channel_symmetric)


def _with_args(cls, **kwargs):
    """cls.with_args(...): a factory making observers with these arguments (torch's
    functools.partial, shown the same way in a QConfig's repr)."""
    from functools import partial

    return partial(cls, **kwargs)


class ObserverBase(Module):
    with_args = classmethod(_with_args)

    def __init__(self, dtype, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic


class PlaceholderObserver(ObserverBase):
    """Observes nothing; carries the dtype (the activation of a dynamic qconfig)."""

    def __init__(
        self,
        dtype=gt.float32,
        custom_op_name="",
        compute_dtype=None,
        quant_min=None,
        quant_max=None,
        qscheme=None,
        eps=None,
        is_dynamic=False,
    ):
        super().__init__(dtype, is_dynamic)
        self.quant_min, self.quant_max, self.qscheme = quant_min, quant_max, qscheme

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")

    def extra_repr(self) -> str:
        return f"dtype={self.dtype!r}, is_dynamic={self.is_dynamic}"


class _Uniform(ObserverBase):
    """torch's UniformQuantizationObserverBase: the quant range and the qparams formula."""

    def __init__(self, dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic):
        super().__init__(dtype, is_dynamic)
        if dtype not in (gt.qint8, gt.quint8, gt.qint32, gt.int8, gt.uint8, gt.int32):
            raise AssertionError(
                "Default Observer only works for qint8, quint8 and quint4x2 data type"
            )
        if qscheme not in _AFFINE + _SYMMETRIC + (per_channel_affine_float_qparams,):
            raise NotImplementedError(
                f"Default Observer only works for per_tensor_affine, "
                f"per_tensor_symmetric, per_channel_affine, "
                f"per_channel_symmetric and per_channel_float_qparams "
                f"quantization scheme, not {qscheme}"
            )
        self.qscheme = qscheme
        self.reduce_range = reduce_range
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if quant_min >= quant_max:
                raise AssertionError(
                    "qmin must be strictly less than qmax for user-specified quantization range."
                )
        else:
            quant_min, quant_max = self._default_range(dtype, reduce_range)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("eps", gt.tensor([eps], dtype=gt.float32))

    @staticmethod
    def _default_range(dtype, reduce_range):
        if dtype in (gt.qint8, gt.int8):
            return (-64, 63) if reduce_range else (-128, 127)
        if dtype in (gt.quint8, gt.uint8):
            return (0, 127) if reduce_range else (0, 255)
        return (-(2**31), 2**31 - 1)

    def _calculate_qparams(self, min_val, max_val):
        """(scale float32, zero_point int32 (int64 for symmetric)) tensors of shape
        (channels,), torch's formula in its float32 tensor arithmetic."""
        if min_val.numel() and bool((min_val == float("inf")).all()):
            return gt.tensor([1.0]), gt.tensor([0])
        qmin, qmax = self.quant_min, self.quant_max
        min_neg = gt.minimum(min_val, gt.zeros_like(min_val))
        max_pos = gt.maximum(max_val, gt.zeros_like(max_val))
        zero_point = gt.zeros(tuple(min_neg.shape), dtype=gt.int64)
        if self.qscheme in _SYMMETRIC:
            max_pos = gt.maximum(-min_neg, max_pos)
            scale = gt.maximum(max_pos / (float(qmax - qmin) / 2), self.eps)
            if self.dtype in (gt.quint8, gt.uint8):
                mid = (qmin + qmax) // 2 if self.has_customized_qrange else 128
                zero_point = gt.full(tuple(zero_point.shape), mid, dtype=gt.int64)
        elif self.qscheme is per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(qmax - qmin)
            scale = gt.where(scale > self.eps, scale, gt.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = gt.maximum((max_pos - min_neg) / float(qmax - qmin), self.eps)
            zero_point = qmin - gt.round(min_neg / scale).to(gt.int32)
            zero_point = gt.clamp(zero_point, qmin, qmax)
        if scale.ndim == 0:
            scale = scale.reshape(1)
        if zero_point.ndim == 0:
            zero_point = zero_point.reshape(1)
        return scale, zero_point


class MinMaxObserver(_Uniform):
    """Tracks the running min and max of what it sees."""

    def __init__(
        self,
        dtype=gt.quint8,
        qscheme=per_tensor_affine,
        reduce_range=False,
        quant_min=None,
        quant_max=None,
        factory_kwargs=None,
        eps=_EPS,
        is_dynamic=False,
        **kwargs,
    ):
        if (
            qscheme in (per_channel_affine, per_channel_symmetric, per_channel_affine_float_qparams)
            and type(self) is MinMaxObserver
        ):
            raise NotImplementedError(
                "MinMaxObserver's qscheme only support "
                "torch.per_tensor_symmetric and torch.per_tensor_affine."
            )
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.register_buffer("min_val", gt.tensor(float("inf")))
        self.register_buffer("max_val", gt.tensor(float("-inf")))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        lo, hi = gt.aminmax(x)
        self.min_val = gt.minimum(lo, self.min_val.to(x.device))
        self.max_val = gt.maximum(hi, self.max_val.to(x.device))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val.item()}, max_val={self.max_val.item()}"

    def reset_min_max_vals(self) -> None:
        self.min_val = gt.tensor(float("inf"))
        self.max_val = gt.tensor(float("-inf"))


class PerChannelMinMaxObserver(_Uniform):
    """Tracks the min and max of each slice along `ch_axis`."""

    def __init__(
        self,
        ch_axis=0,
        dtype=gt.quint8,
        qscheme=per_channel_affine,
        reduce_range=False,
        quant_min=None,
        quant_max=None,
        factory_kwargs=None,
        eps=_EPS,
        is_dynamic=False,
        **kwargs,
    ):
        if qscheme not in (
            per_channel_affine,
            per_channel_symmetric,
            per_channel_affine_float_qparams,
        ):
            raise NotImplementedError(
                "PerChannelMinMaxObserver's qscheme only support "
                "torch.per_channel_symmetric, torch.per_channel_affine "
                "and torch.per_channel_affine_float_qparams."
            )
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", gt.tensor([]))
        self.register_buffer("max_val", gt.tensor([]))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        y = x.movedim(self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        lo, hi = y.amin(1), y.amax(1)
        if self.min_val.numel() == 0:
            self.min_val, self.max_val = lo, hi
        else:
            self.min_val = gt.minimum(lo, self.min_val)
            self.max_val = gt.maximum(hi, self.max_val)
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=gt.qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=gt.qint8, qscheme=per_channel_symmetric
)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=gt.quint8, quant_min=0, quant_max=255, is_dynamic=True
)
