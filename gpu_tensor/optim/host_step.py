"""Adam's step on host-memory devices (cpu, emulated cuda): vectorised passes over runs of
parameters instead of a dozen dispatched ops per parameter (torch's foreach/fused idea).

Parameters are cut into runs: consecutive small ones share a run (their gradients and
values are gathered into one flat scratch array, their optimizer state lives in one flat
buffer whose per-parameter views are the state tensors), a large one is a run of its own,
updated in place. Each run is computed in CHUNK-element slices with preallocated
temporaries, so numpy's scratch stays piece-sized (the emulated device's promise) and
cache-resident.

Values are bit for bit those of the paths this replaces: the same float32/float64 ufuncs,
in the same order, with the same Python-float scalars (numpy casts a weak Python float to
the array's dtype, as the dispatcher's fast path does):
- `eager`: Adam's single-tensor composition of in-place ops (lerp_ as m + w * (g - m));
- `fused`: optim/fused.py's adam_step as gt.fuse evaluates it on host arrays.
tests/optim/test_host_step.py compares both against those paths on the same inputs.
Where g++ built backends/host_kernels.py's library, a run takes one compiled pass per
element doing these formulas' operations in order (tests/backends/test_host_kernels.py:
the same bits); the numpy passes below are the fallback and the reference.

A group's first step checks every parameter, gradient and step count and lays the state out;
what holds until a parameter or a state tensor is replaced (the runs, flat views, storages to
bump) is kept in a Plan, so later steps check only the gradients and the plan's key.
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, is_

import numpy as np

from gpu_tensor import backends
from gpu_tensor._tensor import Tensor
from gpu_tensor.backends import host_kernels
from gpu_tensor.backends.base import PIECE

from ._checks import value
from .host_plan import Plan

__all__ = ["adam_host_step"]

CHUNK = PIECE  # elements per pass: piece-sized host temporaries, resident in cache
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_GRAD, _DTYPE, _DEVICE = attrgetter("_grad"), attrgetter("dtype"), attrgetter("device")
_SPARSE = attrgetter("is_sparse")


class _Layout:
    """A group's runs [(params, offsets or None, total, flat state arrays or None)], and
    the state tensors they made (a state replaced since, e.g. by load_state_dict, rebuilds)."""

    __slots__ = ("key", "runs", "owned")

    def __init__(self, key, runs, owned):
        self.key, self.runs, self.owned = key, runs, owned


def _eligible(params, group) -> bool:
    if group.get("differentiable") or group.get("capturable"):
        return False
    dev, dt = params[0].device, params[0].dtype
    if not backends.get_backend(dev).host_arrays:  # (looked up per call: tests swap it)
        return False  # real cuda: one generated kernel per parameter
    for p in params:
        g = p.grad
        if (
            p.device is not dev
            or p.dtype is not dt
            or g.dtype is not dt
            or g.device is not dev
            or g.is_sparse
            or p._data.dtype not in _FLOATS
            or not p._data.flags.c_contiguous
        ):
            return False
    return True


def _runs(params):
    """Consecutive parameters under CHUNK elements in all share a run; larger ones alone."""
    runs, cur, total = [], [], 0
    for p in params:
        n = p._data.size
        if n >= CHUNK:
            runs.append([p])
            continue
        if total + n > CHUNK and cur:
            runs.append(cur)
            cur, total = [], 0
        cur.append(p)
        total += n
    if cur:
        runs.append(cur)
    return runs


def _layout(opt, group, params, names):
    """The group's runs, (re)built when its parameters or their state tensors changed: a
    run of several parameters gets one flat buffer per state name, on their device (the
    device allocator counts it), and each parameter's state becomes a view of it, keeping
    any values it had (a loaded state dict)."""
    import gpu_tensor as gt

    cache = opt.__dict__.setdefault("_host_layouts", {})
    key = tuple(map(id, params))
    lay = cache.get(id(group))
    if (
        lay is not None
        and lay.key == key
        and all(
            opt.state[p].get(n) is t
            for p, ts in zip(params, lay.owned, strict=True)
            for n, t in zip(names, ts, strict=True)
        )
    ):
        return lay
    runs, owned = [], []
    for run in _runs(params):
        if len(run) == 1:
            p = run[0]
            st = opt.state[p]
            for n in names:
                t = st.get(n)
                if t is None or not t._data.flags.c_contiguous or t.dtype is not p.dtype:
                    st[n] = gt.zeros_like(p) if t is None else t.contiguous().to(p.dtype)
            runs.append((run, None, p._data.size, None))
            owned.append(tuple(st[n] for n in names))
            continue
        offsets, total = [], 0
        for p in run:
            offsets.append(total)
            total += p._data.size
        flats = []
        for n in names:
            flat = gt.zeros(total, dtype=run[0].dtype, device=run[0].device)
            flats.append(flat._data)
            for p, off in zip(run, offsets, strict=True):
                view = flat[off : off + p._data.size].view(p.shape)
                old = opt.state[p].get(n)
                if old is not None:
                    view.copy_(old)
                opt.state[p][n] = view
        runs.append((run, offsets, total, flats))
        owned += [tuple(opt.state[p][n] for n in names) for p in run]
    lay = cache[id(group)] = _Layout(key, runs, owned)
    return lay


def _scratch(opt, dtype, n):
    """Five preallocated temporaries of at least n elements (numpy's own memory), kept per
    optimizer (two optimizers stepping in two threads never share them)."""
    by = opt.__dict__.setdefault("_host_scratch", {})
    bufs = by.get(dtype)
    if bufs is None or bufs[0].size < n:
        bufs = by[dtype] = [np.empty(max(n, CHUNK), dtype) for _ in range(5)]
    return [b[:n] for b in bufs]


def adam_host_step(opt, group, fused: bool) -> bool:
    """One Adam step of `group` on a host device; False (nothing done) when a
    parameter needs the general path (another device or dtype, a sparse or strided
    parameter, differentiable/capturable, unequal step counts)."""
    params = group["params"]
    grads = list(map(_GRAD, params))
    if any(map(is_, grads, repeat(None))):
        params = [p for p in params if p._grad is not None]
        if not params:
            return True
        grads = list(map(_GRAD, params))
    if group.get("differentiable") or group.get("capturable"):
        return False
    dev, dt = params[0].device, params[0].dtype
    if not backends.get_backend(dev).host_arrays:  # (looked up per call: tests swap it)
        return False  # real cuda: one generated kernel per parameter
    names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
    plans = opt.__dict__.setdefault("_host_plans", {})
    plan = plans.get(id(group))
    if plan is not None and plan.holds(opt, params, names):
        if not (
            all(map(is_, map(_DTYPE, grads), repeat(dt)))
            and all(map(is_, map(_DEVICE, grads), repeat(dev)))
        ) or (not all(map(is_, map(type, grads), repeat(Tensor))) and any(map(_SPARSE, grads))):
            return False  # (as _eligible: the parameters' half of it is in the plan's key)
    else:
        plan = _plan(opt, group, params, names)
        if plan is None:
            return False
        plans[id(group)] = plan
    list(map(np.add, plan.step_data, repeat(1), plan.step_data))  # (float32, as step.add_(1))
    step = float(plan.step_data[-1])
    lr, (beta1, beta2) = value(group["lr"]), group["betas"]
    sc = dict(
        lr=lr,
        beta1=beta1,
        beta2=beta2,
        eps=group["eps"],
        wd=group["weight_decay"],
        decoupled=group["decoupled_weight_decay"],
        maximize=group["maximize"],
        amsgrad=group["amsgrad"],
        step_size=lr / (1 - beta1**step),
        bc2_sqrt=(1 - beta2**step) ** 0.5,
    )
    for run in plan.runs:
        if run.offsets is None:  # one parameter, in place
            pf, gf = run.flat[0], grads[run.at]._data.reshape(-1)
        else:  # gathered into the scratch, computed, scattered back
            pf, gf = _scratch(opt, run.flat[0].dtype, run.total)[3:]
            np.concatenate(run.flat, out=pf)
            np.concatenate(run.gathered(grads), out=gf)
        _compute(opt, fused, pf, gf, run.state, run.total, sc)
        if run.offsets is not None:
            list(map(np.copyto, run.flat, run.pieces(pf)))
    plan.bump_versions()
    return True


def _compute(opt, fused, pf, gf, sf, total, sc) -> None:
    """The run's update in place: the compiled pass, or numpy's in CHUNK slices."""
    if _in_kernel(fused, pf, gf, sf, sc):
        return
    formula = _fused if fused else _eager
    with np.errstate(all="ignore"):
        for lo in range(0, total, CHUNK):
            hi = min(lo + CHUNK, total)
            t = _scratch(opt, pf.dtype, hi - lo)[:3]
            formula(pf[lo:hi], gf[lo:hi], *[s[lo:hi] for s in sf], t=t, **sc)


def _plan(opt, group, params, names):
    """The checking path: every parameter, gradient and step count checked, the state made
    and laid out; then what the next steps can reuse (a Plan), or None (nothing done)."""
    if not _eligible(params, group):
        return None
    steps = set()
    for p in params:
        step = opt.state[p].get("step")
        if step is not None and not (
            isinstance(step, Tensor) and step.device.type == "cpu" and step._data.size == 1
        ):
            return None  # a step count set by hand: the per-parameter path handles it
        steps.add(0.0 if step is None else float(step._data))
    if len(steps) != 1:
        return None
    import gpu_tensor as gt

    for p in params:
        st = opt.state[p]
        if "step" not in st:
            st["step"] = gt.tensor(0.0, device="cpu")  # host-side: read every step
    lay = _layout(opt, group, params, names)
    return Plan(opt, params, names, lay)


def _in_kernel(fused, p, g, state, sc) -> bool:
    """The run's step by the compiled host kernel (backends/host_kernels.py): `_fused` or
    `_eager` below, one pass per element, the same IEEE operations in the same order. False
    (nothing done) without the kernel, or for arrays it cannot take in place."""
    arrays = (p, g, *state)
    if not all(a.flags.c_contiguous and a.flags.writeable for a in arrays):
        return False
    if any(np.may_share_memory(p, a) for a in (g, *state)):
        return False  # (numpy's passes and one pass per element differ on aliased memory)
    hk = host_kernels
    lr, beta1, beta2, wd = sc["lr"], float(sc["beta1"]), float(sc["beta2"]), sc["wd"]
    flags = (
        (hk.ADAM_WD if wd != 0 else 0)
        | (hk.ADAM_DECOUPLED if sc["decoupled"] else 0)
        | (hk.ADAM_MAXIMIZE if sc["maximize"] else 0)
        | (hk.ADAM_AMSGRAD if sc["amsgrad"] else 0)
        | (hk.ADAM_LERP if fused and 1.0 - beta1 < 0.5 else 0)
    )
    scalars = hk.AdamScalars(
        decay=1 - lr * wd,
        wd=float(wd),
        w1=1 - beta1,
        beta2=beta2,
        w2=1 - beta2,
        bc2_sqrt=sc["bc2_sqrt"],
        eps=float(sc["eps"]),
        step=sc["step_size"] if fused else -sc["step_size"],
    )
    vmax = state[2] if sc["amsgrad"] else None
    return hk.adam("fused" if fused else "eager", p, g, state[0], state[1], vmax, scalars, flags)


def _eager(
    p,
    g,
    m,
    v,
    vmax=None,
    *,
    t,
    lr,
    beta1,
    beta2,
    eps,
    wd,
    decoupled,
    maximize,
    amsgrad,
    step_size,
    bc2_sqrt,
):
    """Adam's eager composition (optim/adam.py, fused=False), in place on one slice."""
    t0, t1, t2 = t
    if maximize:
        g = np.negative(g, out=t2)
    if wd != 0:
        if decoupled:
            np.multiply(p, 1 - lr * wd, out=p)
        else:
            np.multiply(p, wd, out=t0)
            g = np.add(g, t0, out=t2)
    np.subtract(g, m, out=t0)  # m.lerp_(g, w) = m + w * (g - m)
    np.multiply(1 - beta1, t0, out=t0)
    np.add(m, t0, out=m)
    np.multiply(v, beta2, out=v)  # v.mul_(beta2).add_(g * g, alpha=1 - beta2)
    np.multiply(g, g, out=t0)
    np.multiply(t0, 1 - beta2, out=t0)
    np.add(v, t0, out=v)
    src = v
    if amsgrad:
        src = np.maximum(vmax, v, out=vmax)
    np.sqrt(src, out=t1)  # denom = sqrt / bc2_sqrt + eps
    np.divide(t1, bc2_sqrt, out=t1)
    np.add(t1, eps, out=t1)
    np.divide(m, t1, out=t0)  # p.add_(m / denom, alpha=-step_size)
    np.multiply(t0, -step_size, out=t0)
    np.add(p, t0, out=p)


def _fused(
    p,
    g,
    m,
    v,
    vmax=None,
    *,
    t,
    lr,
    beta1,
    beta2,
    eps,
    wd,
    decoupled,
    maximize,
    amsgrad,
    step_size,
    bc2_sqrt,
):
    """optim/fused.py's adam_step, as gt.fuse evaluates it with numpy, in place. Its
    `1 - scalar` terms are traced ops, so they round in the array's dtype."""
    t0, t1, t2 = t
    w1 = 1.0 - beta1
    one = p.dtype.type(1)
    if maximize:
        g = np.negative(g, out=t2)
    if wd != 0:
        if decoupled:
            np.multiply(p, 1.0 - lr * wd, out=p)
        else:
            np.multiply(p, float(wd), out=t0)
            g = np.add(g, t0, out=t2)
    np.subtract(g, m, out=t0)
    if w1 < 0.5:  # m + (g - m) * w1
        np.multiply(t0, w1, out=t0)
        np.add(m, t0, out=m)
    else:  # g - (g - m) * (1 - w1)
        np.multiply(t0, one - p.dtype.type(w1), out=t0)
        np.subtract(g, t0, out=m)
    np.multiply(v, beta2, out=t1)  # v * beta2 + g * g * (1 - beta2)
    np.multiply(g, g, out=t0)
    np.multiply(t0, one - p.dtype.type(beta2), out=t0)
    np.add(t1, t0, out=v)
    src = v
    if amsgrad:
        src = np.maximum(vmax, v, out=vmax)
    np.sqrt(src, out=t1)
    np.divide(t1, bc2_sqrt, out=t1)
    np.add(t1, eps, out=t1)
    np.divide(m, t1, out=t0)  # p - m / denom * step_size
    np.multiply(t0, step_size, out=t0)
    np.subtract(p, t0, out=p)
