"""torch CPU's affine quantization arithmetic, one formula on every device.

torch 2.13 CPU (fbgemm) quantizes as

    q = clamp(nearbyint(float32(x * inv) + zero_point), qmin, qmax),  inv = 1.0f / float32(scale)

(the product rounded to float32 before the zero point is added, the zero point added before
rounding, ties to even), and dequantizes per tensor as float32(int32(q - zp)) * scale32, per
channel as float32(double(q - zp) * double(scale)). Checked element for element against
torch 2.13 CPU (tests/test_quantized_parity.py). torch's CUDA kernels use another formula
(x / double scale, zp added after rounding); here the CPU one runs on cuda too, so torch
CPU is the oracle for every device.

Each formula is a `gt.fuse` function: one generated kernel on cuda, compiled with
--fmad=false (NVRTC would otherwise contract x * inv + zp into one FMA, a single rounding,
which differs from torch on ~2% of near-tie values), and numpy on cpu.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from ..fusion.fuse import fuse
from .quantizer import QRANGE

__all__ = ["quantize", "dequantize_per_tensor", "dequantize_per_channel", "NAN_VALUE",
           "reciprocal"]

_EXACT = ("--fmad=false",)  # separate roundings for the product and the sum, as on the CPU

# What torch CPU stores for NaN (its float->int conversion's "indefinite" value, clamped);
# recorded from torch 2.13 (quantize_per_tensor(nan) -> 127 / 255 / -2**31).
NAN_VALUE = {_dt.qint8: 127, _dt.quint8: 255, _dt.qint32: -(2 ** 31), _dt.quint4x2: 15}


def reciprocal(scale) -> float:
    """float32(1 / float32(scale)) as a Python float (exact: a float32 value)."""
    return float(np.float32(1.0) / np.float32(scale))


def _quantizer_for(storage):
    def quantize_affine(x, inv, zp, lo, hi, nan):
        # double before the clamp: qint32's bounds are not float32 values
        y = (x * inv + zp).round().double().clamp(lo, hi)
        return y.where(y == y, nan).to(storage)

    return fuse(quantize_affine, kernel_name=f"gt_quantize_{storage.name}",
                compile_options=_EXACT)


_QUANTIZE = {storage: _quantizer_for(storage) for storage in (_dt.int8, _dt.uint8, _dt.int32)}


def quantize(x, dtype, inv, zp):
    """The storage integers of `x` (a float32 tensor) quantized to `dtype` with reciprocal
    scale `inv` and zero point `zp` (floats/ints, or float32/int64 tensors broadcasting
    against x for per-channel parameters)."""
    lo, hi = QRANGE[dtype]
    return _QUANTIZE[_dt.QUANTIZED[dtype]](x, inv, zp, lo, hi, NAN_VALUE[dtype])


@fuse(kernel_name="gt_dequantize_per_tensor", compile_options=_EXACT)
def dequantize_per_tensor(q, zp, scale):
    """float32(q - zp) * float32(scale): `scale` a Python float, converted where used.
    q - zp is int32 arithmetic, wrapping as torch's does (qint32 -2**31 - 3 -> 2**31 - 3)."""
    return (q.int() - zp).float() * scale


@fuse(kernel_name="gt_dequantize_per_channel", compile_options=_EXACT)
def dequantize_per_channel(q, zp, scale):
    """float32(double(q - zp) * scale): `scale` a float64 tensor along the axis."""
    return ((q.long() - zp).double() * scale).float()
