"""Order statistics: sort/argsort/msort, topk, kthvalue, median, quantile, mode, unique,
cummax/cummin, searchsorted.

Indices are found with the array module's stable argsort (numpy on cpu, cupy on cuda);
values are then `input.gather(dim, indices)`, so they carry autograd through gather's
formula (the gradient flows back to the chosen elements, as torch's SortBackward does).
Ordering follows torch: nan sorts as the largest value (last ascending, first descending).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .. import return_types
from .._grad import differentiable
from .._host_memory import host_memory
from .._tensor import Tensor
from ..backends import get_backend

__all__ = [
    "sort",
    "argsort",
    "msort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "quantile",
    "nanquantile",
    "mode",
    "unique",
    "unique_consecutive",
    "cummax",
    "cummin",
    "searchsorted",
]

SortResult, TopkResult = return_types.sort, return_types.topk  # torch.return_types.*
KthvalueResult, MedianResult = return_types.kthvalue, return_types.median
ModeResult, CummaxResult, CumminResult = return_types.mode, return_types.cummax, return_types.cummin


def _dim(t, dim):
    n = max(t.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _long(t, arr):
    bk = get_backend(t.device)
    arr = arr.astype(np.int64) if arr.dtype != np.int64 else arr
    arr, st = bk.adopt(arr)
    return Tensor._make(arr, t.device, _dt.int64, st)


def _sortable(t, name):
    if t.dtype.category == _dt.COMPLEX:
        raise RuntimeError(f"{name}(): complex tensors have no order; sort .real or .abs()")
    arr = t._data
    if t.dtype is _dt.bfloat16:
        arr = get_backend(t.device).astype(arr, np.float32)
    return arr


def _argsort(t, dim, descending, name="sort"):
    """int64 indices sorting t along dim (stable; nan largest)."""
    bk = get_backend(t.device)
    xp = bk.xp
    arr = _sortable(t, name)
    if arr.ndim == 0:
        return _long(t, xp.zeros((), np.int64))
    n = arr.shape[dim]

    def order(a):
        if not descending:
            return xp.argsort(a, axis=dim, kind="stable")
        rev = xp.argsort(xp.flip(a, axis=dim), axis=dim, kind="stable")
        return (n - 1) - xp.flip(rev, axis=dim)

    return _long(t, bk.by_pieces(order, (arr,), arr.shape, np.int64, whole=(dim,)))


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) along dim; `stable` is accepted: the sort is always stable."""
    d = _dim(input, dim)
    idx = _argsort(input, d, descending)
    if input.ndim == 0:
        return SortResult(input.clone(), idx)
    return SortResult(input.gather(d, idx), idx)


