"""The padding modules: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and CircularPad
in 1, 2 and 3 dims, all over F.pad, with torch's reprs. An int pads every side by it."""

from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = [
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
]


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = (padding,) * (2 * self._n) if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 2 * self._n:
            raise ValueError(
                f"{type(self).__name__}: padding must be an int or a "
                f"{2 * self._n}-tuple, got {padding!r}"
            )

    def forward(self, input):
        if input.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(
                f"{type(self).__name__}: expected {self._n + 1}D or "
                f"{self._n + 2}D input, got {input.ndim}D input"
            )
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _make(kind, base, mode, n):
    return type(f"{kind}Pad{n}d", (base,), {"_n": n, "_mode": mode, "__module__": __name__})


ZeroPad1d = _make("Zero", _ZeroPadNd, "constant", 1)
ZeroPad2d = _make("Zero", _ZeroPadNd, "constant", 2)
ZeroPad3d = _make("Zero", _ZeroPadNd, "constant", 3)
ConstantPad1d = _make("Constant", _ConstantPadNd, "constant", 1)
ConstantPad2d = _make("Constant", _ConstantPadNd, "constant", 2)
ConstantPad3d = _make("Constant", _ConstantPadNd, "constant", 3)
ReflectionPad1d = _make("Reflection", _PadNd, "reflect", 1)
ReflectionPad2d = _make("Reflection", _PadNd, "reflect", 2)
ReflectionPad3d = _make("Reflection", _PadNd, "reflect", 3)
ReplicationPad1d = _make("Replication", _PadNd, "replicate", 1)
ReplicationPad2d = _make("Replication", _PadNd, "replicate", 2)
ReplicationPad3d = _make("Replication", _PadNd, "replicate", 3)
CircularPad1d = _make("Circular", _PadNd, "circular", 1)
CircularPad2d = _make("Circular", _PadNd, "circular", 2)
CircularPad3d = _make("Circular", _PadNd, "circular", 3)
