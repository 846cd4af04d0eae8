"""Layout: as_strided, contiguous (incl. channels_last), clone (keeping dense layouts)."""

from __future__ import annotations

import numpy as np

from ._dims import shape_args
from ._grad import STATE, checks_inline, differentiable, record
from ._modes import PASS, intercept, watch
from ._tensor import Tensor, channels_last, contiguous_format, preserve_format
from .backends import get_backend
from .layouts import channels_last_3d, format_strides, memory_format_arg

_new = object.__new__
MODES_ON = watch(globals())  # the modes word, read first by contiguous() and clone()

__all__ = [
    "as_strided",
    "contiguous",
    "clone",
    "contiguous_format",
    "channels_last",
    "preserve_format",
    "preserved_strides",
    "empty_preserving",
    "empty_with_strides",
]


@differentiable(first=True)
def as_strided(self, size, stride, storage_offset=None):
    size, stride = shape_args((size,)), shape_args((stride,))
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {size} vs {stride}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative strides are not supported, got {stride}")
    off = self.storage_offset() if storage_offset is None else int(storage_offset)
    if off < 0:
        raise RuntimeError(f"as_strided: invalid storage offset {off}; it must be >= 0")
    if 0 in size:  # no bytes: torch takes any offset, even past the storage's end
        return self._view_of(empty_at(self, size, stride, off))
    st = self._storage
    if all(n > 0 for n in size):  # torch's checkInBoundsForStorage (numpy checks some only)
        last = off + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if (last + 1) * self.dtype.itemsize > st.nbytes():
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                f"{off} need more bytes than the storage's {st.nbytes()}; pick sizes and "
                "strides inside the storage"
            )
    b = get_backend(self.device)
    try:
        arr = b.from_storage(st, size, stride, off, self.dtype.np)
    except (TypeError, ValueError) as exc:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off} "
            f"need more bytes than the storage's {st.nbytes()}"
        ) from exc
    return self._view_of(arr)


class _At:
    """numpy's view of an address (no bytes) that keeps the storage's buffer alive."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, ptr, readonly, owner):
        self.__array_interface__ = {
            "data": (ptr, readonly),
            "shape": (0,),
            "typestr": "|u1",
            "version": 3,
        }
        self._owner = owner


def empty_at(self, shape, strides, offset):
    """An array with no elements (a 0 in `shape`) at element `offset` of self's storage,
    with the given strides (elements): torch's empty views keep their strides and offset,
    and the offset may lie past the storage's end (arange(24.).view(2, 3, 4)[5:, 1] is at
    28 of 24). numpy's ndarray(buffer=, offset=) refuses such an offset even with no
    elements, so the numpy array is built at the address itself; the address is the
    tensor's record of its offset (storage_offset() and data_ptr() read it, later views
    start from it). It spans no bytes, so nothing ever reads or writes there. Built from
    the storage's address, not its buffer object, which for an empty tensor's storage is
    a placeholder elsewhere. cupy's ndarray takes such an address as it is."""
    data, st = self._data, self._storage
    b = get_backend(self.device)
    if not b.host_arrays:  # the logical dtype: cuda stores bfloat16 as uint16 bits
        try:
            return b.from_storage(st, shape, strides, offset, self.dtype.np)
        except AssertionError:  # cupy adds no offset to a null pointer (a 0-byte storage):
            # keep the view valid at offset 0 (storage_offset() then reads 0, not torch's)
            return b.from_storage(st, shape, strides, 0, self.dtype.np)
    isz = data.itemsize
    raw = np.asarray(_At(st._ptr + offset * isz, not data.flags.writeable, st._buf))
    return np.lib.stride_tricks.as_strided(
        raw.view(data.dtype), tuple(shape), tuple(s * isz for s in strides)
    )


def _handed_off(fn, self, memory_format):
    """The result of the mode (gpu_tensor/_modes.py) or of autograd (gpu_tensor/_grad.py:
    the recorder calls `fn` again with grad mode off) that takes `fn(self, memory_format)`,
    or PASS when neither does. contiguous() and clone() make this check themselves, first
    thing (`checks_inline`), as the hot views do: no wrapper frame on their warm path."""
    kwargs = None if memory_format is None else {"memory_format": memory_format}
    if MODES_ON:
        r = intercept(fn.__name__, fn, (self,), kwargs)
        if r is not PASS:
            return r
    if self._requires_grad and STATE.enabled:
        return record(fn, None, (self,), kwargs)
    return PASS


