"""Indexed writes (and the indexed reads, reorderings and counts beside them) beyond
indexing.py's t[...] and gather/scatter: index_add/index_copy/index_fill,
masked_scatter, put, take_along_dim, scatter_reduce, nonzero_static/argwhere,
repeat_interleave, diff, rot90/fliplr/flipud, select/slice_scatter, fill_diagonal_,
bincount, histc/histogram.

Most are written with differentiable ops (scatter, scatter_add, gather, take, where,
index_select), so they carry autograd with no formula of their own; the in-place forms
(`index_add_`, ...) are rows of _tensor_methods.py: "compute out of place, write back".
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .. import return_types
from .._grad import differentiable
from .._host_memory import host_memory
from .._tensor import Tensor
from ..backends import get_backend
from ..memory import graph_pool as _graph_pool  # bounds checks read the host: not in a capture

__all__ = [
    "index_add",
    "index_copy",
    "index_fill",
    "masked_scatter",
    "put",
    "take_along_dim",
    "scatter_reduce",
    "nonzero_static",
    "argwhere",
    "repeat_interleave",
    "diff",
    "rot90",
    "fliplr",
    "flipud",
    "select_scatter",
    "slice_scatter",
    "bincount",
    "histc",
    "histogram",
    "fill_diagonal",
    "diagonal_scatter",
    "index_reduce",
    "as_strided_scatter",
]


def _long(like, arr):
    bk = get_backend(like.device)
    arr, st = bk.adopt(arr.astype(np.int64))
    return Tensor._make(arr, like.device, _dt.int64, st)


def _along(index, dim, like):
    """The 1-D `index` spread to like's shape, varying along dim (scatter's index form)."""
    d = dim % max(like.ndim, 1)
    shape = [1] * like.ndim
    shape[d] = -1
    return index.reshape(shape).expand(*like.shape).contiguous()


def _check_index(name, input, dim, index, source=None):
    if not isinstance(index, Tensor) or index.dtype not in (_dt.int64, _dt.int32):
        raise IndexError(f"{name}(): Expected dtype int32/int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if source is not None and source.ndim and source.shape[dim] != index.numel():
        raise IndexError(
            f"{name}(): the source's size at dim {dim} ({source.shape[dim]}) "
            f"must equal the number of indices ({index.numel()})"
        )


def index_add(input, dim, index, source, *, alpha=1):
    """input with source's slices added at `index` along dim (repeats accumulate)."""
    _check_index("index_add", input, dim, index, source)
    src = source if alpha == 1 else source * alpha
    return input.scatter_add(dim, _along(index.long(), dim, src), src)


def index_copy(input, dim, index, source):
    _check_index("index_copy", input, dim, index, source)
    return input.scatter(dim, _along(index.long(), dim, source), source)


def index_fill(input, dim, index, value):
    _check_index("index_fill", input, dim, index)
    bk = get_backend(input.device)
    d = dim % max(input.ndim, 1)
    n = input.shape[d] if input.ndim else 1
    if (
        index.numel()
        and not _graph_pool.active_captures
        and (int(index.max()) >= n or int(index.min()) < -n)
    ):
        raise IndexError(f"index_fill(): index out of range for dimension {dim} with size {n}")
    hit = bk.xp.zeros(n, bool)
    hit[index._data.reshape(-1)] = True
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = -1
    mask = Tensor._make(
        hit.reshape(shape) if input.ndim else hit.reshape(()), input.device, _dt.bool
    )
    return input.masked_fill(mask, value)


def masked_scatter(input, mask, source):
    """input with the True positions of mask filled, in order, from source's elements."""
    from .elementwise import where

    if mask.dtype is not _dt.bool:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with "
            f"dtype {mask.dtype.name}"
        )
    full = mask.expand(*input.shape) if mask.shape != input.shape else mask
    need = int(full.sum())
    if need > source.numel():
        raise RuntimeError(
            f"masked_scatter: expected source to have at least {need} "
            f"elements (the number of True values in mask), got "
            f"{source.numel()}"
        )
    pos = (full.reshape(-1).long().cumsum(0) - 1).clamp(min=0)
    picked = source.reshape(-1).take(pos).reshape(*input.shape) if source.numel() else input.clone()
    return where(full, picked, input)


