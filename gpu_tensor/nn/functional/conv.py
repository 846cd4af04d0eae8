"""conv2d and 2-d pooling through im2col: the kernel taps of the (padded) input are gathered
into one columns array (the one copy) and a matmul does the rest.

On host-memory devices (cpu, emulated cuda) the columns are filled by one strided numpy
copy per tap, and their gradient is scattered back by one strided add per tap into one
buffer (`_Im2col`): one autograd node instead of two slices per tap, a stack, and a
full-size zero tensor, a copy and an add per tap. The adds run in the order the engine summed the per-tap gradients (the last
tap first), so the values are those of the composite it replaces. On real cuda the taps
are strided slice views, stacked: slices, stack and matmul are differentiable there.
conv2d itself (groups 1, float32/float64) on a host-memory device is one node that does
all of this, padding and bias included (conv_host.py).

The work is laid out channels-last (N, H, W, C): a `channels_last` input is already that
layout in memory (permute is a view), and its output stays channels_last as torch's does;
a contiguous input gets a contiguous output.
"""

from __future__ import annotations

import math

import numpy as np

import gpu_tensor as gt
from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd import Function
from gpu_tensor.autograd.function import FunctionCtx
from gpu_tensor.backends import get_backend
from gpu_tensor.backends.base import PIECE

from .basic import pad as _pad
from .conv_host import (
    _Conv2d,
    add_columns,
    fill_columns,
    gather_source,
    one_node,
    tap_slices,
)

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


def _ntuple(v, name, n):
    """An int or a 1- or n-long sequence, as n values (torch's conv argument rule)."""
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} "
            f"values to match the convolution dimensions, but got {name}={list(v)}"
        )
    return v


def _pair(v, name):
    return _ntuple(v, name, 2)


def _batched(input, name):
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"{name}: Expected 3D (unbatched) or 4D (batched) input, but got "
            f"input of size: {list(input.shape)}"
        )
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


def _is_channels_last(x) -> bool:
    return x.is_contiguous(memory_format=gt.channels_last) and not x.is_contiguous()


def _taps(xh, k, stride, dilation, out_hw):
    """The kernel taps of NHWC `xh`: a list of (N, oH, oW, C) strided views, row-major
    over the kernel window."""
    return [xh[:, rows, cols, :] for rows, cols in tap_slices(k, stride, dilation, out_hw)]


class _Im2col(Function):
    """(N, H, W, C) -> (N, oH, oW, C, kh*kw) columns, on a host-memory device."""

    @staticmethod
    def forward(ctx, xh, k, stride, dilation, out_hw):
        ctx.geometry = (tuple(xh.shape), k, stride, dilation, out_hw)
        x = xh._data
        taps = tap_slices(k, stride, dilation, out_hw)
        backend = get_backend(xh.device)
        x = gather_source(backend, x, taps, stride)
        cols, st = fill_columns(backend, x, taps, out_hw)
        return Tensor._make(cols, xh.device, xh.dtype, st)

    @staticmethod
    def backward(ctx, g):
        shape, k, stride, dilation, out_hw = ctx.geometry
        if gt.is_grad_enabled():  # create_graph: the composite's own differentiable backward
            x = gt.zeros(shape, dtype=g.dtype, device=g.device, requires_grad=True)
            cols = gt.stack(_taps(x, k, stride, dilation, out_hw), -1)
            return gt.autograd.grad(cols, x, g, create_graph=True)[0], None, None, None, None
        out = gt.zeros(shape, dtype=g.dtype, device=g.device)
        add_columns(out._data, g._data, tap_slices(k, stride, dilation, out_hw))
        return out, None, None, None, None


def _columns(xh, k, stride, dilation, out_hw):
    """The (N, oH, oW, C, kh*kw) columns of NHWC `xh` (see the module docstring)."""
    if get_backend(xh.device).host_arrays:
        return _Im2col.apply(xh, k, stride, dilation, out_hw)
    return gt.stack(_taps(xh, k, stride, dilation, out_hw), -1)


def _out_size(n, k, s, p_lo, p_hi, d, ceil_mode=False):
    span = n + p_lo + p_hi - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p_lo:  # torch: the last window starts inside
        out -= 1
    return out


