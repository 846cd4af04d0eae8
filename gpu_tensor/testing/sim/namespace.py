"""The simulated `cupy` module object: the names gpu_tensor reaches, each bound against the
installed cupy's signature. A name real cupy lacks raises AttributeError; a name cupy has
but the simulator does not model raises AttributeError saying so (never a silent numpy)."""

from __future__ import annotations

import functools
import importlib
import types

import numpy as np

from . import cublas, graph, kernels, memory, runtime, streams
from .machine import machine
from .ndarray import check_dtype, ndarray, new_like, saturating_cast
from .signatures import bind, real_object
from .tasks import array_from_host, host_compute, run, view_or_run
from .ufunc import ufunc

__all__ = ["cupy", "array_function"]

_VIEW_FUNCTIONS = {
    "reshape",
    "transpose",
    "swapaxes",
    "squeeze",
    "expand_dims",
    "broadcast_to",
    "moveaxis",
    "ravel",
    "diagonal",
    "real",
    "imag",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "flip",
    "fliplr",
    "flipud",
}
_NOT_MODELLED = {"fromDlpack"}
_DTYPES = (
    "bool_",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "dtype",
    "intp",
    "newaxis",
    "nan",
    "inf",
    "pi",
    "e",
    "integer",
    "floating",
    "complexfloating",
    "number",
    "generic",
    "signedinteger",
    "unsignedinteger",
    "iinfo",
    "finfo",
    "result_type",
    "can_cast",
    "promote_types",
    "float_",
    "int_",
    "uint",
    "ubyte",
    "byte",
    "short",
    "ushort",
    "intc",
    "uintc",
    "longlong",
    "ulonglong",
    "half",
    "single",
    "double",
    "cdouble",
    "csingle",
)


def _real_ufunc_type():
    return type(real_object("add"))


def _generic(name: str, np_fn, path: str | None = None):
    path = path or name

    @functools.wraps(np_fn)
    def fn(*args, **kwargs):
        bind(path, args, kwargs)
        if name in _VIEW_FUNCTIONS:
            return view_or_run(name, np_fn, args, kwargs)
        out = kwargs.get("out")
        writes = (out,) if isinstance(out, ndarray) else ()
        r = run(name, np_fn, args, kwargs, writes=writes)
        return out if writes else r

    return fn


@functools.cache
def _lookup(path: str):
    """Simulated cupy attribute at `path` (top-level name, or 'linalg.norm')."""
    if path in _NOT_MODELLED:
        raise AttributeError(f"the cupy simulator does not model cupy.{path}")
    try:
        real = real_object(path)
    except AttributeError:
        raise AttributeError(f"module 'cupy' has no attribute '{path}'") from None
    if isinstance(real, _real_ufunc_type()):
        return ufunc(path)
    if isinstance(real, (type, np.dtype)) or not callable(real):
        return real
    np_fn = np
    for part in path.split("."):
        np_fn = getattr(np_fn, part, None)
        if np_fn is None:
            raise AttributeError(f"the cupy simulator does not model cupy.{path}")
    if path == "take":
        np_fn = functools.partial(_take, np.take)
    return _generic(path, np_fn)


def _take(np_take, a, indices, axis=None, out=None):
    return np_take(a, indices, axis=axis, out=out, mode="wrap")  # cupy wraps (see indexing)


def array_function(func, args, kwargs):
    mod = func.__module__ or "numpy"
    sub = mod.split(".")[1] if mod.startswith("numpy.") and mod.count(".") >= 1 else ""
    sub = "" if sub.startswith("_") else sub
    try:
        fn = getattr(cupy, func.__name__) if not sub else _lookup(f"{sub}.{func.__name__}")
    except AttributeError:
        return NotImplemented
    return fn(*args, **kwargs)


