"""Making and reading quantized tensors: torch.quantize_per_tensor, quantize_per_channel,
quantize_per_tensor_dynamic, dequantize, _make_per_tensor_quantized_tensor; with torch
2.13's checks, messages and deprecation warning."""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtype as _dt
from .._tensor import Tensor
from . import affine
from .qparams import choose_qparams
from .qtensor import QTensor
from .quantizer import QRANGE, Quantizer

__all__ = [
    "quantize_per_tensor",
    "quantize_per_channel",
    "quantize_per_tensor_dynamic",
    "dequantize",
    "_make_per_tensor_quantized_tensor",
    "DEPRECATION",
]

# torch 2.13's text (pytorch/pytorch#184982), word for word so filters written for torch
# (by its prefix) catch ours too. torch warns once per process (TORCH_WARN_ONCE).
DEPRECATION = (
    "torch.quantize_per_tensor, torch.quantize_per_channel and other quantized tensor "
    "creation functions that produce tensors with dtype torch.quint8, torch.qint8, and "
    "torch.qint32 are deprecated and will be removed in a future PyTorch release. Please see "
    "https://github.com/pytorch/pytorch/issues/184982 for more information."
)
_warned = []


def _warn_once(stacklevel: int = 3) -> None:
    if not _warned:
        _warned.append(True)
        warnings.warn(DEPRECATION, UserWarning, stacklevel=stacklevel)


def _qdtype(dtype):
    d = _dt.to_dtype(dtype)
    if d not in QRANGE or d is _dt.quint4x2:
        name = _dt.SCALAR_TYPE_NAMES.get(d.name, d.name)
        hint = (
            ""
            if d is not _dt.quint4x2
            else (" (gpu_tensor does not pack 4-bit values; use quint8)")
        )
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.{hint}")
    return d


def _float_input(x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"quantize: expected a Tensor as input, got {type(x).__name__}")
    if x.dtype is not _dt.float32:
        raise RuntimeError(
            f"Quantize only works on Float Tensor, got {_dt.SCALAR_TYPE_NAMES[x.dtype.name]}"
        )
    return x.detach()


def _check_zero_point(zp: int, dtype, what: str) -> None:
    lo, hi = QRANGE[dtype]
    if zp > hi:
        raise RuntimeError(f"{what} zero_point {zp} is above upper bound.")
    if zp < lo:
        raise RuntimeError(f"{what} zero_point {zp} is below lower bound.")


def _scalar(v, kind, name):
    if isinstance(v, Tensor):
        return kind(v.item())
    if kind is int and not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(
            f"quantize_per_tensor(): argument '{name}' must be int or Tensor, not "
            f"{type(v).__name__}"
        )
    if kind is float and not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"quantize_per_tensor(): argument '{name}' must be float or Tensor, "
            f"not {type(v).__name__}"
        )
    return kind(v)


def quantize_per_tensor(input, scale, zero_point, dtype):  # noqa: A002  (torch's names)
    """A quantized tensor of `input` (float32): q = clamp(round(x / scale) + zero_point).
    `scale`, `zero_point`: numbers or one-element tensors. A list of tensors with tensors of
    scales and zero points gives a tuple of quantized tensors."""
    if isinstance(input, (list, tuple)):
        scales = scale.tolist() if isinstance(scale, Tensor) else list(scale)
        zps = zero_point.tolist() if isinstance(zero_point, Tensor) else list(zero_point)
        return tuple(
            quantize_per_tensor(
                t,
                float(np.float32(s))
                if isinstance(scale, Tensor) and scale.dtype is _dt.float32
                else s,
                int(z),
                dtype,
            )
            for t, s, z in zip(input, scales, zps, strict=True)
        )
    dtype = _qdtype(dtype)
    x = _float_input(input)
    scale = _scalar(scale, float, "scale")
    zero_point = _scalar(zero_point, int, "zero_point")
    _check_zero_point(zero_point, dtype, "quantize_tensor_per_tensor_affine")
    _warn_once()
    ints = affine.quantize(x, dtype, affine.reciprocal(scale), zero_point)
    return QTensor._from_ints(ints, Quantizer.per_tensor(dtype, scale, zero_point))


