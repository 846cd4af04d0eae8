"""conv2d on a host-memory device (cpu, emulated cuda) as one autograd node, `_Conv2d`.

It computes what conv.py's composite computes (pad, columns, one batched matmul, bias,
layout), bit for bit, with fewer passes and no recorded graph:
- forward: the padded input is written once, NHWC, straight from the input (the
  composite padded NCHW, then copied NHWC for the columns); the bias is added by the
  same copy that lays the result out NCHW (the composite added, then copied);
- backward: the formulas the composite's graph ran, in the engine's order (the matmul's
  two products, the bias's sum), and the columns' gradient added tap by tap (the last tap
  first) straight into the input's gradient, padding dropped (the composite added into a
  padded buffer, then cut the padding off). The result has the layout the composite's had:
  C-contiguous when padded (the pad's backward copies), else the NHWC buffer's.
Under create_graph the backward differentiates the composite.
"""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd import Function
from gpu_tensor.autograd.engine import sum_to
from gpu_tensor.autograd.function import FunctionCtx
from gpu_tensor.backends import get_backend

__all__: list = []


def tap_slices(k, stride, dilation, out_hw):
    """Per tap (row-major over the kernel window), the (rows, cols) slices it reads."""
    return [
        (
            slice(i * dilation[0], i * dilation[0] + stride[0] * (out_hw[0] - 1) + 1, stride[0]),
            slice(j * dilation[1], j * dilation[1] + stride[1] * (out_hw[1] - 1) + 1, stride[1]),
        )
        for i in range(k[0])
        for j in range(k[1])
    ]


def fill_columns(backend, x, taps, out_hw):
    """The (N, oH, oW, C, taps) columns of NHWC array `x`, one strided copy per tap: 2-5x
    faster in numpy than one copy of the whole sliding_window_view, whose innermost loops
    run over the tiny kernel window (measured 0.5 vs 1.1-2.8 ms for the 3x3 layers of
    bench_train's CNN). Returns (array, storage)."""
    cols, st = backend.empty((x.shape[0], *out_hw, x.shape[3], len(taps)), x.dtype)
    for t, (rows, cs) in enumerate(taps):
        np.copyto(cols[..., t], x[:, rows, cs, :])
    return cols, st


def gather_source(backend, x, taps, stride):
    """NHWC `x` as the columns read it: overlapping windows read each element several
    times, so they gather from an NHWC copy (the permuted view of an NCHW tensor strides
    its channels far apart); measured 0.7 vs 2.0 ms for bench_train's first 3x3 layer."""
    if len(taps) > stride[0] * stride[1] and not x.flags.c_contiguous:
        return backend.contiguous(x)
    return x


def add_columns(buf, gd, taps):
    """Scatter-add the columns' gradient `gd` (N, oH, oW, C, taps) into NHWC `buf`, tap by
    tap, the last tap first: the order the engine summed the composite's per-tap
    gradients in, so a zero-filled buffer gets the same values (only a -0.0 sum could
    differ, which needs every term -0.0, and a BLAS product never gives one)."""
    for t in range(len(taps) - 1, -1, -1):
        rows, cols = taps[t]
        region = buf[:, rows, cols, :]
        np.add(region, gd[..., t], out=region)


def one_node(x, weight, bias) -> bool:
    """Whether conv2d (groups 1) takes the node: float32/float64 on a host-memory device,
    weight and bias of the input's dtype and device."""
    if x.dtype not in (gt.float32, gt.float64) or not get_backend(x.device).host_arrays:
        return False
    return all(t is None or (t.dtype is x.dtype and t.device == x.device) for t in (weight, bias))