# -- functions written out (host transfers, allocation, casts) -----------------------------


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    bind("asnumpy", (a, stream, order, out), {"blocking": blocking})
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return np.asarray(a, order=order)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    bind("array", (obj, dtype, copy, order, subok, ndmin), {"blocking": blocking})
    if isinstance(obj, ndarray):
        if not copy and (dtype is None or np.dtype(dtype) == obj.dtype) and obj.ndim >= ndmin:
            return obj
        dt = obj.dtype if dtype is None else check_dtype(dtype)
        return run(
            "array", lambda h: np.array(saturating_cast(h, dt, order), ndmin=ndmin), (obj,), {}
        )
    h = np.array(obj, dtype=dtype, order=order, ndmin=ndmin)
    return array_from_host(h)


def _from_cai(obj) -> ndarray:
    """A zero-copy view of another library's device array (__cuda_array_interface__)."""
    cai = obj.__cuda_array_interface__
    dt = check_dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    strides = cai.get("strides") or None
    ptr = int(cai["data"][0])
    view = ndarray(
        shape,
        dt,
        memptr=memory.MemoryPointer(memory.UnownedMemory(ptr, 0, obj), 0),
        strides=strides,
    )
    lo, hi = view.extent()
    hit = machine().space.find(ptr) if ptr else None
    mem = memory.UnownedMemory(lo, hi - lo, obj, hit[2] if hit else -1)
    return ndarray(shape, dt, memptr=memory.MemoryPointer(mem, ptr - lo), strides=view.strides)


def from_dlpack(x, *, device=None, copy=None):
    """cupy.from_dlpack: zero copy. The capsule itself is not modelled: the producer's
    __cuda_array_interface__ describes the same memory."""
    bind("from_dlpack", (x,), {"device": device, "copy": copy})
    if isinstance(x, ndarray):
        return x
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__cuda_array_interface__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} exports no device memory")
    return _from_cai(x)


def asarray(a, dtype=None, order=None, *, blocking=False):
    bind("asarray", (a, dtype, order), {"blocking": blocking})
    if isinstance(a, ndarray) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    if not isinstance(a, ndarray) and hasattr(a, "__cuda_array_interface__"):
        view = _from_cai(a)
        return view if dtype is None or np.dtype(dtype) == view.dtype else view.astype(dtype)
    return array(a, dtype=dtype, copy=True, order="K" if order is None else order)


def ascontiguousarray(a, dtype=None):
    bind("ascontiguousarray", (a, dtype), {})
    if isinstance(a, ndarray):
        if a.flags.c_contiguous and (dtype is None or np.dtype(dtype) == a.dtype):
            return a
        dt = a.dtype if dtype is None else check_dtype(dtype)
        return run("ascontiguousarray", lambda h: saturating_cast(h, dt, "C"), (a,), {})
    return array_from_host(np.ascontiguousarray(a, dtype=dtype))


def empty(shape, dtype=float, order="C"):
    bind("empty", (shape, dtype, order), {})
    return ndarray(shape, dtype, order=order)


def empty_like(prototype, dtype=None, order="K", subok=None, shape=None):
    bind("empty_like", (prototype, dtype, order, subok, shape), {})
    like = host_compute(
        lambda: np.empty_like(
            np.empty(prototype.shape, prototype.dtype, order="C")
            if order != "K"
            else _layout(prototype),
            dtype=dtype,
            order=order,
            shape=shape,
        )
    )
    return new_like(like)


def _layout(a: ndarray) -> np.ndarray:
    """A throwaway host array with a's stride order (for order 'K')."""
    return np.lib.stride_tricks.as_strided(
        np.empty(1, a.dtype),
        a.shape,
        [s if n > 1 else 0 for n, s in zip(a.shape, a.strides, strict=True)],
    )


