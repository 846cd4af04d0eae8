"""Functional forms of the view/layout methods (`gt.reshape(x, ...)`, `gt.transpose(x, 0, 1)`),
which are the Tensor methods themselves, and the copying rearrangements flip/roll/repeat/tile
(copies, as in torch: a negative-stride view does not exist here)."""

from __future__ import annotations

from .. import _views
from .._dims import shape_args
from .._dims import wrap_dim as _wrap_dim
from .._grad import differentiable
from .._host_memory import host_memory
from .._tensor import Tensor
from ..backends import get_backend

__all__ = ["flip", "roll", "repeat", "tile", "reshape", "transpose", "swapaxes", "swapdims", "permute", "movedim", "moveaxis",
           "narrow", "select", "squeeze", "unsqueeze", "flatten", "unflatten", "t",
           "as_strided", "broadcast_to", "clone", "diagonal", "unbind", "detach"]

reshape = _views.reshape
transpose = swapaxes = swapdims = _views.transpose
permute = _views.permute
movedim = moveaxis = _views.movedim
narrow = _views.narrow
select = _views.select
squeeze = _views.squeeze
unsqueeze = _views.unsqueeze
flatten = _views.flatten
unflatten = _views.unflatten
t = _views.t
as_strided = _views.as_strided
broadcast_to = _views.broadcast_to
clone = _views.clone
diagonal = _views.diagonal
unbind = _views.unbind


def detach(input):
    return input.detach()


def _copy_result(t, arr):
    """A tensor over `arr`: a fresh array as it is, a view (flip's) copied in its own
    layout by the backend (emulated cuda: straight into allocator memory)."""
    b = get_backend(t.device)
    arr, st = b.adopt(arr if arr.flags.owndata else b.astype(arr, arr.dtype))
    return Tensor._make(arr, t.device, t.dtype, st)


def _dims(t, dims):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(_wrap_dim(d, t.ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dims {list(dims)}: dim {out[0]} appears multiple times in the list "
                           "of dims; give each dim once")
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


@differentiable(first=True)
@host_memory
def roll(input, shifts, dims=None):
    xp = get_backend(input.device).xp
    if dims is not None and len((shifts,) if isinstance(shifts, int) else shifts) != len(
            (dims,) if isinstance(dims, int) else dims):
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {shifts}, "
                           f"dims: {dims}; give one shift per dim")
    if dims is None:
        return _copy_result(input, xp.roll(input._data.reshape(-1), shifts).reshape(
            input._data.shape))
    return _copy_result(input, xp.roll(input._data, shifts, _dims(input, dims)))


@differentiable(first=True)
@host_memory
def repeat(input, *sizes):
    """torch's repeat: tile the tensor `sizes` times along each (possibly new, leading) dim."""
    reps = shape_args(sizes)
    if any(r < 0 for r in reps):
        raise RuntimeError(f"repeat(): trying to create tensor with negative dimension: repeats "
                           f"{list(reps)} must be >= 0")
    if len(reps) < input.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor ({len(reps)} < {input.ndim})")
    return _copy_result(input, get_backend(input.device).xp.tile(input._data, reps))


@host_memory
def tile(input, dims):
    reps = shape_args((dims,))
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)
