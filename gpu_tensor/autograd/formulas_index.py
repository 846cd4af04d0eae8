"""Backward formulas of indexing: getitem (basic and advanced), gather, index_select,
take, masked_fill/masked_select, scatter/scatter_add; and the recorded forms of the
in-place writes (`t[i] = v`, masked_fill_, scatter_, copy_, fill_, zero_)."""

from __future__ import annotations

import sys

import numpy as np

from .. import _layout, _views
from .._grad import differentiable
from .._tensor import Tensor
from ..backends import get_backend
from ..dtype import INT as _INT
from ..ops import indexing
from ..transfer import move as _move
from .record import first, formula, inplace

__all__: list = []


def _zeros(like, shp):
    from ..creation import zeros

    return zeros(tuple(shp), dtype=like.dtype, device=like.device)


# -- indexing ----------------------------------------------------------------------------------
def _index_add(z, index, g):
    """z[index] += g, with repeated advanced indices accumulating (np.add.at)."""
    idx, basic = indexing._normalise(z, index)
    xp = get_backend(z.device).xp
    if basic:
        z[index] = g
        return z
    idx = tuple(xp.nonzero(i) if getattr(i, "dtype", None) == np.bool_ else (i,) for i in idx)
    flat = tuple(a for part in idx for a in part)
    get_backend(z.device).index_add_(z._data, flat, g._data)
    return z


_FULL = slice(None)


def _basic_name(index):
    """The node torch ends a basic index in: it applies the components in order (select
    for an int, slice, unsqueeze for None; a full slice is skipped), so the last one that
    does something names the result. None for an advanced index (IndexBackward0)."""
    name = None
    for i in index if isinstance(index, tuple) else (index,):
        if i is None:
            name = "UnsqueezeBackward0"
        elif type(i) is slice:
            if i != _FULL:
                name = "SliceBackward0"
        elif i is Ellipsis:
            continue
        elif (
            type(i) is int
            or isinstance(i, np.integer)
            or (isinstance(i, Tensor) and i.ndim == 0 and i.dtype.category == _INT)
        ):
            name = "SelectBackward0"
        else:
            return None
    if name is None:  # nothing but full slices and Ellipsis: torch aliases (a[:] slices)
        return "SliceBackward0" if type(index) is slice else "AliasBackward0"
    return name


def _basic_steps(x, index):
    """A basic index (ints, slices, None, Ellipsis) as the single-dim steps torch applies,
    [(dim, component)]: select for an int, slice, unsqueeze for None; a slice that keeps
    the whole dim is no step. None when the index is not basic or does not fit x (the
    plain getitem then records one node, or raises the clear error)."""
    comps = index if type(index) is tuple else (index,)
    shape = list(x.shape)
    consumed = 0
    for i in comps:
        if i is Ellipsis:
            continue
        if i is None:
            pass
        elif type(i) is int or type(i) is slice or isinstance(i, np.integer):
            consumed += 1
        else:
            return None
    if consumed > len(shape) or sum(i is Ellipsis for i in comps) > 1:
        return None
    span = len(shape) - consumed  # the dims an Ellipsis stands for
    steps, d = [], 0
    for i in comps:
        if i is Ellipsis:
            d += span
        elif i is None:
            steps.append((d, None))
            shape.insert(d, 1)
            d += 1
        elif type(i) is slice:
            n = shape[d]
            r = range(*i.indices(n))
            if not (r.start == 0 and r.step == 1 and len(r) == n):
                steps.append((d, i))
                shape[d] = len(r)
            d += 1
        else:
            n = shape[d]
            if not -n <= i < n:
                return None
            steps.append((d, i))
            del shape[d]
    return steps


def _getitem_chain(args, kwargs, reflected):
    """torch records a basic index with several components as one node per component
    (x[1:, 0]: SelectBackward0 over SliceBackward0); so does this, one getitem each."""
    x, index = args
    if type(index) is not tuple:
        return None  # one component: one node
    steps = _basic_steps(x, index)
    if steps is None or len(steps) < 2:
        return None
    t = x
    for d, comp in steps:
        t = t[(_FULL,) * d + (comp,)]  # the recording getitem: one component, one node
    return t


