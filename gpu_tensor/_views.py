"""Views: reshaping, transposing, slicing, expanding; never a copy unless stated (layout
changes that copy, and as_strided, are in `_layout.py`).

Every view is an array view of the same buffer plus the same UntypedStorage object, so
`data_ptr()`/`storage_offset()` follow from the array's address.
"""

from __future__ import annotations

import numpy as _np

from ._dims import infer_size, shape_args
from ._dims import wrap_dim as _wrap_dim
from ._grad import STATE, checks_inline, differentiable, record
from ._layout import as_strided, clone, contiguous, empty_at  # noqa: F401  (ops/shape.py)
from ._modes import PASS, intercept, watch
from ._tensor import Tensor
from .backends import get_backend

__all__ = ["compute_stride", "empty_view"]

MODES_ON = watch(globals())  # the modes word, read first by every op here (_modes.py)


def compute_stride(oldshape, oldstride, newshape):
    """Strides viewing (oldshape, oldstride) as newshape without a copy, or None.
    PyTorch's computeStride, so `view` accepts and refuses exactly what torch does."""
    if not oldshape:
        return (1,) * len(newshape)
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0 and tuple(oldshape) == tuple(newshape):
        return tuple(oldstride)
    newstride = [0] * len(newshape)
    if numel == 0:
        for d in range(len(newshape) - 1, -1, -1):
            newstride[d] = (
                1 if d == len(newshape) - 1 else max(newshape[d + 1], 1) * newstride[d + 1]
            )
        return tuple(newstride)
    view_d = len(newshape) - 1
    chunk_base = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for td in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[td]
        if td == 0 or (oldshape[td - 1] != 1 and oldstride[td - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if td > 0:
                chunk_base = oldstride[td - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def _strided(t, shape, strides):
    """A view of t's data with the same first element and the given shape/strides
    (elements)."""
    isz = t._data.itemsize
    xp = get_backend(t.device).xp
    arr = xp.lib.stride_tricks.as_strided(
        t._data, shape=tuple(shape), strides=tuple(s * isz for s in strides)
    )
    return t._view_of(arr)


def _handed_off(fn, args):
    """The result of the mode (gpu_tensor/_modes.py) or of autograd (gpu_tensor/_grad.py:
    the recorder calls `fn` again with grad mode off) that takes the view `fn(*args)`, or
    PASS when neither does. The views make this check themselves, first thing
    (`checks_inline`), to save a wrapper's frame on their hot path."""
    if MODES_ON:
        r = intercept(fn.__name__, fn, args, None)
        if r is not PASS:
            return r
    if args[0]._requires_grad and STATE.enabled:
        return record(fn, None, args, None)
    return PASS


# -- reshaping ------------------------------------------------------------------------
@checks_inline
def view(self, *shape):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(view, (self, *shape))) is not PASS:
            return r
    data = self._data
    # numpy's reshape matches torch's computeStride when the strides are the standard C ones;
    # size-1 dims may carry any stride and still count as contiguous, so they take the
    # general path (torch keeps their strides: arange(4.)[::2][:1].view(1, 1) is (2, 2))
    if shape and data.flags.c_contiguous and 1 not in data.shape:
        # contiguous: numpy's reshape is always a view (on failure the checks below raise
        # torch's error)
        if type(shape[0]) is int:  # view(2, 3)
            try:
                r = data.reshape(shape)
                if r.shape == shape or -1 in shape:  # numpy would infer any negative size
                    return self._view_of(r)
            except (ValueError, TypeError):
                pass
        elif len(shape) == 1 and isinstance(shape[0], tuple):  # view((2, 3)), view(t.shape)
            try:
                r = data.reshape(shape[0])
                if r.shape == shape[0] or -1 in shape[0]:
                    return self._view_of(r)
            except (ValueError, TypeError):
                pass
    if (
        len(shape) == 1
        and not isinstance(shape[0], (tuple, list, int))
        and not hasattr(shape[0], "__index__")
    ):
        return _view_dtype(self, shape[0])
    if (r := _view_or_none(self, shape)) is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return r


def _view_or_none(self, shape):
    """self viewed as `shape` (view's arguments), or None when its strides do not allow it
    (torch's computeStride)."""
    shape = infer_size(shape_args(shape), self._data.size)
    data = self._data
    if data.flags.c_contiguous and 1 not in data.shape:
        return self._view_of(data.reshape(shape))
    strides = compute_stride(data.shape, self.stride(), shape)
    return None if strides is None else _strided(self, shape, strides)


def _view_dtype(self, dtype):
    import numpy as np

    from . import dtype as _dt

    if isinstance(dtype, np.generic):  # a numpy scalar is a (bad) size, not a dtype
        shape_args((dtype,))  # raises torch's "must be tuple of ints"
    if isinstance(dtype, str):  # torch takes a dtype object, never a name ('H' is not uint16)
        raise TypeError(
            f"view() received an invalid combination of arguments - got (str {dtype!r}), but "
            "expected (torch.dtype dtype) or (tuple of ints size): pass a dtype such as "
            "gpu_tensor.float32, not its name"
        )

    dt = _dt.to_dtype(dtype)
    if dt.itemsize != self.dtype.itemsize:
        if self._data.ndim == 0 or self.stride()[-1] != 1:
            raise RuntimeError(
                f"view({dt}): changing the element size needs a tensor whose last dimension "
                "is contiguous (stride 1)"
            )
    storable = self._data.dtype if dt is self.dtype else _storable(self, dt)
    try:
        arr = self._data.view(storable)
    except ValueError as exc:  # torch: RuntimeError (e.g. last dim not divisible)
        raise RuntimeError(f"view({dt}): {exc}") from None
    t = self._view_of(arr)
    t.dtype = dt
    return t


def _storable(t, dt):
    import numpy as np

    if not get_backend(t.device).host_arrays and dt.name == "bfloat16":
        return np.uint16  # real cuda keeps bfloat16 as its bits
    return dt.np


def view_as(self, other):
    return view(self, other.shape)


@checks_inline
def reshape(self, *shape):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(reshape, (self, *shape))) is not PASS:
            return r
    data = self._data
    if shape and data.flags.c_contiguous and 1 not in data.shape:  # as in view()
        if type(shape[0]) is int:
            try:
                r = data.reshape(shape)
                if r.shape == shape or -1 in shape:  # as in view()
                    return self._view_of(r)
            except (ValueError, TypeError):
                pass
        elif len(shape) == 1 and isinstance(shape[0], tuple):
            try:
                r = data.reshape(shape[0])
                if r.shape == shape[0] or -1 in shape[0]:
                    return self._view_of(r)
            except (ValueError, TypeError):
                pass
    r = _view_or_none(self, shape)
    return contiguous(self).view(*shape) if r is None else r  # a copy when a view cannot do


def reshape_as(self, other):
    return reshape(self, other.shape)


def flatten(self, start_dim=0, end_dim=-1):
    nd = self._data.ndim
    if start_dim == 0 and end_dim == -1 and nd > 1:  # the default: all dims into one
        return reshape(self, -1)
    if nd == 0:
        return reshape(self, 1)
    s, e = _wrap_dim(start_dim, nd), _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shp = self._data.shape
    n = 1
    for x in shp[s : e + 1]:
        n *= x
    return reshape(self, shp[:s] + (n,) + shp[e + 1 :])


def unflatten(self, dim, sizes):
    if self._data.ndim == 0:
        raise RuntimeError(
            "unflatten: Dimension size must be non-zero; a 0-d tensor has no dimension to unflatten"
        )
    d = _wrap_dim(dim, self._data.ndim)
    shp = self._data.shape
    sizes = infer_size(tuple(sizes), shp[d])
    return (
        view(self, shp[:d] + sizes + shp[d + 1 :])
        if self._data.flags.c_contiguous
        else (reshape(self, shp[:d] + sizes + shp[d + 1 :]))
    )


# -- permuting ------------------------------------------------------------------------
@checks_inline
def transpose(self, dim0, dim1):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(transpose, (self, dim0, dim1))) is not PASS:
            return r
    data = self._data
    nd = data.ndim
    # a matrix's two dims, swapped (the commonest call): no dim wrapping needed
    if (
        nd == 2
        and type(dim0) is int
        and type(dim1) is int
        and -2 <= dim0 <= 1
        and (-2 <= dim1 <= 1)
        and (dim0 - dim1) & 1
    ):
        return self._view_of(data.T)
    if nd == 0:
        _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
        return self._view_of(data)
    return self._view_of(data.swapaxes(_wrap_dim(dim0, nd), _wrap_dim(dim1, nd)))


