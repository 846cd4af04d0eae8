"""MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool1d and AdaptiveMaxPool2d."""

from __future__ import annotations

from ..functional import pool1d as P
from ..module import Module
from .conv import _AvgPoolNd, _MaxPoolNd

__all__ = ["MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(P.max_pool1d)


def _single(v):
    return (v,) if isinstance(v, int) else tuple(v)


class AvgPool1d(_AvgPoolNd):
    _fn = staticmethod(P.avg_pool1d)
    _options = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad


class _Adaptive(Module):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return P.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveMaxPool1d(_Adaptive):
    def forward(self, input):
        return P.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_Adaptive):
    def forward(self, input):
        return P.adaptive_max_pool2d(input, self.output_size, self.return_indices)