@formula("IndexBackward0", (indexing, "getitem"), inputs=first, decompose=_getitem_chain)
def _getitem(ctx, out, x, index):
    ctx.shape, ctx.index = x.shape, index
    if isinstance(index, Tensor):
        ctx.save_for_backward(index)
    elif isinstance(index, tuple):
        ctx.save_for_backward(*index)
    name = _basic_name(index)
    if name == "SliceBackward0" and type(index) is tuple and _basic_steps(x, index) == []:
        return "AliasBackward0"  # x[0:, :]: every slice keeps its whole dim
    return name


@_getitem.backward
def _(ctx, g):
    if isinstance(ctx.index, (Tensor, tuple)):
        saved = ctx.saved_tensors
        index = saved[0] if isinstance(ctx.index, Tensor) else tuple(saved)
    else:
        index = ctx.index
    return _index_add(_zeros(g, ctx.shape), index, g)


@formula("GatherBackward0", (indexing, "gather"), inputs=first)
def _gather(ctx, out, x, dim, index):
    ctx.shape, ctx.dim = x.shape, dim
    ctx.save_for_backward(index)


@_gather.backward
def _(ctx, g):
    (index,) = ctx.saved_tensors
    return _zeros(g, ctx.shape).scatter_add_(ctx.dim, index, g)


@formula("IndexSelectBackward0", (indexing, "index_select"), inputs=first)
def _index_select(ctx, out, x, dim, index):
    ctx.shape, ctx.dim = x.shape, dim % max(x.ndim, 1)
    ctx.save_for_backward(index)


@_index_select.backward
def _(ctx, g):
    (index,) = ctx.saved_tensors
    z = _zeros(g, ctx.shape)
    if not z.ndim:
        return g.reshape(())
    get_backend(z.device).index_add_(
        z._data, (slice(None),) * ctx.dim + (index._data.reshape(-1),), g._data
    )
    return z


@formula("TakeBackward0", (indexing, "take"), inputs=first)
def _take(ctx, out, x, index):
    ctx.shape = x.shape
    ctx.save_for_backward(index if isinstance(index, Tensor) else None)
    ctx.raw = None if isinstance(index, Tensor) else index


@_take.backward
def _(ctx, g):
    (index,) = ctx.saved_tensors
    z = _zeros(g, ctx.shape)
    ia = index._data if index is not None else indexing._device_array(z, ctx.raw)
    get_backend(z.device).index_add_(z._data.reshape(-1), ia, g._data)
    return z


def _masked_fill_inputs(args, kwargs):
    value = args[2] if len(args) > 2 else kwargs.get("value")
    return [args[0], value] if isinstance(value, Tensor) else [args[0]]


@formula("MaskedFillBackward0", (indexing, "masked_fill"), inputs=_masked_fill_inputs)
def _masked_fill(ctx, out, x, mask, value):
    ctx.save_for_backward(mask)
    return "MaskedFillBackward1" if isinstance(value, Tensor) else None  # a tensor value


@_masked_fill.backward
def _(ctx, g):
    (mask,) = ctx.saved_tensors
    gx = g.masked_fill(mask, 0)
    if len(ctx.needs_input_grad) == 1:
        return gx
    return gx, (g * mask).sum() if ctx.needs_input_grad[1] else None


@formula("MaskedSelectBackward0", (indexing, "masked_select"), inputs=first)
def _masked_select(ctx, out, x, mask):
    ctx.save_for_backward(mask)
    ctx.shape = x.shape


@_masked_select.backward
def _(ctx, g):
    (mask,) = ctx.saved_tensors
    xp = get_backend(g.device).xp
    shp = tuple(np.broadcast_shapes(tuple(ctx.shape), tuple(mask.shape)))
    z = _zeros(g, shp)
    z._data[xp.broadcast_to(mask._data, shp)] = g._data
    return z  # summed back to the input's shape by the engine


def _scatter_inputs(args, kwargs):
    src = args[3] if len(args) > 3 else kwargs.get("src")
    return [args[0], None, None, src if isinstance(src, Tensor) else None]


