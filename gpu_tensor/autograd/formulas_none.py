"""Ops with no usable gradient still record a node, as torch's do, so backward() never
skips them silently (issue 24): a node whose backward gives zeros where torch's does (a
random draw, an in-place comparison, poisson), or one that raises torch's error, "the
derivative for '<op>' is not implemented", where gpu_tensor has no formula yet (torch may
have one). Integer and bool results never record: they are not differentiable."""

from __future__ import annotations

from .._grad import differentiable
from .._tensor import Tensor
from ..ops import index_write, random, sort
from ..transfer import move
from .record import first, formula, inplace, positional

__all__ = ["not_implemented_error"]


def not_implemented_error(op):
    """torch's error for a node without a formula (NotImplementedError is a RuntimeError)."""
    return NotImplementedError(
        f"the derivative for '{op}' is not implemented. gpu_tensor "
        "has no gradient formula for it yet; call it on a detached "
        "input (or under gt.no_grad()) if no gradient must flow"
    )


def _raises(op):
    def bwd(ctx, g):
        raise not_implemented_error(op)

    return bwd


def _zeros(ctx, g):
    grads = tuple(
        None if not need else g.new_zeros(shape)
        for need, shape in zip(ctx.needs_input_grad, ctx.shapes, strict=True)
    )
    return grads if len(grads) != 1 else grads[0]


def _keep_shapes(inputs):
    def fwd(ctx, out, *args, **kwargs):
        ctx.shapes = [None if t is None else tuple(t.shape) for t in inputs(args, kwargs)]

    return fwd


def _first_output(r):
    return r[0] if isinstance(r, tuple) else r


# -- out of place -----------------------------------------------------------------------
for _name, _ns, _key, _ins, _out in (
    ("BernoulliBackward0", random, "bernoulli", first, None),
    ("BincountBackward0", index_write, "bincount", positional, None),
    ("HistogramBackward0", index_write, "histogram", first, _first_output),
    ("Unique2Backward0", sort, "unique", first, _first_output),
):
    formula(_name, (_ns, _key), inputs=_ins, output=_out)(lambda ctx, out, *a, **k: None).backward(
        _raises(_key)
    )


def _mean_std(args, kwargs):
    mean = args[0] if args else kwargs.get("mean")
    std = args[1] if len(args) > 1 else kwargs.get("std")
    return [t if isinstance(t, Tensor) else None for t in (mean, std)]


formula("NormalBackward3", (random, "normal"), inputs=_mean_std)(_keep_shapes(_mean_std)).backward(
    _zeros
)
formula("PoissonBackward0", (random, "poisson"), inputs=first)(_keep_shapes(first)).backward(_zeros)


# a copy into pinned memory is the identity to autograd (torch's _pin_memory: grad)
formula("PinMemoryBackward0", (move, "pin_memory"), inputs=first)(
    lambda ctx, out, *a, **k: None
).backward(lambda ctx, g: g)


# -- in place: the write, on a copy of self's old values, as a node of its own ------------
_INPLACE_OPS: dict = {}

_ZERO_INPLACE = (
    "eq_",
    "ne_",
    "lt_",
    "le_",
    "gt_",
    "ge_",
    "greater_",
    "greater_equal_",
    "less_",
    "less_equal_",
    "not_equal_",
    *random.FILLS,
)
_RAISING_INPLACE = ("heaviside_",)


def _node_name(attr):
    return "".join(w.capitalize() for w in attr.strip("_").split("_")) + "Backward0"


def _copy_then_write(attr):
    """old -> a copy of old with Tensor.<attr> applied (its plain, unrecorded write)."""

    def oop(old, *args, **kwargs):
        copy = old.clone()
        getattr(Tensor, attr).__wrapped__(copy, *args, **kwargs)
        return copy

    oop.__name__ = oop.__qualname__ = attr
    return differentiable(oop, first=True)


for _attr in _ZERO_INPLACE + _RAISING_INPLACE:
    _INPLACE_OPS[_attr] = _copy_then_write(_attr)
    _spec = formula(_node_name(_attr), (_INPLACE_OPS, _attr), inputs=first)(_keep_shapes(first))
    _spec.backward(_zeros if _attr in _ZERO_INPLACE else _raises(_attr))
    inplace(_attr, lambda a=_attr: _INPLACE_OPS[a])