@differentiable(first=True)
def t(self):
    if self._data.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is "
            f"{self._data.ndim}D; use .transpose(dim0, dim1) or .mT"
        )
    return self._view_of(self._data.T)


@checks_inline
def permute(self, *dims):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(permute, (self, *dims))) is not PASS:
            return r
    if dims and type(dims[0]) is int:  # permute(1, 0): numpy checks what torch checks
        try:
            return self._view_of(self._data.transpose(dims))
        except (ValueError, TypeError, IndexError):
            pass  # the checks below raise torch's error
    dims = shape_args(dims)
    nd = self._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute: number of dimensions in the tensor input does not match the length "
            f"of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
            f"len(dims) = {len(dims)}"
        )
    axes = [_wrap_dim(d, nd) for d in dims]
    if len(set(axes)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed in {list(dims)}")
    return self._view_of(self._data.transpose(axes))


def movedim(self, source, destination):
    nd = self._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError("movedim: source and destination must have the same length")
    src = [_wrap_dim(d, nd) for d in src]
    dst = [_wrap_dim(d, nd) for d in dst]
    if nd == 0:
        return self._view_of(self._data)  # torch: movedim(0, -1) of a 0-d tensor is itself
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permute(self, order)


@differentiable(first=True)
def _T(self):
    return self._view_of(self._data.T)


def _mT(self):
    if self._data.ndim == 0:
        return self._view_of(self._data)  # torch returns a 0-d tensor unchanged
    if self._data.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices; "
            f"got a {self._data.ndim}-D tensor"
        )
    return transpose(self, -2, -1)


