"""``strided_copy(dst, src)``: any strided (and broadcast) source into any strided destination,
casting to the destination's dtype in the same pass, with the kernel the planner picks.

The same plan runs on the CPU through the host emulation (``strided_copy_emulated``), which is
how the kernels are checked against numpy on machines without a GPU.
"""

from __future__ import annotations

import ctypes
import itertools
import threading

import numpy as np

from . import compile as kcompile
from . import copy_plan, emulate, sources
from .variants import KernelVariant, all_variants

__all__ = ["strided_copy", "strided_copy_emulated", "broadcast_strides", "EmulatedCopyKernels"]

_COPY_FILES = ("copy_contiguous.cu", "copy_transpose.cu", "copy_nd.cu")


def broadcast_strides(src_shape, src_strides, dst_shape) -> tuple:
    """Strides (bytes) that read ``src`` broadcast to ``dst_shape`` (numpy's rules)."""
    src_shape, dst_shape = tuple(src_shape), tuple(dst_shape)
    if len(src_shape) > len(dst_shape):
        raise ValueError(f"cannot broadcast a source of shape {src_shape} to {dst_shape}")
    pad = len(dst_shape) - len(src_shape)
    out = [0] * pad
    for n, s, m in zip(src_shape, src_strides, dst_shape[pad:], strict=True):
        if n == m:
            out.append(s)
        elif n == 1:
            out.append(0)
        else:
            raise ValueError(f"cannot broadcast a source of shape {src_shape} to {dst_shape}")
    return tuple(out)


def _extent(ptr: int, shape, strides, itemsize: int) -> tuple[int, int]:
    lo = hi = ptr
    for n, s in zip(shape, strides, strict=True):
        if n > 1:
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
    return lo, hi + itemsize


def _loop_offsets(loops):
    """(dst_offset, src_offset) in bytes for every iteration of the plan's host loops."""
    if not loops:
        yield 0, 0
        return
    for idx in itertools.product(*(range(n) for n, _, _ in loops)):
        yield (sum(i * ds for i, (_, ds, _) in zip(idx, loops, strict=True)),
               sum(i * ss for i, (_, _, ss) in zip(idx, loops, strict=True)))


def strided_copy(dst, src, dst_dtype=None, src_dtype=None) -> None:
    """Copy cupy array ``src`` (broadcast to ``dst.shape``) into cupy array ``dst``, casting to
    the destination's dtype. Asynchronous on the current stream. Overlapping memory is handled
    by copying the source to a temporary first (torch's copy_ semantics).

    ``dst_dtype`` / ``src_dtype`` give the logical dtype of an array whose storage dtype
    differs, e.g. ``ml_dtypes.bfloat16`` for bfloat16 data held in a uint16 cupy array (CuPy
    has no bfloat16): the kernels then convert bfloat16 values, not uint16 integers.
    """
    cp = kcompile._cupy()
    if not isinstance(dst, cp.ndarray) or not isinstance(src, cp.ndarray):
        raise TypeError(
            f"strided_copy takes cupy arrays, got {type(dst).__name__} and {type(src).__name__}"
        )
    if dst.device.id != src.device.id:
        raise ValueError(
            f"strided_copy: destination is on cuda:{dst.device.id} but source is on "
            f"cuda:{src.device.id}; copy the source to cuda:{dst.device.id} first"
        )
    # A module is loaded per device and a launch goes to the current device (and its
    # current stream): make that the arrays' device, whatever the caller's is.
    with cp.cuda.Device(dst.device.id):
        _strided_copy_here(cp, dst, src, dst_dtype, src_dtype)


def _strided_copy_here(cp, dst, src, dst_dtype, src_dtype) -> None:
    """`strided_copy` with the arrays' device current."""
    ddt, sdt = _logical(dst, dst_dtype), _logical(src, src_dtype)
    sstrides = broadcast_strides(src.shape, src.strides, dst.shape)
    dptr, sptr = dst.data.ptr, src.data.ptr
    if dst.size and _ranges_overlap(dptr, dst, sptr, dst.shape, sstrides, src.itemsize):
        if not (dptr == sptr and sstrides == dst.strides and sdt == ddt):
            tmp = cp.empty(src.shape, src.dtype)
            strided_copy(tmp, src)
            strided_copy(dst, tmp, dst_dtype, src_dtype)
        return
    plan = copy_plan.plan_copy(dst.shape, dst.strides, sstrides, ddt, sdt, dptr, sptr)
    if plan.path == "empty":
        return
    if plan.path == "fallback":  # a cast with no kernel instantiation (e.g. uint32): CuPy's
        if (ddt, sdt) != (dst.dtype, src.dtype):
            raise ValueError(f"no copy kernel casts {sdt} to {ddt}; cast through float32")
        cp.copyto(dst, src, casting="unsafe")
        return
    if plan.path == "staged":  # misaligned cast: bytes first (always aligned), then the cast
        tmp = cp.empty(src.shape, src.dtype)
        strided_copy(tmp, src)
        strided_copy(dst, tmp, dst_dtype, src_dtype)
        return
    stream = cp.cuda.get_current_stream()
    if plan.path == "memcpy":
        cp.cuda.runtime.memcpyAsync(dptr + plan.dst_offset, sptr + plan.src_offset, plan.nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr)
        return
    for doff, soff in _loop_offsets(plan.loops):
        spec = kcompile.launch_spec(plan, dptr + doff, sptr + soff)
        kcompile.launch(spec, stream=stream)


def _logical(array, dtype) -> np.dtype:
    if dtype is None:
        return array.dtype
    dtype = np.dtype(dtype)
    if dtype.itemsize != array.dtype.itemsize:
        raise ValueError(f"logical dtype {dtype} does not match storage dtype {array.dtype} "
                         "(the item sizes differ)")
    return dtype


def _ranges_overlap(dptr, dst, sptr, shape, sstrides, sitem) -> bool:
    a = _extent(dptr, dst.shape, dst.strides, dst.itemsize)
    b = _extent(sptr, shape, sstrides, sitem)
    return a[0] < b[1] and b[0] < a[1]


class EmulatedCopyKernels:
    """The copy kernels compiled for the host (one g++ translation unit for many variants)."""

    def __init__(self, variants=None):
        vs = list(variants) if variants is not None else all_variants()
        if not emulate.have_fp16():
            vs = [v for v in vs if not v.needs_fp16]
        self.names = frozenset(v.name for v in vs)
        source = "\n".join(sources.read_kernel(f) for f in _COPY_FILES)
        self.lib = emulate.build(source, sorted(self.names))

    def __contains__(self, variant: KernelVariant) -> bool:
        return variant.name in self.names


_default_kernels: dict = {}
_default_lock = threading.Lock()


def _kernels_for(variant: KernelVariant) -> EmulatedCopyKernels:
    with _default_lock:
        k = _default_kernels.get(variant.name)
        if k is None:
            k = _default_kernels[variant.name] = EmulatedCopyKernels([variant])
        return k


def strided_copy_emulated(dst: np.ndarray, src: np.ndarray, kernels=None, dst_dtype=None,
                          src_dtype=None):
    """``dst[...] = src`` through the planner and the CUDA kernels run on the CPU.

    Same contract as ``strided_copy`` (logical dtypes included); returns the plan.
    ``kernels`` (EmulatedCopyKernels) lets tests compile many variants in one translation
    unit; a variant it lacks is built on its own (slow, but correct).
    """
    ddt, sdt = _logical(dst, dst_dtype), _logical(src, src_dtype)
    sstrides = broadcast_strides(src.shape, src.strides, dst.shape)
    dptr, sptr = dst.ctypes.data, src.ctypes.data
    if dst.size and _ranges_overlap(dptr, dst, sptr, dst.shape, sstrides, src.itemsize):
        tmp = np.empty(src.shape, src.dtype)
        strided_copy_emulated(tmp, src, kernels)
        return strided_copy_emulated(dst, tmp, kernels, dst_dtype, src_dtype)
    plan = copy_plan.plan_copy(dst.shape, dst.strides, sstrides, ddt, sdt, dptr, sptr)
    if plan.path == "empty":
        return plan
    if plan.path == "fallback":
        if (ddt, sdt) != (dst.dtype, src.dtype):
            raise ValueError(f"no copy kernel casts {sdt} to {ddt}; cast through float32")
        np.copyto(dst, src, casting="unsafe")
        return plan
    if plan.path == "staged":
        tmp = np.empty(src.shape, src.dtype)
        strided_copy_emulated(tmp, src, kernels)
        strided_copy_emulated(dst, tmp, kernels, dst_dtype, src_dtype)
        return plan
    if plan.path == "memcpy":
        # The GPU uses cudaMemcpyAsync here; on the host the same bytes move with ctypes.
        ctypes.memmove(dptr + plan.dst_offset, sptr + plan.src_offset, plan.nbytes)
        return plan
    lib = kernels if kernels is not None and plan.variant in kernels else _kernels_for(plan.variant)
    for doff, soff in _loop_offsets(plan.loops):
        spec = kcompile.launch_spec(plan, dptr + doff, sptr + soff)
        emulate.launch(lib.lib, spec.name, spec.grid, spec.block, spec.args,
                       serial=spec.serial_ok)
    return plan