@checks_inline
def contiguous(self, memory_format=None):
    """self when C-contiguous (or channels_last, asked for and met), else a copy that is.
    On real cuda a warm copy is the backend's entry for the source's dtype, shape, strides
    and alignment (backends/cuda_warm.py `bind_copy`), bound from the general path's first
    result of that key (`_copy_of`)."""
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(contiguous, self, memory_format)) is not PASS:
            return r
    data = self._data
    if memory_format is not None:
        if memory_format is channels_last or memory_format is channels_last_3d:
            strides = format_strides(memory_format, data.shape)  # torch's error for a rank
            if self.is_contiguous(memory_format=memory_format):
                return self
            return _copy_with_strides(self, strides)
        memory_format_arg(memory_format, "contiguous")  # torch's TypeError for "x", 1, ...
    b = self.device._backend
    if b is not None and b.casts_in_kernel:
        if data._c_contiguous:
            return self
        sig = ("contiguous", self.dtype, data.shape, data.strides, data.data.ptr & 15)
        return _warm(b, sig, self, _copy_of, None)
    if data.flags.c_contiguous:
        return self
    dev = self.device
    b = b or get_backend(dev)  # the device's backend ref: no lookup call
    arr, st = b.adopt(b.contiguous(data))
    return type(self)._make(arr, dev, self.dtype, st)


def _warm(b, sig, self, general, memory_format):
    """The copy of self by the backend's warm entry for `sig` (clone's or contiguous()'s
    key of self), or by `general(self, memory_format)`: on the key's first sight, where
    the result binds the entry, and where the key has no entry (False)."""
    data = self._data
    try:
        entry = b.warm[sig]
    except KeyError:  # first sight of this key: the general path binds it
        r = general(self, memory_format)
        b.copy_entry(sig, data, r._data, r._warm_key(), 2)  # (the op, then _warm)
        return r
    if not entry:
        return general(self, memory_format)
    t = _new(Tensor)  # Tensor._make, inlined: this is the hot path
    t._data = entry(data)
    t._st = None
    t.device = self.device
    t.dtype = self.dtype
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._base = None
    t._key = entry.key
    return t


def _copy_of(self, memory_format=None):
    """A C-contiguous copy of self (the backend's `contiguous`: one planned launch)."""
    dev = self.device
    b = dev._backend or get_backend(dev)  # the device's backend ref: no lookup call
    arr, st = b.adopt(b.contiguous(self._data))
    return Tensor._make(arr, dev, self.dtype, st)


@checks_inline
def clone(self, memory_format=None):
    """A copy with its own storage. preserve_format (the default) keeps torch's layout: the
    input's own strides when it is non-overlapping and dense (a transpose), else dense
    strides in the input's stride order (`preserved_strides`). On real cuda a warm clone
    is the backend's entry for the source's dtype, shape, strides and alignment, bound as
    contiguous()'s is."""
    if MODES_ON or self._requires_grad:  # a mode or autograd may take the call
        if (r := _handed_off(clone, self, memory_format)) is not PASS:
            return r
    if memory_format is not None:
        if memory_format is channels_last or memory_format is channels_last_3d:
            # torch: a new tensor's channels-last strides, even when self has others that
            # also pass is_contiguous(memory_format) (size-1 dims)
            return _copy_with_strides(self, format_strides(memory_format, self._data.shape))
        memory_format_arg(memory_format, "clone")  # torch's TypeError for "x", 1, ...
    b = self.device._backend
    if b is not None and b.casts_in_kernel:
        data = self._data
        sig = (
            "clone:contiguous" if memory_format is contiguous_format else "clone",
            self.dtype, data.shape, data.strides, data.data.ptr & 15,
        )  # fmt: skip
        return _warm(b, sig, self, _clone, memory_format)
    data = self._data
    # C-contiguous with no size-1 dims: the standard strides, which a plain copy gives
    if memory_format is contiguous_format or (
        data.flags.c_contiguous and data.size and 1 not in data.shape
    ):
        dev = self.device
        b = b or get_backend(dev)  # the device's backend ref: no lookup call
        arr, st = b.adopt(b.contiguous(data))
        return Tensor._make(arr, dev, self.dtype, st)
    return _dense_copy(self)


