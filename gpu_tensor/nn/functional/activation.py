"""Activation functions and softmax, composed from public differentiable ops.

Branches that would overflow in the branch `where` discards (exp of a large positive
input) are clamped first: `where`'s backward multiplies the discarded branch's gradient by
zero, and 0 * inf is nan, so an unclamped exp would poison the gradient.
"""

from __future__ import annotations

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite
from gpu_tensor.ops import softmax as _softmax

from .softmax_host import host_log_softmax

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "celu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "softplus",
    "hardtanh",
    "softmax",
    "log_softmax",
]


def _inplace(input, result, inplace):
    """torch's `inplace=True`: the result written into `input`, which is returned."""
    return input.copy_(result) if inplace else result


def _named(name, fn, input, inplace=False):
    """fn(input) recorded as torch's single node `name` (then written in place if asked)."""
    return _inplace(input, composite(name, fn, input), inplace)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _named("HardtanhBackward0", lambda x: x.clamp(min_val, max_val), input, inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _named(
        "LeakyReluBackward0", lambda x: gt.where(x > 0, x, x * negative_slope), input, inplace
    )


def elu(input, alpha=1.0, inplace=False):
    def run(x):
        return gt.where(x > 0, x, (x.clamp(max=0).exp() - 1) * alpha)

    return _named("EluBackward0", run, input, inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    neg = ((input.clamp(max=0) / alpha).exp() - 1) * alpha
    return _inplace(input, gt.where(input > 0, input, neg), inplace)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return gt.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _inplace(input, input.silu(), inplace)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta*x)) / beta, linear above `threshold` (torch's rule)."""

    def run(x):
        bx = x * beta
        return gt.where(bx > threshold, x, bx.clamp(max=threshold).exp().log1p() / beta)

    return composite("SoftplusBackward0", run, input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Numerically stable on any dim (gt.softmax)."""
    return _softmax.softmax(input, dim, dtype)  # recorded as torch's SoftmaxBackward0


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Numerically stable on any dim (gt.log_softmax)."""
    if dtype is None:  # (N, C) logits on the cpu and emulated cuda: one result
        y = host_log_softmax(input, dim)
        if y is not None:
            return y
    return _softmax.log_softmax(input, dim, dtype)  # as torch's LogSoftmaxBackward0
