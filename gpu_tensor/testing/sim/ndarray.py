"""cupy.ndarray over simulated device memory.

An array is (shape, dtype, strides, MemoryPointer). Its bytes are host memory at real
addresses; numpy only sees them inside a stream task (`_host()`), after the scheduler has run
everything ordered before that task, so a read that nothing orders after a write sees stale
memory or is reported as a race. View operations touch no memory and launch nothing, as in
cupy; everything else is one task on the current stream.

cupy's departures from numpy that gpu_tensor can reach, modelled here (and listed in
gpu_tensor/testing/sim/__init__.py with their references):
- integer-array indices out of range wrap around instead of raising;
- float -> integer casts saturate (NaN -> 0), as CUDA's cvt.rzi does;
- implicit conversion to numpy (`np.asarray(cupy_array)`) raises TypeError;
- operands that are numpy arrays raise TypeError in cupy's ufuncs;
- reductions and full integer indexing give 0-d arrays, not scalars;
- no bfloat16 (or any non-numeric) dtype.
"""

from __future__ import annotations

import numpy as np

from .machine import machine
from .memory import MemoryPointer, host_bytes
from .signatures import bind

__all__ = ["ndarray", "saturating_cast", "check_dtype", "new_like"]

_SUPPORTED = set("?bhilqBHILQefdFD") | {"p", "P", "g"}


def check_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.char not in _SUPPORTED or dt.kind not in "biufc":
        raise ValueError(f"Unsupported dtype {dt}")  # cupy's message (no bfloat16 in cupy)
    return dt


def _c_strides(shape, itemsize) -> tuple:
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _alloc(nbytes: int) -> MemoryPointer:
    m = machine()
    if m.allocator is not None:  # cupy asks the allocator for 0 bytes too (core.pyx)
        return m.allocator(nbytes)
    from .memory import Memory

    return MemoryPointer(Memory(nbytes), 0)


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c, f, own):
        self.c_contiguous, self.f_contiguous, self.owndata = c, f, own

    def __getitem__(self, key):
        return {
            "C_CONTIGUOUS": self.c_contiguous,
            "F_CONTIGUOUS": self.f_contiguous,
            "OWNDATA": self.owndata,
        }[key]


def _contig(shape, strides, itemsize) -> bool:
    if 0 in shape:  # cupy's _update_c/f_contiguity: an empty array is both, whatever its strides
        return True
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n != 1 and s != step:
            return False
        step *= n
    return True


