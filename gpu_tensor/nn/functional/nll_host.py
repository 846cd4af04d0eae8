"""nll_loss's gradient formula, and its short path on the cpu and emulated cuda.

The general nll_loss (loss.py) runs a dozen small ops for an unweighted 'mean' or 'sum'
loss over (N, C) logits: a mask, a where, two bounds reductions, a cast, a gather, a
negation, a product, two sums and a division, each a dispatch and (on emulated cuda) an
allocator block, and its backward five more. Once per training step over a small batch
that is a tenth of an emulated step. Here numpy makes the same calls on host temporaries,
each element the same operation in the same order, so the same bits; the loss and its
gradient are the only results, one block each, as torch's nll_loss and nll_loss_backward
write theirs. tests/nn/test_nll_loss_formula.py compares both with the composed ops.
"""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor import dtype as _dt
from gpu_tensor._grad import STATE
from gpu_tensor._modes import ACTIVE
from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd.composite import with_formula
from gpu_tensor.backends.host_kernels import SUM_MIN
from gpu_tensor.device import CPU
from gpu_tensor.memory import graph_pool as _graph_pool

__all__ = ["nll_grad", "host_nll_loss", "host_result"]

_FLOATS = (_dt.float32, _dt.float64)


def nll_grad(g, x, w, index, total, reduction, cdim, keep, again=None):
    """NllLossBackward0's gradient: the composed graph's backward written out, its steps in
    its order (div, sum, mul, neg, squeeze, gather), the same bits without recording and
    running that graph. `total`: the summed weights ('mean'). A row whose target is
    ignored (`keep` false) gets +0.0, as torch's nll_loss_backward skips it: its 0 weight
    times an infinite g (a 'mean' over no kept row divides by 0) would give NaN.
    Under create_graph (`again`: the loss's own nll_loss over another input) the gradient
    is torch's NllLossBackwardBackward0 node over (g, x): linear in g, so its gradient
    for g is nll_loss of the incoming one, and for x zeros (torch's formula)."""
    if again is not None and STATE.enabled:
        return with_formula(
            "NllLossBackwardBackward0",
            lambda g, x: nll_grad(g, x, w, index, total, reduction, cdim, keep),
            lambda gg, need, g, x: (
                again(gg) if need[0] else None,
                gt.zeros_like(x) if need[1] else None,
            ),
            g,
            x,
        )
    if reduction == "mean":
        g = g / total
    if reduction != "none":
        g = g.expand(w.shape)
    g = (-(g * w)).where(keep, 0.0)
    z = gt.zeros(tuple(x.shape), dtype=g.dtype, device=g.device)
    return z.scatter_add_(cdim, index, g.unsqueeze(cdim))


def host_nll_loss(input, target, ignore_index, reduction):
    """nll_loss of (N, C) float32/float64 logits and (N,) int64 targets, unweighted, 'mean'
    or 'sum', on the cpu or emulated cuda with no mode on (the profiler sees the general
    path's ops): the loss as one result, recorded as NllLossBackward0 whose gradient is one
    result too. None: not eligible, or a target out of bounds (the general path raises
    torch's IndexError)."""
    if (
        ACTIVE[0]
        or type(input) is not Tensor
        or type(target) is not Tensor
        or type(ignore_index) is not int  # a Tensor, None, a str: the general path's answer
    ):
        return None
    dev, dt = input.device, input.dtype
    x, t = input._data, target._data
    if (
        dt not in _FLOATS
        or target.dtype is not _dt.int64
        or target.device is not dev
        or x.ndim != 2
        or t.ndim != 1
        or not 0 < x.shape[0] < SUM_MIN  # the sums below are numpy's, as the ops' are
        or not x.shape[1]
    ):
        return None
    backend = None
    if dev is not CPU:
        backend = dev._backend
        if backend is None or not backend.host_arrays or _graph_pool.active_captures:
            return None
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    if safe.max() >= x.shape[1] or safe.min() < 0:
        return None
    w = keep.astype(x.dtype)
    total = np.add.reduce(w) if reduction == "mean" else None
    # the ignored rows, whose terms are +0.0 as torch skips them (0 * inf would be NaN)
    ignored = None if keep.all() else np.logical_not(keep)
    rows = np.arange(x.shape[0])

    def again(gg):  # this loss over another input (create_graph's second order)
        from .loss import nll_loss  # (loss.py calls this module)

        return nll_loss(gg, target, ignore_index=ignore_index, reduction=reduction)

    def run(inp):
        # -x.gather(1, index).squeeze(1) * w, summed, divided by the summed weights
        with np.errstate(all="ignore"):  # (quiet, as apply() is)
            terms = np.negative(inp._data[rows, safe]) * w
            if ignored is not None:
                terms[ignored] = 0
            r = np.add.reduce(terms)
            if total is not None:
                r = r / total
        return host_result(backend, dev, dt, (), lambda out: out.__setitem__((), r))

    def backward(g, need, inp):
        if STATE.enabled or ACTIVE[0] or g.device is not dev or g.dtype is not dt or g.ndim:
            # create_graph (the ops must record), or a mode on: the general formula
            wt = Tensor._make(w, CPU, dt).to(dev)
            tot = None if total is None else Tensor._make(np.asarray(total), CPU, dt).to(dev)
            index = Tensor._make(safe[:, None], CPU, _dt.int64).to(dev)
            kept = Tensor._make(keep, CPU, _dt.bool).to(dev)
            return (nll_grad(g, inp, wt, index, tot, reduction, 1, kept, again),)
        with np.errstate(all="ignore"):
            gd = g._data if total is None else g._data / total
            v = np.negative(gd * w)
        if ignored is not None:
            v[ignored] = 0

        def fill(out):  # zeros, then scatter_add_: each target's place gets 0 + v
            out.fill(0)
            out[rows, safe] += v

        return (host_result(backend, dev, dt, x.shape, fill),)

    # torch's NllLossBackward0 saves the input and the target
    return with_formula("NllLossBackward0", run, backward, input, saved=(input, target))


def host_result(backend, dev, dt, shape, fill):
    """A new C-contiguous tensor of `shape` filled by `fill(array)`: numpy's array on the
    cpu, an allocator block on emulated cuda."""
    if backend is None:
        out, st = np.empty(shape, dt.np), None
    else:
        out, st = backend.empty(shape, dt.np)
    fill(out)
    return Tensor._make(out, dev, dt, st)