def _inside(sl, lo, n, count):
    """The part of a tap's slice (over padded coordinates, `count` steps) that lands in
    [lo, lo + n): (steps taken, as a slice of the output; as a slice of the unpadded
    input)."""
    start, step = sl.start, sl.step
    first = max(0, -(-(lo - start) // step))
    last = min(count, -(-(lo + n - start) // step))  # exclusive
    if last <= first:
        return None
    a = start + first * step - lo
    return slice(first, last), slice(a, a + (last - first - 1) * step + 1, step)


class _Conv2d(Function):
    """conv2d of NCHW `x` (unpadded; `pads` ((top, bottom), (left, right))), groups 1."""

    @staticmethod
    def forward(ctx, x, weight, bias, pads, stride, dilation, out_hw, cl):
        n, c, h, w = x.shape
        out_c, _, kh, kw = weight.shape
        backend = get_backend(x.device)
        taps = tap_slices((kh, kw), stride, dilation, out_hw)
        xd = x._data.transpose(0, 2, 3, 1)
        (top, bottom), (left, right) = pads
        if top or bottom or left or right:
            xp, _ = backend.empty((n, h + top + bottom, w + left + right, c), xd.dtype)
            xp.fill(0)
            np.copyto(xp[:, top : top + h, left : left + w, :], xd)
            xd = xp
        else:
            xd = gather_source(backend, xd, taps, stride)
        cols, st = fill_columns(backend, xd, taps, out_hw)
        k = kh * kw
        a = Tensor._make(cols, x.device, x.dtype, st).reshape(n, out_hw[0] * out_hw[1], c * k)
        out = a.matmul(weight.reshape(out_c, c * k).t()).reshape(n, *out_hw, out_c)
        ctx.save_for_backward(x, weight)  # (x: for create_graph, as torch saves it)
        ctx.bias = bias
        ctx.inner = (a, (n, c, h, w), bias is not None, pads, taps, stride, dilation, out_hw, cl)
        od = out._data
        if cl:  # the result is the product's memory, permuted: add the bias there
            if bias is not None:
                np.add(od, bias._data, out=od)
            return out.permute(0, 3, 1, 2)
        res, rst = backend.empty((n, out_c, *out_hw), od.dtype)
        if bias is not None:  # the add and the NCHW copy in one pass
            np.add(od.transpose(0, 3, 1, 2), bias._data.reshape(out_c, 1, 1), out=res)
        else:
            np.copyto(res, od.transpose(0, 3, 1, 2))
        return Tensor._make(res, x.device, x.dtype, rst)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        a, shape, has_bias, pads, taps, stride, dilation, out_hw, cl = ctx.inner
        if gt.is_grad_enabled():  # create_graph: the composite's differentiable backward
            return _Conv2d._twice(ctx, g, x, weight)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        n, c, h, w = shape
        out_c = weight.shape[0]
        gp = g.permute(0, 2, 3, 1)  # PermuteBackward0 (after CloneBackward0: g itself)
        gb = sum_to(gp, (out_c,)) if has_bias and need_b else None  # AddBackward0
        g2 = gp.reshape(n, out_hw[0] * out_hw[1], out_c)  # ViewBackward0
        w2 = weight.reshape(out_c, -1)
        gw = gx = None
        if need_w:  # the matmul's (its operand is a transposed view), TBackward0, view
            gw = sum_to((g2.mT @ a).mT, (w2.shape[1], out_c)).t().reshape(weight.shape)
        if need_x:
            gd = (g2 @ w2)._data.reshape(n, *out_hw, c, len(taps))
            gx = _Conv2d._input_grad(gd, shape, pads, taps, g.device, g.dtype)
        return gx, gw, gb, None, None, None, None, None

    @staticmethod
    def _input_grad(gd, shape, pads, taps, device, dtype):
        n, c, h, w = shape
        (top, bottom), (left, right) = pads
        grad = gt.zeros((n, h, w, c), dtype=dtype, device=device)
        if not (top or bottom or left or right):
            add_columns(grad._data, gd, taps)
            return grad.permute(0, 3, 1, 2)
        buf = grad._data
        oh, ow = gd.shape[1], gd.shape[2]
        for t in range(len(taps) - 1, -1, -1):  # as add_columns, the padding left out
            rows, cols = taps[t]
            rr, cc = _inside(rows, top, h, oh), _inside(cols, left, w, ow)
            if rr is None or cc is None:
                continue
            region = buf[:, rr[1], cc[1], :]
            np.add(region, gd[:, rr[0], cc[0], :, t], out=region)
        backend = get_backend(device)
        out, st = backend.empty((n, c, h, w), buf.dtype)  # the pad's backward copied
        np.copyto(out, buf.transpose(0, 3, 1, 2))
        return Tensor._make(out, device, dtype, st)

    @staticmethod
    def _twice(ctx, g, x, weight):
        from .basic import pad
        from .conv import _conv_composite

        _, _, _, pads, _, stride, dilation, out_hw, cl = ctx.inner
        bias = ctx.bias
        with gt.enable_grad():
            xp = x
            if any(p for pair in pads for p in pair):
                xp = pad(x, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
            out = _conv_composite(xp, weight, bias, stride, dilation, 1, out_hw, cl)
        ins = (x, weight, bias)
        need = ctx.needs_input_grad[:3]
        want = [t for t, nd in zip(ins, need, strict=True) if nd]
        found = iter(gt.autograd.grad(out, want, g, create_graph=True))
        return (*[next(found) if nd else None for nd in need], None, None, None, None, None)


class _Conv2dCtx(FunctionCtx):
    _fn_cls = _Conv2d
    _fresh_grads = True  # new tensors: a leaf may keep them without a copy (the engine)
    inner = None
    bias = None

    def _release(self) -> None:  # the columns go with the node's saved tensors
        super()._release()
        self.inner = self.bias = None


# torch's name for the node (its cpu convolution records ConvolutionBackward0)
_Conv2d._ctx_cls = type("ConvolutionBackward0", (_Conv2dCtx,), {})
