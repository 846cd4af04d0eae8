"""Host↔device transfers and pinned host tensors (`.to/.cuda/.cpu/.copy_/.pin_memory`).

This package is where pinned memory and moves live: this module (the copies and pinned
tensors), `staging.py` (the chunked pinned-staging pipeline) and `move.py` (the `.to` /
`.cuda` / `.cpu` / `copy_` argument handling the Tensor methods call).

How each copy runs (``stream`` = the current stream of the cuda device involved):

- pinned host source (ours, C-contiguous) → device: one async copy on ``stream``; the pinned
  block records ``stream`` so the pool does not reuse it before the copy has read it.
- pageable host source → device: chunked staging through pooled pinned buffers with worker
  threads (`staging.py`). Returns once the source has been read, so the caller may modify
  it right away, even with ``non_blocking=True``; only the tail of the DMA is still in flight.
- device → host, ``non_blocking=True``: lands in a new *pinned* tensor with one async copy.
  **The trap (as in torch): its values are valid only after ``stream`` is synchronised**
  (``gt.cuda.synchronize()``, ``stream.synchronize()`` or an event). `wait_ready(t)` does it
  for one tensor, and host reads of the tensor (``numpy()``, ``item()``, ``tolist()``,
  ``np.asarray``, repr, pickling) call it for you; ops on it (``h + 1``) do not, as in torch.
- device → host, blocking: staged through pinned slots into ordinary pageable memory.
- layout (torch's preserve_format): a dense, non-overlapping source (a transpose, a
  permute) keeps its strides: its bytes are one contiguous range, copied as such, and the
  result views the same range with the same strides. Other strided sources (gaps,
  overlaps) arrive C-contiguous, gathered where it is cheaper: on the device by a device copy
  (HBM is ~80x faster than the link), on the host by the staging workers gathering straight
  into the pinned slots (no extra temporary at all).

Blocking copies (``non_blocking=False``) also wait for the stream, as torch's do.
On the emulated device every copy is synchronous, but the same staging code runs (threads,
chunking, pinned pool over host pages), so CPU tests exercise it.
"""

from __future__ import annotations

import weakref

import numpy as np

from gpu_tensor.backends import get_backend
from gpu_tensor.backends.cpu import host_ptr
from gpu_tensor.cuda import streams as _streams
from gpu_tensor.device import CPU, resolve
from gpu_tensor.memory import pinned as _pinned
from gpu_tensor.storage import UntypedStorage
from gpu_tensor.transfer import staging as _staging

__all__ = [
    "to_device",
    "to_host",
    "copy_",
    "pin_memory",
    "is_pinned",
    "empty_pinned",
    "record_stream",
    "wait_ready",
]

_DRIVER_PIN_CHECK_FROM = 1 << 20  # asking the driver costs µs; worth it only for big copies

# pinned block address -> the event behind the non_blocking D2H copy filling that block.
# Entries leave when waited for, when their tensor dies, or (once many pile up) when their
# copies have completed. While one is here, host reads of cpu tensors pay a pool lookup.
_landing: dict[int, object] = {}
_LANDING_PRUNE_FROM = 64  # few results are in flight at once; past this, drop finished ones


