"""A numpy-backed stand-in for the parts of cupy the cuda backend uses, so the backend's
glue (memory pointers, storages, bfloat16-as-uint16, casts, views) runs on a CPU machine.
It checks our code's use of cupy's API shape, not cupy itself."""

from __future__ import annotations

import types

import numpy as np


class Memory:
    def __init__(self, buf: np.ndarray):
        self.buf = buf  # flat uint8 numpy array owning the bytes
        self.ptr = buf.__array_interface__["data"][0]
        self.size = buf.nbytes


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
            memptr = MemoryPointer(Memory(np.empty(max(n, 1), np.uint8)), 0)
        arr = np.ndarray(shape, dtype, buffer=memptr.mem.buf, offset=memptr.offset,
                         strides=strides).view(cls)
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
    def device(self):
        return types.SimpleNamespace(id=0)


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


def make():
    """The fake module: cupy's names over numpy, results as `ndarray`."""
    mod = types.ModuleType("fake_cupy")
    mod.ndarray = ndarray
    mod.cuda = types.SimpleNamespace(Device=_Device, MemoryPointer=MemoryPointer,
                                     runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    mod.asnumpy = lambda a: np.array(np.asarray(a), copy=True)
    mod.empty = lambda shape, dtype=float: ndarray(shape, dtype)
    mod.array = lambda a, copy=True, order="K", dtype=None: _wrap(np.array(a, copy=True,
                                                                           dtype=dtype))
    mod.asarray = lambda a, dtype=None: _wrap(np.asarray(a, dtype=dtype))
    mod.ascontiguousarray = lambda a, dtype=None: _wrap(np.ascontiguousarray(a, dtype=dtype))
    mod.copyto = lambda dst, src, casting="same_kind": np.copyto(dst, src, casting=casting)
    mod.lib = types.SimpleNamespace(stride_tricks=np.lib.stride_tricks)

    def passthrough(name):
        fn = getattr(np, name)
        if isinstance(fn, (np.ufunc, type)) or not callable(fn):
            return fn
        return lambda *a, **k: _wrap(fn(*a, **k))

    mod.__getattr__ = passthrough
    return mod
