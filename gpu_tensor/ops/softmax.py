"""softmax and log_softmax, numerically stable on any dim. nn.functional's versions call
these. When they record, each is one node with torch's name (SoftmaxBackward0,
LogSoftmaxBackward0) and torch's formula, which is also cheaper than the graph of the ops it
is computed with. Like torch's nodes, the formula reads the saved output instead of computing
it again; under create_graph it re-runs the composed, differentiable form."""

from __future__ import annotations

import warnings

__all__ = ["softmax", "log_softmax"]


def _softmax_dim(ndim: int, dim, name: str):
    if dim is None:  # torch's legacy implicit choice, with torch's warning
        warnings.warn(
            f"Implicit dimension choice for {name} has been deprecated. Change the "
            "call to include dim=X as an argument.",
            UserWarning,
            stacklevel=4,
        )
        return 0 if ndim in (0, 1, 3) else 1
    return dim


def _shifted(input, dim, dtype):
    """input - max(input, dim): softmax is shift-invariant, so the max is a constant for
    autograd (detached) and exp never overflows."""
    if dtype is not None:
        input = input.to(dtype)
    if input.ndim == 0:
        return input - input.detach()
    if not input.numel():  # no max over an empty dim; sum checks dim as amax would
        return input - input.detach().sum(dim, keepdim=True)
    return input - input.detach().amax(dim, keepdim=True)


def _softmax(x, dim):
    e = _shifted(x, dim, None).exp()
    return e / (e if e.ndim == 0 else e.sum(dim, keepdim=True))


def _log_softmax(x, dim):
    s = _shifted(x, dim, None)
    if s.ndim == 0:
        return s
    return s - s.exp().sum(dim, keepdim=True).log()


def _recorded(name, plain, grad_of, input, dim, dtype, composed=None):
    """plain(input, dim) as one node `name` when it records (see the module docstring).
    `composed`: the differentiable form the backward re-runs (default `plain` itself), for a
    `plain` that computes without the ops (nn/functional/softmax_host.py)."""
    if dtype is not None:
        input = input.to(dtype)
    from .._grad import STATE

    if not (STATE.enabled and input._requires_grad) or input.ndim == 0:
        return plain(input, dim)
    from ..autograd.composite import with_formula

    saved = []  # the output, detached (no cycle through its node), and its version then

    def forward(x):
        y = plain(x, dim)
        saved.append(y.detach())
        saved.append(saved[0]._version)
        return y

    def backward(g, need, x):
        y = saved[0]
        if STATE.enabled or y._version != saved[1]:
            # create_graph: y needs history, so re-run the forward (the same bits); an output
            # written in place since: re-run it too, as before outputs were saved
            y = (composed or plain)(x, dim)
        return (grad_of(g, y, dim),)

    return with_formula(name, forward, backward, input)


def softmax(input, dim=None, dtype=None):
    """exp(x - max) / sum(exp(x - max)) over `dim`."""
    dim = _softmax_dim(input.ndim, dim, "softmax")
    return _recorded(
        "SoftmaxBackward0",
        _softmax,
        lambda g, y, d: y * (g - (g * y).sum(d, keepdim=True)),
        input,
        dim,
        dtype,
    )


def log_softmax(input, dim=None, dtype=None):
    """(x - max) - log(sum(exp(x - max))): no exp overflows and no log of an underflow."""
    dim = _softmax_dim(input.ndim, dim, "log_softmax")
    return _recorded("LogSoftmaxBackward0", _log_softmax, _log_softmax_grad, input, dim, dtype)


def _log_softmax_grad(g, y, dim):
    """LogSoftmaxBackward0's formula over the saved output y."""
    return g - y.exp() * g.sum(dim, keepdim=True)
