"""torch.finfo and torch.iinfo: the numeric limits of a floating point or integer dtype
(bits, eps, max, min, tiny, smallest_normal, resolution; bits, max, min), named and printed
as torch's. numpy's finfo/iinfo give the numbers (ml_dtypes' for bfloat16)."""

from __future__ import annotations

import builtins

import numpy as np

from . import dtype as _dt

__all__ = ["finfo", "iinfo"]


def _dtype_arg(fn: str, value) -> _dt.DType:
    if isinstance(value, _dt.DType):
        return value
    raise TypeError(
        f"{fn}(): argument 'type' (position 1) must be torch.dtype, not "
        f"{builtins.type(value).__name__}"
    )


class finfo:  # noqa: N801  (torch's name)
    """`finfo(type=None)`: the limits of a floating point dtype (a complex one gives its
    real part's; None: the default dtype)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):  # noqa: A002 (torch's argument name)
        dt = _dt.get_default_dtype() if type is None else _dtype_arg("finfo", type)
        if dt.category == _dt.COMPLEX:
            dt = dt._real
        if dt.category != _dt.FLOAT:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to "
                "handle 'torch.finfo'"
            )
        if dt.name == "bfloat16":
            import ml_dtypes  # a declared dependency; numpy's finfo has no bfloat16

            info = ml_dtypes.finfo(dt.np)
        else:
            info = np.finfo(dt.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # torch: exact, not rounded to dt
        self.dtype = dt.name

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
            f"tiny={self.tiny:g}, dtype={self.dtype})"
        )

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    __hash__ = None  # torch's finfo is unhashable too


class iinfo:  # noqa: N801  (torch's name)
    """`iinfo(type)`: the limits of an integer dtype."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type):  # noqa: A002 (torch's argument name)
        dt = _dtype_arg("iinfo", type)
        if dt is _dt.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.category != _dt.INT:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        info = np.iinfo(dt.np)
        self.bits, self.max, self.min, self.dtype = (
            int(info.bits),
            int(info.max),
            int(info.min),
            dt.name,
        )

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    __hash__ = None
