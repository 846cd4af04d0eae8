"""torch CPU's affine quantization arithmetic, one formula on every device.

torch 2.13 CPU (fbgemm, x86) quantizes with inv = 1.0f / float32(scale) as

    per tensor, qint8/quint8:  q = clamp(nearbyint(fma(x, inv, zero_point)), qmin, qmax)
    per tensor qint32, and every per-channel quantization:
                               q = clamp(nearbyint(float32(x * inv) + zero_point), qmin, qmax)

(fbgemm's AVX2 kernel fuses the multiply-add for 8-bit outputs, one rounding; the other
paths round the product to float32 first; the zero point is added before rounding, ties to
even), and dequantizes per tensor as float32(int32(q - zp)) * scale32, per channel as
float32(double(q - zp) * double(scale)). Checked element for element against torch 2.13
CPU on random and near-tie inputs (tests/test_quantized_parity.py). torch's CUDA kernels
use another formula (x / double scale, zp added after rounding); here the CPU one runs on
cuda too, so torch CPU is the oracle for every device.

The FMA is computed in double: the float32 x float32 product is exact there, so adding the
zero point and rounding once to float32 gives the fused result (bar a double-rounding tie
no test input has hit). Each formula is a `gt.fuse` function: one generated kernel on cuda,
compiled with --fmad=false (NVRTC would otherwise contract the float32 x * inv + zp into an
FMA where torch does not), and numpy on cpu.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from ..fusion.fuse import fuse
from .quantizer import QRANGE

__all__ = [
    "quantize",
    "quantize_activation",
    "dequantize_per_tensor",
    "dequantize_per_channel",
    "NAN_VALUE",
    "reciprocal",
]

_EXACT = ("--fmad=false",)  # separate roundings for the product and the sum, as on the CPU

# What torch CPU stores for NaN (its float->int conversion's "indefinite" value, clamped);
# recorded from torch 2.13 (quantize_per_tensor(nan) -> 127 / 255 / -2**31).
NAN_VALUE = {_dt.qint8: 127, _dt.quint8: 255, _dt.qint32: -(2**31), _dt.quint4x2: 15}


def reciprocal(scale) -> float:
    """float32(1 / float32(scale)) as a Python float (exact: a float32 value)."""
    return float(np.float32(1.0) / np.float32(scale))


def _quantizer_for(storage, fused: bool):
    if fused:

        def quantize_affine(x, inv, zp, lo, hi, nan):
            # one rounding of x * inv + zp (exact product in double); the clamp in double
            # since qint32's bounds are not float32 values
            y = (x.double() * inv + zp).float().round().double().clamp(lo, hi)
            return y.where(y == y, nan).to(storage)
    else:

        def quantize_affine(x, inv, zp, lo, hi, nan):
            y = (x * inv + zp).round().double().clamp(lo, hi)
            return y.where(y == y, nan).to(storage)

    kind = "fma" if fused else "mul_add"
    return fuse(
        quantize_affine, kernel_name=f"gt_quantize_{kind}_{storage.name}", compile_options=_EXACT
    )


_QUANTIZE = {
    (storage, fused): _quantizer_for(storage, fused)
    for storage in (_dt.int8, _dt.uint8, _dt.int32)
    for fused in (False, True)
}


def quantize(x, dtype, inv, zp, per_channel: bool = False):
    """The storage integers of `x` (a float32 tensor) quantized to `dtype` with reciprocal
    scale `inv` and zero point `zp` (floats/ints, or float32/int64 tensors broadcasting
    against x for per-channel parameters)."""
    lo, hi = QRANGE[dtype]
    fused = not per_channel and dtype is not _dt.qint32
    return _QUANTIZE[(_dt.QUANTIZED[dtype], fused)](x, inv, zp, lo, hi, NAN_VALUE[dtype])


@fuse(kernel_name="gt_quantize_activation", compile_options=_EXACT)
def _quantize_activation(x, inv, zp, nan):
    y = (x.double() * inv + zp).float().round().double().clamp(0, 255)
    return (y.where(y == y, nan) - 128).to(_dt.int8)


def quantize_activation(x, inv, zp):
    """quint8 quantization of `x` (the per-tensor formula, bit for bit) minus 128, as int8:
    every quint8 value 0..255 fits, so the result is a valid int8 GEMM operand (the dynamic
    Linear adds 128 * rowsum(w) back, exactly)."""
    return _quantize_activation(x, inv, zp, NAN_VALUE[_dt.quint8])


@fuse(kernel_name="gt_dequantize_per_tensor", compile_options=_EXACT)
def dequantize_per_tensor(q, zp, scale):
    """float32(q - zp) * float32(scale): `scale` a Python float, converted where used.
    q - zp is int32 arithmetic, wrapping as torch's does (qint32 -2**31 - 3 -> 2**31 - 3)."""
    return (q.int() - zp).float() * scale


@fuse(kernel_name="gt_dequantize_per_channel", compile_options=_EXACT)
def dequantize_per_channel(q, zp, scale):
    """float32(double(q - zp) * scale): `scale` a float64 tensor along the axis."""
    return ((q.long() - zp).double() * scale).float()
