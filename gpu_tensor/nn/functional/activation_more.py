"""The rest of torch's activations: selu, hardsigmoid, hardswish, mish, logsigmoid,
softsign, tanhshrink, softshrink, hardshrink, threshold, glu, prelu, rrelu, softmin,
each recorded under torch's node name where torch has a single node."""

from __future__ import annotations

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite

from .activation import _inplace, softmax

__all__ = [
    "selu",
    "hardsigmoid",
    "hardswish",
    "mish",
    "logsigmoid",
    "softsign",
    "tanhshrink",
    "softshrink",
    "hardshrink",
    "threshold",
    "glu",
    "prelu",
    "rrelu",
    "softmin",
]

_SELU_ALPHA = 1.6732632423543772848170429916717  # SELU's fixed point constants
_SELU_SCALE = 1.0507009873554804934193349852946


def _named(name, fn, input, inplace=False):
    return _inplace(input, composite(name, fn, input), inplace)


def selu(input, inplace=False):
    def run(x):
        neg = (x.clamp(max=0).exp() - 1) * _SELU_ALPHA
        return gt.where(x > 0, x, neg) * _SELU_SCALE

    return _named("EluBackward0", run, input, inplace)  # torch records selu as an elu


def hardsigmoid(input, inplace=False):
    return _named("HardsigmoidBackward0", lambda x: (x / 6 + 0.5).clamp(0, 1), input, inplace)


def hardswish(input, inplace=False):
    return _named("HardswishBackward0", lambda x: x * (x + 3).clamp(0, 6) / 6, input, inplace)


def mish(input, inplace=False):
    def run(x):
        soft = gt.where(x > 20, x, x.clamp(max=20).exp().log1p())
        return x * soft.tanh()

    return _named("MishBackward0", run, input, inplace)


def logsigmoid(input):
    """-softplus(-x), stable for large |x|."""
    return composite(
        "LogSigmoidBackward0", lambda x: x.clamp(max=0) - (-x.abs()).exp().log1p(), input
    )


def softsign(input):
    return input / (1 + input.abs())


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")

    def run(x):
        return gt.where(x > lambd, x - lambd, gt.where(x < -lambd, x + lambd, x * 0))

    return composite("SoftshrinkBackward0", run, input)


def hardshrink(input, lambd=0.5):
    return composite("HardshrinkBackward0", lambda x: gt.where(x.abs() > lambd, x, x * 0), input)


def threshold(input, threshold, value, inplace=False):  # noqa: A002  (torch's name)
    return _named(
        "ThresholdBackward0",
        lambda x: gt.where(x > threshold, x, gt.full_like(x, value)),
        input,
        inplace,
    )


def glu(input, dim=-1):
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.ndim} "
            f"is size {input.shape[dim]}"
        )
    return composite(
        "GluBackward0", lambda x: (lambda a, b: a * b.sigmoid())(*x.chunk(2, dim)), input
    )


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or one for all."""
    if weight.numel() != 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found "
                f"parameter numbers = {weight.numel()} and channel size = "
                f"{input.shape[1] if input.ndim > 1 else 1}."
            )
        weight = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    return composite("PreluKernelBackward0", lambda x, w: gt.where(x > 0, x, x * w), input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky relu with a slope drawn U(lower, upper) per element in training, the mean
    slope in eval."""
    if training:
        slope = (
            gt.rand(tuple(input.shape), dtype=input.dtype, device=input.device) * (upper - lower)
            + lower
        )
    else:
        slope = (lower + upper) / 2
    return _named(
        "RreluWithNoiseBackward0", lambda x: gt.where(x >= 0, x, x * slope), input, inplace
    )


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)
