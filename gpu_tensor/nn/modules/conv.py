"""Conv1d, Conv2d and the 2-d pooling modules. `_ConvNd` is every conv's constructor, with
torch's weight layouts, default init (kaiming_uniform_(a=sqrt(5)) and U(-1/sqrt(fan_in),
1/sqrt(fan_in)) biases, fan_in taken from the weight's dim 1 as torch does) and reprs;
conv_transpose.py holds the transposed convs."""

from __future__ import annotations

import math

import gpu_tensor as gt

from .. import functional as F
from ..functional.conv_transpose import conv1d
from ..module import Module
from ..parameter import Parameter
from .functional_module import FunctionalModule
from .linear import _uniform_fan_in

__all__ = ["Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]

_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    """Every conv's constructor, with torch's Conv1d/Conv2d signature (the two differ only
    in `_n`); the transposed convs pass theirs on and set their output_padding after it."""

    _n = 2
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _MODES:
            raise ValueError(
                f"padding_mode must be one of {list(_MODES)}, but got padding_mode='{padding_mode}'"
            )
        n = self._n
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.output_padding = _tuple(dilation, n), (0,) * n
        self.transposed, self.padding_mode = self._transposed, padding_mode
        shape = (
            (in_channels, out_channels // groups)
            if self._transposed
            else (out_channels, in_channels // groups)
        ) + self.kernel_size
        kw = {"device": device, "dtype": dtype}
        self.weight = Parameter(gt.empty(shape, **kw))
        self.bias = Parameter(gt.empty(out_channels, **kw)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        _uniform_fan_in(self.weight, self.bias, fan_in)

    def _pad_by_mode(self, input):
        """Pad `input` by padding_mode (reflect, replicate, circular) before a convolution with
        no padding of its own: F.pad's order, last dim first; 'same' puts an odd pixel at the
        end and 'valid' pads nothing, as torch's _reversed_padding_repeated_twice does."""
        pads = []
        for d in reversed(range(self._n)):
            if self.padding == "same":
                total = self.dilation[d] * (self.kernel_size[d] - 1)
                pads += [total // 2, total - total // 2]
            else:
                pads += [0, 0] if self.padding == "valid" else [self.padding[d]] * 2
        return F.pad(input, tuple(pads), mode=self.padding_mode)

    def extra_repr(self) -> str:
        n = self._n
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    _n = 1

    def forward(self, input):
        if self.padding_mode != "zeros":
            input = self._pad_by_mode(input)
            return conv1d(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return conv1d(
            input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )


class Conv2d(_ConvNd):
    def forward(self, input):
        if self.padding_mode != "zeros":
            input = self._pad_by_mode(input)
            return F.conv2d(
                input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups
            )
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class _MaxPoolNd(FunctionalModule):
    """MaxPool1d/MaxPool2d: one constructor and repr; `_fn` is the functional."""

    _options = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)


class _AvgPoolNd(FunctionalModule):
    """AvgPool1d/AvgPool2d: the repr (torch's shows three of the options)."""

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool2d)
    _options = (
        "kernel_size",
        "stride",
        "padding",
        "ceil_mode",
        "count_include_pad",
        "divisor_override",
    )

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override


class AdaptiveAvgPool2d(FunctionalModule):
    _fn = staticmethod(F.adaptive_avg_pool2d)
    _options = ("output_size",)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size
