"""Parameter initialisation with torch.nn.init's formulas and fan computation.

Every function fills its tensor in place under no_grad (so parameters that require grad
can be initialised) and returns it. uniform_, normal_ and the kaiming/xavier/trunc_normal
functions built on them draw as torch does (Tensor.uniform_/normal_ on torch's cpu
stream, ops/random.py), so after `gt.manual_seed(s)` they give torch's numbers;
orthogonal_ draws its Gaussian matrix from the numpy part of the generator.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "trunc_normal_",
]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (torch's table)."""
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4  # torch's value, chosen for self-normalising networks
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _rng(generator):
    if generator is not None:
        return generator
    from .. import creation

    return creation._rng  # the generator gt.manual_seed reseeds


def _fill(tensor, host):
    from ..creation import tensor as new_tensor

    with no_grad():
        tensor.copy_(new_tensor(np.asarray(host), dtype=tensor.dtype, device=tensor.device))
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    from ..ops import random

    with no_grad():
        return random.uniform_(tensor, a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    from ..ops import random

    with no_grad():
        return random.normal_(tensor, mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std) cut to [a, b], sampled as torch 2.13 does so a seeded run gives its
    numbers: when [a, b] holds more than 30% of the mass, normal draws with the values
    outside redrawn (a whole tensor of draws per round) until none is; otherwise uniform
    candidates on [a, b] accepted against the normal density's log (rejection)."""
    import gpu_tensor as gt

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if tensor.numel() == 0:
        return tensor
    with no_grad():
        if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
            # the bounds in the tensor's dtype, so the test matches the stored values
            lo = gt.tensor(a, dtype=tensor.dtype).item()
            hi = gt.tensor(b, dtype=tensor.dtype).item()
            result = normal_(tensor, mean, std, generator)
            while True:
                outside = (result < lo) | (result > hi)
                if not bool(outside.any()):
                    break
                redraw = normal_(gt.empty_like(result), mean, std, generator)
                result = gt.where(outside, redraw, result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_density(x):  # relative to the peak: <= 0
            return x.sub(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        uniform_(tensor, a, b, generator)
        accept = gt.empty_like(tensor)
        pending = uniform_(accept, 0.0, 1.0, generator).log_().gt(log_density(tensor))
        if not bool(pending.any()):
            return tensor
        result = tensor
        candidates = gt.empty_like(tensor)
        while True:
            uniform_(candidates, a, b, generator)
            result = gt.where(pending, candidates, result)
            test = uniform_(accept, 0.0, 1.0, generator).log_().gt(log_density(candidates))
            pending = gt.where(pending, test, pending)
            if not bool(pending.any()):
                break
        tensor.copy_(result)
    return tensor


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015); torch's defaults."""
    if 0 in tuple(tensor.shape):
        return tensor  # torch warns and leaves an empty tensor alone
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1.0, generator=None):
    """Fill with a (semi-)orthogonal matrix: the Q of a Gaussian matrix's QR, its columns'
    signs fixed by R's diagonal so the result is uniformly distributed (Saxe et al. 2013).
    Dims after the first are flattened, as torch does."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tuple(tensor.shape)))
