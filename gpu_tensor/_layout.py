"""Layout: as_strided, contiguous (incl. channels_last), clone (keeping dense layouts)."""

from __future__ import annotations

from ._dims import shape_args
from .backends import get_backend

__all__ = ["as_strided", "contiguous", "clone", "contiguous_format", "channels_last",
           "preserve_format"]


class _MemoryFormat:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"gpu_tensor.{self.name}"


contiguous_format = _MemoryFormat("contiguous_format")
channels_last = _MemoryFormat("channels_last")  # NHWC strides for 4-d (N, C, H, W) tensors
preserve_format = _MemoryFormat("preserve_format")


def as_strided(self, size, stride, storage_offset=None):
    size, stride = shape_args((size,)), shape_args((stride,))
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {size} vs {stride}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative strides are not supported, got {stride}")
    off = self.storage_offset() if storage_offset is None else int(storage_offset)
    st = self._storage
    b = get_backend(self.device)
    try:
        arr = b.from_storage(st, size, stride, off, self.dtype.np)
    except (TypeError, ValueError) as exc:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off} "
            f"need more bytes than the storage's {st.nbytes()}") from exc
    return self._view_of(arr)


def contiguous(self, memory_format=None):
    Tensor = type(self)
    if memory_format is channels_last:
        if self._data.ndim != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        if self.is_contiguous(memory_format=channels_last):
            return self
        nhwc = contiguous(self.permute(0, 2, 3, 1))
        return nhwc.permute(0, 3, 1, 2)
    if self._data.flags.c_contiguous:
        return self
    b = get_backend(self.device)
    arr, st = b.adopt(b.contiguous(self._data))
    return Tensor._make(arr, self.device, self.dtype, st)


def clone(self, memory_format=None):
    """A copy with its own storage; dense layouts (e.g. a transpose) keep their strides,
    like torch's preserve_format."""
    Tensor = type(self)
    if memory_format is channels_last:
        return contiguous(clone(self, contiguous_format), channels_last) if (
            not self.is_contiguous(memory_format=channels_last)) else _dense_copy(self)
    if memory_format is contiguous_format or self._data.flags.c_contiguous:
        b = get_backend(self.device)
        arr, st = b.adopt(b.contiguous(self._data))
        return Tensor._make(arr, self.device, self.dtype, st)
    return _dense_copy(self)


def _dense_copy(self):
    """Copy keeping the stride order when the tensor is non-overlapping and dense."""
    Tensor = type(self)
    shp, st = self._data.shape, self.stride()
    order = sorted(range(len(shp)), key=lambda i: (-st[i], i))
    expected = 1
    dense = True
    for i in reversed(order):
        if shp[i] != 1 and st[i] != expected:
            dense = False
        expected *= shp[i]
    b = get_backend(self.device)
    if not dense:
        arr, stg = b.adopt(b.contiguous(self._data))
        return Tensor._make(arr, self.device, self.dtype, stg)
    out, stg = b.empty(tuple(shp[i] for i in order), self._data.dtype)
    inv = [0] * len(order)
    for pos, i in enumerate(order):
        inv[i] = pos
    out_view = out.transpose(inv)
    b.copy_(out_view, self._data)
    return Tensor._make(out_view, self.device, self.dtype, stg)
