"""Emulated cuda: numpy arrays over host bytes from the device caching allocator.

With no GPU and GPU_TENSOR_FALLBACK=1, 'cuda:N' tensors live here. Their bytes come from
`gpu_tensor.memory.registry.get_allocator(N, 'emulated')`, whose blocks are real host
addresses, so memory stats, summaries and snapshots behave as on a GPU. A block goes back
to the allocator when the last numpy array over it dies (not merely the storage object:
a view someone kept must not dangle).

Results are computed into allocator memory, so an impossible size is the allocator's
OutOfMemoryError before numpy touches host memory: a ufunc or a routine that takes `out=`
is planned and called with it (`elementwise`, `compute_into`); a composite of numpy calls
or a routine without `out=` fills its result piece by piece (`_fill`), so numpy's
temporaries stay under PIECE elements whatever the tensor's size.
"""

from __future__ import annotations

import ctypes
import math
import threading
import weakref

import numpy as np

from ..device import _make
from ..memory import registry
from ..storage import UntypedStorage
from ._ufunc_plan import plan
from .base import PIECE
from .cpu import CpuBackend, saturating_astype, torch_empty_strides

__all__ = ["EmulatedCudaBackend"]

_NAMES: dict = {}
_FIRST_TWO = slice(0, 2)  # a dim's first two elements: enough to show numpy's axis order


class _Release(weakref.ref):
    """A weak reference to a `_raw` buffer that gives its block back when the buffer dies."""

    __slots__ = ("block", "owner")


def _released(ref):
    block = ref.block
    owner = ref.owner
    try:
        del owner._live[block.ptr]
        owner._alloc.free(block)
    except Exception:  # noqa: BLE001 - interpreter shutdown: the allocator may be gone
        pass


