"""conv1d, conv_transpose2d and conv_transpose1d, built on the public conv2d.

conv1d is conv2d over a unit height. A transposed convolution is the gradient of conv2d
with respect to its input, computed forward: spread the input out by the stride (zeros
between the rows and columns), pad it by dilation * (kernel - 1) - padding on each side
(plus output_padding at the end; a negative pad crops), and convolve with stride 1 by the
kernel flipped in both spatial dims, its in/out channel axes swapped per group. Every step
is a differentiable op, so autograd needs no formula here.
"""

from __future__ import annotations

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite

from .basic import pad as _pad
from .conv import _ntuple, _pair, conv2d

__all__ = ["conv1d", "conv_transpose1d", "conv_transpose2d"]


def _single(v, name):
    return _ntuple(v, name, 1)[0]


def _check_rank(input, spatial, name):
    """torch's check: an input of `spatial` + 1 (unbatched) or + 2 (batched) dims."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(
            f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
            f"{name}, but got input of size: {list(input.shape)}"
        )


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, L) or (C, L) input, (O, C/groups, K) weight."""
    _check_rank(input, 1, "conv1d")
    if weight.ndim != 3:
        raise RuntimeError(
            f"conv1d: expected a 3-D weight (out_channels, in_channels/groups, "
            f"kernel), got size {list(weight.shape)}"
        )
    pad = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input

    def run(inp, w, b):
        return conv2d(
            inp.unsqueeze(-2),
            w.unsqueeze(-2),
            b,
            (1, _single(stride, "stride")),
            pad,
            (1, _single(dilation, "dilation")),
            groups,
        ).squeeze(-2)

    out = composite("ConvolutionBackward0", run, x, weight, bias)
    return out.squeeze(0) if unbatched else out


def _spread(x, dim, s):
    """Insert s - 1 zeros between consecutive entries along `dim` (size n -> (n-1)*s + 1)."""
    if s == 1:
        return x
    n = x.shape[dim]
    shape = list(x.shape)
    shape.insert(dim + 1, s - 1)
    zeros = gt.zeros(shape, dtype=x.dtype, device=x.device)
    both = gt.cat([x.unsqueeze(dim + 1), zeros], dim + 1)  # ..., n, s, ...
    merged = both.reshape(*x.shape[:dim], n * s, *x.shape[dim + 1 :])
    return merged.narrow(dim, 0, (n - 1) * s + 1)


def _flipped_weight(weight, groups):
    """(C_in, C_out/g, kH, kW) transposed-conv weight -> (C_out, C_in/g, kH, kW) conv weight,
    flipped in space."""
    c_in, c_out_g, kh, kw = weight.shape
    w = weight.reshape(groups, c_in // groups, c_out_g, kh, kw).transpose(1, 2)
    return w.reshape(groups * c_out_g, c_in // groups, kh, kw).flip((-2, -1))


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """(N, C_in, H, W) or unbatched input, (C_in, C_out/groups, kH, kW) weight; output size
    (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1."""
    _check_rank(input, 2, "conv_transpose2d")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    s, p = _pair(stride, "stride"), _pair(padding, "padding")
    op, d = _pair(output_padding, "output_padding"), _pair(dilation, "dilation")
    if any(o >= max(a, b) for o, a, b in zip(op, s, d, strict=True)):
        raise RuntimeError(
            f"output padding must be smaller than either stride or dilation, but got "
            f"output_padding_height: {op[0]} output_padding_width: {op[1]} stride_height: "
            f"{s[0]} stride_width: {s[1]} dilation_height: {d[0]} dilation_width: {d[1]}"
        )
    if weight.ndim != 4 or x.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} "
            "channels instead"
        )
    if weight.shape[0] % groups:
        raise RuntimeError("Given groups, expected weight to be divisible by groups")
    kh, kw = weight.shape[2], weight.shape[3]
    lo = (d[0] * (kh - 1) - p[0], d[1] * (kw - 1) - p[1])

    def run(inp, w, b):
        spread = _pad(
            _spread(_spread(inp, 2, s[0]), 3, s[1]), (lo[1], lo[1] + op[1], lo[0], lo[0] + op[0])
        )
        return conv2d(spread, _flipped_weight(w, groups), b, 1, 0, d, groups)

    out = composite("ConvolutionBackward0", run, x, weight, bias)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """(N, C_in, L) or (C_in, L) input, (C_in, C_out/groups, K) weight."""
    _check_rank(input, 1, "conv_transpose1d")
    out = conv_transpose2d(
        input.unsqueeze(-2),
        weight.unsqueeze(-2),
        bias,
        (1, _single(stride, "stride")),
        (0, _single(padding, "padding")),
        (0, _single(output_padding, "output_padding")),
        groups,
        (1, _single(dilation, "dilation")),
    )
    return out.squeeze(-2)
