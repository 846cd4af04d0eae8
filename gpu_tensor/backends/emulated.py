"""Emulated cuda: numpy arrays over host bytes from the device caching allocator.

With no GPU and GPU_TENSOR_FALLBACK=1, 'cuda:N' tensors live here. Their bytes come from
`gpu_tensor.memory.registry.get_allocator(N, 'emulated')`, whose blocks are real host
addresses, so memory stats, summaries and snapshots behave as on a GPU. A block goes back
to the allocator when the last numpy array over it dies (not merely the storage object:
a view someone kept must not dangle).
"""

from __future__ import annotations

import numpy as np

from ..device import _make
from ..memory import registry
from ..storage import UntypedStorage
from .cpu import CpuBackend, _Interface, torch_empty_strides

__all__ = ["EmulatedCudaBackend"]

_NAMES: dict = {}


class _BlockHolder(_Interface):
    """The numpy base of an emulated device buffer: frees its block when the last array
    over it dies (cheaper than weakref.finalize on this per-op path)."""

    __slots__ = ("_block", "_free")

    def __init__(self, block, nbytes: int, free):
        super().__init__(block.ptr, nbytes, None)
        self._block = block
        self._free = free

    def __del__(self):
        try:
            self._free(self._block)
        except Exception:  # noqa: BLE001 - interpreter shutdown: the allocator may be gone
            pass


class EmulatedCudaBackend(CpuBackend):
    is_emulated = True

    def __init__(self, index: int):
        self.index = index
        self.device = _make("cuda", index)
        self._alloc = None

    def _raw(self, nbytes: int, shape, np_dtype):
        """Bytes for one storage: a flat uint8 array and its UntypedStorage."""
        alloc = self._alloc
        if alloc is None:  # created on first use, so importing never sizes a device
            alloc = self._alloc = registry.get_allocator(self.index, "emulated")
        block = alloc.malloc(max(nbytes, 1))
        name = _NAMES.get(np_dtype)
        if name is None:
            name = _NAMES[np_dtype] = np_dtype.name  # .name costs ~1 us in numpy
        block.tag = {"shape": tuple(shape), "dtype": name}
        buf = np.asarray(_BlockHolder(block, nbytes, alloc.free))
        return buf, UntypedStorage(buf, block.ptr, self.device, block)

    def empty(self, shape, np_dtype):
        np_dtype = np.dtype(np_dtype)
        n = 1
        for s in shape:
            n *= s
        buf, st = self._raw(n * np_dtype.itemsize, shape, np_dtype)
        arr = buf.view(np_dtype).reshape(shape)
        return (arr if n else torch_empty_strides(arr)), st

    def adopt(self, array):
        if array.flags.c_contiguous:
            out, st = self.empty(array.shape, array.dtype)
        else:  # keep a transposed/permuted result's layout, as numpy (cpu) and cupy do
            out, st = self._empty_in_order_of(array)
        out[...] = array
        return out, st

    def _empty_in_order_of(self, array):
        """An uninitialised compact array whose axes are laid out in `array`'s stride order
        (numpy's order "K"): a permutation of a C-contiguous layout."""
        shape, itemsize = array.shape, array.itemsize
        strides = [0] * array.ndim
        step = itemsize
        # innermost first; on a tie the later axis is the inner one (C order)
        for i in sorted(range(array.ndim), key=lambda i: (abs(array.strides[i]), -i)):
            strides[i] = step
            step *= shape[i]
        buf, st = self._raw(step, shape, array.dtype)  # (never empty: those are C-contiguous)
        return np.ndarray(shape, array.dtype, buffer=buf, strides=strides), st

    def from_host(self, host_array):
        return self.adopt(host_array)