class ndarray:  # noqa: N801 - cupy's name
    """cupy.ndarray(shape, dtype=float, memptr=None, strides=None, order='C')."""

    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        shape = (
            (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        )
        if any(n < 0 for n in shape):
            raise ValueError(f"Negative dimensions are not allowed: {shape}")
        dt = check_dtype(dtype)
        size = 1
        for n in shape:
            size *= n
        if memptr is None:
            memptr = _alloc(size * dt.itemsize)
            self._own = True
        else:
            self._own = False
        if strides is None:
            strides = _c_strides(shape, dt.itemsize)
            if order == "F":
                strides = tuple(reversed(_c_strides(shape[::-1], dt.itemsize)))
        self.shape, self.dtype, self.strides = shape, dt, tuple(int(s) for s in strides)
        self.data, self.size = memptr, size
        # cupy's readonly `_c_contiguous` / `_f_contiguous` (core.pxd), worked out as cupy
        # does whenever shape or strides are set (here, only at construction)
        self._c_contiguous = _contig(shape, self.strides, dt.itemsize)
        self._f_contiguous = _contig(shape[::-1], self.strides[::-1], dt.itemsize)

    # -- metadata -------------------------------------------------------------------------

    ndim = property(lambda self: len(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    base = property(lambda self: None)

    @property
    def device(self):
        from .runtime import Device

        return Device(self.data.device_id)

    @property
    def flags(self):
        return _Flags(self._c_contiguous, self._f_contiguous, self._own)

    def extent(self) -> tuple[int, int]:
        """[lo, hi) of the bytes this view can touch."""
        lo = hi = self.data.ptr
        if self.size == 0:
            return lo, lo
        for n, s in zip(self.shape, self.strides, strict=True):
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi + self.itemsize

    def buffer_name(self) -> str:
        return (
            f"device buffer {self.data.mem.ptr:#x} ({self.data.mem.size} bytes, cuda:"
            f"{self.data.device_id})"
        )

    def _host(self) -> np.ndarray:
        """numpy's view of the bytes (only inside a task: see the module docstring)."""
        if self.size == 0:
            # no bytes, but this view's strides, over a zero-size root kept on the array: a
            # numpy view of it (what a view routine returns) is then known as a view of this
            # array (tasks._view_of), as cupy keeps views of empty arrays at their pointer
            root = self.__dict__.get("_empty_root")
            if root is None:
                root = self._empty_root = np.empty(0, self.dtype)
            return np.lib.stride_tricks.as_strided(root, self.shape, self.strides)
        lo, hi = self.extent()
        buf = host_bytes(lo, hi - lo, self.data.mem)
        return np.ndarray(
            self.shape, self.dtype, buffer=buf, offset=self.data.ptr - lo, strides=self.strides
        )

    @property
    def __cuda_array_interface__(self) -> dict:
        from .streams import get_current_stream

        ptr = get_current_stream().ptr
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "descr": [("", self.dtype.str)],
            "data": (self.data.ptr, False),
            "version": 3,
            "stream": ptr or 1,
            "strides": None if self.flags.c_contiguous else self.strides,
        }

    def __dlpack_device__(self):
        return 2, self.data.device_id  # kDLCUDA

    def __dlpack__(self, stream=None, **kwargs):
        raise NotImplementedError(
            "the cupy simulator exchanges memory through "
            "__cuda_array_interface__, not DLPack capsules"
        )

    # -- host transfers ---------------------------------------------------------------------

    def get(self, stream=None, order="C", out=None, blocking=True):
        bind("ndarray.get", (stream, order, out, blocking), {})
        from .streams import get_current_stream

        m = machine()
        stream = get_current_stream() if stream is None else stream
        dst = np.empty(self.shape, self.dtype, order=order) if out is None else out
        lo, hi = self.extent()
        m.count("bytes_copied", self.nbytes)
        m.count("memcpy_calls")

        def copy():
            dst[...] = self._host()

        task = m.sched.enqueue(
            stream._queue(),
            copy,
            f"device-to-host copy of {self.nbytes} bytes",
            [(lo, hi, False, self.buffer_name())],
        )
        pinned = out is not None and m.space.find_pinned(out.ctypes.data) is not None
        if blocking or not pinned:  # a pageable destination makes the copy synchronous
            m.count("device_syncs")
            m.sched.synchronize(task.queue)
        return dst

    def set(self, arr, stream=None):
        bind("ndarray.set", (arr, stream), {})
        from .streams import get_current_stream

        m = machine()
        src = np.asarray(arr)
        if src.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {src.shape}")
        if src.dtype != self.dtype:
            raise TypeError(f"{src.dtype} array cannot be set to {self.dtype} array")
        queue = (get_current_stream() if stream is None else stream)._queue()
        lo, hi = self.extent()
        m.count("bytes_copied", self.nbytes)
        m.count("memcpy_calls")
        src = src.copy()  # pageable: staged at the call, as CUDA does

        def copy():
            self._host()[...] = src

        m.sched.run_through(
            m.sched.enqueue(
                queue,
                copy,
                f"host-to-device copy of {self.nbytes} bytes",
                [(lo, hi, True, self.buffer_name())],
            )
        )

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.get().item()

    def tolist(self):
        return self.get().tolist()

    def __array__(self, *args, **kwargs):
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use "
            "`.get()` to construct a NumPy array explicitly."
        )

    def __bool__(self):
        return bool(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError("only integer arrays can be used as an index")
        return int(self.item())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return "array(" + repr(self.get())[6:] if self.size else f"array([], dtype={self.dtype})"

    __hash__ = None

    # -- computing ----------------------------------------------------------------------

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        bind("ndarray.astype", (dtype, order, casting, subok, copy), {})
        dt = check_dtype(dtype)
        if not copy and dt == self.dtype:
            return self
        return run("astype", lambda h: saturating_cast(h, dt, order), (self,), {})

    def copy(self, order="C"):
        return run("copy", lambda h: h.copy(order=order), (self,), {})

    def fill(self, value):
        run("fill", lambda h: h.fill(value), (self,), {}, writes=(self,))

    def __getitem__(self, key):
        from .indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key, value):
        from .indexing import setitem

        setitem(self, key, value)

    def __array_ufunc__(self, uf, method, *inputs, **kwargs):
        from . import namespace

        sim = getattr(namespace.cupy, uf.__name__, None)
        if sim is None:
            return NotImplemented
        return (
            sim(*inputs, **kwargs)
            if method == "__call__"
            else getattr(sim, method)(*inputs, **kwargs)
        )

    def __array_function__(self, func, types, args, kwargs):
        from . import namespace

        return namespace.array_function(func, args, kwargs)

    def __getattr__(self, name):
        from .methods import method

        return method(self, name)


def new_like(r: np.ndarray) -> ndarray:
    """A fresh array for numpy result `r`, laid out in r's stride order (cupy's order 'K')."""
    if r.flags.c_contiguous or r.ndim < 2:
        return ndarray(r.shape, r.dtype)
    strides, step = [0] * r.ndim, r.itemsize
    for i in sorted(range(r.ndim), key=lambda i: (abs(r.strides[i]), -i)):
        strides[i] = step
        step *= max(r.shape[i], 1)
    return ndarray(r.shape, r.dtype, memptr=_alloc(step), strides=strides)


def saturating_cast(h: np.ndarray, dt: np.dtype, order="K") -> np.ndarray:
    """numpy's astype, except float -> int saturates and NaN -> 0 (CUDA's cvt.rzi; cupy
    docs, "Differences between CuPy and NumPy": Cast behavior from float to integer). The
    same rule is gpu_tensor's own, so its implementation is shared."""
    from ...backends.cpu import saturating_astype

    with np.errstate(all="ignore"):
        return saturating_astype(h, dt, order)


def run(*args, **kwargs):
    """tasks.run: tasks build on this module's class, so it is looked up at call time."""
    from .tasks import run as _run

    return _run(*args, **kwargs)