def argsort(input, dim=-1, descending=False, stable=False):
    return _argsort(input, _dim(input, dim), descending, "argsort")


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    d = _dim(input, dim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range: k={k} for a dimension of size {n}")
    idx = (
        _argsort(input, d, largest, "topk").narrow(d, 0, k)
        if input.ndim
        else _argsort(input, d, largest)
    )
    return TopkResult(input.gather(d, idx) if input.ndim else input.clone(), idx)


@host_memory
def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element (1-based) along dim."""
    d = _dim(input, dim)
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise IndexError(
            f"kthvalue(): selected number k={k} out of range for a dimension of size {n}"
        )
    idx = _argsort(input, d, False, "kthvalue")
    if input.ndim == 0:
        return KthvalueResult(input.clone(), idx)
    idx = idx.narrow(d, k - 1, 1)
    vals = input.gather(d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return KthvalueResult(vals, idx)


def _median(input, dim, keepdim, ignore_nan, name):
    result = getattr(return_types, name)  # torch.return_types.median / .nanmedian
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            raise IndexError(f"{name}(): the input is empty; it has no median")
        r = _median(flat, 0, False, ignore_nan, name)
        return r.values
    d = _dim(input, dim)
    if input.ndim == 0:
        return result(input.clone(), _long(input, get_backend(input.device).xp.zeros((), np.int64)))
    idx = _argsort(input, d, False, name)
    n = input.shape[d]
    if ignore_nan and input.dtype.category >= _dt.FLOAT:
        valid = (~input.isnan()).sum(d, keepdim=True)
        pos = (valid - 1).clamp(min=0) // 2
    else:
        has_nan = input.isnan().any(d, keepdim=True) if input.dtype.category >= _dt.FLOAT else None
        pos = (n - 1) // 2
        if has_nan is not None:  # torch: the median of a slice with nan is nan (its index)
            from .elementwise import where

            pos = where(has_nan, n - 1, pos)
    if isinstance(pos, int):
        pick = idx.narrow(d, pos, 1)
    else:
        pick = idx.gather(d, pos)
    vals = input.gather(d, pick)
    if not keepdim:
        vals, pick = vals.squeeze(d), pick.squeeze(d)
    return result(vals, pick)


@host_memory
def median(input, dim=None, keepdim=False):
    """The lower median (torch's: no averaging of the two middle values)."""
    return _median(input, dim, keepdim, False, "median")


@host_memory
def nanmedian(input, dim=None, keepdim=False):
    return _median(input, dim, keepdim, True, "nanmedian")


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    from ..creation import tensor
    from .elementwise import where

    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"{name}() interpolation must be one of {', '.join(_INTERPOLATIONS)}"
            f". Got '{interpolation}'"
        )
    if input.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qt = tensor(q, dtype=input.dtype, device=input.device) if scalar_q else q.to(input.dtype)
    if bool(((qt < 0) | (qt > 1)).any()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(input, dim)
    if x.ndim == 0:
        x = x.reshape(1)
    srt = x.sort(d).values.movedim(d, -1)  # (..., n); nan last
    n = srt.shape[-1]
    nan = srt.isnan()
    count = (
        (~nan).sum(-1, keepdim=True)
        if ignore_nan
        else tensor([n], device=input.device).expand(*srt.shape[:-1], 1)
    )
    qs = qt.reshape(-1)  # (Q,)
    pos = (count.to(input.dtype) - 1).clamp(min=0).unsqueeze(0) * qs.reshape(
        -1, *([1] * srt.ndim)
    )  # (Q, ..., 1)
    lo, hi = pos.floor(), pos.ceil()
    if interpolation == "nearest":
        lo = hi = pos.round()
    elif interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    s = srt.unsqueeze(0).expand(qs.shape[0], *srt.shape)
    vlo, vhi = s.gather(-1, lo.long()), s.gather(-1, hi.long())
    if interpolation == "midpoint":
        r = vlo + (vhi - vlo) * 0.5
    else:
        r = vlo + (vhi - vlo) * (pos - lo)
    bad = nan.any(-1, keepdim=True) if not ignore_nan else (count == 0)
    r = where(bad.unsqueeze(0), float("nan"), r).squeeze(-1)  # (Q, ...)
    if keepdim:
        r = r.unsqueeze(d + 1) if dim is not None else r.reshape(qs.shape[0], *([1] * input.ndim))
    if scalar_q or qt.ndim == 0:
        r = r.squeeze(0)
    return r


@host_memory
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@host_memory
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


@host_memory
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest on ties) and its last index."""
    d = _dim(input, dim)
    bk = get_backend(input.device)
    arr = _sortable(input, "mode") if input.ndim else input._data.reshape(1)
    # read in place where the array is host memory (cpu, emulated cuda); rows along the
    # last dim need no copy either
    host = arr if bk.host_arrays else bk.to_host(arr)
    if input.ndim:
        host = np.moveaxis(host, d, -1)
    rows = host.reshape(-1, host.shape[-1]) if host.size else host.reshape(-1, 1)
    vals, idxs = [], []
    for row in rows:
        u, c = np.unique(row, return_counts=True)
        v = u[np.argmax(c)]
        vals.append(v)
        idxs.append(np.nonzero(row == v)[0][-1])
    shape = host.shape[:-1]
    iarr = np.asarray(idxs, np.int64).reshape(shape)
    idx = _long(input, bk.from_host(iarr)[0])
    if input.ndim == 0:
        return ModeResult(input.clone(), idx)
    vals = input.gather(d, idx.unsqueeze(d))
    idx = idx.unsqueeze(d)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return ModeResult(vals, idx)


@differentiable  # no formula: autograd/formulas_none.py records a node that raises
@host_memory
def unique(
    input,
    sorted=True,
    return_inverse=False,
    return_counts=False,  # noqa: A002
    dim=None,
) -> Tensor | tuple[Tensor, ...]:
    """The distinct values (sorted), optionally the inverse indices and the counts."""
    bk = get_backend(input.device)
    arr = _sortable(input, "unique")
    if dim is None:
        u, inv, cnt = bk.xp.unique(arr, return_inverse=True, return_counts=True)
        inv = inv.reshape(input.shape)
    else:
        d = _dim(input, dim)
        u, inv, cnt = bk.xp.unique(arr, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    if u.dtype != input.dtype.np:
        u = bk.astype(u, input.dtype.np)
    u, st = bk.adopt(bk.xp.ascontiguousarray(u))
    values = Tensor._make(u, input.device, input.dtype, st)
    out = [values]
    if return_inverse:
        out.append(_long(input, inv))
    if return_counts:
        out.append(_long(input, cnt))
    return out[0] if len(out) == 1 else tuple(out)


@host_memory
def unique_consecutive(
    input, return_inverse=False, return_counts=False, dim=None
) -> Tensor | tuple[Tensor, ...]:
    """Collapse runs of equal consecutive values (of the flattened input, or along dim)."""
    bk = get_backend(input.device)
    xp = bk.xp
    x = input.reshape(-1) if dim is None else input.movedim(_dim(input, dim), 0)
    arr = _sortable(x, "unique_consecutive")
    n = arr.shape[0] if arr.ndim else 0
    if n == 0:
        change = xp.zeros(0, bool)
    else:
        diff = arr[1:] != arr[:-1]
        if diff.ndim > 1:
            diff = diff.reshape(n - 1, -1).any(axis=1)
        change = xp.concatenate([xp.ones(1, bool), diff])
    starts = xp.nonzero(change)[0]
    vals = x.index_select(0, _long(input, starts))
    if dim is not None:
        vals = vals.movedim(0, _dim(input, dim))
    out = [vals]
    if return_inverse:
        inv = _long(input, xp.cumsum(change) - 1)
        out.append(inv.reshape(*input.shape) if dim is None else inv)
    if return_counts:
        out.append(_long(input, xp.diff(xp.concatenate([starts, xp.asarray([n])]))))
    return out[0] if len(out) == 1 else tuple(out)


def _cumext(input, dim, name, acc, cls):
    d = _dim(input, dim)
    bk = get_backend(input.device)
    xp = bk.xp
    arr = _sortable(input, name)
    if arr.ndim == 0:
        return cls(input.clone(), _long(input, xp.zeros((), np.int64)))

    def positions(host):  # where each running extreme was last reached, along d
        run = _nan_accumulate(np, acc, host, d)
        shape = [1] * host.ndim
        shape[d] = host.shape[d]
        pos = np.arange(host.shape[d]).reshape(shape)
        hit = (host == run) | np.isnan(host) if host.dtype.kind == "f" else host == run
        return np.maximum.accumulate(np.where(hit, pos, 0), axis=d)

    if bk.host_arrays:  # independent along every other dim: by pieces (emulated cuda's memory)
        idx = bk.by_pieces(positions, (arr,), arr.shape, np.dtype(np.int64), whole=(d,))
    else:  # on the host: cupy's ufunc.accumulate does not cover maximum/minimum (a copy
        # each way; the indices are all that comes back)
        idx = bk.from_host(positions(bk.to_host(arr)))[0]
    idx = _long(input, idx)
    return cls(input.gather(d, idx), idx)


@host_memory
def cummax(input, dim):
    return _cumext(input, dim, "cummax", "maximum", CummaxResult)


@host_memory
def cummin(input, dim):
    return _cumext(input, dim, "cummin", "minimum", CumminResult)


def _nan_accumulate(xp, ufunc_name, arr, axis):
    """xp.<ufunc>.accumulate, with nan sticky once seen (torch propagates it)."""
    r = getattr(xp, ufunc_name).accumulate(arr, axis=axis)
    if arr.dtype.kind == "f":
        seen = xp.logical_or.accumulate(xp.isnan(arr), axis=axis)
        r = xp.where(seen, xp.nan, r)
    return r


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Indices where `input` would be inserted into the (last-dim) sorted sequence."""
    bk = get_backend(sorted_sequence.device)
    xp = bk.xp
    side = side or ("right" if right else "left")
    if not isinstance(input, (Tensor, int, float, bool)):
        raise TypeError(
            f"searchsorted(): 'input' must be a Tensor or a number, not {type(input).__name__}"
        )
    seq = _sortable(sorted_sequence, "searchsorted")
    vals = input._data if isinstance(input, Tensor) else xp.asarray(input)
    if seq.ndim <= 1:

        def find(v):
            return xp.searchsorted(seq, v, side=side)

        r = (
            bk.by_pieces(find, (vals,), vals.shape, np.dtype(np.int64))
            if vals.ndim
            else (find(vals))
        )
    else:  # row by row, each row of vals in its row of seq: pieces of the leading dims

        def find(s, v):
            rows = [
                xp.searchsorted(a, b, side=side)
                for a, b in zip(s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1]), strict=True)
            ]
            return xp.stack(rows).reshape(v.shape)

        r = bk.by_pieces(find, (seq, vals), vals.shape, np.dtype(np.int64), whole=(vals.ndim - 1,))
    t = _long(sorted_sequence, xp.asarray(r))
    return t.to(_dt.int32) if out_int32 else t
