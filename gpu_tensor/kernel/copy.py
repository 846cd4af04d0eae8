"""``strided_copy(dst, src)``: any strided (and broadcast) source into any strided destination,
casting to the destination's dtype in the same pass, with the kernel the planner picks.

One executor serves every machine: the plan (copy_plan) -> the kernel and its packed
arguments (copy_launch.launch_spec) -> the launch. Only the last step, the one that touches
memory, is injected as a *launcher*, so what runs on a GPU and what the CPU tests check
cannot drift apart:

- ``CudaLauncher``  cupy arrays: cudaMemcpyAsync and CuPy kernel launches on the current
  stream. A GPU and the simulated CuPy (GPU_TENSOR_FALLBACK=sim, which stands in at cupy's
  level and runs the launched source under the host emulation) both use it. The default.
- ``HostLauncher``  numpy arrays, host memory standing in for device memory: ctypes.memmove
  and the same CUDA kernels compiled by g++ under kernels/host_emulation.h. This is how the
  kernels are checked against numpy on machines without a GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import threading

import numpy as np

from . import compile as kcompile
from . import copy_launch, copy_plan, emulate, sources
from .variants import KernelVariant, all_variants

__all__ = [
    "strided_copy",
    "copy_to_fresh",
    "fresh_copy",
    "execute",
    "broadcast_strides",
    "CudaLauncher",
    "HostLauncher",
    "EmulatedCopyKernels",
]

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
        yield (
            sum(i * ds for i, (_, ds, _) in zip(idx, loops, strict=True)),
            sum(i * ss for i, (_, _, ss) in zip(idx, loops, strict=True)),
        )


def strided_copy(dst, src, dst_dtype=None, src_dtype=None, *, launcher=None):
    """Copy ``src`` (broadcast to ``dst.shape``) into ``dst``, casting to the destination's
    dtype; returns the plan that ran. Overlapping memory is handled by copying the source to
    a temporary first (torch's copy_ semantics).

    ``launcher`` moves the bytes: ``CudaLauncher`` (the default: cupy arrays, asynchronous on
    the current stream) or ``HostLauncher`` (numpy arrays under the host emulation).
    ``dst_dtype`` / ``src_dtype`` give the logical dtype of an array whose storage dtype
    differs, e.g. ``ml_dtypes.bfloat16`` for bfloat16 data held in a uint16 cupy array (CuPy
    has no bfloat16): the kernels then convert bfloat16 values, not uint16 integers.
    """
    if launcher is None:
        launcher = _cuda_launcher()
    launcher.check(dst, src)
    with launcher.on(dst):
        ddt, sdt = _logical(dst, dst_dtype), _logical(src, src_dtype)
        sstrides = broadcast_strides(src.shape, src.strides, dst.shape)
        dptr, sptr = launcher.address(dst), launcher.address(src)
        if dst.size and _ranges_overlap(dptr, dst, sptr, dst.shape, sstrides, src.itemsize):
            if dptr == sptr and sstrides == dst.strides and sdt == ddt:
                return copy_plan.CopyPlan("empty", ddt, sdt, reason="the source is dst itself")
            return _through_temporary(dst, src, dst_dtype, src_dtype, launcher)
        plan = copy_plan.plan_copy(dst.shape, dst.strides, sstrides, ddt, sdt, dptr, sptr)
        return _run(plan, dst, src, dptr, sptr, launcher)


MAX_FRESH_PLANS = 4096  # launches kept per device before copy_to_fresh's cache starts over


def copy_to_fresh(dst, src, dst_dtype, src_dtype, plans: dict) -> None:
    """``strided_copy(dst, src, ...)`` of cupy arrays where ``dst`` was just allocated (so
    it overlaps nothing): the launch is planned once per (shapes, strides, dtypes,
    alignment) and kept in ``plans`` (the caller's, one per device; the current device is
    the arrays'), so a warm copy is one dict lookup and the launch. Copies that are not one
    kernel launch (a memcpy, host loops, a staged cast) run through ``strided_copy``."""
    dptr, sptr = dst.data.ptr, src.data.ptr
    key = (
        dst.shape,
        dst.strides,
        dst.dtype,
        src.shape,
        src.strides,
        src.dtype,
        dptr & 15,
        sptr & 15,
        dst_dtype,
        src_dtype,
    )
    launch = plans.get(key)
    if launch is None:
        if len(plans) >= MAX_FRESH_PLANS:
            plans.clear()
        launch = plans[key] = _fresh_launch(dst, src, dst_dtype, src_dtype, dptr, sptr)
    if launch is False:
        strided_copy(dst, src, dst_dtype, src_dtype)
        return
    fn, grid, block, doff, soff, rest = launch
    fn(grid, block, (np.uint64(dptr + doff), np.uint64(sptr + soff), *rest))


def _fresh_launch(dst, src, dst_dtype, src_dtype, dptr, sptr):
    """(function, grid, block, dst offset, src offset, other args) of the one kernel launch
    copying ``src`` into the fresh ``dst``; False when the copy is not one launch."""
    plan = _fresh_plan(dst, src, dst_dtype, src_dtype, dptr, sptr)
    if plan.path in ("empty", "fallback", "staged", "memcpy") or any(
        n != 1 for n, _, _ in plan.loops or ()
    ):
        return False
    return _launch_parts(plan)


def fresh_copy(dst, src, dst_dtype=None, src_dtype=None):
    """How ``strided_copy(dst, src, ...)`` runs where ``dst`` was just allocated, for a
    caller that binds it once per layout (backends/cuda_warm.py `bind_copy`):
    ``("launch", function, grid, block, dst offset, src offset, other args)``, ``("memcpy",
    bytes, dst offset, src offset)``, or None where it is neither (a cast with no kernel,
    a staged cast, host loops, nothing to copy). The plan depends on the addresses only
    through their alignment, which the caller keys."""
    plan = _fresh_plan(dst, src, dst_dtype, src_dtype, dst.data.ptr, src.data.ptr)
    if plan.path == "memcpy":
        return ("memcpy", plan.nbytes, plan.dst_offset, plan.src_offset)
    if plan.path in ("empty", "fallback", "staged") or any(n != 1 for n, _, _ in plan.loops):
        return None
    return ("launch", *_launch_parts(plan))


def _fresh_plan(dst, src, dst_dtype, src_dtype, dptr, sptr):
    launcher = _cuda_launcher()
    launcher.check(dst, src)
    ddt, sdt = _logical(dst, dst_dtype), _logical(src, src_dtype)
    sstrides = broadcast_strides(src.shape, src.strides, dst.shape)
    return copy_plan.plan_copy(dst.shape, dst.strides, sstrides, ddt, sdt, dptr, sptr)


def _launch_parts(plan):
    spec = copy_launch.launch_spec(plan, 0, 0)
    fn = kcompile.get_function(
        sources.read_kernel(spec.file), spec.name, copy_launch.options_for((spec.name,))
    )
    args = copy_launch.cupy_args(spec.args)
    return fn, spec.grid, spec.block, int(args[0]), int(args[1]), args[2:]


def execute(plan, dst, src, launcher):
    """Run ``plan`` (for these arrays, as ``copy_plan.plan_copy`` made it) with ``launcher``;
    returns the plan. ``strided_copy`` is the entry point; tests call this to run a plan the
    planner would only pick at other sizes (the 64-bit index variants)."""
    return _run(plan, dst, src, launcher.address(dst), launcher.address(src), launcher)


def _run(plan, dst, src, dptr, sptr, launcher):
    # The addresses come in: reading them (a.data.ptr, a.ctypes.data) is a few µs a copy.
    if plan.path == "empty":
        return plan
    if plan.path == "fallback":  # a cast with no kernel instantiation (e.g. uint32): the
        if (plan.dst_dtype, plan.src_dtype) != (dst.dtype, src.dtype):  # array library's own
            raise ValueError(
                f"no copy kernel casts {plan.src_dtype} to {plan.dst_dtype}; cast through float32"
            )
        launcher.xp.copyto(dst, src, casting="unsafe")
        return plan
    if plan.path == "staged":  # misaligned cast: bytes first (always aligned), then the cast
        _through_temporary(dst, src, plan.dst_dtype, plan.src_dtype, launcher)
        return plan
    if plan.path == "memcpy":
        launcher.memcpy(dptr + plan.dst_offset, sptr + plan.src_offset, plan.nbytes)
        return plan
    for doff, soff in _loop_offsets(plan.loops):
        launcher.launch(copy_launch.launch_spec(plan, dptr + doff, sptr + soff))
    return plan


def _through_temporary(dst, src, dst_dtype, src_dtype, launcher):
    tmp = launcher.xp.empty(src.shape, src.dtype)
    strided_copy(tmp, src, launcher=launcher)
    return strided_copy(dst, tmp, dst_dtype, src_dtype, launcher=launcher)


def _logical(array, dtype) -> np.dtype:
    if dtype is None:
        return array.dtype
    dtype = np.dtype(dtype)
    if dtype.itemsize != array.dtype.itemsize:
        raise ValueError(
            f"logical dtype {dtype} does not match storage dtype {array.dtype} "
            "(the item sizes differ)"
        )
    return dtype


def _ranges_overlap(dptr, dst, sptr, shape, sstrides, sitem) -> bool:
    a = _extent(dptr, dst.shape, dst.strides, dst.itemsize)
    b = _extent(sptr, shape, sstrides, sitem)
    return a[0] < b[1] and b[0] < a[1]


_launcher = None  # the CudaLauncher of the cupy module in use (one, not one per copy)


def _cuda_launcher():
    global _launcher
    cp = kcompile._cupy()
    if _launcher is None or _launcher.xp is not cp:
        _launcher = CudaLauncher(cp)
    return _launcher


class CudaLauncher:
    """The launch step for cupy arrays: a real GPU, or the simulated CuPy."""

    def __init__(self, cupy):
        self.xp = cupy

    def check(self, dst, src) -> None:
        cp = self.xp
        if not isinstance(dst, cp.ndarray) or not isinstance(src, cp.ndarray):
            raise TypeError(
                f"strided_copy takes cupy arrays, got {type(dst).__name__} and "
                f"{type(src).__name__} (numpy arrays: launcher=HostLauncher())"
            )
        if dst.device.id != src.device.id:
            raise ValueError(
                f"strided_copy: destination is on cuda:{dst.device.id} but source is on "
                f"cuda:{src.device.id}; copy the source to cuda:{dst.device.id} first"
            )

    def on(self, dst):
        # A module is loaded per device and a launch goes to the current device (and its
        # current stream): make that the arrays' device, whatever the caller's is.
        return self.xp.cuda.Device(dst.device.id)

    @staticmethod
    def address(a) -> int:
        return a.data.ptr

    def memcpy(self, dst: int, src: int, nbytes: int) -> None:
        rt = self.xp.cuda.runtime
        rt.memcpyAsync(
            dst, src, nbytes, rt.memcpyDeviceToDevice, self.xp.cuda.get_current_stream().ptr
        )

    def launch(self, spec) -> None:
        copy_launch.launch(spec, stream=self.xp.cuda.get_current_stream())


class HostLauncher:
    """The launch step for numpy arrays: the CUDA kernels run on the CPU (host emulation).

    ``kernels`` (EmulatedCopyKernels) lets tests compile many variants in one translation
    unit; a variant it lacks is built on its own (slow, but correct). ``threads=True`` runs
    every launch with one OS thread per CUDA thread even where the kernel allows the fast
    serial mode (no __syncthreads), to check that both modes agree.
    """

    xp = np

    def __init__(self, kernels=None, threads: bool = False):
        self.kernels, self.threads = kernels, threads

    def check(self, dst, src) -> None:
        if not isinstance(dst, np.ndarray) or not isinstance(src, np.ndarray):
            raise TypeError(
                f"HostLauncher copies numpy arrays, got {type(dst).__name__} and "
                f"{type(src).__name__}"
            )

    def on(self, dst):
        return contextlib.nullcontext()

    @staticmethod
    def address(a) -> int:
        return a.ctypes.data

    def memcpy(self, dst: int, src: int, nbytes: int) -> None:
        ctypes.memmove(dst, src, nbytes)  # the GPU's cudaMemcpyAsync, on host memory

    def launch(self, spec) -> None:
        k = self.kernels
        lib = (k if k is not None and spec.variant in k else _kernels_for(spec.variant)).lib
        emulate.launch(
            lib,
            spec.name,
            spec.grid,
            spec.block,
            spec.args,
            serial=spec.serial_ok and not self.threads,
        )


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