def _scatter(name, key):
    @formula(name, (indexing, key), inputs=_scatter_inputs)
    def fwd(ctx, out, x, dim, index, src=None, value=None, reduce=None):
        ctx.dim, ctx.reduce, ctx.add = dim, reduce, key == "scatter_add" or reduce == "add"
        ctx.save_for_backward(index)

    @fwd.backward
    def _(ctx, g):
        if ctx.reduce == "multiply":
            raise RuntimeError(
                "the derivative for scatter(reduce='multiply') is not "
                "implemented in gpu_tensor autograd"
            )
        (index,) = ctx.saved_tensors
        gx = g if ctx.add else g.scatter(ctx.dim, index, 0.0)
        gsrc = g.gather(ctx.dim, index) if ctx.needs_input_grad[3] else None
        return gx, None, None, gsrc


_scatter("ScatterBackward0", "scatter")
_scatter("ScatterAddBackward0", "scatter_add")


# -- setitem (in place) as an out-of-place index_put ----------------------------------------
@differentiable
def _index_put_copy(x, index, value):
    """x with x[index] = value, as a new tensor (the recorded form of __setitem__)."""
    r = _layout.clone(x)
    indexing.setitem(r, index, value)
    return r


def _put_inputs(args, kwargs):
    v = args[2]
    return [args[0], v if isinstance(v, Tensor) else None]


@formula("IndexPutBackward0", (sys.modules[__name__], "_index_put_copy"), inputs=_put_inputs)
def _put(ctx, out, x, index, value):
    ctx.index = index
    ctx.save_for_backward(*(index if isinstance(index, tuple) else (index,)))
    # torch: a basic index writes through a view (CopySlices), an advanced one index_put_
    return "CopySlices" if _basic_name(index) is not None else None


@_put.backward
def _(ctx, g):
    saved = ctx.saved_tensors
    index = tuple(saved) if isinstance(ctx.index, tuple) else saved[0]
    gx = g.clone()
    gx[index] = 0.0
    gv = g[index] if ctx.needs_input_grad[1] else None
    return gx, gv


inplace("__setitem__", lambda: sys.modules[__name__]._index_put_copy)
inplace("masked_fill_", lambda: indexing.masked_fill)
inplace("scatter_", lambda: indexing.scatter)
inplace("scatter_add_", lambda: indexing.scatter_add)


@differentiable
def _copy_oop(old, src, non_blocking=False):
    """What `old.copy_(src)` leaves in old: src moved, cast and broadcast (a new tensor)."""
    from ..creation import tensor as new_tensor

    if not isinstance(src, Tensor):
        src = new_tensor(src, dtype=old.dtype, device=old.device)
    if src.device is not old.device:
        src = _move.move(src, old.device)
    if src.dtype is not old.dtype:
        src = _move.astype(src, old.dtype)
    return _views.expand(src, old.shape).clone()


@differentiable
def _fill_oop(old, value):
    """What `old.fill_(value)` leaves in old (a new tensor)."""
    if isinstance(value, Tensor):
        return _copy_oop(old, value)
    from ..creation import full_like

    return full_like(old, value)  # not old * 0 + value: that keeps old's inf/nan


@differentiable
def _zero_oop(old):
    from ..creation import zeros_like

    return zeros_like(old)


def _old_and_value(args, kwargs):
    v = args[1] if len(args) > 1 else None
    return [args[0], v] if isinstance(v, Tensor) else [args[0]]


def _overwritten(ctx, g):
    """old is overwritten (a zero gradient, as torch); a tensor value gets g (the engine
    reduces it to the value's shape, dtype and device)."""
    return (g * 0,) if len(ctx.needs_input_grad) == 1 else (g * 0, g)


_MOD = sys.modules[__name__]
formula("CopyBackwards", (_MOD, "_copy_oop"), inputs=_old_and_value)(
    lambda ctx, out, old, src, non_blocking=False: None
).backward(_overwritten)
formula("FillBackward2", (_MOD, "_fill_oop"), inputs=_old_and_value)(
    lambda ctx, out, old, value: "FillBackward3" if isinstance(value, Tensor) else None
).backward(_overwritten)
formula("ZeroBackward0", (_MOD, "_zero_oop"), inputs=first)(lambda ctx, out, old: None).backward(
    lambda ctx, g: g * 0
)

inplace("copy_", lambda: _MOD._copy_oop)
inplace("fill_", lambda: _MOD._fill_oop)
inplace("zero_", lambda: _MOD._zero_oop)
