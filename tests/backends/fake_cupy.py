"""A numpy-backed stand-in for the parts of cupy the cuda backend uses, so the backend's
glue (memory pointers, storages, bfloat16-as-uint16, casts, views) runs on a CPU machine.
It checks our code's use of cupy's API shape, not cupy itself."""

from __future__ import annotations

import types

import numpy as np

from gpu_tensor.testing.sim.memory import host_bytes  # numpy's view of an address range

# cupy.cuda.set_allocator's function (nbytes -> MemoryPointer), used for new arrays as cupy
# does; None: numpy's own memory. `make()` resets it.
_allocator = None


class Memory:
    def __init__(self, buf: np.ndarray):
        self.buf = buf  # flat uint8 numpy array owning the bytes
        self.ptr = buf.__array_interface__["data"][0]
        self.size = buf.nbytes


class UnownedMemory(Memory):
    """cupy.cuda.UnownedMemory: memory at `ptr` owned by `owner` (kept alive with it)."""

    def __init__(self, ptr: int, size: int, owner, device_id: int = -1):  # -1: look it up
        buf = host_bytes(ptr, size, owner)
        super().__init__(buf)
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem: Memory, offset: int):
        self.mem, self.offset = mem, offset
        self.ptr = mem.ptr + offset

    def __add__(self, n: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.offset + int(n))


class ndarray(np.ndarray):  # noqa: N801  (cupy's name)
    def __new__(cls, shape, dtype=float, memptr=None, strides=None):
        dtype = np.dtype(dtype)
        if memptr is None:
            n = int(np.prod(shape)) * dtype.itemsize
            if _allocator is not None:  # cupy asks the allocator for 0 bytes too (core.pyx)
                memptr = _allocator(n)
            else:
                memptr = MemoryPointer(Memory(np.empty(max(n, 1), np.uint8)), 0)
        arr = np.ndarray(
            shape, dtype, buffer=memptr.mem.buf, offset=memptr.offset, strides=strides
        ).view(cls)
        arr._mem = memptr.mem
        return arr

    def __array_finalize__(self, obj):
        self._mem = getattr(obj, "_mem", None)

    @property
    def data(self) -> MemoryPointer:
        ptr = self.__array_interface__["data"][0]
        mem = self._mem
        if mem is None or not mem.ptr <= ptr < mem.ptr + max(mem.size, 1):
            root = self
            while isinstance(root.base, np.ndarray):
                root = root.base
            mem = Memory(np.asarray(root).reshape(-1).view(np.uint8))
            self._mem = mem
        return MemoryPointer(mem, ptr - mem.ptr)

    @property
    def _c_contiguous(self) -> bool:
        """cupy's readonly field (the operators' plan key reads it)."""
        return self.flags.c_contiguous

    @property
    def device(self):
        return types.SimpleNamespace(id=0)

    @property
    def __cuda_array_interface__(self) -> dict:
        """cupy's v3 export; `stream` is cupy's current stream (the null one here: 1)."""
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "descr": [("", self.dtype.str)],
            "data": (self.data.ptr, False),
            "version": 3,
            "stream": 1,
            "strides": None if self.flags.c_contiguous else self.strides,
        }


def _wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, ndarray):
        out = ndarray(x.shape, x.dtype)
        out[...] = x
        return out
    return x


class _Device:
    def __init__(self, index=0):
        self.id = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass

    def use(self):
        pass


def _set_allocator(fn=None) -> None:
    global _allocator
    _allocator = fn


def make():
    """The fake module: cupy's names over numpy, results as `ndarray`. Arrays come from the
    function given to `cuda.set_allocator` once one is (as in cupy)."""
    _set_allocator(None)
    mod = types.ModuleType("fake_cupy")
    mod.ndarray = ndarray
    null = types.SimpleNamespace(ptr=0)
    mod.cuda = types.SimpleNamespace(
        Device=_Device,
        MemoryPointer=MemoryPointer,
        UnownedMemory=UnownedMemory,
        set_allocator=_set_allocator,
        get_current_stream=lambda device=None: null,
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0),
    )
    mod.asnumpy = lambda a: np.array(np.asarray(a), copy=True)
    mod.empty = lambda shape, dtype=float: ndarray(shape, dtype)
    mod.array = lambda a, copy=True, order="K", dtype=None: _wrap(
        np.array(a, copy=True, dtype=dtype)
    )
    mod.asarray = lambda a, dtype=None: _wrap(np.asarray(a, dtype=dtype))
    mod.ascontiguousarray = lambda a, dtype=None: _wrap(np.ascontiguousarray(a, dtype=dtype))

    def empty_like(a, dtype=None, order="K"):
        like = np.empty_like(a, dtype=dtype, order=order)  # numpy's layout rules for `order`
        return ndarray(like.shape, like.dtype, strides=like.strides)

    mod.empty_like = empty_like
    pool = types.SimpleNamespace(free_all_blocks=lambda: None)  # cupy's own pool: empty here
    mod.get_default_memory_pool = lambda: pool
    mod.copyto = lambda dst, src, casting="same_kind": np.copyto(dst, src, casting=casting)
    mod.lib = types.SimpleNamespace(stride_tricks=np.lib.stride_tricks)

    def passthrough(name):
        fn = getattr(np, name)
        if isinstance(fn, (np.ufunc, type)) or not callable(fn):
            return fn
        return lambda *a, **k: _wrap(fn(*a, **k))

    mod.__getattr__ = passthrough
    return mod