def _to_layout(out_nhwc, channels_last):
    out = out_nhwc.permute(0, 3, 1, 2)
    return out if channels_last else out.contiguous()


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    x, unbatched = _batched(input, "conv2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    out_c, in_cg, kh, kw = weight.shape
    n, c, h, w = x.shape
    if c != in_cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {in_cg * groups} channels, but got {c} channels "
            "instead"
        )
    if out_c % groups:
        raise RuntimeError("Given groups, expected weight to be divisible by groups")
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0), (0, 0))
        elif padding == "same":
            if stride != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, (kh, kw), strict=True)]
            pads = tuple((t // 2, t - t // 2) for t in total)
        else:
            raise ValueError(
                f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}"
            )
    else:
        pads = tuple((p, p) for p in _pair(padding, "padding"))
    cl = _is_channels_last(x)
    oh = _out_size(h, kh, stride[0], *pads[0], dilation[0])
    ow = _out_size(w, kw, stride[1], *pads[1], dilation[1])
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Calculated output size: ({out_c}x{oh}x{ow}). Output size is too small")
    if groups == 1 and one_node(x, weight, bias):
        out = _Conv2d.apply(x, weight, bias, pads, stride, dilation, (oh, ow), cl)
    else:
        if any(p for pair in pads for p in pair):
            x = _pad(x, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
        out = _conv_composite(x, weight, bias, stride, dilation, groups, (oh, ow), cl)
    return out.squeeze(0) if unbatched else out


def _conv_composite(x, weight, bias, stride, dilation, groups, out_hw, cl):
    """conv2d of padded NCHW `x` as differentiable ops (columns, matmul, bias, layout)."""
    n, c = x.shape[:2]
    out_c, in_cg, kh, kw = weight.shape
    oh, ow = out_hw
    cols = _columns(x.permute(0, 2, 3, 1), (kh, kw), stride, dilation, out_hw)  # N,oH,oW,C,K
    k = kh * kw
    if groups == 1:
        out = cols.reshape(n, oh * ow, c * k).matmul(weight.reshape(out_c, c * k).t())
    else:
        cols = cols.reshape(n, oh * ow, groups, in_cg * k).permute(0, 2, 1, 3)
        wg = weight.reshape(groups, out_c // groups, in_cg * k).transpose(1, 2)
        out = cols.matmul(wg).permute(0, 2, 1, 3)  # N, L, G, O/G
    out = out.reshape(n, oh, ow, out_c)
    if bias is not None:
        out = out + bias
    return _to_layout(out, cl)


def _pool_setup(input, kernel_size, stride, padding, dilation, ceil_mode, name):
    x, unbatched = _batched(input, name)
    k = _pair(kernel_size, "kernel_size")
    s = (
        k
        if stride is None or (not isinstance(stride, int) and len(stride) == 0)
        else _pair(stride, "stride")
    )
    p, d = _pair(padding, "padding"), _pair(dilation, "dilation")
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise RuntimeError(
            f"{name}: pad should be at most half of effective kernel size, "
            f"but got pad={p[0]}, kernel_size={k[0]}"
        )
    _, _, h, w = x.shape
    oh = _out_size(h, k[0], s[0], p[0], p[0], d[0], ceil_mode)
    ow = _out_size(w, k[1], s[1], p[1], p[1], d[1], ceil_mode)
    # ceil_mode windows may run past the bottom/right pad: extend that side to cover them
    extra = (
        (oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (h + 2 * p[0]),
        (ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - (w + 2 * p[1]),
    )
    pads = (p[1], p[1] + max(extra[1], 0), p[0], p[0] + max(extra[0], 0))
    return x, unbatched, k, s, d, pads, (oh, ow)


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    x, unbatched, k, s, d, pads, out_hw = _pool_setup(
        input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d"
    )
    cl = _is_channels_last(x)
    xp = _pad(x, pads, value=-math.inf) if any(pads) else x
    if not return_indices and x.dtype.is_floating_point and get_backend(x.device).xp is np:
        out = _MaxPool.apply(xp, k, s, d, out_hw, cl)
        return out.squeeze(0) if unbatched else out
    taps = _columns(xp.permute(0, 2, 3, 1), k, s, d, out_hw)  # N,oH,oW,C,K
    out = _to_layout(taps.amax(-1), cl)
    if not return_indices:
        return out.squeeze(0) if unbatched else out
    w = x.shape[3]
    tap = taps.argmax(-1).permute(0, 3, 1, 2)  # N, C, oH, oW
    oh = gt.arange(out_hw[0], device=x.device).reshape(-1, 1) * s[0] - pads[2]
    ow = gt.arange(out_hw[1], device=x.device) * s[1] - pads[0]
    row = oh + tap.div(k[1], rounding_mode="floor") * d[0]
    col = ow + tap.remainder(k[1]) * d[1]
    idx = row * w + col
    return (out.squeeze(0), idx.squeeze(0)) if unbatched else (out, idx)


def _max_pool_composite(xp, k, s, d, out_hw, cl):
    """max_pool2d of padded NCHW `xp` as differentiable ops (columns, amax)."""
    return _to_layout(_columns(xp.permute(0, 2, 3, 1), k, s, d, out_hw).amax(-1), cl)


class _MaxPool(Function):
    """max_pool2d of padded NCHW `xp` on a host-memory device, as one autograd node.

    Forward: a running np.maximum over the kernel taps (strided views of the input) into
    the result, whose layout is the composite's (contiguous, or channels_last): the same
    values as the amax over the columns (a NaN's payload aside, so a result holding a
    NaN is recomputed that way). Backward, as torch's: each window's gradient goes whole
    to its first maximal element (first NaN) where the composite shared it among ties,
    added tap by tap (the last tap first, the order the columns' gradient was summed in)
    into a zero gradient laid out as torch lays it out, as the input (contiguous, or
    channels_last; the composite's was NHWC memory for both: same values, and a
    contiguous gradient reads 3x faster in the relu backward that usually follows);
    numpy's temporaries are a few images at a time (at most PIECE elements where an
    image fits)."""

    @staticmethod
    def forward(ctx, xp, k, stride, dilation, out_hw, cl):
        x = xp._data
        n, c = x.shape[:2]
        backend = get_backend(xp.device)
        taps = tap_slices(k, stride, dilation, out_hw)
        shape = (n, c, *out_hw)
        if cl:
            buf, st = backend.empty((n, *out_hw, c), x.dtype)
            out = buf.transpose(0, 3, 1, 2)
        else:
            out, st = backend.empty(shape, x.dtype)
        best, _ = backend.empty(shape, x.dtype)  # the backward's copy (out may change)
        rows, cols = taps[0]
        np.copyto(best, x[:, :, rows, cols])
        with np.errstate(all="ignore"):
            for rows, cols in taps[1:]:
                np.maximum(best, x[:, :, rows, cols], out=best)
            ctx.has_nan = bool(np.isnan(np.add.reduce(best, axis=None)))  # (or inf - inf)
        if ctx.has_nan:  # numpy's max over the columns keeps no payload: take its values
            with gt.no_grad():
                ref = _max_pool_composite(xp.detach(), k, stride, dilation, out_hw, False)
            np.copyto(best, ref._data)
        np.copyto(out, best)
        ctx.geometry = (k, stride, dilation, out_hw, cl)
        ctx.best = best
        ctx.save_for_backward(xp)
        return Tensor._make(out, xp.device, xp.dtype, st)

    @staticmethod
    def backward(ctx, g):
        (xp,) = ctx.saved_tensors
        k, stride, dilation, out_hw, cl = ctx.geometry
        if gt.is_grad_enabled():  # create_graph: the composite's differentiable backward
            x2 = xp.detach().requires_grad_(True)
            out = _max_pool_composite(x2, k, stride, dilation, out_hw, cl)
            return (
                gt.autograd.grad(out, x2, g, create_graph=True)[0],
                None,
                None,
                None,
                None,
                None,
            )
        x, best, gd = xp._data, ctx.best, g._data
        n, c, h, w = x.shape
        if cl:  # the gradient in the input's layout, as torch's
            grad = gt.zeros((n, h, w, c), dtype=g.dtype, device=g.device).permute(0, 3, 1, 2)
        else:
            grad = gt.zeros((n, c, h, w), dtype=g.dtype, device=g.device)
        buf = grad._data
        taps = tap_slices(k, stride, dilation, out_hw)
        # windows that do not overlap (MaxPool2d(2)): each input element is one tap of at
        # most one window, so its gradient is the one product plus the zero it starts
        # from. The product goes straight into place, and one pass adds the +0 (which
        # turns -0 into +0, as the sum from +0 did): 25% less than the add per tap.
        apart = all((kk - 1) * dd + 1 <= ss for kk, dd, ss in zip(k, dilation, stride, strict=True))
        step = max(1, PIECE // max(1, c * out_hw[0] * out_hw[1]))
        for lo in range(0, n, step):
            part = slice(lo, lo + step)
            top, gp = best[part], gd[part]
            taken, masks = None, []
            for rows, cols in taps:  # the first maximal tap of each window
                xt = x[part, :, rows, cols]
                hit = xt == top
                if ctx.has_nan:
                    hit |= xt != xt
                if taken is None:
                    taken = hit.copy()
                else:
                    np.greater(hit, taken, out=hit)  # hit and not taken
                    taken |= hit
                masks.append(hit)
            if apart:
                with np.errstate(all="ignore"):  # (inf * 0: gt ops are quiet)
                    for t, (rows, cols) in enumerate(taps):
                        np.multiply(gp, masks[t], out=buf[part, :, rows, cols])
                    np.add(buf[part], 0.0, out=buf[part])
                continue
            tmp = np.empty(gp.shape, gp.dtype)
            for t in range(len(taps) - 1, -1, -1):
                rows, cols = taps[t]
                region = buf[part, :, rows, cols]
                # g * mask, as the composite's g * mask / count with count 1 (a non-finite
                # g gives the others NaN there too), added whole: region + (+-0) is region
                # (a sum from +0 is never -0). (10x cheaper than np.where; an add with
                # where= over these mixed layouts, 8x dearer than both)
                with np.errstate(all="ignore"):  # (inf * 0: gt ops are quiet)
                    np.multiply(gp, masks[t], out=tmp)
                    np.add(region, tmp, out=region)
        return grad, None, None, None, None, None


# torch's name for the node (max_pool2d without indices records the with-indices kernel's
# backward); Function names its context class after the Function otherwise.
_MaxPool._ctx_cls = type("MaxPool2DWithIndicesBackward0", (FunctionCtx,), {"_fn_cls": _MaxPool})


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    x, unbatched, k, s, _, pads, out_hw = _pool_setup(
        input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d"
    )
    cl = _is_channels_last(x)
    one = (1, 1)
    xp = _pad(x, pads) if any(pads) else x
    total = _columns(xp.permute(0, 2, 3, 1), k, s, one, out_hw).sum(-1)
    if divisor_override is not None:
        out = total / divisor_override
    else:
        # torch divides by the window's size clipped to the padded input (count_include_pad)
        # or to the real input; both are counted by pooling a mask of ones.
        h, w = x.shape[2], x.shape[3]
        left, right, top, bottom = pads
        if count_include_pad:  # ones over the padded input, zeros past it (ceil_mode)
            mask = gt.ones((1, 1, h + 2 * top, w + 2 * left), dtype=x.dtype, device=x.device)
            mask = _pad(mask, (0, right - left, 0, bottom - top))
        else:
            mask = _pad(gt.ones((1, 1, h, w), dtype=x.dtype, device=x.device), pads)
        mask = mask.permute(0, 2, 3, 1)
        count = _columns(mask, k, s, one, out_hw).sum(-1)
        out = total / count
    out = _to_layout(out, cl)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool2d(input, output_size):
    """Output cell i averages rows floor(i*H/oH) .. ceil((i+1)*H/oH) (torch's bins)."""
    x, unbatched = _batched(input, "adaptive_avg_pool2d")
    size = _pair(output_size, "output_size")
    h, w = x.shape[2], x.shape[3]
    oh, ow = (h if size[0] is None else size[0]), (w if size[1] is None else size[1])
    if h % oh == 0 and w % ow == 0:
        out = avg_pool2d(x, (h // oh, w // ow))
    else:
        rows = []
        for i in range(oh):
            r0, r1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            cells = [
                x[:, :, r0:r1, (j * w) // ow : -(-((j + 1) * w) // ow)].mean((2, 3))
                for j in range(ow)
            ]
            rows.append(gt.stack(cells, -1))
        out = gt.stack(rows, -2)
    return out.squeeze(0) if unbatched else out