def _mH(self):
    r = _mT(self)
    return r.conj() if self.is_complex() else r


# -- selecting ------------------------------------------------------------------------
@checks_inline
def narrow(self, dim, start, length):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(narrow, (self, dim, start, length))) is not PASS:
            return r
    nd = self._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    size = self._data.shape[d]
    start = int(start)
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    if length == 0:  # numpy would drop the offset (and the start); torch keeps it
        shp = list(self._data.shape)
        shp[d] = 0
        return empty_view(
            self, shp, self.stride(), self.storage_offset() + start * (self.stride(d))
        )
    idx = (slice(None),) * d + (slice(start, start + length),)
    return self._view_of(self._data[idx])


def empty_view(self, shape, strides, offset):
    """An empty view of self's storage with torch's strides and element `offset` (torch
    keeps the offset of empty slices: arange(4)[4:].storage_offset() == 4, and computes it
    from the clamped starts even past the storage's end: arange(24.).view(2, 3, 4)[5:, 1]
    is at 28)."""
    return self._view_of(empty_at(self, shape, strides, offset))


@checks_inline
def select(self, dim, index):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(select, (self, dim, index))) is not PASS:
            return r
    nd = self._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    size = self._data.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size "
            f"{list(self._data.shape)} at dimension {d}"
        )
    # the trailing Ellipsis keeps numpy returning a 0-d view, never a detached scalar
    return self._view_of(self._data[(slice(None),) * d + (index, Ellipsis)])


@differentiable(first=True)
def unbind(self, dim=0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, self._data.ndim)
    return tuple(select(self, d, i) for i in range(self._data.shape[d]))


@differentiable(first=True)
def diagonal(self, offset=0, dim1=0, dim2=1):
    nd = self._data.ndim
    a, b = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    data = self._data
    d = data.diagonal(offset, a, b)  # numpy's is read-only; torch's is a writable view
    if d.size == 0:
        return self._view_of(d)  # nothing to write
    start = [slice(None)] * nd
    start[b if offset >= 0 else a] = slice(abs(offset), None)
    xp = get_backend(self.device).xp
    return self._view_of(xp.lib.stride_tricks.as_strided(data[tuple(start)], d.shape, d.strides))


