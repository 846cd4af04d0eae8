"""What a quantized tensor's integers mean: its scheme (torch.qscheme) and parameters.

A `Quantizer` is immutable and shared by every view of a quantized tensor. Per-tensor: one
scale (a Python float, torch keeps a double) and one zero point. Per-channel: a scale and a
zero point for each index along `axis`, kept twice: as host numpy arrays (the values every
formula and getter reads) and lazily as device tensors (what `q_per_channel_scales()`
returns, float64 / int64 as in torch; float zero points stay float32).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._constant import Constant

__all__ = [
    "QScheme",
    "Quantizer",
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
    "QRANGE",
]


class QScheme(Constant):
    """torch.qscheme: how a quantized tensor maps its integers to real values."""

    __slots__ = ()


per_tensor_affine = QScheme("per_tensor_affine")
per_channel_affine = QScheme("per_channel_affine")
per_tensor_symmetric = QScheme("per_tensor_symmetric")
per_channel_symmetric = QScheme("per_channel_symmetric")
per_channel_affine_float_qparams = QScheme("per_channel_affine_float_qparams")


# The integer range of each quantized dtype (torch's quant_min/quant_max for its storage)
QRANGE = {
    _dt.qint8: (-128, 127),
    _dt.quint8: (0, 255),
    _dt.qint32: (-(2**31), 2**31 - 1),
    _dt.quint4x2: (0, 15),
}


class Quantizer:
    """Per-tensor (`scale`, `zero_point`) or per-channel (`scales`, `zero_points`, `axis`)
    affine parameters of a quantized tensor of dtype `dtype`."""

    __slots__ = (
        "dtype",
        "scheme",
        "scale",
        "zero_point",
        "scales",
        "zero_points",
        "axis",
        "_tensors",
    )

    def __init__(
        self, dtype, scheme, scale=None, zero_point=None, scales=None, zero_points=None, axis=None
    ):
        self.dtype = dtype
        self.scheme = scheme
        self.scale = scale
        self.zero_point = zero_point
        self.scales = scales  # numpy float64 (host values)
        self.zero_points = zero_points  # numpy int64, or float32 for float qparams
        self.axis = axis
        self._tensors = {}  # device -> (scales, zero_points) tensors, made on first ask

    @classmethod
    def per_tensor(cls, dtype, scale: float, zero_point: int) -> Quantizer:
        return cls(dtype, per_tensor_affine, scale=float(scale), zero_point=int(zero_point))

    @classmethod
    def per_channel(cls, dtype, scales, zero_points, axis: int) -> Quantizer:
        zps = np.asarray(zero_points)
        floating = zps.dtype.kind == "f"
        scheme = per_channel_affine_float_qparams if floating else per_channel_affine
        scales = np.asarray(scales, dtype=np.float32 if floating else np.float64)
        zps = zps.astype(np.float32 if floating else np.int64)
        return cls(dtype, scheme, scales=scales, zero_points=zps, axis=int(axis))

    @property
    def per_channel_scheme(self) -> bool:
        return self.axis is not None

    def channel(self, c: int) -> Quantizer:
        """The per-tensor quantizer of channel `c` (what torch gives a view that selects
        one channel: the scale rounded to float32, as torch stores it there)."""
        return Quantizer.per_tensor(
            self.dtype, float(np.float32(self.scales[c])), int(self.zero_points[c])
        )

    def with_axis(self, axis: int) -> Quantizer:
        q = Quantizer(
            self.dtype, self.scheme, scales=self.scales, zero_points=self.zero_points, axis=axis
        )
        q._tensors = self._tensors
        return q

    def params_on(self, device, creation):
        """(scales, zero_points) as tensors on `device` (cached: the per-channel getters
        and the device formulas read them)."""
        got = self._tensors.get(device)
        if got is None:
            got = (
                creation.tensor(self.scales, device=device),
                creation.tensor(self.zero_points, device=device),
            )
            self._tensors[device] = got
        return got

    def same_as(self, other: Quantizer) -> bool:
        if self.dtype is not other.dtype or self.scheme is not other.scheme:
            return False
        if self.axis is None:
            return self.scale == other.scale and self.zero_point == other.zero_point
        return (
            self.axis == other.axis
            and np.array_equal(self.scales, other.scales)
            and (np.array_equal(self.zero_points, other.zero_points))
        )
