"""Activation functions and softmax, composed from public differentiable ops.

Branches that would overflow in the branch `where` discards (exp of a large positive
input) are clamped first: `where`'s backward multiplies the discarded branch's gradient by
zero, and 0 * inf is nan, so an unclamped exp would poison the gradient.
"""

from __future__ import annotations

import warnings

import gpu_tensor as gt

__all__ = ["relu", "relu6", "leaky_relu", "elu", "celu", "gelu", "silu", "sigmoid", "tanh",
           "softplus", "hardtanh", "softmax", "log_softmax"]


def _inplace(input, result, inplace):
    """torch's `inplace=True`: the result written into `input`, which is returned."""
    return input.copy_(result) if inplace else result


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace(input, input.clamp(min_val, max_val), inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(input, gt.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    neg = (input.clamp(max=0).exp() - 1) * alpha
    return _inplace(input, gt.where(input > 0, input, neg), inplace)


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
    bx = input * beta
    soft = bx.clamp(max=threshold).exp().log1p() / beta
    return gt.where(bx > threshold, input, soft)


def _softmax_dim(ndim: int, dim, name: str):
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=3)
        return 0 if ndim in (0, 1, 3) else 1
    return dim


def _shifted(input, dim, dtype):
    """input - max(input, dim): softmax is shift-invariant, so the max is a constant for
    autograd (detached) and exp never overflows."""
    if dtype is not None:
        input = input.to(dtype)
    if input.ndim == 0:
        return input - input.detach()
    return input - input.detach().amax(dim, keepdim=True)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Numerically stable on any dim: exp(x - max) / sum(exp(x - max))."""
    dim = _softmax_dim(input.ndim, dim, "softmax")
    e = _shifted(input, dim, dtype).exp()
    return e / (e if e.ndim == 0 else e.sum(dim, keepdim=True))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """(x - max) - log(sum(exp(x - max))): no exp overflows and no log of an underflow."""
    dim = _softmax_dim(input.ndim, dim, "log_softmax")
    s = _shifted(input, dim, dtype)
    if s.ndim == 0:
        return s
    return s - s.exp().sum(dim, keepdim=True).log()
