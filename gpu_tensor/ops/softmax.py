"""softmax and log_softmax, numerically stable on any dim, composed from differentiable ops
(so autograd needs no formula of its own). nn.functional's versions call these."""

from __future__ import annotations

import warnings

__all__ = ["softmax", "log_softmax"]


def _softmax_dim(ndim: int, dim, name: str):
    if dim is None:  # torch's legacy implicit choice, with torch's warning
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=4)
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


def softmax(input, dim=None, dtype=None):
    """exp(x - max) / sum(exp(x - max)) over `dim`."""
    dim = _softmax_dim(input.ndim, dim, "softmax")
    e = _shifted(input, dim, dtype).exp()
    return e / (e if e.ndim == 0 else e.sum(dim, keepdim=True))


def log_softmax(input, dim=None, dtype=None):
    """(x - max) - log(sum(exp(x - max))): no exp overflows and no log of an underflow."""
    dim = _softmax_dim(input.ndim, dim, "log_softmax")
    s = _shifted(input, dim, dtype)
    if s.ndim == 0:
        return s
    return s - s.exp().sum(dim, keepdim=True).log()