def quantize_per_channel(input, scales, zero_points, axis, dtype):  # noqa: A002
    """A quantized tensor with one scale and zero point per index along `axis`. Integer
    zero points give per_channel_affine; float zero points per_channel_affine_float_qparams."""
    dtype = _qdtype(dtype)
    x = _float_input(input)
    if not isinstance(scales, Tensor) or not isinstance(zero_points, Tensor):
        raise TypeError("quantize_per_channel(): 'scales' and 'zero_points' must be Tensors")
    if not 0 <= axis < x.ndim:
        raise RuntimeError(
            f"Channel axis out of range in per channel affine quantization. "
            f"Got: {axis}Expected: [0, {x.ndim})"
        )
    s, z = scales.detach().cpu().numpy(), zero_points.detach().cpu().numpy()
    if s.size != x.shape[axis]:
        raise RuntimeError(
            f"length of scales must equal to channel, expected {x.shape[axis]} got, {s.size}"
        )
    if z.size != x.shape[axis]:
        raise RuntimeError(
            f"length of zero_points must equal to channel expected {x.shape[axis]} got, {z.size}"
        )
    qz = Quantizer.per_channel(dtype, s.reshape(-1), z.reshape(-1), axis)
    if not zero_points.is_floating_point():
        for v in qz.zero_points.tolist():
            _check_zero_point(v, dtype, "quantize_tensor_per_channel_affine")
    _warn_once()
    shape = [1] * x.ndim
    shape[axis] = -1
    from .. import creation  # the class's parameters on x's device

    inv = creation.tensor(np.float32(1.0) / qz.scales.astype(np.float32), device=x.device)
    zps = creation.tensor(qz.zero_points, device=x.device)
    ints = affine.quantize(x, dtype, inv.view(shape), zps.view(shape), per_channel=True)
    return QTensor._from_ints(ints, qz)


def quantize_per_tensor_dynamic(input, dtype, reduce_range):  # noqa: A002
    """Quantize with parameters chosen from input's min and max (torch's
    ChooseQuantizationParams; `reduce_range` halves the integer range)."""
    dtype = _qdtype(dtype)
    if dtype not in (_dt.qint8, _dt.quint8):
        raise RuntimeError(
            "Expected dtype to be torch.quint8 or torch.qint8 in "
            "quantize_per_tensor_dynamic (got " + repr(dtype) + ")"
        )
    x = _float_input(input)
    _warn_once()  # here, so the warning names the caller's line
    lo, hi = (float(x.min()), float(x.max())) if x.numel() else (0.0, 0.0)
    qmin, qmax = QRANGE[dtype]
    scale, zp = choose_qparams(lo, hi, qmin, qmax, reduce_range)
    return quantize_per_tensor(x, scale, zp, dtype)


def dequantize(tensor):
    """`tensor.dequantize()`; a list or tuple of tensors gives a tuple."""
    if isinstance(tensor, (list, tuple)):
        return tuple(dequantize(t) for t in tensor)
    return tensor.dequantize()


def _make_per_tensor_quantized_tensor(input, scale, zero_point):  # noqa: A002
    """A quantized tensor over a copy of the integers of `input` (int8 -> qint8, uint8 ->
    quint8, int32 -> qint32)."""
    by_storage = {v: k for k, v in _dt.QUANTIZED.items() if k is not _dt.quint4x2}
    dtype = by_storage.get(input.dtype)
    if dtype is None:
        raise RuntimeError(
            f"Could not find the quantized dtype for {input.dtype}; "
            "_make_per_tensor_quantized_tensor takes int8, uint8 or int32"
        )
    _warn_once()
    return QTensor._from_ints(
        input.detach().contiguous().clone(),
        Quantizer.per_tensor(dtype, float(scale), int(zero_point)),
    )
