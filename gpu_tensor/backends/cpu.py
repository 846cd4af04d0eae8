"""cpu: plain numpy arrays in numpy's own allocations."""

from __future__ import annotations

import ctypes
import math

import numpy as np

from .._result_strides import c_strides as contiguous_strides  # torch's, in bytes here
from ..device import CPU
from ..storage import UntypedStorage
from .base import Backend
from .host_malloc import keep_freed_memory

keep_freed_memory()  # numpy's temporaries reused, not page-faulted back (host_malloc.py)

__all__ = [
    "CpuBackend",
    "saturating_astype",
    "contiguous_strides",
    "flat_bytes",
    "host_ptr",
    "torch_empty_strides",
]


def torch_empty_strides(array):
    """`array` (empty) with torch's contiguous strides: numpy gives a new empty array all-zero
    strides. numpy keeps explicit strides through later views, so fixing them at allocation
    is enough for factories and the views of their results."""
    return np.lib.stride_tricks.as_strided(
        array, array.shape, contiguous_strides(array.shape, array.itemsize)
    )


_c_char, _addressof = ctypes.c_char, ctypes.addressof


def host_ptr(array) -> int:
    return array.__array_interface__["data"][0]


def saturating_astype(values: np.ndarray, np_dtype, order="K") -> np.ndarray:
    """`values.astype(np_dtype)` under gpu_tensor's one float -> integer rule: saturate to
    the integer range, NaN -> 0 (what the GPU's cvt.rzi does, what kernels/common.cuh writes
    out, and what every backend does; numpy alone would wrap, e.g. inf -> INT_MIN and
    -1.0 -> uint8 255). Other casts are numpy's."""
    np_dtype = np.dtype(np_dtype)
    if values.dtype.kind not in "fc" or np_dtype.kind not in "iu":
        return values.astype(np_dtype, order=order)
    v = values.real if values.dtype.kind == "c" else values
    info = np.iinfo(np_dtype)
    with np.errstate(invalid="ignore"):
        hi, lo = v >= float(info.max), v <= float(info.min)
        out = np.where(np.isnan(v) | hi | lo, 0, v).astype(np_dtype, order=order)
    out[hi] = info.max
    out[lo] = info.min
    return out


class _Interface:
    """Lets numpy wrap an address range while keeping the owning object alive (as base)."""

    __slots__ = ("__array_interface__", "_owner", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, owner, readonly: bool = False):
        self.__array_interface__ = {
            "data": (ptr, readonly),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }
        self._owner = owner


def flat_bytes(array) -> tuple[np.ndarray, int]:
    """A flat uint8 array over the memory `array` spans, and its start address."""
    if array.size == 0:
        return np.empty(0, np.uint8), host_ptr(array)
    if array.flags.c_contiguous:
        buf = array.reshape(-1).view(np.uint8)
        if buf.flags.writeable:
            # its first byte's address through ctypes: ~0.3 us against host_ptr's ~1 us
            # (numpy builds the whole __array_interface__ dict). Once per new storage,
            # i.e. per op result autograd saves.
            try:
                return buf, _addressof(_c_char.from_buffer(buf))
            except (TypeError, ValueError, BufferError):
                pass  # a buffer that refuses a writable export: numpy's own answer
        return buf, host_ptr(array)
    low, high = np.lib.array_utils.byte_bounds(array)
    return np.asarray(_Interface(low, high - low, array, not array.flags.writeable)), low


class CpuBackend(Backend):
    xp = np
    host_arrays = True
    device = CPU

    def empty(self, shape, np_dtype):
        try:
            arr = np.empty(shape, np_dtype)
        except MemoryError:  # torch's allocator error (a try costs nothing until it catches)
            n = math.prod(shape) * np.dtype(np_dtype).itemsize
            raise RuntimeError(
                f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {n} bytes "
                f"for a tensor of size {list(shape)}; reduce the size or free memory"
            ) from None
        return (arr if arr.size else torch_empty_strides(arr)), None

    def adopt(self, array):
        return array, None

    def storage_of(self, array):
        buf, ptr = flat_bytes(array)
        return UntypedStorage(buf, ptr, self.device)

    def ptr(self, array) -> int:
        return host_ptr(array)

    def from_storage(self, storage, shape, strides, offset, np_dtype):
        itemsize = np.dtype(np_dtype).itemsize
        # np.ndarray checks the view stays inside the buffer (as_strided does not).
        return np.ndarray(
            tuple(shape),
            np_dtype,
            buffer=storage._buf,
            offset=offset * itemsize,
            strides=tuple(s * itemsize for s in strides),
        )

    def from_host(self, host_array):
        arr = np.array(host_array, copy=True, order="K")
        return (arr if arr.size else torch_empty_strides(arr)), None

    def to_host(self, array):
        return np.array(array, copy=True, order="K")

    def copy_(self, dst, src) -> None:
        if getattr(src, "dtype", dst.dtype).kind in "fc" and dst.dtype.kind in "iu":
            src = saturating_astype(np.asarray(src), dst.dtype)  # the one cast rule
        np.copyto(dst, src, casting="unsafe")

    # these raise numpy's MemoryError (an impossible result) as torch's error
    # (Backend.host_memory_error); a try costs nothing until it catches

    def contiguous(self, array):
        try:
            out = array.copy()  # ndarray.copy is C order (and the cheapest way to say it)
        except MemoryError as exc:
            raise self.host_memory_error(exc, "a contiguous copy") from None
        return out if out.size else torch_empty_strides(out)

    def astype(self, array, np_dtype):
        try:
            if array.dtype.kind in "fc":  # float -> integer saturates (saturating_astype)
                out = saturating_astype(array, np_dtype)
            else:
                out = array.astype(np_dtype)
        except MemoryError as exc:
            raise self.host_memory_error(exc, f"a cast to {np.dtype(np_dtype)}") from None
        return out if out.size else torch_empty_strides(out)  # numpy's may be all zero

    def compute_into(self, fn, operands, plan):
        """`fn(*operands)`, a numpy routine that takes `out=` (a reduction, a product, a
        join). Here numpy allocates the result; a backend whose arrays live in memory numpy
        does not allocate (emulated cuda) allocates `plan()`'s result and passes it as
        `out`. `plan()` (never called here: the cpu pays nothing for it) gives the result's
        `(shape, dtype, c_order)`, or None to let numpy allocate (and raise its own error);
        `c_order`: the caller knows the result is C-contiguous."""
        try:
            return fn(*operands)
        except MemoryError as exc:
            raise self.host_memory_error(exc, "a reduction, product or join") from None

    def by_pieces(self, fn, operands, shape, np_dtype, whole=()):
        """`fn(*operands)`: numpy allocates here (see Backend.by_pieces)."""
        try:
            return fn(*operands)
        except MemoryError as exc:
            raise self.host_memory_error(exc, "the result") from None

    def elementwise(self, key, fn, args, out_np, params=None):
        if params:
            return fn(*args, **params)
        return fn(*args)