def put(input, index, source, accumulate=False):
    flat = input.reshape(-1).index_put((index.reshape(-1),), source.reshape(-1), accumulate)
    return flat.reshape(*input.shape)


def take_along_dim(input, indices, dim=None):
    if dim is None:
        return input.reshape(-1).take(indices.reshape(-1))
    d = dim % input.ndim
    shape = list(
        np.broadcast_shapes(
            tuple(s for i, s in enumerate(input.shape) if i != d),
            tuple(s for i, s in enumerate(indices.shape) if i != d),
        )
    )
    src_shape, idx_shape = list(shape), list(shape)
    src_shape.insert(d, input.shape[d])
    idx_shape.insert(d, indices.shape[d])
    return input.expand(*src_shape).gather(d, indices.expand(*idx_shape))


_REDUCE = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum", "mean": "add"}


@differentiable  # formula: autograd/formulas_scatter.py (every reduction, as torch's)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce src's values into input at index along dim (sum/prod/mean/amax/amin)."""
    if reduce not in _REDUCE:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    if reduce == "sum" and include_self:
        return input.scatter_add(dim, index, src)
    bk = get_backend(input.device)
    # on the host: numpy's ufunc.at covers every reduction here, cupy's does not (a copy
    # each way on a GPU)
    xp = np
    host = (lambda a: a) if bk.host_arrays else bk.to_host
    # the result, filled in place: on emulated cuda a copy in allocator memory
    out = bk.contiguous(input._data) if bk.host_arrays else bk.to_host(input._data)
    grid = list(xp.indices(index.shape, sparse=True))
    grid[dim % input.ndim] = host(index._data)
    key = tuple(grid)
    vals = host(src._data)[tuple(slice(0, n) for n in index.shape)]
    n = input.shape[dim % input.ndim]
    if (
        index.numel()
        and not _graph_pool.active_captures
        and (int(index.max()) >= n or int(index.min()) < -n)
    ):
        raise RuntimeError(
            f"scatter_reduce(): index out of bounds for dimension {dim} with size {n}"
        )
    if not include_self:
        ident = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if ident is None:
            info = np.finfo if out.dtype.kind == "f" else np.iinfo
            ident = info(out.dtype).min if reduce == "amax" else info(out.dtype).max
        out[key] = ident
    getattr(xp, _REDUCE[reduce]).at(out, key, vals)
    if reduce == "mean":
        count = xp.full(out.shape, 1 if include_self else 0, np.int64)
        xp.add.at(count, key, 1)
        out = out / xp.maximum(count, 1) if out.dtype.kind == "f" else out // xp.maximum(count, 1)
        if not include_self:
            out = xp.where(count == 0, host(input._data), out)
    out = out.astype(input.dtype.np, copy=False)
    arr, st = bk.adopt(out) if bk.host_arrays else bk.from_host(out)
    return Tensor._make(arr, input.device, input.dtype, st)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() with exactly `size` rows: truncated, or padded with fill_value."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be a non-negative integer, got {size}")
    nz = input.nonzero()
    n = nz.shape[0]
    if n >= size:
        return nz[:size]
    from ..creation import full
    from .join import cat

    pad = full((size - n, input.ndim), fill_value, dtype=_dt.int64, device=input.device)
    return cat([nz, pad], 0)


def argwhere(input):
    return input.nonzero()


