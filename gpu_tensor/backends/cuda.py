"""Real cuda: cupy arrays whose memory comes from our caching allocator.

The points where this backend hands work to another part of gpu_tensor are each one
function here, so each switch is one place:
- `_ensure_allocator` installs gpu_tensor/backends/cuda_memory.py (our allocator under
  cupy) on first use;
- `_strided_copy` uses gpu_tensor.kernel.copy.strided_copy (our copy kernels);
- `elementwise` uses gpu_tensor.fusion.eager.run (our generated kernels).
Each falls back to plain cupy when that module is absent.

bfloat16: cupy has no bfloat16 dtype, so bfloat16 tensors store their bits as uint16
(`_data.dtype == uint16`). Views, copies, transfers and creation work on the bits; math
ops upcast to float32, compute, and round back to bfloat16 (round-to-nearest-even), see
`bf16_to_f32` / `f32_to_bf16`.
"""

from __future__ import annotations

import numpy as np

from ..device import _make
from ..storage import UntypedStorage
from ._cupy import cupy
from .base import Backend

__all__ = ["CudaBackend", "bf16_to_f32", "f32_to_bf16"]

_installed: set[int] = set()


def _ensure_allocator(index: int) -> None:
    """Route cupy's allocations on this device through our caching allocator (once)."""
    if index in _installed:
        return
    _installed.add(index)
    try:
        from . import cuda_memory
    except ImportError:  # memory engineer's module not there: cupy's own pool
        return
    cuda_memory.install(index)


def _strided_copy(dst, src) -> None:
    """dst[...] = src for cupy arrays (any strides, broadcast src, dtype cast)."""
    try:
        from ..kernel.copy import strided_copy
    except ImportError:
        strided_copy = None
    if strided_copy is not None:
        strided_copy(dst, src)
    else:
        cupy().copyto(dst, src, casting="unsafe")


def _eager():
    try:
        from ..fusion import eager
    except ImportError:
        return None
    return eager


def bf16_to_f32(bits, xp):
    """uint16 bfloat16 bits -> float32 values (exact)."""
    return (bits.astype(xp.uint32) << 16).view(xp.float32)


def f32_to_bf16(values, xp):
    """float32 -> uint16 bfloat16 bits, round to nearest even; NaN stays NaN."""
    u = xp.ascontiguousarray(values, dtype=xp.float32).view(xp.uint32)
    rounded = (u + (0x7FFF + ((u >> 16) & 1))) >> 16
    nan = xp.isnan(values)
    return xp.where(nan, xp.uint32(0x7FC0), rounded).astype(xp.uint16)


class CudaBackend(Backend):
    is_emulated = False
    device_fast_path = True

    def __init__(self, index: int):
        self.index = index
        self.device = _make("cuda", index)
        self.xp = cupy()
        self._dev = self.xp.cuda.Device(index)
        _ensure_allocator(index)

    def _ctx(self):
        return self._dev

    def empty(self, shape, np_dtype):
        with self._dev:
            return self.xp.empty(shape, _storable(np_dtype)), None

    def adopt(self, array):
        return array, None

    def storage_of(self, array):
        mem = array.data.mem
        cp = self.xp
        buf = cp.ndarray((mem.size,), cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))
        return UntypedStorage(buf, mem.ptr, self.device)

    def ptr(self, array) -> int:
        return array.data.ptr

    def from_storage(self, storage, shape, strides, offset, np_dtype):
        cp = self.xp
        dt = np.dtype(_storable(np_dtype))
        need = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0) + 1
        if 0 not in shape and need * dt.itemsize > storage.nbytes():
            raise RuntimeError(
                f"as_strided: view needs {need * dt.itemsize} bytes but storage has "
                f"{storage.nbytes()}"
            )
        return cp.ndarray(
            tuple(shape), dt, memptr=storage._buf.data + offset * dt.itemsize,
            strides=tuple(s * dt.itemsize for s in strides),
        )

    def from_host(self, host_array):
        if host_array.dtype.name == "bfloat16":
            host_array = host_array.view(np.uint16)
        with self._dev:
            return self.xp.array(host_array, copy=True, order="K"), None

    def to_host(self, array):
        return self.xp.asnumpy(array)

    def copy_(self, dst, src) -> None:
        xp = self.xp
        with self._dev:
            if not isinstance(src, xp.ndarray):  # a scalar or host value: one small upload
                src = xp.asarray(src, dtype=dst.dtype)
            _strided_copy(dst, src)

    def contiguous(self, array):
        with self._dev:
            out = self.xp.empty(array.shape, array.dtype)
            _strided_copy(out, array)
            return out

    def astype(self, array, np_dtype):
        np_dtype = np.dtype(np_dtype)
        xp = self.xp
        with self._dev:
            if array.dtype == np.uint16:  # bfloat16 bits (there is no uint16 tensor dtype)
                array = bf16_to_f32(array, xp)
            if np_dtype.name == "bfloat16":
                return f32_to_bf16(array.astype(xp.float32), xp)
            out = xp.empty(array.shape, np_dtype)
            _strided_copy(out, array)  # our copy kernels cast while they copy
            return out

    def elementwise(self, key, fn, args, out_np, params=None):
        """Through the fusion engine's generated kernels when present (not complex: the
        codegen has no complex types), else cupy's ufuncs via numpy's dispatch protocols."""
        with self._dev:
            eager = _eager()
            if eager is not None and key is not None and np.dtype(out_np).kind != "c" and not any(
                    getattr(a, "dtype", np.dtype(np.float32)).kind == "c" for a in args):
                inputs = [a.item() if isinstance(a, np.generic) else a for a in args]
                return eager.run(key, inputs, out_np, **(params or {}))
            if params:
                return fn(*args, **params)
            return fn(*args)

    def synchronize(self) -> None:
        self._dev.synchronize()


def _storable(np_dtype):
    """cupy cannot hold bfloat16: its bits are stored as uint16."""
    np_dtype = np.dtype(np_dtype)
    return np.dtype(np.uint16) if np_dtype.name == "bfloat16" else np_dtype

