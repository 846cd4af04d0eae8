"""ConvTranspose1d and ConvTranspose2d: `_ConvNd` (conv.py) with torch's transposed weight
layout (in_channels, out_channels/groups, *kernel), so fan_in, taken from the weight's dim 1
as torch does, is out_channels/groups."""

from __future__ import annotations

from .. import functional as F
from .conv import _ConvNd, _tuple

__all__ = ["ConvTranspose1d", "ConvTranspose2d"]


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
            device=device,
            dtype=dtype,
        )
        self.output_padding = _tuple(output_padding, self._n)

    def forward(self, input, output_size=None):
        return self._conv_transpose(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
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
    _conv_transpose = staticmethod(F.conv_transpose2d)


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1
    _conv_transpose = staticmethod(F.conv_transpose1d)
