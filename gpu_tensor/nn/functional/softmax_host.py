"""F.log_softmax's short path on the cpu and emulated cuda, over the class dim of (N, C) logits
(cross_entropy's first step).

The general log_softmax (ops/softmax.py) composes six ops, amax, sub, exp, sum, log and sub,
and its backward four, exp, sum, mul and sub. Each is a dispatch and, on emulated cuda, an
allocator block. Here numpy makes the same calls on host temporaries (piece-sized at most on
emulated cuda), so the same bits, and the output and its gradient are one block each, as
torch's _log_softmax and _log_softmax_backward_data write theirs. The node is torch's
LogSoftmaxBackward0, recorded by the general one's `_recorded`: it reads its saved output,
and re-runs the composed forward under create_graph or after an in-place write to that output.
"""

from __future__ import annotations

import numpy as np

from gpu_tensor import dtype as _dt
from gpu_tensor._grad import STATE
from gpu_tensor._modes import ACTIVE
from gpu_tensor._tensor import Tensor
from gpu_tensor.backends.base import PIECE
from gpu_tensor.device import CPU
from gpu_tensor.ops import softmax as _softmax

from .nll_host import host_result

__all__ = ["host_log_softmax"]

_FLOATS = (_dt.float32, _dt.float64)
_ROWS = (1,)  # the reductions' axes, as the ops' normalised dim gives them


def host_log_softmax(input, dim):
    """log_softmax(input, dim) for C-contiguous (N, C) float32/float64 logits over dim 1 on
    the cpu or emulated cuda (up to PIECE elements there), with no mode on (the profiler sees
    the general path's ops). None: not eligible."""
    # (type(dim) first: True and 1.0 equal 1, and the general path refuses them)
    if ACTIVE[0] or type(input) is not Tensor or type(dim) is not int or dim not in (1, -1):
        return None
    dev, dt = input.device, input.dtype
    x = input._data
    if dt not in _FLOATS or x.ndim != 2 or not x.size or not x.flags.c_contiguous:
        return None
    backend = None
    if dev is not CPU:
        backend = dev._backend
        if backend is None or not backend.host_arrays or x.size > PIECE:
            return None
    # the general node's saved-output rules (ops/softmax._recorded), with numpy's calls for
    # the forward and, where it can, the gradient
    return _softmax._recorded(
        "LogSoftmaxBackward0",
        lambda inp, d: _forward(inp._data, backend, dev, dt),
        _grad,
        input,
        1,
        None,
        composed=_softmax._log_softmax,
    )


def _grad(g, y, dim):
    """g - exp(y) * g.sum(1, keepdim=True): the formula's numpy calls, in order, for a
    C-contiguous g like y with nothing recording (no create_graph) or watching; else the
    formula's ops."""
    gd, dev, dt = g._data, y.device, y.dtype
    if (
        STATE.enabled
        or ACTIVE[0]
        or type(g) is not Tensor
        or g.device is not dev
        or g.dtype is not dt
        or gd.shape != y._data.shape
        or not gd.flags.c_contiguous
    ):
        return _softmax._log_softmax_grad(g, y, dim)
    with np.errstate(all="ignore"):  # (quiet, as apply() is)
        e = np.exp(y._data)
        np.multiply(e, np.add.reduce(gd, _ROWS, None, None, True), out=e)
        backend = None if dev is CPU else dev._backend
        return host_result(backend, dev, dt, gd.shape, lambda out: np.subtract(gd, e, out=out))


def _forward(x, backend, dev, dt):
    """(x - max) - log(sum(exp(x - max))) over the rows: the ops' numpy calls, in order."""
    with np.errstate(all="ignore"):
        s = x - np.maximum.reduce(x, _ROWS, None, None, True)
        t = np.log(np.add.reduce(np.exp(s), _ROWS, None, None, True))
        return host_result(backend, dev, dt, x.shape, lambda out: np.subtract(s, t, out=out))