@host_memory
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated `repeats` times; repeat_interleave(r)
    with only a tensor of counts gives arange(len(r)) repeated by r."""
    from ..creation import arange

    if repeats is None:
        counts = input
        return repeat_interleave(arange(counts.numel(), device=counts.device), counts, 0)
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim % x.ndim
    n = x.shape[d]
    bk = get_backend(x.device)
    reps = repeats._data if isinstance(repeats, Tensor) else int(repeats)
    if isinstance(repeats, Tensor) and repeats.numel() not in (1, n):
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {repeats.numel()} and input.size({d}) = {n}"
        )
    if isinstance(repeats, Tensor) and bool((repeats < 0).any()):
        raise RuntimeError("repeats can not be negative")
    idx = bk.xp.repeat(
        bk.xp.arange(n),
        reps.reshape(-1) if hasattr(reps, "reshape") and reps.size > 1 else int(reps),
    )
    return x.index_select(d, _long(x, idx))


def diff(input, n=1, dim=-1, prepend=None, append=None):
    from .join import cat

    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[dim]
        hi, lo = x.narrow(dim, 1, m - 1), x.narrow(dim, 0, m - 1)
        x = hi ^ lo if x.dtype is _dt.bool else hi - lo
    return x


def rot90(input, k=1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = (d % max(input.ndim, 1) for d in dims)
    if d0 == d1 or input.ndim < 2:
        raise RuntimeError(
            f"expected rotation dims to be different (and a tensor of at least "
            f"2 dims), but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.transpose(d0, d1).flip([d1])
    return input.clone()


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip([1])


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip([0])


def select_scatter(input, src, dim, index):
    from ..creation import tensor

    i = index % input.shape[dim]
    return index_copy(input, dim, tensor([i], device=input.device), src.unsqueeze(dim))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    from ..creation import arange

    n = input.shape[dim]
    start, end, step = slice(start, end, step).indices(n)
    return index_copy(input, dim, arange(start, end, step, device=input.device), src)


def fill_diagonal(input, fill_value, wrap=False):
    """input with its main diagonal set to fill_value (the out-of-place fill_diagonal_)."""
    from .elementwise import where

    if input.ndim < 2 or (input.ndim > 2 and len(set(input.shape)) != 1):
        raise RuntimeError("all dimensions of input must be of equal length")
    bk = get_backend(input.device)
    mask = bk.xp.zeros(input.shape, bool)
    bk.xp.fill_diagonal(mask, True, wrap=wrap)
    return where(Tensor._make(mask, input.device, _dt.bool), fill_value, input).to(input.dtype)


@differentiable  # no formula: autograd/formulas_none.py records a node that raises
def bincount(input, weights=None, minlength=0):
    if input.ndim != 1 or input.dtype.category != _dt.INT:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.numel() and int(input.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    bk = get_backend(input.device)
    w = None if weights is None else weights._data
    r = bk.xp.bincount(input._data, w, minlength)
    dt = (
        _dt.int64
        if weights is None
        else (weights.dtype if weights.dtype.category >= _dt.FLOAT else _dt.float64)
    )
    arr, st = bk.adopt(r.astype(dt.np))
    return Tensor._make(arr, input.device, dt, st)


def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Counts in `bins` equal bins over [min, max] (both 0: the data's range)."""
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, but got {bins}")
    bk = get_backend(input.device)
    data = input._data.astype(np.float64)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = bk.xp.histogram(data, bins=bins, range=(lo, hi))
    arr, st = bk.adopt(counts.astype(input.dtype.np))
    return Tensor._make(arr, input.device, input.dtype, st)


@differentiable  # no formula: autograd/formulas_none.py records a node that raises
def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    bk = get_backend(input.device)
    b = bins._data if isinstance(bins, Tensor) else bins
    w = None if weight is None else weight._data
    counts, edges = bk.xp.histogram(input._data, bins=b, range=range, weights=w, density=density)
    h, _ = bk.adopt(counts.astype(input.dtype.np))
    e, _ = bk.adopt(edges.astype(input.dtype.np))
    return HistogramResult(
        Tensor._make(h, input.device, input.dtype), Tensor._make(e, input.device, input.dtype)
    )


HistogramResult = return_types.histogram


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with its `offset` diagonal over (dim1, dim2) replaced by src."""
    from ..creation import arange

    y = input.movedim((dim1, dim2), (-2, -1))
    rows, cols = y.shape[-2], y.shape[-1]
    k = y.diagonal(offset, -2, -1).shape[-1]
    pos = arange(k, device=input.device)
    lin = (pos + max(-offset, 0)) * cols + pos + max(offset, 0)
    flat = y.reshape(*y.shape[:-2], rows * cols).index_copy(-1, lin, src)
    return flat.reshape(*y.shape).movedim((-2, -1), (dim1, dim2))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """scatter_reduce with a 1-D index along dim (prod/mean/amax/amin)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
            f"amin but got {reduce}."
        )
    _check_index("index_reduce", input, dim, index, source)
    return scatter_reduce(
        input, dim, _along(index.long(), dim, source), source, reduce, include_self=include_self
    )


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with the as_strided(size, stride) view's elements set to src (no
    autograd: the view may overlap itself)."""
    out = input.detach().clone()
    out.as_strided(size, stride, storage_offset).copy_(src)
    return out