def _clone(self, memory_format):
    """clone() of any layout but channels_last, on the general path (the warm entry's
    binding, or a key with none): clone()'s own below its warm path."""
    data = self._data
    if memory_format is contiguous_format or (
        data.flags.c_contiguous and data.size and 1 not in data.shape
    ):
        return _copy_of(self)
    return _dense_copy(self)


def empty_with_strides(shape, strides, dt, dev) -> Tensor:
    """An uninitialised tensor with these (dense) strides, the root of its own storage:
    what torch's empty(memory_format=) gives, size-0 dims' strides included."""
    n = 0 if 0 in shape else 1 + sum((k - 1) * s for k, s in zip(shape, strides, strict=True))
    buf, st = get_backend(dev).empty((n,), dt.np)
    flat = Tensor._make(buf, dev, dt, st)
    view = as_strided(flat, shape, strides, 0)
    return Tensor._make(view._data, dev, dt, flat._storage)


def _copy_with_strides(self, strides) -> Tensor:
    out = empty_with_strides(tuple(self._data.shape), strides, self.dtype, self.device)
    if self._data.size:
        get_backend(self.device).copy_(out._data, self._data)
    return out


def _dense_copy(self):
    out = empty_preserving(self)
    get_backend(self.device).copy_(out._data, self._data)
    return out


def _non_overlapping_and_dense(shape, strides) -> bool:
    """torch's is_non_overlapping_and_dense: some permutation of the dims is C-contiguous
    (dims of size < 2 may have any stride)."""
    order = sorted((i for i in range(len(shape)) if shape[i] >= 2), key=lambda i: strides[i])
    expected = 1
    for i in order:
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True


def preserved_strides(shape, strides) -> tuple:
    """The strides torch's preserve_format gives a new tensor shaped like one with `strides`
    (empty_like, clone): those strides when non-overlapping and dense, else c10's
    infer_dense_strides (dense, dims ordered by the input's strides, stable; 0 strides
    keep their place; equal strides put the smaller dim inner)."""
    nd = len(shape)
    if 0 in shape or _non_overlapping_and_dense(shape, strides):  # torch: no elements is
        return tuple(strides)  # contiguous, so non-overlapping and dense, whatever the strides
    perm = list(range(nd - 1, -1, -1))  # innermost first
    for i in range(1, nd):  # insertion sort, as in c10 (stable, early break)
        d1 = i
        for j in range(1, i + 1):
            d0 = i - j
            a, b = perm[d0], perm[d1]
            sa, sb = strides[a], strides[b]
            if sa == 0 or sb == 0:
                cmp = 0
            elif sa != sb:
                cmp = 1 if sa > sb else -1
            else:
                cmp = 1 if shape[a] > shape[b] else 0
            if cmp > 0:
                perm[d0], perm[d1] = b, a
                d1 = d0
            elif cmp < 0:
                break
    out = [0] * nd
    cur = 1
    for i in perm:
        out[i] = cur
        if shape[i] > 1:
            cur *= shape[i]
    return tuple(out)


def empty_preserving(t, dtype=None, device=None):
    """An uninitialised tensor shaped like `t` with preserve_format strides."""
    dt = t.dtype if dtype is None else dtype
    dev = t.device if device is None else device
    shp = tuple(t._data.shape)
    strides = preserved_strides(shp, t.stride())
    if 0 in shp:  # no elements: the strides still are torch's (a transpose's, channels_last)
        return empty_with_strides(shp, strides, dt, dev)
    # the memory order: dims from the largest stride to the smallest, as a permuted
    # contiguous buffer; then size-1 dims get their exact strides (any value is valid there)
    order = sorted(range(len(shp)), key=lambda i: (-strides[i], i))
    b = get_backend(dev)
    buf, stg = b.empty(tuple(shp[i] for i in order), dt.np)
    inv = [0] * len(order)
    for pos, i in enumerate(order):
        inv[i] = pos
    arr = buf.transpose(inv)
    isz = arr.itemsize
    want = tuple(s * isz for s in strides)
    if arr.size and arr.strides != want:
        arr = b.xp.lib.stride_tricks.as_strided(arr, shp, want)
    return Tensor._make(arr, dev, dt, stg)