def copyto(dst, src, casting="same_kind", where=None):
    bind("copyto", (dst, src, casting, where), {})
    if isinstance(src, np.ndarray) and src.ndim:
        raise TypeError(f"Unsupported type {type(src)}")

    def copy(d, s, w=None):
        sdt = s.dtype if isinstance(s, np.ndarray) else np.asarray(s).dtype
        if not isinstance(s, np.ndarray) or np.can_cast(sdt, d.dtype, casting):
            if isinstance(s, np.ndarray) and casting == "unsafe":
                s = saturating_cast(s, d.dtype)
            np.copyto(
                d,
                s,
                casting="unsafe" if casting == "unsafe" else casting,
                where=True if w is None else w,
            )
        else:
            raise TypeError(f"Cannot cast from {sdt} to {d.dtype} with casting={casting!r}")

    run("copyto", copy, (dst, src) + ((where,) if where is not None else ()), {}, writes=(dst,))


def as_strided(x, shape=None, strides=None):
    bind("lib.stride_tricks.as_strided", (x, shape, strides), {})
    shape = x.shape if shape is None else tuple(shape)
    strides = x.strides if strides is None else tuple(strides)
    return ndarray(shape, x.dtype, memptr=x.data, strides=strides)


_pool = memory.MemoryPool()
_pinned_pool = types.SimpleNamespace(free_all_blocks=lambda: None, n_free_blocks=lambda: 0)


def _set_allocator(allocator=None):
    bind("cuda.set_allocator", (allocator,), {})
    machine().allocator = allocator


def _set_pinned_memory_allocator(allocator=None):
    bind("cuda.set_pinned_memory_allocator", (allocator,), {})
    machine().pinned_allocator = allocator


def _cuda_path():
    return importlib.import_module("cupy")._environment.get_cuda_path()


class _SimCupy(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _lookup(name)
        setattr(self, name, value)
        return value


cupy = _SimCupy("cupy", "cupy over gpu_tensor's simulated GPU (gpu_tensor.testing.sim)")
cupy.__version__ = real_object("__version__")
cupy.ndarray = ndarray
for _n in _DTYPES:
    if hasattr(np, _n):
        setattr(cupy, _n, getattr(np, _n))
cupy.asnumpy, cupy.array, cupy.asarray = asnumpy, array, asarray
cupy.from_dlpack = from_dlpack
cupy.ascontiguousarray, cupy.empty, cupy.empty_like, cupy.copyto = (
    ascontiguousarray,
    empty,
    empty_like,
    copyto,
)
cupy.get_default_memory_pool = lambda: _pool
cupy.get_default_pinned_memory_pool = lambda: _pinned_pool
cupy.RawModule, cupy.RawKernel = kernels.RawModule, kernels.RawKernel
cupy.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=as_strided))
cupy.linalg = types.SimpleNamespace(__getattr__=None)
cupy._environment = types.SimpleNamespace(get_cuda_path=_cuda_path)
cupy.cuda = types.SimpleNamespace(
    Device=runtime.Device,
    runtime=runtime.runtime,
    Stream=streams.Stream,
    Event=streams.Event,
    get_current_stream=streams.get_current_stream,
    get_elapsed_time=streams.get_elapsed_time,
    MemoryPointer=memory.MemoryPointer,
    UnownedMemory=memory.UnownedMemory,
    Memory=memory.Memory,
    BaseMemory=memory.BaseMemory,
    MemoryPool=memory.MemoryPool,
    set_allocator=_set_allocator,
    set_pinned_memory_allocator=_set_pinned_memory_allocator,
    nvrtc=kernels.nvrtc,
    function=types.SimpleNamespace(Module=kernels.Module, Function=kernels.Function),
    is_available=lambda: True,
    Graph=graph.Graph,
    graph=types.SimpleNamespace(Graph=graph.Graph),
    # gemmEx / gemmStridedBatchedEx: int8 (backends/cuda_blas.py) and bf16 (cuda_gemm.py)
    cublas=cublas.cublas,
    device=types.SimpleNamespace(get_cublas_handle=cublas.get_cublas_handle),
)


class _Linalg(types.SimpleNamespace):
    def __getattr__(self, name):
        return _lookup(f"linalg.{name}")


cupy.linalg = _Linalg()
