"""The autocast handler: applies an op's policy (policy.py) to its arguments, then runs it.

Registered on the per-op interception word (`_modes.AUTOCAST`); the word calls
`handle(name, fn, args, kwargs)` for every op while this thread has autocast on, with the
AUTOCAST bit masked, so the casts made here (and the ops inside `fn`) are not autocast
again, while a profiler above still sees the casts as child ops (torch's aten::_to_copy).

Eligibility (torch's `is_autocast_eligible`): a floating tensor on the autocast device type
that is not float64. Integer, float64, complex and other-device tensors pass untouched. Only
out-of-place calls are autocast: `out=` calls and in-place ops run as written.

The weight-cast cache: a float32 leaf that requires grad and is not a view, cast to the
region's lower-precision dtype, is cast once per region (torch's `cached_cast`); the cached
copy carries the cast's autograd node, so every use sends its gradient to the one leaf.
"""

from __future__ import annotations

from .. import _grad
from .. import dtype as _dt
from .._tensor import Tensor
from ..creation import empty
from ..fusion.layout import broadcast_shapes
from . import policy as _policy
from .state import STATE, cache_get, cache_put

__all__ = ["handle", "eligible", "cast_to"]

_F32, _F64 = _dt.float32, _dt.float64


def eligible(t, device_type: str) -> bool:
    return (
        isinstance(t, Tensor)
        and t.dtype.is_floating_point
        and t.dtype is not _F64
        and t.device.type == device_type
    )


def cast_to(t, dtype, device_type: str, lower):
    """`t` as `dtype` when eligible (cached for leaf fp32 weights), else `t` unchanged."""
    if not eligible(t, device_type) or t.dtype is dtype:
        return t
    cacheable = (
        dtype is lower
        and t.dtype is _F32
        and t.requires_grad
        and t.is_leaf
        and t._base is None
        and STATE.cache_enabled
    )
    if cacheable:
        hit = cache_get(t, dtype)
        if hit is not None:
            return hit
    out = t.to(dtype)
    if cacheable:
        cache_put(t, dtype, out)
    return out


def _each(x, f):
    """f over a tensor argument, or over the tensors of a list/tuple argument (cat, stack)."""
    if isinstance(x, (list, tuple)):
        return type(x)(f(t) for t in x)
    return f(x)


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))
        elif isinstance(a, Tensor):
            yield a


def _prioritize(current, t, device_type: str):
    """torch's `prioritize`: fp32 beats the lower type; two different lower types are an
    error (autocast never mixes fp16 and bf16)."""
    if not eligible(t, device_type):
        return current
    nxt = t.dtype
    if current is _F32 or nxt is _F32:
        return _F32
    if current is nxt:
        return current
    raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")


_LISTED: dict = {}  # op name -> does any device type's list name it? (most ops: no)


def _listed(name) -> bool:
    hit = _LISTED.get(name)
    if hit is None:
        hit = _LISTED[name] = name == "fused" or any(
            _policy.policy(d, name) is not None for d in _policy.POLICIES
        )
    return hit


def handle(name, fn, args, kwargs):
    """Run op `name` (`fn`) under this thread's autocast state."""
    if not _listed(name):  # the common case: one dict read, then the op as called
        return fn(*args, **kwargs)
    kwargs = kwargs or {}
    device_type = None
    for t in _tensors(args, kwargs):
        device_type = t.device.type
        break
    st = STATE
    if device_type is None or not st.enabled.get(device_type) or kwargs.get("out") is not None:
        return fn(*args, **kwargs)
    if name == "fused":
        return _fused(fn, args, device_type, st.dtype[device_type])
    pol = _policy.policy(device_type, name)
    if pol is None:
        return fn(*args, **kwargs)
    lower = st.dtype[device_type]
    if pol == _policy.BANNED:
        raise RuntimeError(_policy.BANNED_MESSAGE)
    if pol == _policy.FP32_OPT_DTYPE or pol == _policy.FP32_APPEND_DTYPE:
        # dtype=float32 and an upcast input compute the same values; an explicit dtype wins
        first = args[0] if args else kwargs.get("input")
        if kwargs.get("dtype") is not None or not eligible(first, device_type):
            return fn(*args, **kwargs)
        if args:
            args = (cast_to(first, _F32, device_type, lower), *args[1:])
        else:
            kwargs = {**kwargs, "input": cast_to(first, _F32, device_type, lower)}
        return fn(*args, **kwargs)
    if pol == _policy.LOWER:
        to = lower
    elif pol == _policy.FP32:
        to = _F32
    else:  # PROMOTE
        to = lower
        for t in _tensors(args, kwargs):
            to = _prioritize(to, t, device_type)

    def f(t):
        return cast_to(t, to, device_type, lower)

    args = tuple(_each(a, f) for a in args)
    if kwargs:
        kwargs = {k: _each(v, f) for k, v in kwargs.items()}
    return fn(*args, **kwargs)


def _fused(fused, args, device_type: str, lower):
    """A `@gt.fuse` chain in an autocast region: computed in float32 registers as always,
    each floating output stored in the region's dtype, so it is rounded once, on store (eager
    ops would round after every op). Inputs are read as they are: no cast passes."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not any(eligible(t, device_type) for t in tensors):
        return fused(*args)
    if _grad.STATE.enabled and any(t.requires_grad for t in tensors):
        # the recorded path takes no out=: cast the results, through autograd
        res = fused(*args)
        one = not isinstance(res, tuple)
        res = tuple(
            r.to(lower) if eligible(r, device_type) else r for r in ((res,) if one else res)
        )
        return res[0] if one else res
    graph = fused.graph(*args)
    outs = []
    for root in graph.outputs:
        used = graph.used_inputs((root,))
        shape = broadcast_shapes(*(tuple(tensors[n.index].shape) for n in used))
        dt = _dt.to_dtype(root.dtype)
        if dt.is_floating_point and dt is not _F64:
            dt = lower
        outs.append(empty(shape, dtype=dt, device=tensors[0].device))
    return fused(*args, out=tuple(outs))
