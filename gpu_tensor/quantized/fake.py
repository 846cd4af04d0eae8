"""Fake quantization for quantization-aware training: torch.fake_quantize_per_tensor_affine
and fake_quantize_per_channel_affine, float in and float out, with the straight-through
gradient (1 where the rounded value fell inside [quant_min, quant_max], 0 outside).

torch's fake-quantize kernels round before adding the zero point (unlike its quantize):
q = nearbyint(float32(x * inv)) + zp; out = float32(clamp(q) - zp) * scale. Recorded from
torch 2.13 CPU (tests/test_quantized_parity.py checks it element for element).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._tensor import Tensor
from ..autograd.function import Function
from .affine import reciprocal

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


def _check_range(zero_points, quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")
    for z in zero_points:
        if not quant_min <= z <= quant_max:
            raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _forward(x, inv, zp, scale, quant_min, quant_max):
    q = (x * inv).round() + zp
    mask = (q >= quant_min) & (q <= quant_max)
    return (q.clamp(quant_min, quant_max) - zp) * scale, mask


class FakeQuantizePerTensorAffineCachemask(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max):
        out, mask = _forward(
            x, reciprocal(scale), zero_point, float(np.float32(scale)), quant_min, quant_max
        )
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None, None, None


class FakeQuantizePerChannelAffineCachemask(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, axis, quant_min, quant_max):
        shape = [1] * x.ndim
        shape[axis] = -1
        s = scale.detach().to(_dt.float32).view(shape)
        out, mask = _forward(x, 1.0 / s, zero_point.detach().view(shape), s, quant_min, quant_max)
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None, None, None, None


def _number(v, kind):
    return kind(v.item()) if isinstance(v, Tensor) else kind(v)


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):  # noqa: A002
    """dequantize(quantize(input)) in input's dtype, with a straight-through gradient."""
    scale, zero_point = _number(scale, float), _number(zero_point, int)
    _check_range([zero_point], quant_min, quant_max)
    return FakeQuantizePerTensorAffineCachemask.apply(
        input, scale, zero_point, quant_min, quant_max
    )


def fake_quantize_per_channel_affine(
    input,
    scale,
    zero_point,
    axis,
    quant_min,  # noqa: A002
    quant_max,
):
    """Per-channel fake quantization along `axis`; `zero_point` int32, float or half (torch
    refuses int64)."""
    if zero_point.dtype not in (_dt.int32, _dt.float32, _dt.float16):
        raise RuntimeError(
            f"Zero-point must be Int32, Float or Half, found "
            f"{_dt.SCALAR_TYPE_NAMES[zero_point.dtype.name]}"
        )
    _check_range(
        zero_point.tolist() if not zero_point.is_floating_point() else [], quant_min, quant_max
    )
    return FakeQuantizePerChannelAffineCachemask.apply(
        input, scale, zero_point, axis, quant_min, quant_max
    )