class EmulatedCudaBackend(CpuBackend):
    is_emulated = True
    fills_by_pieces = True
    # operands in the compute dtype skip apply()'s promotion (ops/_host_paths._host_fast)
    device_fast_path = True

    def __init__(self, index: int):
        self.index = index
        self.device = _make("cuda", index)
        self._alloc = None
        # contiguous()/astype() write into allocator memory; the adopt() that callers make
        # next takes that array as it is (no second copy), found here by identity
        self._fresh = threading.local()
        # block address -> the weak reference that frees the block when its `_raw` buffer
        # dies (kept alive here until then)
        self._live: dict[int, _Release] = {}

    def _raw(self, nbytes: int, shape, np_dtype, inside: int = 0, strides=None):
        """(array, storage): an uninitialised array of `shape` and `np_dtype` (C order, or
        `strides`) over `nbytes` of one allocator block, and its UntypedStorage. `inside`:
        how many frames above this one's caller (empty, _into or _empty_in_order_of) are in
        gpu_tensor for sure."""
        alloc = self._alloc
        if alloc is None:  # created on first use, so importing never sizes a device
            alloc = self._alloc = registry.get_allocator(self.index, "emulated")
        # (its creation site is searched for from above this frame and its caller's, and
        # the `inside` ones above them)
        block = alloc.malloc(nbytes or 1, 0, 2 + inside)
        name = _NAMES.get(np_dtype)
        if name is None:
            name = _NAMES[np_dtype] = np_dtype.name  # .name costs ~1 us in numpy
        block.tag = {"shape": tuple(shape), "dtype": name}
        segment = block.segment
        host = segment.host
        if host is None:
            host = segment.host = _host_view(segment)
        # an array over the segment's memoryview is the array's base (numpy stops collapsing
        # views there), so the array and every view of it keep `buf` alive; a weak
        # reference frees the block when the last one dies (about a third of the cost of
        # a holder object numpy reads through __array_interface__)
        ptr = block.ptr
        buf = np.ndarray((nbytes,), np.uint8, host, ptr - segment.ptr)
        ref = _Release(buf, _released)
        ref.block = block
        ref.owner = self
        self._live[ptr] = ref
        st = UntypedStorage(buf, ptr, self.device, block)
        if nbytes or strides is not None:  # (a view in one call: a third of view().reshape())
            return np.ndarray(shape, np_dtype, buf, 0, strides), st
        return torch_empty_strides(buf.view(np_dtype).reshape(shape)), st

    def empty(self, shape, np_dtype, inside: int = 0):
        np_dtype = np.dtype(np_dtype)
        return self._raw(math.prod(shape) * np_dtype.itemsize, shape, np_dtype, inside)

    def adopt(self, array):
        fresh = getattr(self._fresh, "item", None)
        if fresh is not None:
            ref, st = fresh
            if ref() is array:
                self._fresh.item = None
                if st is None:
                    st = _storage_under(array, self.device)
                if st is not None:
                    return array, st
        if array.flags.c_contiguous:
            out, st = self.empty(array.shape, array.dtype)
        else:  # keep a transposed/permuted result's layout, as numpy (cpu) and cupy do
            out, st = self._empty_in_order_of(array.shape, array.strides, array.dtype)
        out[...] = array
        return out, st

    def contiguous(self, array):
        """A C-contiguous copy in allocator memory: an impossible size is the allocator's
        OutOfMemoryError (never numpy's MemoryError), and no host temporary escapes the
        memory stats."""
        out, st = self.empty(array.shape, array.dtype)
        np.copyto(out, array)
        return self._keep(out, st)

    def astype(self, array, np_dtype):
        """array's values in `np_dtype`, its layout kept (order "K"), in allocator memory."""
        np_dtype = np.dtype(np_dtype)
        if array.flags.c_contiguous or not array.size:
            out, st = self.empty(array.shape, np_dtype)
        else:
            out, st = self._empty_in_order_of(array.shape, array.strides, np_dtype)
        if array.dtype.kind in "fc" and np_dtype.kind in "biu":  # the one cast rule
            for piece in _pieces(out.shape, out.strides, PIECE):  # (its temporaries)
                np.copyto(out[piece], saturating_astype(array[piece], np_dtype), casting="unsafe")
        else:
            np.copyto(out, array, casting="unsafe")
        return self._keep(out, st)

    def elementwise(self, key, fn, args, out_np, params=None):
        try:
            # a ufunc computes straight into allocator memory: an impossible size is the
            # allocator's OutOfMemoryError before any host temporary exists
            if type(fn) is np.ufunc and not params:
                result = plan(fn, args)
                if result is not None:  # (also when empty: numpy's checks, e.g. uint8 + 300)
                    return self._into(fn, args, *result)
            else:  # a composite of numpy calls: piece by piece into allocator memory
                shape = _broadcast_shape(args)
                if shape is not None and math.prod(shape) > PIECE:
                    return self._elementwise_by_pieces(fn, args, params or {}, shape)
            # small, or numpy's own refusal: numpy allocates, then adopt() copies it in
            return super().elementwise(key, fn, args, out_np, params)
        except MemoryError as exc:  # numpy's temporary: report it as the device's OOM
            raise self.host_memory_error(exc, key or "an elementwise result") from None

    def host_memory_error(self, exc, what):
        """numpy's MemoryError here is the device's: gt.OutOfMemoryError."""
        from ..memory.oom import OutOfMemoryError

        return OutOfMemoryError(
            f"CUDA out of memory on emulated cuda:{self.index} computing {what}: {exc} "
            "(the emulated device computes in host memory); use smaller tensors, or "
            "chunk the computation",
            device=self.index,
        )

    def compute_into(self, fn, operands, plan):
        """`fn(*operands, out=out)` into allocator memory of `plan()`'s shape and dtype, laid
        out as numpy would lay out the result: an impossible size is the allocator's
        OutOfMemoryError before any host temporary exists, and adopt() takes the result
        with no second copy. The layout is C order when every operand is C-contiguous (or
        the caller says so, or the result has at most one dim of size > 1, where every
        compact layout is C's); otherwise it is read off `fn` run on the operands' first two
        elements of each dim, which have the same strides: numpy orders a result's axes by
        its operands' strides alone, treating every size-1 dim alike (checked against
        numpy's own allocation by a fuzz in tests/backends/test_emulated_results.py)."""
        ordered = True  # every operand C-contiguous
        for a in operands:
            if not a.size:  # numpy allocates: the layout of a result made from an empty
                return fn(*operands)  # operand depends on more than its strides
            if ordered and not a.flags.c_contiguous:
                ordered = False
        planned = plan()
        if planned is None:  # numpy allocates (and raises its own error)
            return fn(*operands)
        shape, np_dtype, c_order = planned
        strides = None  # C order
        if not (c_order or ordered or len(shape) < 2) and sum(n > 1 for n in shape) > 1:
            with np.errstate(all="ignore"):  # the real call below warns, if anything does
                like = fn(*[a[(_FIRST_TWO,) * a.ndim] if a.ndim else a for a in operands])
            if not like.flags.c_contiguous:
                strides = like.strides
        return self._into(fn, operands, shape, np_dtype, strides)

    def sum_keepdims(self, array, axes):
        """(array, storage): `np.sum(array, axis=axes, keepdims=True)` of a float array, in
        allocator memory; the call `sum(dim=axes, keepdim=True)` makes for it
        (reduction._reduce), without its dispatch (autograd's sum_to: a bias's gradient).
        A non-empty operand whose sum numpy lays out in C order (a C-contiguous one, or a
        result with at most one dim over 1) is summed straight into its block by the
        ufunc's reduce (np.sum's own call, without its Python wrapper)."""
        shape = list(array.shape)
        for i in axes:
            shape[i] = 1
        if array.size and (array.flags.c_contiguous or sum(n > 1 for n in shape) < 2):
            out, st = self._raw(math.prod(shape) * array.itemsize, shape, array.dtype)
            np.add.reduce(array, axes, None, out, True)
            return out, st
        r = self.compute_into(
            lambda a, out=None: np.sum(a, axis=axes, keepdims=True, out=out),
            (array,),
            lambda: (tuple(shape), array.dtype, False),
        )
        return self.adopt(r)

    def _elementwise_by_pieces(self, fn, args, params, shape):
        """`fn(*args, **params)`, elementwise over the broadcast `shape`, computed over
        pieces of at most PIECE elements into one allocator array: an impossible size is
        the allocator's OutOfMemoryError, and numpy's temporaries stay piece-sized. The
        dtype and the layout are those `fn` gives on each operand's first two elements of
        every dim (as in compute_into)."""
        with np.errstate(all="ignore"):  # the pieces below warn, if anything does
            like = np.asarray(fn(*[_part(a, (_FIRST_TWO,) * len(shape)) for a in args], **params))
        if like.flags.c_contiguous:
            out, st = self.empty(shape, like.dtype)
        else:
            out, st = self._empty_in_order_of(shape, like.strides, like.dtype)
        return self._fill(out, st, fn, args, params)

    def by_pieces(self, fn, operands, shape, np_dtype, whole=()):
        """`fn(*operands)` (see Backend.by_pieces) filled piece by piece into allocator
        memory once it spans over PIECE operand elements; smaller, numpy allocates it and
        adopt() copies it in. A `whole` dim the result keeps at size 1 (a reduction's)
        counts at the operands' length toward a piece's size, and a reduction is cut into
        pieces only where its dims are the operands' inner ones: numpy then sums each
        line in the same order whole or in pieces, so the values are the cpu's."""
        reduced = 1
        for w in whole:
            if shape[w] == 1:
                reduced *= max(
                    [
                        a.shape[w - len(shape) + a.ndim]
                        for a in operands
                        if type(a) is np.ndarray and a.ndim >= len(shape) - w
                    ]
                    or [1]
                )
        if math.prod(shape) * reduced <= PIECE or (
            reduced > 1 and not _inner(operands, len(shape), whole)
        ):
            return fn(*operands)
        out, st = self.empty(shape, np_dtype)
        return self._fill(out, st, fn, operands, {}, whole, max(PIECE // reduced, 1))

    def _fill(self, out, st, fn, operands, params, whole=(), limit=PIECE):
        for piece in _pieces(out.shape, out.strides, limit, whole):
            np.copyto(
                out[piece], fn(*[_part(a, piece) for a in operands], **params), casting="unsafe"
            )
        return self._keep(out, st, hold=True)

    def _into(self, fn, operands, shape, np_dtype, strides):
        """`fn(*operands, out=...)` into a new allocator array of `shape`, C order when
        `strides` is None and else compact in the order of `strides`; kept for adopt()
        with its storage (hold: rebuilding it costs ~1 us a tiny op), as apply() adopts
        these results (or casts them, which replaces the entry) at once."""
        # (a site is searched for from above this frame and its caller's: elementwise or
        # compute_into, its only callers)
        if strides is None:
            out, st = self._raw(math.prod(shape) * np_dtype.itemsize, shape, np_dtype, 1)
        else:
            out, st = self._empty_in_order_of(shape, strides, np_dtype, 2)
        fn(*operands, out=out)
        self._fresh.item = (weakref.ref(out), st)  # (_keep's, written out: the hot path)
        return out

    def _keep(self, out, st, hold=False):
        # a weak reference: a result nobody adopts (a reduction's cast input) frees at once.
        # hold: the storage too (rebuilding it costs ~1 us a tiny op), for elementwise
        # results, which apply() adopts (or casts, which replaces this entry) at once
        self._fresh.item = (weakref.ref(out), st if hold else None)
        return out

    def _empty_in_order_of(self, shape, strides, np_dtype, inside: int = 0):
        """An uninitialised compact array of `shape` whose axes are laid out in the order of
        `strides` (an array's: numpy's order "K"): a permutation of a C-contiguous layout."""
        np_dtype = np.dtype(np_dtype)
        out_strides = [0] * len(shape)
        step = np_dtype.itemsize
        # innermost first; on a tie the later axis is the inner one (C order)
        for i in sorted(range(len(shape)), key=lambda i: (abs(strides[i]), -i)):
            out_strides[i] = step
            step *= shape[i]
        return self._raw(step, shape, np_dtype, inside, out_strides)  # (never empty)

    def from_host(self, host_array):
        return self.adopt(host_array)


def _inner(operands, ndim, whole):
    """Whether the `whole` dims (of an `ndim`-dim result; operands aligned from the right)
    lie inside every other dim of size > 1 in memory, in each array operand."""
    for a in operands:
        if type(a) is np.ndarray:
            off = ndim - a.ndim
            kept, reduced = [0], [0]
            for i, (n, st) in enumerate(zip(a.shape, a.strides, strict=True)):
                if n > 1:
                    (reduced if i + off in whole else kept).append(abs(st))
            if len(kept) > 1 and min(kept[1:]) < max(reduced):
                return False
    return True


def _broadcast_shape(args):
    """The shape the array operands broadcast to, or None (none, or they do not)."""
    shape = None
    for a in args:  # (most calls: one shape; broadcast_shapes costs ~2 us)
        if type(a) is np.ndarray:
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                try:
                    return np.broadcast_shapes(*[b.shape for b in args if type(b) is np.ndarray])
                except ValueError:  # numpy's own call raises its error
                    return None
    return shape


def _part(a, piece):
    """Operand `a`'s part under `piece` (slices of the broadcast result's dims): its own
    dims are the result's last ones, and a dim it broadcasts (size 1) is taken whole."""
    if type(a) is not np.ndarray or not a.ndim:
        return a
    own = piece[len(piece) - a.ndim :]
    return a[tuple(s if n != 1 else slice(None) for s, n in zip(own, a.shape, strict=True))]


def _pieces(shape, strides, limit, whole=()):
    """Slices covering `shape` in pieces of at most `limit` elements (or one line of the
    `whole` dims, never split, where that is more), each a run of the outermost dims in
    memory (by `strides`) over whole inner dims where those fit."""
    if not shape:
        yield (Ellipsis,)  # (a 0-d array: out[()] would be a scalar, not a view)
        return
    if whole:
        for w in whole:
            limit //= max(shape[w], 1)
        limit = max(limit, 1)
        cut = [1 if i in whole else n for i, n in enumerate(shape)]
        for piece in _pieces(tuple(cut), strides, limit):
            yield tuple(slice(None) if i in whole else s for i, s in enumerate(piece))
        return
    order = sorted(range(len(shape)), key=lambda i: (-abs(strides[i]), i))  # outermost first
    inner = [1] * (len(order) + 1)  # elements under order[p:]
    for p in range(len(order) - 1, -1, -1):
        inner[p] = inner[p + 1] * shape[order[p]]
    piece = [slice(None)] * len(shape)

    def walk(p):
        axis, under = order[p], inner[p + 1]
        step = max(1, limit // under) if under <= limit else 1
        for lo in range(0, shape[axis], step):
            piece[axis] = slice(lo, lo + step)
            if under <= limit:
                yield tuple(piece)
            else:
                yield from walk(p + 1)
        piece[axis] = slice(None)

    yield from walk(0)


def _host_view(segment):
    """A memoryview of a segment's host bytes from its start. An expandable segment's runs
    grow and are cut at pages (memory/expandable.py), so theirs is a slice of one view of
    the whole reservation (made once: a ctypes array type per size is cached for good)."""
    res = segment.reservation
    if res is None:
        return memoryview((ctypes.c_char * segment.size).from_address(segment.ptr))
    if res.host is None:
        res.host = memoryview((ctypes.c_char * res.size).from_address(res.base))
    return res.host[segment.ptr - res.base :]


def _storage_under(array, device):
    """The storage of an array made by `_raw` (its base chain ends at that buffer)."""
    buf, base = None, array
    while isinstance(base, np.ndarray):
        buf, base = base, base.base
    if buf is None:
        return None
    for ref in weakref.getweakrefs(buf):
        if type(ref) is _Release:
            return UntypedStorage(buf, ref.block.ptr, device, ref.block)
    return None
