"""batch_norm, instance_norm, group_norm and rms_norm (layer_norm lives in basic.py), each
composed from differentiable reductions: biased variance for the normalisation, unbiased
for running statistics, as torch."""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite

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

    out = composite("NativeBatchNormBackward0", run, input, weight, bias)
    if training:
        _update_running(running_mean, running_var, *stats[0], n, momentum)
    return out


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
