"""Real cuda: cupy arrays whose memory comes from our caching allocator.

The points where this backend hands work to another part of gpu_tensor:
- on first use of a device, `backends/cuda_memory.install` puts our caching allocator under
  cupy, and every array this backend makes has its block tagged with shape and dtype (what
  `live_tensors()` and the OOM message show);
- copies, `contiguous` and casts run `gpu_tensor.kernel.copy.strided_copy` (our copy kernels);
- `elementwise` runs `gpu_tensor.fusion.eager.run` (our generated kernels).
Those modules are imported inside the functions: they import cupy-side code this module must
not pull in at `import gpu_tensor` time.

bfloat16: cupy has no bfloat16 dtype, so bfloat16 tensors store their bits as uint16
(`_data.dtype == uint16`; gpu_tensor has no uint16 tensor dtype, so uint16 always means
bfloat16 bits). Views, copies, transfers and creation work on the bits; the copy kernels
are told the logical dtype (`ml_dtypes.bfloat16`) so casts convert values; math ops upcast
to float32, compute, and round back to bfloat16 (round-to-nearest-even), see
`bf16_to_f32` / `f32_to_bf16`.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._layout_ids import layout_id, layout_of
from ..device import _make
from ..memory import graph_pool as _graph_pool
from ..storage import UntypedStorage
from ._cupy import cupy
from .base import Backend
from .cpu import contiguous_strides

__all__ = ["CudaBackend", "bf16_to_f32", "f32_to_bf16"]

_BF16 = _dt.bfloat16.np  # ml_dtypes' bfloat16: the copy kernels' name for it
_BITS = np.dtype(np.uint16)  # how a bfloat16 array is stored (see the module docstring)


def _logical(array):
    """The dtype to tell the copy kernels for `array`: bfloat16 for bf16 bits, else None."""
    return _BF16 if array.dtype == _BITS else None


def _strided_copy(dst, src) -> None:
    """dst[...] = src for cupy arrays (any strides, broadcast src, value-converting cast)."""
    from ..kernel import copy as kcopy

    kcopy.strided_copy(dst, src, dst_dtype=_logical(dst), src_dtype=_logical(src))


def bf16_to_f32(bits, xp):
    """uint16 bfloat16 bits -> float32 values (exact)."""
    return (bits.astype(xp.uint32) << 16).view(xp.float32)


def f32_to_bf16(values, xp):
    """float32 -> uint16 bfloat16 bits, round to nearest even; NaN stays NaN."""
    u = xp.ascontiguousarray(values, dtype=xp.float32).view(xp.uint32)
    rounded = (u + (0x7FFF + ((u >> 16) & 1))) >> 16
    nan = xp.isnan(values)
    return xp.where(nan, xp.uint32(0x7FC0), rounded).astype(xp.uint16)


# cupy v14.2.0 _routines_indexing.pyx:942-953: the dtypes cupy.add.at (scatter_add) takes
_ADD_AT = frozenset(
    np.dtype(t)
    for t in (np.int32, np.int64, np.uint32, np.uint64, np.float16, np.float32, np.float64)
)


class CudaBackend(Backend):
    is_emulated = False
    device_fast_path = True
    casts_in_kernel = True  # the generated kernels convert operands as they load them
    wraps_indices = True

    def __init__(self, index: int):
        from . import cuda_memory

        self.index = index
        self.device = _make("cuda", index)
        self.xp = cupy()
        self._dev = self.xp.cuda.Device(index)
        # With one device it is always the current one: the warm paths skip `with self._dev`
        # (its enter and exit are ~0.5 us of a ~9 us op, bench_host_cost)
        self._one_device = self.xp.cuda.runtime.getDeviceCount() == 1
        # Installed before this backend makes any array, so every byte it uses is counted.
        self._alloc = cuda_memory.install(index)
        self._owner = cuda_memory._BlockOwner  # what returns the block when cupy drops it
        # cupy's classes an elementwise result is made of, looked up once (_result)
        cuda = self._cuda = self.xp.cuda
        self._unowned, self._pointer = cuda.UnownedMemory, cuda.MemoryPointer
        self._ndarray = self.xp.ndarray
        self._run = None  # fusion.eager.run_planned, imported on the first elementwise op
        self._copy = None  # kernel.copy.copy_to_fresh, imported on the first contiguous()
        self._copies: dict = {}  # its launch plans on this device
        self._plans: dict = {}  # eager launch plans of this device (fusion/eager.py run)
        # ... and the warm entries bound to them, which ops/_dispatch.py looks up here
        self.warm = self._plans
        self._results: dict = {}  # (shape, dtype) -> (stored dtype, bytes, tag, None: C strides)
        if self._one_device:  # always current: `contiguous` needs no `with self._dev`
            self.contiguous = self._contiguous  # (a frame less per copy)

    def _tag(self, array, np_dtype=None):
        """Name the allocator block under a fresh array (shape, logical dtype), as the
        emulated device does, for live_tensors() and OOM messages. Views and arrays not
        made through our allocator (lookup gives None) are left alone."""
        b = self._alloc.lookup(array.data.ptr) if array.size else None
        if b is not None:
            dt = array.dtype if np_dtype is None else np.dtype(np_dtype)
            b.tag = {"shape": tuple(array.shape), "dtype": str(_BF16 if dt == _BITS else dt)}
        return array

    def empty(self, shape, np_dtype):
        with self._dev:
            arr = self._tag(self.xp.empty(shape, _storable(np_dtype)), np_dtype)
            if not arr.size:  # torch's strides for empty tensors, as on cpu (cpu.py)
                arr = self.xp.ndarray(
                    arr.shape,
                    arr.dtype,
                    memptr=arr.data,
                    strides=contiguous_strides(arr.shape, arr.itemsize),
                )
            return arr, None

    def empty_laid_out(self, shape, np_dtype, strides):
        """A fresh array of `shape` with element `strides`, a dense layout (torch's layout
        of a new elementwise result, _result_strides.py), allocated and tagged as `empty`'s."""
        arr = self.empty(shape, np_dtype)[0]
        if not arr.size or strides == contiguous_strides(shape, 1):
            return arr
        return self._ndarray(shape, arr.dtype, arr.data, tuple(s * arr.itemsize for s in strides))

    def adopt(self, array):
        """Tag the block under an array cupy made through our allocator; a block this
        backend made and tagged already (its elementwise and copy results) is left as is."""
        b = self._alloc.lookup(array.data.ptr) if array.size else None
        if b is not None and b.tag is None:
            dt = array.dtype
            b.tag = {"shape": tuple(array.shape), "dtype": str(_BF16 if dt == _BITS else dt)}
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
            tuple(shape),
            dt,
            memptr=storage._buf.data + offset * dt.itemsize,
            strides=tuple(s * dt.itemsize for s in strides),
        )

    def from_host(self, host_array):
        _refuse_uint16(host_array.dtype)
        if host_array.dtype == _BF16:
            host_array = host_array.view(_BITS)
        if _graph_pool.active_captures:  # a pageable copy: CUDA stages it on the host
            _graph_pool.guard(
                "copying pageable host memory to the device (gt.tensor, "
                ".to('cuda') of an unpinned tensor)"
            )
        with self._dev:
            return self._tag(self.xp.array(host_array, copy=True, order="K")), None

    def to_host(self, array):
        if _graph_pool.active_captures:  # .item(), .tolist(), .numpy(): the host waits
            _graph_pool.guard("reading a cuda tensor on the host (.item(), .tolist(), .numpy())")
        return self.xp.asnumpy(array)

    def copy_(self, dst, src) -> None:
        xp = self.xp
        with self._dev:
            if not isinstance(src, xp.ndarray):  # a scalar or host value: one small upload
                if dst.dtype == _BITS and getattr(src, "dtype", None) != _BITS:
                    # a value for bfloat16 storage: its bits, not the value cut to uint16
                    src = np.asarray(src, dtype=_BF16).view(_BITS)
                src = xp.asarray(src, dtype=dst.dtype)
            _strided_copy(dst, src)

    def contiguous(self, array):
        """A C-contiguous copy: allocated and tagged as elementwise results are, and copied
        by a launch planned once per layout (kernel/copy.py copy_to_fresh). With one device
        the backend's `contiguous` is `_contiguous` itself (bound in __init__)."""
        if self._one_device:
            return self._contiguous(array)
        with self._dev:
            return self._contiguous(array)

    def _contiguous(self, array):
        bits = array.dtype == _BITS
        # inside=2: _result and this method are gpu_tensor's (the creation site's walk
        # starts at this method's caller)
        out = self._result(array.shape, _BF16 if bits else array.dtype, None, 2)
        copy = self._copy
        if copy is None:
            from ..kernel.copy import copy_to_fresh as copy

            self._copy = copy
        logical = _BF16 if bits else None
        copy(out, array, logical, logical, self._copies)
        return out

    def astype(self, array, np_dtype):
        np_dtype = np.dtype(np_dtype)
        with self._dev:
            # order "K": a transposed/permuted source keeps its layout (torch's
            # preserve_format; numpy's astype on cpu and the emulated device does the same)
            out = self.xp.empty_like(array, dtype=_storable(np_dtype), order="K")
            self._tag(out, np_dtype)
            # The copy kernels cast while they copy; bfloat16 sides are named (_logical) so
            # they convert values, e.g. bf16 bits 0x3F80 -> 1.0, not 16256.
            _strided_copy(out, array)
            return out

    def compute_into(self, fn, operands, plan):
        """`fn(*operands)` as given: cupy allocates the result from our allocator already
        (see CpuBackend.compute_into for the protocol)."""
        return fn(*operands)

    def by_pieces(self, fn, operands, shape, np_dtype, whole=()):
        """`fn(*operands)` as given: cupy allocates from our allocator already."""
        return fn(*operands)

    def elementwise(self, key, fn, args, out_np, params=None):
        """Through the fusion engine's generated kernels, operands in their own dtypes (the
        kernel casts as it loads: one launch, no temporary), with the launch plan cached per
        (op, dtypes, shapes, strides, alignment); complex operands (the codegen has no
        complex types) and key-less ops go to cupy's ufuncs via numpy's protocols. The
        result is this device's already: allocated and tagged here, nothing to adopt."""
        with self._dev:
            if key is not None:
                for a in args:
                    if isinstance(a, np.generic):  # numpy scalars join as Python scalars
                        args = [x.item() if isinstance(x, np.generic) else x for x in args]
                        break
                run = self._run
                if run is None:
                    from ..fusion.eager import run_planned as run

                    self._run = run
                r = run(self._plans, self._result, key, args, out_np, params)
                if r is not None:
                    return r
            r = fn(*args, **params) if params else fn(*args)
            return self._tag(r) if isinstance(r, self.xp.ndarray) else r

    def warm_entry(self, sig, key, operands, out_np, out, swap=False, via=None):
        """ops/_dispatch.py's warm path, on a miss of `sig` (its key of an operator's
        operand dtypes, shapes, layouts and alignment) in `self.warm`: the entry of `key`
        over operands like `operands` (in the kernel's order: `swap`ped from the
        operator's) with result dtype `out_np` (cuda_warm.bind), its `out` set to `out`;
        False where the operator takes apply() (`key` None; no kernel for these dtypes).
        Kept in the plan cache under `sig` either way. `via`: eager.run_planned's (None, or
        a half dtype the kernel rounds other operands through). Raises ValueError where the
        shapes do not broadcast (nothing is kept)."""
        from ..fusion.eager import keep, launch_for

        entry = False
        if key is not None:
            launch = launch_for(self._plans, key, operands, out_np, None, via)
            if launch is not None:
                from .cuda_warm import bind

                entry = bind(self, launch, out_np, swap)
                entry.out = out
                # its results' layout id (_layout_ids.py): in a fresh block, C order or the
                # plan's strides (torch's layout of the operands)
                layout = layout_of(launch.shape, launch.strides, np.dtype(out_np).itemsize)
                entry.key = layout_id(out, launch.shape, layout, 0)
        keep(self._plans, sig, entry)
        return entry

    def copy_entry(self, sig, src, out, key, callers=1) -> None:
        """The warm path of a copy (a cast, `clone()`, `contiguous()`: transfer/move.py,
        _layout.py), on a miss of `sig` (the caller's key of the op and `src`'s dtype,
        shape, layout and alignment) in `self.warm`: keeps under `sig` the entry
        (cuda_warm.bind_copy) that copies arrays like `src` into fresh arrays laid out as
        `out`, the general path's result for `src`, in the same block size and tag; False
        where that copy is not one launch or one memcpy (the caller then keeps taking the
        general path). `key`: `out`'s layout id (_layout_ids.py), every result's: they are
        laid out as `out`, in fresh blocks. `callers`: bind_copy's (the frames above the
        entry that are gpu_tensor's, for the creation site)."""
        from ..fusion.eager import keep

        entry = False
        block = self._alloc.lookup(out.data.ptr) if out.size else None
        if block is not None:
            from ..kernel.copy import fresh_copy

            with self._dev:  # (compiles on first sight, for the arrays' device)
                how = fresh_copy(out, src, _logical(out), _logical(src))
            if how is not None:
                from .cuda_warm import bind_copy

                entry = bind_copy(self, out, block.tag, how, callers)
                entry.key = key
        keep(self._plans, sig, entry)

    def index_add_(self, array, index, values) -> None:
        """cupy.add.at where cupy takes the dtype; otherwise through a dtype it takes:
        bfloat16 bits as float32 values (adding the bits as integers would be wrong), small
        integers and bool in int64 (wrapping back as torch does; bool: any), complex as its
        real and imaginary parts."""
        self._scatter(array, index, values, self.xp.add.at)

    def index_mul_(self, array, index, values) -> None:
        """cupy has no multiply.at: multiply in rounds, one occurrence of each position per
        round, so repeated indices multiply (as numpy's multiply.at does)."""
        self._scatter(array, index, values, self._multiply_at)

    def _scatter(self, array, index, values, at) -> None:
        xp = self.xp
        with self._dev:
            if array.dtype in _ADD_AT:
                at(array, index, values)
            elif array.dtype == _BITS:  # bfloat16 bits
                f = bf16_to_f32(array, xp)
                at(f, index, _bf16_values(values, xp))
                array[...] = f32_to_bf16(f, xp)
            elif array.dtype.kind == "c":
                v = values if isinstance(values, xp.ndarray) else complex(values)
                at(array.real, index, v.real)
                at(array.imag, index, v.imag)
            else:
                wide = array.astype(xp.int64)
                v = values.astype(xp.int64) if isinstance(values, xp.ndarray) else int(values)
                at(wide, index, v)
                array[...] = (wide != 0) if array.dtype == np.bool_ else wide.astype(array.dtype)

    def _multiply_at(self, array, index, values) -> None:
        xp = self.xp
        pos = xp.arange(array.size, dtype=xp.int64).reshape(array.shape)[index]
        vals = xp.broadcast_to(xp.asarray(values, dtype=array.dtype), pos.shape).reshape(-1)
        pos = pos.reshape(-1)
        while pos.size:
            _, first = xp.unique(pos, return_index=True)
            coords = xp.unravel_index(pos[first], array.shape)
            array[coords] = array[coords] * vals[first]
            keep = xp.ones(pos.size, dtype=bool)
            keep[first] = False
            pos, vals = pos[keep], vals[keep]

    def _result(self, shape, np_dtype, launch=None, inside=0):
        """An elementwise result: the backend allocates it, not fusion. Straight from our
        allocator (what cupy.empty would reach through set_allocator, minus the lookups),
        and tagged once, on the block malloc returns. `launch`: eager.run_planned's plan
        for this (shape, dtype), where the layout is kept after its first result (no
        (shape, dtype) hashing on the warm path); None: the layout cache of this backend.
        `inside`: malloc's, the frames from here up that are gpu_tensor's for sure."""
        known = self._results.get((shape, np_dtype)) if launch is None else launch.result
        if known is None:
            known = self._layout(shape, np_dtype, launch)
        stored, nbytes, tag, strides = known
        if not nbytes:
            return self.empty(shape, np_dtype)[0]
        alloc = self._alloc
        # the stream looked up on every call (the current stream can change; the boundary
        # clock of bench_host_cost wraps the function where it is found)
        block = alloc.malloc(nbytes, self._cuda.get_current_stream().ptr, inside)
        block.tag = tag  # one dict per layout, shared: tags are replaced, never edited
        mem = self._unowned(block.ptr, nbytes, self._owner((alloc, block)), self.index)
        # memptr positional: cupy 14's ndarray() takes ~0.3 us longer with it as a keyword
        return self._ndarray(shape, stored, self._pointer(mem, 0), strides)

    def _layout(self, shape, np_dtype, launch):
        """_result's layout of a (shape, dtype) met for the first time (by this backend, or
        by this plan: kept in `launch.result` too, where given). A plan whose result is not
        C-contiguous (launch.strides: torch's layout of its operands) has a layout of its own."""
        if launch is not None and launch.strides is not None:
            launch.result = _result_layout(shape, np_dtype, launch.strides)
            return launch.result
        known = self._results.get((shape, np_dtype))
        if known is None:
            if len(self._results) >= 4096:
                self._results.clear()
            known = self._results[(shape, np_dtype)] = _result_layout(shape, np_dtype)
        if launch is not None:
            launch.result = known
        return known

    def int8_mm_nt(self, a, w):
        """int32 a @ w^T for int8 operands: cuBLAS gemmEx (backends/cuda_blas.py)."""
        from .cuda_blas import int8_mm_nt

        return int8_mm_nt(self, a, w)

    def synchronize(self) -> None:
        self._dev.synchronize()


