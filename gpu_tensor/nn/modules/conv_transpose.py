"""Conv1d, ConvTranspose1d and ConvTranspose2d, with torch's weight layouts, default init
(kaiming_uniform_(a=sqrt(5)) and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) biases, fan_in taken
from the weight's dim 1 as torch does, which for a transposed conv is out_channels/groups)
and reprs."""

from __future__ import annotations

import math

import gpu_tensor as gt

from .. import functional as F
from ..functional.conv_transpose import conv1d, conv_transpose2d
from ..module import Module
from ..parameter import Parameter
from .linear import _uniform_fan_in

__all__ = ["Conv1d", "ConvTranspose1d", "ConvTranspose2d"]

_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        groups,
        bias,
        padding_mode,
        output_padding=0,
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
        self.dilation, self.output_padding = _tuple(dilation, n), _tuple(output_padding, n)
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
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device=device,
            dtype=dtype,
        )

    def forward(self, input):
        if self.padding_mode != "zeros":
            if isinstance(self.padding, str):
                total = self.dilation[0] * (self.kernel_size[0] - 1)
                lo = total // 2 if self.padding == "same" else 0
                hi = total - lo if self.padding == "same" else 0
            else:
                lo = hi = self.padding[0]
            input = F.pad(input, (lo, hi), mode=self.padding_mode)
            return conv1d(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return conv1d(
            input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            output_padding,
            device=device,
            dtype=dtype,
        )

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._n
        size = list(output_size)[-n:]
        if len(size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                f"have {n} or {n + 2} elements (got {len(output_size)})"
            )
        pads = []
        for k in range(n):
            i = input.shape[input.ndim - n + k]
            lo = (
                (i - 1) * self.stride[k]
                - 2 * self.padding[k]
                + self.dilation[k] * (self.kernel_size[k] - 1)
                + 1
            )
            hi = lo + self.stride[k] - 1
            if not lo <= size[k] <= hi:
                raise ValueError(
                    f"requested an output size of {size}, but valid sizes range "
                    f"from {lo} to {hi} (for an input of "
                    f"{list(input.shape[-n:])})"
                )
            pads.append(size[k] - lo)
        return tuple(pads)


class ConvTranspose2d(_ConvTransposeNd):
    def forward(self, input, output_size=None):
        return conv_transpose2d(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )
