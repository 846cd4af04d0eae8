"""The backward of scatter_reduce (ops/index_write.py) for every reduction, as torch's
scatter_reduce_backward: sum and mean split the gradient by count, amax/amin share it
evenly among the elements equal to the result, prod divides the result by each factor
(computing the products without a single zero factor where one is zero). index_reduce is
written with scatter_reduce, so it differentiates through this formula too."""

from __future__ import annotations

from .. import creation
from ..ops import index_write
from .record import formula

__all__: list = []


@formula("ScatterReduceBackward0", (index_write, "scatter_reduce"))
def _scatter_reduce(ctx, out, x, dim, index, src, reduce, *, include_self=True):
    ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
    ctx.src_shape = tuple(src.shape)
    ctx.save_for_backward(x, index, src, out)


def _fit(g, shape):
    """`g` (index's shape) placed in a zero tensor of src's shape (the rest of src is not
    read by the op)."""
    if tuple(g.shape) == shape:
        return g
    full = creation.zeros(shape, dtype=g.dtype, device=g.device)
    full[tuple(slice(0, n) for n in g.shape)] = g
    return full


def _backward(g, x, dim, index, src, reduce, include_self, out):
    part = src[tuple(slice(0, n) for n in index.shape)]
    if reduce == "sum":
        gx, gs = g, g.gather(dim, index)
    elif reduce == "mean":
        n = (
            creation.ones(x.shape, dtype=g.dtype, device=g.device)
            if include_self
            else creation.zeros(x.shape, dtype=g.dtype, device=g.device)
        )
        n = n.scatter_add(dim, index, creation.ones(index.shape, dtype=g.dtype, device=g.device))
        n = n.masked_fill(n == 0, 1)
        gx, gs = g / n, g.gather(dim, index) / n.gather(dim, index)
    elif reduce in ("amax", "amin"):
        value = out.gather(dim, index)
        x_hit, s_hit = (x == out).to(g.dtype), (part == value).to(g.dtype)
        shared = g / x_hit.scatter_add(dim, index, s_hit)  # ties share the gradient evenly
        gx, gs = x_hit * shared, s_hit * shared.gather(dim, index)
    else:  # prod
        masked_x = x.masked_fill(x == 0, 1)
        gx = (
            g
            * index_write.scatter_reduce(
                masked_x, dim, index, part, "prod", include_self=include_self
            )
            / masked_x
        )
        zero = part == 0
        zeros_per = (
            creation.zeros(x.shape, dtype=g.dtype, device=g.device)
            .scatter_add(dim, index, zero.to(g.dtype))
            .gather(dim, index)
        )
        single = zero & (zeros_per == 1)
        without = index_write.scatter_reduce(
            x, dim, index, part.masked_fill(single, 1), "prod", include_self=include_self
        )
        from ..ops.elementwise import where

        gs = where(
            single,
            (g * without).gather(dim, index),
            (g * out).gather(dim, index) / part.masked_fill(zero, 1),
        )
    if not include_self:  # the scattered-to positions kept nothing of input
        gx = gx.scatter(dim, index, 0.0)
    return gx, gs


@_scatter_reduce.backward
def _(ctx, g):
    x, index, src, out = ctx.saved_tensors
    gx, gs = _backward(g, x, ctx.dim, index, src, ctx.reduce, ctx.include_self, out)
    return gx, None, None, _fit(gs, ctx.src_shape), None