def _bf16_values(values, xp):
    """Values given as bfloat16 bits (an array or a numpy scalar) as float32."""
    if isinstance(values, xp.ndarray):
        return bf16_to_f32(values, xp) if values.dtype == _BITS else values
    v = np.asarray(values)
    return float(v.view(_BF16) if v.dtype == _BITS else v)


def _result_layout(shape, np_dtype, strides=None) -> tuple:
    """(stored dtype, bytes, the block's tag, strides) of a dense result: C-contiguous
    (strides None), or as `strides` (bytes) give it."""
    stored = _storable(np_dtype)
    n = stored.itemsize
    for size in shape:
        n *= size
    return stored, n, {"shape": shape, "dtype": str(np.dtype(np_dtype))}, strides


def _storable(np_dtype):
    """cupy cannot hold bfloat16: its bits are stored as uint16 (so uint16 itself is refused,
    see _refuse_uint16)."""
    np_dtype = np.dtype(np_dtype)
    _refuse_uint16(np_dtype)
    return np.dtype(np.uint16) if np_dtype.name == "bfloat16" else np_dtype


def _refuse_uint16(np_dtype) -> None:
    """A uint16 cupy array means bfloat16 bits here (the copy kernels and the fusion engine
    convert it as bfloat16), so a real uint16 tensor would be read as bfloat16 values."""
    if np_dtype == _BITS:
        raise NotImplementedError(
            "uint16 tensors are not supported on cuda devices yet: CuPy has no bfloat16 type, "
            "so gpu_tensor stores bfloat16 there as uint16 bits and the two would be confused. "
            "Use int32 (or keep uint16 data on the cpu); uint32 and uint64 work on cuda."
        )
