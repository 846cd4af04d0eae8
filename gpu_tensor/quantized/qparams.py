"""Choosing quantization parameters from a range: torch's ChooseQuantizationParams
(aten/native/quantized/cpu/QuantUtils.h, the same as fbgemm's), which the dynamic Linear
and `quantize_per_tensor_dynamic` use. float32 inputs, double arithmetic where torch's is.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["choose_qparams", "SMALL_SCALE_THRESHOLD"]

SMALL_SCALE_THRESHOLD = float(np.float32(6.1e-5))  # torch's constexpr float
_f32 = np.float32


def choose_qparams(
    lo: float, hi: float, qmin: int, qmax: int, reduce_range: bool = False
) -> tuple[float, int]:
    """(scale, zero_point) mapping [lo, hi] (widened to hold 0) onto [qmin, qmax]; with
    `reduce_range` the integer range is halved (quint8: 0..127), as for fbgemm's
    activations. `lo`, `hi` are float32 values (the tensor's min and max)."""
    if not lo <= hi:
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal to max")
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)  # C++ integer division truncates
    lo = _f32(min(_f32(lo), _f32(0.0)))
    hi = _f32(max(_f32(hi), _f32(0.0)))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    if _f32(scale) == 0.0 or math.isinf(_f32(1.0) / _f32(scale) if _f32(scale) else math.inf):
        scale = 0.1
    if scale < SMALL_SCALE_THRESHOLD:
        org = _f32(scale)
        scale = SMALL_SCALE_THRESHOLD
        if lo == 0.0:
            hi = _f32(_f32(SMALL_SCALE_THRESHOLD) * _f32(qmax - qmin))
        elif hi == 0.0:
            lo = _f32(-_f32(SMALL_SCALE_THRESHOLD) * _f32(qmax - qmin))
        else:
            amplifier = _f32(_f32(SMALL_SCALE_THRESHOLD) / org)
            lo, hi = _f32(lo * amplifier), _f32(hi * amplifier)
    from_min = qmin - float(lo) / scale
    from_max = qmax - float(hi) / scale
    err_min = abs(qmin) - abs(float(lo) / scale)
    err_max = abs(qmax) - abs(float(hi) / scale)
    initial = from_min if err_min < err_max else from_max
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))  # nearbyint: ties to even
    return float(scale), zp