# -- expanding and squeezing ----------------------------------------------------------
@checks_inline
def expand(self, *sizes):
    """A view repeating size-1 dims (stride 0) and adding leading dims; -1 keeps a dim.
    Strides follow torch's inferExpandGeometry, size-1 dims included (a new leading dim
    of size 1 takes size * stride of the dim after it: zeros(3).expand(1, 3) is (3, 1))."""
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(expand, (self, *sizes))) is not PASS:
            return r
    sizes = shape_args(sizes)
    data = self._data
    shp, st = data.shape, data.strides  # strides in bytes (scaled back only on the slow path)
    nd = len(sizes)
    lead = nd - len(shp)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({nd}) must be greater or equal to the "
            f"number of dimensions in the tensor ({len(shp)})"
        )
    new_shape, new_st = list(sizes), [0] * nd
    for i in range(nd - 1, -1, -1):  # right to left, as torch checks (and reports) them
        want = sizes[i]
        if i >= lead:
            have = shp[i - lead]
            if want == have or want == -1:
                new_shape[i], new_st[i] = have, st[i - lead]
                continue
            if have != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({want}) must match the existing size "
                    f"({have}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                    f"Tensor sizes: {list(shp)}"
                )
        if want == -1:
            raise RuntimeError(
                f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                f"non-existing dimension {i} (-1 keeps an existing dimension; give the size)"
            )
        if want < 0:
            raise RuntimeError(
                f"expand: the expanded size {want} at dimension {i} is negative; sizes must be "
                ">= 0 (or -1 to keep an existing dimension)"
            )
        if want == 1 and i + 1 < nd:  # a new size-1 dim (torch: size * stride of the next)
            new_st[i] = new_shape[i + 1] * new_st[i + 1]
    new_shape = tuple(new_shape)
    if new_shape == shp and tuple(new_st) == st:
        return self._view_of(data)
    dev = self.device
    b = dev._backend or get_backend(dev)
    if b.xp is _np:
        # numpy builds a strided view over a contiguous buffer in ~1 us (as_strided: ~2.7
        # us): the array itself when contiguous (then its read-only flag carries over), else
        # the storage's flat buffer at the array's offset (which costs an address lookup;
        # not for read-only arrays, whose storage buffer may be writable, nor empty ones,
        # whose storage buffer is a placeholder)
        if data.flags.c_contiguous:
            return self._view_of(
                _np.ndarray(new_shape, data.dtype, buffer=data, strides=tuple(new_st))
            )
        if data.size and data.flags.writeable:
            stg = self._storage
            return self._view_of(
                _np.ndarray(
                    new_shape,
                    data.dtype,
                    buffer=stg._buf,
                    offset=b.ptr(data) - stg._ptr,
                    strides=tuple(new_st),
                )
            )
    isz = data.itemsize
    return _strided(self, new_shape, [s // isz for s in new_st])


def expand_as(self, other):
    return expand(self, other.shape)


def broadcast_to(self, size):
    return expand(self, size)


@checks_inline
def unsqueeze(self, dim):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(unsqueeze, (self, dim))) is not PASS:
            return r
    nd = self._data.ndim
    d = _wrap_dim(dim, nd + 1)
    shp = self._data.shape
    # torch keeps the strides of existing size-1 dims; numpy's reshape would rewrite them
    return (
        self._view_of(self._data.reshape(shp[:d] + (1,) + shp[d:]))
        if (self._data.flags.c_contiguous and 1 not in shp)
        else _unsqueeze_strided(self, d)
    )


def _unsqueeze_strided(self, d):
    shp, st = list(self._data.shape), list(self.stride())
    new_st = st[d] * shp[d] if d < len(shp) else 1
    shp.insert(d, 1)
    st.insert(d, new_st)
    return _strided(self, shp, st)


@checks_inline
def squeeze(self, dim=None):
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(squeeze, (self, dim))) is not PASS:
            return r
    shp = self._data.shape
    nd = len(shp)
    if dim is None:
        dims = [i for i in range(nd) if shp[i] == 1]
    else:
        ds = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = [d for d in (_wrap_dim(x, nd) for x in ds) if nd and shp[d] == 1]
    if not dims:
        return self._view_of(self._data)
    return self._view_of(self._data.squeeze(axis=tuple(dims)))


@differentiable(first=True)
def unfold(self, dimension, size, step):
    nd = self._data.ndim
    d = _wrap_dim(dimension, nd)
    shp = list(self._data.shape) or [1]
    st = list(self.stride()) or [1]
    if size > shp[d]:
        raise RuntimeError(
            f"maximum size for tensor at dimension {d} is {shp[d]} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (shp[d] - size) // step + 1
    new_shape = shp[:d] + [count] + shp[d + 1 :] + [size]
    new_stride = st[:d] + [st[d] * step] + st[d + 1 :] + [st[d]]
    if nd == 0:
        new_shape, new_stride = [size], [1]
    return _strided(self, new_shape, new_stride)


def _H(self):
    """t.H: the conjugate transpose of a matrix; of a 0- or 1-d tensor, t.T (as torch)."""
    return _mH(self) if self._data.ndim == 2 else _T(self)
