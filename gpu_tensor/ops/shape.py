"""Functional forms of the view/layout methods (`gt.reshape(x, ...)`, `gt.transpose(x, 0, 1)`),
which are the Tensor methods themselves, and the copying rearrangements flip/roll/repeat/tile
(copies, as in torch: a negative-stride view does not exist here)."""

from __future__ import annotations

import itertools

from .._dims import shape_args
from .._dims import wrap_dim as _wrap_dim
from .._grad import differentiable
from .._host_memory import host_memory
from .._layout import empty_preserving
from .._tensor import Tensor
from .._views import (  # the Tensor methods themselves
    as_strided,
    broadcast_to,
    clone,
    diagonal,
    flatten,
    movedim,
    narrow,
    permute,
    reshape,
    select,
    squeeze,
    t,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
)
from ..backends import get_backend

__all__ = [
    "flip",
    "roll",
    "repeat",
    "tile",
    "reshape",
    "transpose",
    "swapaxes",
    "swapdims",
    "permute",
    "movedim",
    "moveaxis",
    "narrow",
    "select",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "t",
    "as_strided",
    "broadcast_to",
    "clone",
    "diagonal",
    "unbind",
    "detach",
]

swapaxes = swapdims = transpose
moveaxis = movedim


def detach(input):
    return input.detach()


def _copy_result(t, arr):
    """A tensor over `arr` (flip's result, shaped like `t`): a fresh array as it is, a view
    copied into a tensor with t's preserve_format strides (torch's empty_like(t): an
    expanded input's result is dense in the input's stride order, size-1 dims keep t's
    strides). A C-contiguous t with no size-1 dim, the commonest, has the strides that
    the backend's one astype copy gives."""
    data = t._data
    if arr.flags.owndata or (data.flags.c_contiguous and 1 not in data.shape):  # commonest
        b = get_backend(t.device)
        arr, st = b.adopt(arr if arr.flags.owndata else b.astype(arr, t.dtype.np))
        return Tensor._make(arr, t.device, t.dtype, st)
    out = empty_preserving(t)
    get_backend(t.device).copy_(out._data, arr)
    return out


def _dims(t, dims):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(_wrap_dim(d, t.ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(
            f"dims {list(dims)}: dim {out[0]} appears multiple times in the list "
            "of dims; give each dim once"
        )
    return out


@differentiable(first=True)
@host_memory
def flip(input, *dims):
    """A copy with the order of elements reversed along `dims` (a list, or, as torch's
    Tensor.flip takes them, several ints)."""
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = dims[0]
    if input.ndim == 0:
        return input.clone()
    return _copy_result(input, get_backend(input.device).xp.flip(input._data, _dims(input, dims)))


def _fresh(t, shape):
    """A new C-contiguous array of `shape` in t's dtype on t's device (where emulated cuda
    allocates: allocator memory), its storage, and the backend, for a copy to fill."""
    b = get_backend(t.device)
    arr, st = b.empty(shape, t.dtype.np)  # the logical dtype: cuda keeps bf16 as bits
    return arr, st, b


@differentiable(first=True)
@host_memory
def roll(input, shifts, dims=None):
    """torch's roll: a C-contiguous copy with the elements shifted along `dims` (along the
    flattened tensor when None), copied block by block into the result."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is not None and len(shifts) != len((dims,) if isinstance(dims, int) else dims):
        raise RuntimeError(
            f"roll(): shifts and dimensions must align. shifts: {list(shifts)}, "
            f"dims: {dims}; give one shift per dim"
        )
    data = input._data
    if not data.ndim and dims is not None:
        raise IndexError(
            f"roll(): dimension specified as {dims} but tensor has no "
            "dimensions; roll a 0-d tensor without dims"
        )
    out, st, b = _fresh(input, data.shape)
    if dims is None:  # the flattened tensor: C order, so shift a contiguous copy's run
        if len(shifts) != 1:
            raise RuntimeError(
                f"roll(): shifts {list(shifts)} need as many dims; give dims, "
                "or one shift for the flattened tensor"
            )
        src = data if data.flags.c_contiguous else b.contiguous(data)
        _roll_into(b, out.reshape(-1), src.reshape(-1), {0: shifts[0]})
    else:
        _roll_into(b, out, data, dict(zip(_dims(input, dims), shifts, strict=True)))
    return Tensor._make(out, input.device, input.dtype, st)


def _roll_into(b, out, src, shifts):
    """out = src rolled by `shifts` ({dim: shift}): along each shifted dim the last k
    elements go first, one block copy per combination of the dims' two parts."""
    whole = ((slice(None), slice(None)),)  # (part of src, where it goes in out)
    parts = []
    for d, n in enumerate(src.shape):
        k = shifts.get(d, 0) % n if n else 0
        parts.append(
            ((slice(n - k, None), slice(None, k)), (slice(None, n - k), slice(k, None)))
            if k
            else whole
        )
    for combo in itertools.product(*parts):
        b.copy_(out[tuple(o for _, o in combo)], src[tuple(s for s, _ in combo)])


@differentiable(first=True)
@host_memory
def repeat(input, *sizes):
    """torch's repeat: tile the tensor `sizes` times along each (possibly new, leading) dim,
    as one broadcast copy into the C-contiguous result seen as (reps, size) pairs."""
    reps = shape_args(sizes)
    if any(r < 0 for r in reps):
        raise RuntimeError(
            f"repeat(): trying to create tensor with negative dimension: repeats "
            f"{list(reps)} must be >= 0"
        )
    if len(reps) < input.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor ({len(reps)} < {input.ndim})"
        )
    data = input._data
    sizes = (1,) * (len(reps) - data.ndim) + data.shape
    out, st, b = _fresh(input, tuple(r * n for r, n in zip(reps, sizes, strict=True)))
    if out.size:
        pairs = tuple(x for r, n in zip(reps, sizes, strict=True) for x in (r, n))
        ones = tuple(x for n in sizes for x in (1, n))
        b.copy_(out.reshape(pairs), data.reshape(ones))
    return Tensor._make(out, input.device, input.dtype, st)


@host_memory
def tile(input, dims):
    reps = shape_args((dims,))
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)