# -- pinned host tensors --------------------------------------------------------------------
class _PinnedBytes:
    """numpy wraps the block's address through this; when the last array over it dies, the
    finalizer hands the block back to the pool (which waits for recorded streams)."""

    __slots__ = ("__array_interface__", "__weakref__")

    def __init__(self, ptr: int, nbytes: int):
        self.__array_interface__ = {
            "data": (ptr, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }


def _record_event(stream):
    """The pinned pool's event factory: an event recorded now on a `gpu_tensor.cuda.Stream`
    (or the event `_pinned_use` already recorded)."""
    return stream if isinstance(stream, _streams.Event) else stream.record_event()


def _pinned_use(stream):
    """What the pinned pool remembers for a copy just queued on `stream`: the stream, except
    the per-thread default stream (handle 2 names the *calling* thread's stream, so an event
    recorded when another thread frees the block would go on that thread's stream): then an
    event recorded now, on this thread."""
    return stream.record_event() if stream.cuda_stream == 2 else stream


def _make_default_pool() -> _pinned.PinnedPool:
    from gpu_tensor.backends.cuda_pinned import default_raw_source

    return _pinned.PinnedPool(default_raw_source(), _record_event)


_pinned.set_default_factory(_make_default_pool)


def _pool() -> _pinned.PinnedPool:
    return _pinned.default_pool()


def empty_pinned(shape, dtype=None):
    """An uninitialised cpu tensor in page-locked memory from the pinned pool
    (``gt.empty(..., pin_memory=True)``)."""
    from gpu_tensor import dtype as _dt
    from gpu_tensor._tensor import Tensor

    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.float32
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if any(s < 0 for s in shape):
        raise ValueError(f"empty_pinned: negative dimension in shape {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    pool = _pool()
    block = pool.malloc(nbytes)
    block.tag = {"shape": shape, "dtype": str(dt)}
    holder = _PinnedBytes(block.ptr, nbytes)
    weakref.finalize(holder, _free_pinned, pool, block)
    buf = np.asarray(holder)
    arr = buf.view(dt.np).reshape(shape)
    return Tensor._make(arr, CPU, dt, UntypedStorage(buf, block.ptr, CPU))


def _free_pinned(pool, block) -> None:
    """The last array over a pinned tensor died: forget its in-flight copy, free the block
    (the pool still waits for the recorded streams before reusing it)."""
    _landing.pop(block.ptr, None)
    pool.free(block)


def _pool_block(arr: np.ndarray):
    """The allocated pool block holding host array ``arr``'s first byte, or None (no driver
    call)."""
    if _pinned._default is None:
        return None
    block = _pinned._default.owner(host_ptr(arr))
    return block if block is not None and block.allocated else None


def _pinned_block(t):
    """The pool block holding cpu tensor ``t``'s bytes, or None (no driver call)."""
    return _pool_block(t._data) if t.device.type == "cpu" else None


def is_pinned(t) -> bool:
    """True when ``t`` is a cpu tensor in page-locked memory. Our pool's memory is recognised
    by address; memory pinned elsewhere (cupyx, torch) is asked of the driver."""
    if t.device.type != "cpu":
        return False
    if _pinned_block(t) is not None:
        return True
    return _driver_pinned(t._data)


def _driver_pinned(arr: np.ndarray) -> bool:
    from gpu_tensor.device import real_cuda_available

    if arr.size == 0 or not real_cuda_available():
        return False
    from gpu_tensor.backends.cuda_pinned import is_host_pinned

    return is_host_pinned(host_ptr(arr))


def pin_memory(t):
    """A copy of cpu tensor ``t`` in pinned memory (``t`` itself if it already is)."""
    if t.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t.device}' memory: only cpu tensors can be pinned")
    if _pinned_block(t) is not None:
        return t
    out = empty_pinned(tuple(t.shape), t.dtype)
    _staging.parallel_copy(out._data, t._data)
    return out


def wait_ready(t) -> None:
    """Block until the async copy that fills pinned tensor ``t`` (non_blocking D2H) is done.
    A no-op for any other tensor, and one dict check when no such copy is in flight:
    `Tensor._host()` (every host read of a cpu tensor's values) calls it."""
    if not _landing:
        return
    block = _pinned_block(t)
    event = _landing.pop(block.ptr, None) if block is not None else None
    if event is not None:
        event.synchronize()


def _mark_landing(block, event) -> None:
    if len(_landing) >= _LANDING_PRUNE_FROM:
        for ptr, ev in list(_landing.items()):
            if ev.query():
                _landing.pop(ptr, None)
    _landing[block.ptr] = event


def record_stream(t, stream) -> None:
    """Keep ``t``'s memory from being reused until the work queued on ``stream`` so far is done.
    Pinned host tensors: the pinned pool; cuda tensors: the device caching allocator.
    ``stream``: a `gpu_tensor.cuda.Stream`, or any stream with `__cuda_stream__` (cupy, torch)."""
    if not isinstance(stream, _streams.Stream):
        if not hasattr(stream, "__cuda_stream__"):
            raise TypeError(
                f"record_stream needs a gpu_tensor.cuda.Stream (or a stream with "
                f"__cuda_stream__), got {type(stream).__name__}"
            )
        stream = _streams.Stream.from_external(stream, t.device if t.is_cuda else None)
    if t.device.type == "cpu":
        block = _pinned_block(t)
        if block is None:  # torch: record_stream is for device (and pinned) memory only
            raise RuntimeError(
                "record_stream: expected a cuda tensor or a pinned cpu tensor, "
                "got a pageable cpu tensor (its memory is not stream-ordered); "
                "move it with .cuda() or .pin_memory() first"
            )
        _pool().record_stream(block, stream)
        return
    from gpu_tensor.memory import registry

    allocator = registry.find(t.device.index)  # never creates one
    if allocator is None:
        return
    storage = t._storage
    # Emulated storages carry their block; cupy-made ones are found by their base address.
    block = storage._block or allocator.lookup(storage.data_ptr())
    if block is not None:
        allocator.record_stream(block, stream, stream.device.index)


# -- copies ---------------------------------------------------------------------------------
def _memcpy(stream, kind: str):
    backend = _streams._backend()
    handle, index = stream._handle, stream.device.index

    def memcpy(dst: int, src: int, nbytes: int) -> None:
        backend.memcpy_async(dst, src, nbytes, kind, handle, index)

    return memcpy


def _dense_span(t):
    """For a tensor that is dense and non-overlapping but not C-contiguous (torch's
    is_non_overlapping_and_dense: a permutation of a contiguous layout), the 1-d tensor over
    the contiguous range its elements fill, starting at its first element; else None."""
    if t._data.flags.c_contiguous:
        return None
    shape, strides = t.shape, t.stride()
    expected = 1
    for stride, size in sorted((st, n) for n, st in zip(shape, strides, strict=True) if n != 1):
        if stride != expected:  # a gap, an overlap (e.g. expand's 0) or a negative stride
            return None
        expected *= size
    return t.as_strided((expected,), (1,))


def _device_contiguous(t):
    """``t._data`` as a C-contiguous device array (a device copy when it is strided)."""
    arr = t._data
    if arr.flags.c_contiguous:
        return arr
    return get_backend(t.device).contiguous(arr)


def _h2d(src_arr: np.ndarray, dst, non_blocking: bool) -> None:
    """Copy host array ``src_arr`` into the C-contiguous cuda tensor ``dst``."""
    stream = _streams.current_stream(dst.device)
    backend = get_backend(dst.device)
    dst_ptr = backend.ptr(dst._data)
    memcpy = _memcpy(stream, "h2d")
    block = _pool_block(src_arr) if src_arr.flags.c_contiguous and src_arr.size else None
    if block is not None:
        memcpy(dst_ptr, host_ptr(src_arr), src_arr.nbytes)
        _pool().record_stream(block, _pinned_use(stream))
    elif (
        src_arr.flags.c_contiguous
        and src_arr.nbytes >= _DRIVER_PIN_CHECK_FROM
        and _driver_pinned(src_arr)
    ):
        # Pinned by someone else: no pool to gate reuse; like torch, the caller owns it.
        memcpy(dst_ptr, host_ptr(src_arr), src_arr.nbytes)
    else:
        _staging.stage_h2d(src_arr, dst_ptr, stream, _pool(), memcpy)
    if not non_blocking:
        stream.synchronize()


def to_device(t, device, non_blocking: bool = False):
    """``t`` copied to cuda ``device`` (see the module docstring for what runs)."""
    from gpu_tensor._tensor import Tensor

    dev = resolve(device)
    if dev.type != "cuda":
        raise ValueError(f"to_device: expected a cuda device, got '{dev}' (use to_host)")
    if t.device is dev:
        return t
    flat = _dense_span(t)
    if flat is not None:
        return to_device(flat, dev, non_blocking).as_strided(tuple(t.shape), t.stride(), 0)
    arr, st = get_backend(dev).empty(tuple(t.shape), t.dtype.np)
    out = Tensor._make(arr, dev, t.dtype, st)
    if t.device.type == "cpu":
        _h2d(t._data, out, non_blocking)
    else:
        _peer_copy(out, t, non_blocking)
    return out


def _peer_copy(dst, src, non_blocking: bool) -> None:
    """cuda:i -> cuda:j, ordered after the source device's current stream."""
    src_arr = _device_contiguous(src)
    stream = _streams.current_stream(dst.device)
    src_stream = _streams.current_stream(src.device)
    stream.wait_stream(src_stream)
    _streams._backend().memcpy_peer_async(
        get_backend(dst.device).ptr(dst._data),
        dst.device.index,
        get_backend(src.device).ptr(src_arr),
        src.device.index,
        src_arr.nbytes,
        stream._handle,
    )
    # Both ways, as torch does: the source stream must not reuse src_arr (a temporary when
    # the source was not contiguous) or the source's memory before the copy has read it.
    src_stream.wait_stream(stream)
    if not non_blocking:
        stream.synchronize()


def to_host(t, non_blocking: bool = False):
    """``t`` copied to cpu. ``non_blocking=True``: a pinned tensor, valid after the stream
    is synchronised (or `wait_ready`)."""
    from gpu_tensor._tensor import Tensor

    if t.device.type == "cpu":
        return t
    flat = _dense_span(t)
    if flat is not None:
        return to_host(flat, non_blocking).as_strided(tuple(t.shape), t.stride(), 0)
    if non_blocking:
        out = empty_pinned(tuple(t.shape), t.dtype)
        _d2h(t, out, non_blocking=True)
        return out
    from gpu_tensor.memory import graph_pool

    if graph_pool.active_captures:  # a pageable destination: the host waits for the copy
        graph_pool.guard(".cpu() / .to('cpu') of a cuda tensor")
    arr = np.empty(tuple(t.shape), t.dtype.np)
    out = Tensor._make(arr, CPU, t.dtype, None)
    _d2h(t, out, non_blocking=False)
    return out


def _d2h(src, dst, non_blocking: bool) -> None:
    """Copy cuda tensor ``src`` into cpu tensor ``dst`` (same shape and dtype)."""
    stream = _streams.current_stream(src.device)
    src_arr = _device_contiguous(src)
    src_ptr = get_backend(src.device).ptr(src_arr)
    memcpy = _memcpy(stream, "d2h")
    dst_arr = dst._data
    block = _pinned_block(dst) if dst_arr.flags.c_contiguous else None
    if block is not None:
        memcpy(host_ptr(dst_arr), src_ptr, dst_arr.nbytes)
        _pool().record_stream(block, _pinned_use(stream))
        if non_blocking:
            event = _streams.Event()
            event.record(stream)
            _mark_landing(block, event)
        else:
            stream.synchronize()
        return
    # Pageable (or strided) destination: the copy cannot be asynchronous with respect to the
    # host without a pinned landing buffer, so stage it and return with the data in place.
    _staging.stage_d2h(src_ptr, dst_arr, stream, _pool(), memcpy)


def copy_(dst, src, non_blocking: bool = False):
    """``dst[...] = src`` across devices, same shape and dtype (the core handles the rest)."""
    if tuple(dst.shape) != tuple(src.shape) or dst.dtype is not src.dtype:
        raise ValueError(
            f"transfer.copy_ needs equal shapes and dtypes, got {tuple(dst.shape)} {dst.dtype} "
            f"<- {tuple(src.shape)} {src.dtype}; Tensor.copy_ converts before calling it"
        )
    if dst.device is src.device:
        get_backend(dst.device).copy_(dst._data, src._data)
        return dst
    if src.device.type == "cpu":  # host -> device
        if dst._data.flags.c_contiguous:
            _h2d(src._data, dst, non_blocking)
        else:
            tmp = to_device(src, dst.device, non_blocking=True)
            get_backend(dst.device).copy_(dst._data, tmp._data)  # ordered on the stream
            if not non_blocking:
                _streams.current_stream(dst.device).synchronize()
    elif dst.device.type == "cpu":  # device -> host
        _d2h(src, dst, non_blocking)
    else:
        if dst._data.flags.c_contiguous:
            _peer_copy(dst, src, non_blocking)
        else:
            tmp = to_device(src, dst.device, non_blocking)
            get_backend(dst.device).copy_(dst._data, tmp._data)
    return dst
