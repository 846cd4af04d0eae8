"""Indexing: `t[...]` (basic -> view, advanced -> copy), `t[...] = v`, gather/scatter,
index_select, masked_fill/masked_select, nonzero, take.

Basic indices (ints, slices with positive steps, None, Ellipsis) give views, as in torch.
Integer tensors/lists and boolean masks are advanced indices and give copies, placed the
way torch places them (ints applied first as select(); see `_index_plan.py`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtype as _dt
from .._dims import wrap_dim as _wrap_dim
from .._grad import differentiable
from .._host_memory import host_memory, memory_error
from .._tensor import Tensor
from ..backends import PIECE, get_backend
from ..memory import graph_pool as _graph_pool  # bounds checks read the host: not in a capture
from ._index_plan import empty_basic, empty_slice, none_strides, split_advanced
from ._inplace import check_writable

__all__ = [
    "gather",
    "scatter",
    "scatter_add",
    "index_select",
    "masked_fill",
    "masked_select",
    "nonzero",
    "take",
    "index_put",
]


def _is_basic(i) -> bool:
    return i is None or i is Ellipsis or type(i) is int or type(i) is slice


def _device_array(t, idx, name="index"):
    """An index operand as an array on t's device (int64 or bool)."""
    b = get_backend(t.device)
    if isinstance(idx, Tensor):
        if idx.dtype.category > _dt.INT:
            raise IndexError(
                f"tensors used as indices must be long, int, byte or bool tensors (got "
                f"{idx.dtype.name})"
            )
        arr = idx._data if idx.device is t.device else b.from_host(idx._host())[0]
        if idx.dtype is _dt.uint8:
            arr = arr.astype(bool)  # torch treats uint8 indices as masks (deprecated)
        return arr
    if isinstance(idx, (list, tuple, np.ndarray)):
        host = np.asarray(idx)
        if host.dtype.kind not in "biu":
            if host.size == 0:
                host = host.astype(np.int64)
            else:
                raise IndexError(f"{name} lists must hold integers or bools, got {host.dtype}")
        return b.from_host(host)[0]
    raise IndexError(f"unsupported index type {type(idx).__name__}")


def _sequence_as_tuple(index) -> bool:
    """torch's legacy rule: a list (not a tuple) with a tensor, a sequence, a slice, None or
    Ellipsis in it indexes several dims, as the tuple of its items (x[[rows, cols]])."""
    if not isinstance(index, list) or len(index) >= 32:
        return False
    return any(
        isinstance(i, (Tensor, list, tuple, range, np.ndarray, slice)) or i is None or i is Ellipsis
        for i in index
    )


def _python_index(index):
    """range -> list of ints (torch indexes with a range as with its list); a list that
    torch reads as several dims -> that tuple, with torch's deprecation warning."""
    if type(index) is range:
        return list(index)
    if _sequence_as_tuple(index):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated "
            "and will be changed in pytorch 2.9; use x[tuple(seq)] instead of "
            "x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
            "x[torch.tensor(seq)], which will result either in an error or a "
            "different result",
            UserWarning,
            stacklevel=4,
        )
        index = tuple(index)
    if type(index) is tuple and any(type(i) is range for i in index):
        index = tuple(list(i) if type(i) is range else i for i in index)
    return index


def _normalise(t, index):
    index = _python_index(index)
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    basic = True
    ellipsis = False
    for i in index:
        if i is Ellipsis:
            if ellipsis:
                continue  # torch: a second Ellipsis spans no dims (x[..., ...] is x)
            ellipsis = True
        if isinstance(i, str):
            raise TypeError(
                f"a tensor can't be indexed with a string ({i!r}); use ints, "
                "slices, None, Ellipsis or integer/bool tensors"
            )
        if isinstance(i, Tensor) and i.ndim == 0 and i.dtype.category == _dt.INT:
            i = int(i.item())
        elif isinstance(i, (np.integer,)):
            i = int(i)
        elif type(i) is bool:
            basic = False
            i = np.asarray(i)
            out.append(get_backend(t.device).from_host(i)[0])
            continue
        if type(i) is slice:
            if i.step is not None and i.step <= 0:
                raise ValueError(
                    "step must be greater than zero (negative-step slices are not supported; "
                    "use t.flip(dim))"
                )
            i = slice(*(int(v) if isinstance(v, Tensor) else v for v in (i.start, i.stop, i.step)))
        elif not _is_basic(i):
            basic = False
            i = _device_array(t, i)
        out.append(i)
    return tuple(out), basic


def _check_ints(t, index):
    """IndexError with torch's wording for out-of-range integer indices."""
    dim = 0
    n_specified = sum(1 for i in index if i is not None and i is not Ellipsis)
    for i in index:
        if i is Ellipsis:
            dim += t._data.ndim - n_specified
            continue
        if i is None:
            continue
        if type(i) is int:
            if dim >= t._data.ndim:
                raise IndexError(f"too many indices for tensor of dimension {t._data.ndim}")
            size = t._data.shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
        dim += 1
    if dim > t._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {t._data.ndim}")


@differentiable(first=True)
def getitem(self, index):
    ti = type(index)
    if ti is slice:  # t[a:b]: the commonest index, a view with no parsing
        step = index.step
        if step is None or (type(step) is int and step > 0):
            data = self._data
            if data.ndim:
                r = data[index]
                if r.size:
                    return self._view_of(r)
                # an empty result: numpy resets an empty slice's start and step; torch
                # keeps both
                return empty_slice(self, 0, index)
    elif ti is int:
        data = self._data
        shape = data.shape
        if shape and -shape[0] <= index < shape[0]:
            return self._view_of(data[index, ...])  # `...`: a 0-d view, not a scalar
    elif index is None:  # t[None]: unsqueeze(0); C strides are torch's for the new dim
        data = self._data
        if data.size and data.flags.c_contiguous and 1 not in data.shape:
            return self._view_of(data.reshape((1,) + data.shape))
    elif ti is tuple:
        # ints, positive-step slices and one Ellipsis: numpy's view is torch's (ints select,
        # slices narrow), so no parsing. Anything else (None, tensors, bools, a bad step),
        # an int out of range (torch's message) or an empty result (torch keeps its offset)
        # takes the general path below.
        ellipsis = False
        for i in index:
            t = type(i)
            if t is slice:
                step = i.step
                if step is not None and (type(step) is not int or step <= 0):
                    break
            elif t is not int:
                if i is not Ellipsis or ellipsis:
                    break
                ellipsis = True
        else:
            data = self._data
            try:
                r = data[index if ellipsis else index + (Ellipsis,)]  # `...`: never a scalar
            except (IndexError, TypeError):
                r = None
            if r is not None and r.size:
                return self._view_of(r)
    idx, basic = _normalise(self, index)
    if basic:
        _check_ints(self, idx)
        if Ellipsis not in idx:
            idx = idx + (Ellipsis,)  # numpy then returns a 0-d view, never a scalar
        r = self._data[idx]
        if not r.size:  # numpy resets the starts and steps of empty slices; torch keeps them
            return empty_basic(self, idx, r)
        if None in idx:
            r = none_strides(get_backend(self.device).xp, self._data, idx, r)
        return self._view_of(r)
    b = get_backend(self.device)
    try:
        data, idx = split_advanced(self._data, idx)
        if b.wraps_indices:
            check_bounds(data.shape, idx)
        arr = _one_array_index(b, data, idx)
        if arr is None:
            arr = data[idx]
            if not arr.flags.owndata:  # numpy transposed its result, or made a view: copy it
                arr = b.astype(arr, self.dtype.np)  # the logical dtype: cuda keeps bf16 as bits
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None
    except MemoryError as exc:  # an impossible result: torch's error, not numpy's
        raise memory_error(exc, "indexing", (self,)) from None
    arr, st = b.adopt(arr)
    return Tensor._make(arr, self.device, self.dtype, st)


_WHOLE = slice(None)


def _one_array_index(b, data, idx):
    """data[idx] computed into the backend's planned result, where `idx` is one integer
    array (a take along its dim), one bool mask over the leading dims, or integer arrays
    over the leading dims (`_gathered`), with whole slices elsewhere, and data's other
    dims in C order. The result is then C-contiguous, as torch's is for a C-ordered
    index (numpy's x[:, i] is a transposed copy), and emulated cuda fills allocator memory
    with no host copy. None for any other index."""
    if len(idx) == 1:  # x[i]: the commonest
        ax, arr = 0, idx[0]
        if type(arr) is slice or not getattr(arr, "ndim", 0):
            return None
    elif type(idx[0]) is not slice and type(idx[1]) is not slice:  # x[i, j]
        arrays = _leading(idx)
        return _gathered(b, data, arrays) if arrays else None
    else:
        ax = arr = None
        for d, i in enumerate(idx):
            if type(i) is slice:
                if i != _WHOLE:
                    return None
            elif arr is None and getattr(i, "ndim", 0):
                ax, arr = d, i
            else:
                return None
        if arr is None:
            return None
    mask = arr.dtype.kind == "b"
    k = arr.ndim if mask else 1
    if mask:
        if ax or arr.shape != data.shape[:k]:
            return None  # (numpy's own error, or its rule)
    if not data.flags.c_contiguous:
        rest = [
            abs(st)
            for d, (n, st) in enumerate(zip(data.shape, data.strides, strict=True))
            if n > 1 and not ax <= d < ax + k
        ]
        if any(outer < inner for outer, inner in zip(rest, rest[1:], strict=False)):
            return None  # torch's result follows data's own order here, as numpy's does
    return _selected(b, data, arr) if mask else _take(b, data, arr, ax)


def _leading(idx):
    """The integer arrays at the head of `idx` when all that follows them is whole slices,
    else ()."""
    k = 0
    while k < len(idx) and type(idx[k]) is not slice:
        k += 1
    for i in idx[:k]:
        if not getattr(i, "ndim", 0) or i.dtype.kind not in "iu":
            return ()
    for i in idx[k:]:
        if type(i) is not slice or i != _WHOLE:
            return ()
    return idx[:k]


def _gathered(b, data, arrays):
    """data[arrays] for k >= 2 integer arrays over data's first k dims (whole slices after
    them, data's other dims in C order): the broadcast index dims, then data's other
    dims, in C order as numpy lays it out; emulated cuda fills the result over pieces of
    the index dims."""
    k, rest = len(arrays), data.shape[len(arrays) :]
    if not data.flags.c_contiguous:
        strides = [abs(st) for n, st in zip(rest, data.strides[k:], strict=True) if n > 1]
        if any(outer < inner for outer, inner in zip(strides, strides[1:], strict=False)):
            return None
    try:
        head = np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        return None  # (numpy's own error)
    tail = (1,) * len(rest)  # the index arrays aligned with the result's dims

    def gather(*parts):
        return data[tuple(p.reshape(p.shape[: p.ndim - len(rest)]) for p in parts)]

    return b.by_pieces(
        gather,
        tuple(a.reshape(a.shape + tail) for a in arrays),
        head + rest,
        data.dtype,
        tuple(range(len(head), len(head) + len(rest))),
    )


def _selected(b, data, mask):
    """data[mask] for a bool `mask` over data's leading dims, planned for the backend:
    emulated cuda counts the mask, allocates the result and fills it over runs of the
    mask's first dim, so numpy's temporaries stay piece-sized."""
    k = mask.ndim

    def select(d, m, out=None):
        if out is None:
            return d[m]
        run, at = max(1, PIECE // (d[0].size or 1)), 0
        for lo in range(0, d.shape[0], run):
            part = d[lo : lo + run][m[lo : lo + run]]
            out[at : at + part.shape[0]] = part
            at += part.shape[0]
        return out

    return b.compute_into(
        select,
        (data, mask),
        lambda: (
            None
            if data.size <= PIECE
            else ((int(np.count_nonzero(mask)),) + data.shape[k:], data.dtype, True)
        ),
    )


def _nonzero(b, data):
    """The indices of data's nonzeros (data.ndim >= 1) as an (ndim, n) int64 array (C order;
    its transpose has torch's nonzero() layout), planned for the backend as `_selected`
    is."""

    def where(d, out=None):
        if out is None:
            return b.xp.stack(b.xp.nonzero(d)).astype(np.int64, copy=False)
        run, at = max(1, PIECE // (d[0].size or 1)), 0
        for lo in range(0, d.shape[0], run):
            found = np.nonzero(d[lo : lo + run])
            n = found[0].shape[0]
            np.add(found[0], lo, out=out[0, at : at + n])
            for j in range(1, d.ndim):
                out[j, at : at + n] = found[j]
            at += n
        return out

    return b.compute_into(
        where,
        (data,),
        lambda: (
            None
            if data.size <= PIECE
            else ((data.ndim, int(np.count_nonzero(data))), np.dtype(np.int64), True)
        ),
    )


def _is_mask(i) -> bool:
    return getattr(getattr(i, "dtype", None), "kind", "") == "b"


def check_bounds(shape, idx) -> None:
    """IndexError for an out-of-range integer-array index, as cpu raises (for backends whose
    array library wraps them instead: cupy). Costs a device sync per index array."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    explicit = sum(
        0 if i is None else i.ndim if _is_mask(i) else 1 for i in idx if i is not Ellipsis
    )
    dim = 0
    for i in idx:
        if i is Ellipsis:
            dim += len(shape) - explicit
            continue
        if i is None:
            continue
        if _is_mask(i):
            dim += i.ndim
            continue
        if (
            getattr(getattr(i, "dtype", None), "kind", "") in "iu"
            and getattr(i, "size", 0)
            and dim < len(shape)
        ):
            n, lo, hi = shape[dim], int(i.min()), int(i.max())
            if hi >= n or lo < -n:
                raise IndexError(
                    f"index {hi if hi >= n else lo} is out of bounds for "
                    f"dimension {dim} with size {n}"
                )
        dim += 1


def _value_array(self, value):
    """The assigned value as an array (or scalar) of self's storage dtype on its device."""
    b = get_backend(self.device)
    if isinstance(value, Tensor):
        if value.device is not self.device:  # torch copies the value over, as copy_ does
            value = value.to(self.device)  # a method: transfer sits above ops
        arr = value._data
        return arr if value.dtype is self.dtype else b.astype(arr, self.dtype.np)
    if isinstance(value, (list, tuple, np.ndarray)):
        host = np.asarray(value).astype(self.dtype.np)
        return b.from_host(host)[0]
    if self._data.dtype != self.dtype.np:  # bfloat16 bits on real cuda
        return np.array(value, self.dtype.np).view(self._data.dtype)
    if self.dtype.category < _dt.COMPLEX and isinstance(value, complex):
        raise RuntimeError(f"can't assign a complex value to a {self.dtype.name} tensor")
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(
            f"can't assign a {type(value).__name__} to a {self.dtype.name} tensor; "
            "assign a number, a sequence of numbers or a Tensor"
        )
    return (
        np.asarray(value).astype(self.dtype.np)[()]
        if self.dtype.category == _dt.INT and (isinstance(value, float))
        else value
    )


def setitem(self, index, value):
    check_writable(self, "__setitem__")
    idx, basic = _normalise(self, index)
    if (
        not basic
        and isinstance(value, Tensor)
        and value.dtype is not self.dtype
        and (value.numel() != 1)
    ):
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{_dt.SCALAR_TYPE_NAMES[self.dtype.name]} for the destination and "
            f"{_dt.SCALAR_TYPE_NAMES[value.dtype.name]} for the source; convert the value "
            "with .to(x.dtype)"
        )
    val = _value_array(self, value)
    if basic:
        _check_ints(self, idx)
        target = self._data[idx]
        if hasattr(target, "ndim") and not isinstance(target, np.generic):
            try:
                get_backend(self.device).copy_(target, val)
            except ValueError as exc:
                raise RuntimeError(f"__setitem__: {exc}") from None
            self._bump_version()
            return
    try:
        data, idx = split_advanced(self._data, idx)
        if get_backend(self.device).wraps_indices:
            check_bounds(data.shape, idx)
        data[idx] = val
    except (ValueError, IndexError) as exc:
        raise type(exc)(str(exc).replace("axis", "dimension")) from None
    self._bump_version()


def index_put(self, indices, values, accumulate=False):
    out = self.clone()
    idx = tuple(indices)
    if accumulate:
        b = get_backend(self.device)
        ix, _ = _normalise(out, idx)
        if b.wraps_indices:
            check_bounds(out._data.shape, ix)
        b.index_add_(out._data, ix, _value_array(out, values))
        return out
    setitem(out, idx, values)
    return out


def _index_grid(b, index_arr, dim):
    """Advanced-index tuple addressing input[..., index[...] at dim, ...]."""
    nd = index_arr.ndim  # open grids (numpy's indices(sparse=True), which cupy lacks)
    grid = [
        b.xp.arange(n).reshape((1,) * k + (n,) + (1,) * (nd - k - 1))
        for k, n in enumerate(index_arr.shape)
    ]
    grid[dim] = index_arr
    return tuple(grid)


def _check_index_tensor(name, input, dim, index):
    if not isinstance(index, Tensor) or index.dtype is not _dt.int64:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(
            f"Index tensor must have the same number of dimensions as input tensor "
            f"({index.ndim} vs {input.ndim})"
        )
    for k in range(index.ndim):
        if k != dim and index.shape[k] > input.shape[k]:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(index.shape)} to "
                f"be no larger than self {list(input.shape)} apart from dimension {dim}"
            )


def _checked_index(name, t, dim, index):
    """gather's and scatter's (dim wrapped, t's backend, index on t's device), the index
    checked against the dim's size (not while a graph captures: that reads it back)."""
    d = _wrap_dim(dim, t.ndim)
    _check_index_tensor(name, t, d, index)
    ia = _device_array(t, index)
    n = t.shape[d] if t.ndim else 1
    if ia.size and not _graph_pool.active_captures and (int(ia.max()) >= n or int(ia.min()) < -n):
        raise RuntimeError(f"{name}(): index out of bounds for dimension {d} with size {n}")
    return d, get_backend(t.device), ia


@differentiable(first=True)
def gather(input, dim, index):
    d, b, ia = _checked_index("gather", input, dim, index)
    src = input._data if input.ndim else input._data.reshape(1)
    ia = ia if ia.ndim else ia.reshape(1)
    r = b.by_pieces(
        lambda s, i: s[_index_grid(b, i, d)], (src, ia), ia.shape, input.dtype.np, whole=(d,)
    )  # (advanced indexing: a new array)
    arr, st = b.adopt(r.reshape(index.shape))
    return Tensor._make(arr, input.device, input.dtype, st)


def scatter_(self, dim, index, src=None, value=None, reduce=None):
    check_writable(self, "scatter_")
    d, b, ia = _checked_index("scatter", self, dim, index)
    grid = _index_grid(b, ia, d)
    if src is None:
        src = value
    if isinstance(src, Tensor):
        if src.device is not self.device:
            from ._dispatch import mismatch as _mismatch

            raise _mismatch(self, src)
        vals = src._data[tuple(slice(0, s) for s in index.shape)]
        if src.dtype is not self.dtype:
            vals = b.astype(vals, self.dtype.np)
    else:
        vals = _value_array(self, src)
    if reduce is None:
        self._data[grid] = vals
    elif reduce == "add":
        b.index_add_(self._data, grid, vals)
    elif reduce == "multiply":
        b.index_mul_(self._data, grid, vals)
    else:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
    self._bump_version()
    return self


@differentiable
def scatter(input, dim, index, src=None, value=None, reduce=None):
    return scatter_(input.clone(), dim, index, src, value, reduce)


@differentiable
def scatter_add(input, dim, index, src):
    return scatter_(input.clone(), dim, index, src, reduce="add")


def scatter_add_(self, dim, index, src):
    return scatter_(self, dim, index, src, reduce="add")


def _take(b, src, index, axis):
    """src's elements at `index` (bounds checked, negatives from the end) along `axis`.
    The result is planned for the backend, so emulated cuda takes straight into allocator
    memory: numpy's take with out= and mode="wrap" (the default mode, "raise", buffers
    the result in a host temporary)."""
    shape = src.shape[:axis] + index.shape + src.shape[axis + 1 :]

    def take(s, i, out=None):
        if out is None:  # (numpy's "raise" mode checks the bounds; cupy's callers do)
            return b.xp.take(s, i, axis=axis)
        if s.flags.c_contiguous:
            return b.xp.take(s, i, axis=axis, out=out, mode="wrap")
        # np.take would first copy all of a strided src: index runs of it instead
        flat = i.reshape(-1)
        o = out.reshape(src.shape[:axis] + flat.shape + src.shape[axis + 1 :])
        head = (slice(None),) * axis
        run = max(1, PIECE * flat.size // (out.size or 1))
        for lo in range(0, flat.size, run):
            o[head + (slice(lo, lo + run),)] = s[head + (flat[lo : lo + run],)]
        return out

    def plan():  # the bounds "wrap" does not check, before anything is allocated
        if math.prod(shape) <= PIECE:
            return None  # small: numpy's take allocates (and checks), adopt() copies it in
        n, lo, hi = src.shape[axis], int(index.min()), int(index.max())
        if hi >= n or lo < -n:
            raise IndexError(
                f"index {hi if hi >= n else lo} is out of bounds for dimension {axis} with size {n}"
            )
        return shape, src.dtype, True

    return b.compute_into(take, (src, index), plan)


@differentiable(first=True)
def index_select(input, dim, index):
    d = _wrap_dim(dim, input.ndim)
    if not isinstance(index, Tensor) or index.dtype.category != _dt.INT:
        raise RuntimeError("index_select(): index must be a 0-D or 1-D int64/int32 tensor")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector (0-D or 1-D)")
    b = get_backend(input.device)
    ia = _device_array(input, index).reshape(-1)
    n = input.shape[d] if input.ndim else 1
    if (
        ia.size and not _graph_pool.active_captures and (int(ia.max()) >= n or int(ia.min()) < 0)
    ):  # torch: no negative wrap
        raise IndexError(f"index_select(): index out of range in self (dimension {d}, size {n})")
    src = input._data if input.ndim else input._data.reshape(1)
    arr, st = b.adopt(_take(b, src, ia, d))
    if input.ndim == 0:
        arr = arr.reshape(())
    return Tensor._make(arr, input.device, input.dtype, st)


def _mask(self, mask, name):
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool:
        raise RuntimeError(
            f"{name} only supports boolean masks, but got mask with dtype "
            f"{getattr(mask, 'dtype', type(mask).__name__)}"
        )
    if mask.device is not self.device:
        from ._dispatch import mismatch as _mismatch

        raise _mismatch(self, mask)
    return mask._data


def masked_fill_(self, mask, value):
    check_writable(self, "masked_fill_")
    m = _mask(self, mask, "masked_fill_")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but "
                f"got tensor with {value.ndim} dimension(s)."
            )
        value = value.item()
    b = get_backend(self.device)
    val = _value_array(self, value)
    try:
        m = b.xp.broadcast_to(m, self._data.shape)
    except ValueError:
        raise RuntimeError(
            f"masked_fill_: mask of shape {list(mask.shape)} is not "
            f"broadcastable to {list(self.shape)}"
        ) from None
    self._data[m] = val
    self._bump_version()
    return self


@differentiable
def masked_fill(input, mask, value):
    _mask(input, mask, "masked_fill")
    try:
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    except ValueError:
        raise RuntimeError(
            f"masked_fill: mask of shape {list(mask.shape)} is not "
            f"broadcastable to {list(input.shape)}"
        ) from None
    out = (input if tuple(input.shape) == shape else input.expand(shape)).clone()
    return masked_fill_(out, mask, value)


@differentiable(first=True)
@host_memory
def masked_select(input, mask):
    m = _mask(input, mask, "masked_select")
    b = get_backend(input.device)
    x, mm = b.xp.broadcast_arrays(input._data, m)
    arr, st = b.adopt(_selected(b, x, mm))
    return Tensor._make(arr, input.device, input.dtype, st)


@host_memory
def nonzero(input, *, as_tuple=False) -> Tensor | tuple[Tensor, ...]:
    b = get_backend(input.device)
    data = input._data if input._data.ndim else input._data.reshape(1)
    rows, st = b.adopt(_nonzero(b, data))
    if as_tuple:
        return tuple(Tensor._make(r, input.device, _dt.int64, st) for r in rows)
    arr = rows.T  # (n, ndim) with strides (1, n), as torch lays it out
    if input.ndim == 0:
        arr = arr[:, :0]
    return Tensor._make(arr, input.device, _dt.int64, st)


@differentiable(first=True)
def take(input, index):
    b = get_backend(input.device)
    ia = _device_array(input, index)
    n = input.numel()
    if ia.size and not _graph_pool.active_captures and (int(ia.max()) >= n or int(ia.min()) < -n):
        raise IndexError(f"take(): index out of range for tensor of {n} elements")
    arr, st = b.adopt(_take(b, input._data.reshape(-1), ia, 0))
    return Tensor._make(arr, input.device, input.dtype, st)
