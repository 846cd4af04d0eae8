"""batch_norm, instance_norm, group_norm and rms_norm (layer_norm lives in basic.py), each
composed from differentiable reductions: biased variance for the normalisation, unbiased
for running statistics, as torch.

batch_norm with batch statistics on a host-memory device (cpu, emulated cuda) is one
autograd node (`_BatchNorm`) that runs the composite's ops and, backward, the ops its
graph ran, in the engine's order, so the values are the composite's bit for bit; it
skips what that graph recomputed (the variance's backward centred x again: the forward's
x - mean is the same array) and the recording of the inner graph."""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor.autograd import Function
from gpu_tensor.autograd.composite import composite
from gpu_tensor.autograd.engine import sum_to
from gpu_tensor.autograd.formulas_reduce import _unreduce
from gpu_tensor.autograd.function import FunctionCtx
from gpu_tensor.backends import get_backend

__all__ = ["batch_norm", "instance_norm", "group_norm", "rms_norm"]

_EPS = {"bfloat16": 2.0**-7}  # machine epsilon numpy cannot report (no native bfloat16)


def _channel_shape(ndim):
    return (1, -1) + (1,) * (ndim - 2)


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update_running(running_mean, running_var, mean, var, n, momentum):
    with gt.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(var.detach() * (momentum * n / max(n - 1, 1)))


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Per channel (dim 1) over the batch and spatial dims; training updates the running
    statistics in place (momentum: the new batch's weight)."""
    dims = (0,) + tuple(range(2, input.ndim))
    shape = _channel_shape(input.ndim)
    if training:
        n = input.numel() // input.shape[1]
        if n <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got "
                f"input size {list(input.shape)}"
            )
    stats = []

    def run(x, w, b):
        if training:
            mean, var = x.mean(dims), x.var(dims, unbiased=False)
            stats.append((mean, var))
        else:
            mean, var = running_mean, running_var
        return _affine((x - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt(), w, b, shape)

    if training and _one_node(input, weight, bias):
        out = _BatchNorm.apply(input, weight, bias, eps, stats)
    else:
        out = composite("NativeBatchNormBackward0", run, input, weight, bias)
    if training:
        _update_running(running_mean, running_var, *stats[0], n, momentum)
    return out


def _one_node(x, w, b) -> bool:
    """Whether batch_norm takes the one-node path: a float32/float64 input on a host-memory
    device, weight and bias (if any) 1-D of its dtype and device."""
    if x.dtype not in (gt.float32, gt.float64) or not get_backend(x.device).host_arrays:
        return False
    return all(
        t is None or (t.ndim == 1 and t.dtype is x.dtype and t.device == x.device) for t in (w, b)
    )


class _BatchNorm(Function):
    """batch_norm with batch statistics as one node (see the module docstring). Forward:
    the composite's ops. Backward: its graph's formulas (x's three gradients summed as
    the engine summed them: the variance's and the centring's, then the mean's)."""

    @staticmethod
    def forward(ctx, x, w, b, eps, stats):
        dims = (0,) + tuple(range(2, x.ndim))
        shape = _channel_shape(x.ndim)
        mean, var = x.mean(dims), x.var(dims, unbiased=False)
        stats.append((mean, var))
        d = x - mean.reshape(shape)
        r = (var.reshape(shape) + eps).rsqrt()
        xh = d * r
        ctx.save_for_backward(x, w, b)
        ctx.inner = (d, r, xh, eps, dims, shape)
        return _affine(xh, w, b, shape)

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        d, r, xh, eps, dims, shape = ctx.inner
        if gt.is_grad_enabled():  # create_graph: differentiate the composite, re-run
            return _BatchNorm._twice(ctx, g, (x, w, b), eps, dims, shape)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gx = gw = gb = None
        kept = r.shape
        if b is not None and need_b:  # AddBackward0, then the reshape's ViewBackward0
            gb = sum_to(g, kept).reshape(b.shape)
        g1 = g
        if w is not None:  # MulBackward0 of xh * w
            if need_x:
                g1 = g * w.reshape(shape)
            if need_w:
                gw = sum_to(g * xh, kept).reshape(w.shape)
        if need_x:
            n = x.numel() // x.shape[1]
            gd = g1 * r  # MulBackward0 of d * r
            gr = sum_to(g1 * d, kept)
            gv = (gr * (r * r * r) * -0.5).reshape(x.shape[1])  # rsqrt, + eps, reshape
            # VarBackward0: its centred x is the forward's d (the same ops on the same x)
            gx = _unreduce(gv, x.shape, dims, False) * d * (2.0 / n)
            gx = gx + gd  # SubBackward0's first gradient
            gx = gx + _mean_grad(gd, gx, kept, dims, n)  # its second, through the mean
        return gx, gw, gb, None, None

    @staticmethod
    def _twice(ctx, g, ins, eps, dims, shape):
        x, w, b = ins
        with gt.enable_grad():
            mean, var = x.mean(dims), x.var(dims, unbiased=False)
            out = _affine(
                (x - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt(), w, b, shape
            )
        need = ctx.needs_input_grad[:3]
        found = iter(
            gt.autograd.grad(
                out, [t for t, n in zip(ins, need, strict=True) if n], g, create_graph=True
            )
        )
        return (*[next(found) if n else None for n in need], None, None)


def _mean_grad(gd, gx, kept, dims, n):
    """The mean's gradient that x's gradient `gx` gets added: MeanBackward1 of the
    reshaped sum of -gd (SubBackward0's second gradient). Rounding is symmetric, so that
    sum is -sum(gd) unless it is zero or not finite (a zero's sign, a NaN's): those take
    the pass over -gd. Added to a C-contiguous gx, the per-channel values broadcast give
    the bits and layout of the full-size array the composite added."""
    s = sum_to(gd, kept)
    if bool(np.isfinite(s._data).all()) and bool((s._data != 0).all()):
        gm = -s
    else:
        gm = sum_to(-gd, kept)
    gm = gm.reshape(kept[1])
    if gx.is_contiguous():
        return gm.reshape(kept) / max(n, 1)
    return _unreduce(gm, gx.shape, dims, False) / max(n, 1)


class _BatchNormCtx(FunctionCtx):
    _fn_cls = _BatchNorm
    _fresh_grads = True  # new tensors: a leaf may keep them without a copy (the engine)
    inner = None

    def _release(self) -> None:  # the centred input and xh go with the node's saved tensors
        super()._release()
        self.inner = None


# torch's name for the node
_BatchNorm._ctx_cls = type("NativeBatchNormBackward0", (_BatchNormCtx,), {})


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Per sample and channel over the spatial dims. With running statistics, each is
    updated with the batch average of the per-instance statistics."""
    if input.ndim < 3:
        raise ValueError(
            f"instance_norm: expected an input with at least 3 dims (N, C, ...), got {input.ndim}"
        )
    shape = _channel_shape(input.ndim)
    if not use_input_stats:
        out = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
        return _affine(out, weight, bias, shape)
    dims = tuple(range(2, input.ndim))
    n = input.numel() // (input.shape[0] * input.shape[1])
    if n <= 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size "
            f"{list(input.shape)}"
        )
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, unbiased=False, keepdim=True)
    if running_mean is not None or running_var is not None:
        flat = (input.shape[0], input.shape[1])
        _update_running(
            running_mean,
            running_var,
            mean.reshape(flat).mean(0),
            var.reshape(flat).mean(0),
            n,
            momentum,
        )
    out = (input - mean) * (var + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Channels split into num_groups groups, each normalised per sample."""
    if input.ndim < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by "
            f"num_groups, but got input of shape {list(input.shape)} and "
            f"num_groups={num_groups}"
        )

    def run(inp, w, b):
        x = inp.reshape(n, num_groups, -1)
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        out = ((x - mean) * (var + eps).rsqrt()).reshape(inp.shape)
        return _affine(out, w, b, _channel_shape(inp.ndim))

    return composite("NativeGroupNormBackward0", run, input, weight, bias)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps); eps=None: the
    dtype's machine epsilon (torch.finfo(dtype).eps)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if input.ndim < k or tuple(input.shape[input.ndim - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
            f"{list(input.shape)}"
        )
    if eps is None:
        eps = _EPS.get(input.dtype.name) or float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight
