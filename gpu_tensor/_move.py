"""Moves between devices and dtypes: `.to/.cuda/.cpu/.copy_/.pin_memory/.is_pinned`.

Cross-device copies go to `gpu_tensor.transfer` (async copies, pinned staging) when that
module exists; `_transfer()` is the one place that decides, and `_blocking_move` is the
plain blocking fallback.
"""

from __future__ import annotations

import numpy as np

from . import dtype as _dt
from .backends import get_backend
from .device import CPU, resolve
from .dtype import DType

__all__ = ["to", "move", "astype", "copy_", "pin_memory", "is_pinned", "record_stream",
           "attach"]


def _transfer():
    """The transfer module (async copies, pinned memory), or None if not present."""
    try:
        from . import transfer
    except ImportError:
        return None
    return transfer


def _is_dtype(x) -> bool:
    return type(x) is DType or isinstance(x, (np.dtype, type)) or (
        type(x).__name__ == "dtype" and type(x).__module__.startswith("torch"))


def to(t, *args, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None):
    args = list(args)
    if args and hasattr(args[0], "_data"):  # another Tensor
        other = args.pop(0)
        device, dtype = other.device, other.dtype
    elif args and _is_dtype(args[0]):
        dtype = args.pop(0)
    elif args and args[0] is not None:
        device = args.pop(0)
        if args and _is_dtype(args[0]):
            dtype = args.pop(0)
    elif args:
        args.pop(0)
    if args:
        non_blocking = args.pop(0)
    if args:
        copy = args.pop(0)
    if args:
        raise TypeError(f"to() got unexpected extra arguments {args!r}")
    dev = t.device if device is None else resolve(device)
    dt = t.dtype if dtype is None else _dt.to_dtype(dtype)
    if dev is t.device and dt is t.dtype:
        out = t.clone() if copy else t
    elif dev is t.device:
        out = astype(t, dt)
    else:
        out = move(t, dev, non_blocking)
        if dt is not out.dtype:
            out = astype(out, dt)
    if memory_format is not None and out is not t:
        out = out.contiguous(memory_format=memory_format)
    return out


def astype(t, dt: DType):
    """A new tensor with t's values converted to dtype `dt`, on t's device."""
    b = get_backend(t.device)
    arr = b.astype(t._data, dt.np)
    arr, st = b.adopt(arr)
    return type(t)._make(arr, t.device, dt, st)


def move(t, device, non_blocking: bool = False):
    """t on `device` (t itself when already there)."""
    dev = resolve(device)
    if dev is t.device:
        return t
    transfer = _transfer()
    if transfer is not None:
        if dev.type == "cpu":
            return transfer.to_host(t, non_blocking)
        return transfer.to_device(t, dev, non_blocking)
    return _blocking_move(t, dev)


def _blocking_move(t, dev):
    Tensor = type(t)
    host = t._host()
    if dev.type == "cpu":
        if host is t._data:  # (cannot happen: cpu->cpu returns early) keep it a copy anyway
            host = host.copy()
        return Tensor._make(host, CPU, t.dtype)
    arr, st = get_backend(dev).from_host(host)
    return Tensor._make(arr, dev, t.dtype, st)


def copy_(dst, src, non_blocking: bool = False):
    """dst[...] = src: broadcasts src, converts its dtype, copies across devices."""
    from .ops._inplace import check_writable

    check_writable(dst, "copy_")
    if not hasattr(src, "_data"):  # not a Tensor
        from .creation import tensor as new_tensor

        src = new_tensor(src, dtype=dst.dtype)
    if src.device is not dst.device:
        transfer = _transfer()
        if transfer is not None and src.dtype is dst.dtype and src.shape == dst.shape:
            transfer.copy_(dst, src, non_blocking)
            dst._bump_version()
            return dst
        src = move(src, dst.device, non_blocking)
    b = get_backend(dst.device)
    arr = src._data
    if src.dtype is not dst.dtype:
        arr = b.astype(arr, dst.dtype.np)
    try:
        b.copy_(dst._data, arr)
    except ValueError as exc:
        raise RuntimeError(
            f"copy_: source of shape {tuple(src.shape)} cannot be broadcast to the "
            f"destination's shape {tuple(dst.shape)}"
        ) from exc
    dst._bump_version()
    return dst


def pin_memory(t):
    if t.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t.device}' memory: only cpu tensors can be pinned")
    transfer = _transfer()
    if transfer is not None:
        return transfer.pin_memory(t)
    return t.clone()


def is_pinned(t) -> bool:
    transfer = _transfer()
    if transfer is not None:
        return bool(transfer.is_pinned(t))
    return False


def record_stream(t, stream) -> None:
    """Mark t's memory as used by `stream` so the allocator waits for it before reuse."""
    transfer = _transfer()
    if transfer is not None and hasattr(transfer, "record_stream"):
        transfer.record_stream(t, stream)
        return
    block = t._storage._block
    if block is None or t.device.type != "cuda":
        return
    from .memory import registry

    kind = "emulated" if get_backend(t.device).is_emulated else "cuda"
    registry.get_allocator(t.device.index, kind).record_stream(block, stream)


def _type(self, dtype=None):
    """t.type() -> 'gpu_tensor.float32'; t.type(dtype) -> t.to(dtype)."""
    if dtype is None:
        return f"gpu_tensor.{self.dtype.name}"
    return self.to(dtype)


def _caster(dt: DType):
    def method(self):
        return self.to(dt)

    method.__doc__ = f"self.to(gpu_tensor.{dt.name})"
    return method


def _cuda(self, device=None, non_blocking: bool = False):
    return move(self, "cuda" if device is None else device, non_blocking)


def _cpu(self):
    return move(self, CPU, False)


def attach(cls) -> None:
    """Device/dtype moves as methods: to, cuda, cpu, pin_memory, is_pinned, record_stream,
    and the dtype shortcuts t.float(), t.double(), t.half(), t.long(), ..."""
    cls.to = to
    cls.cuda = _cuda
    cls.cpu = _cpu
    cls.pin_memory = lambda self, device=None: pin_memory(self)
    cls.is_pinned = lambda self, device=None: is_pinned(self)
    cls.record_stream = record_stream
    cls.type = _type
    for name, dt in (("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16),
                     ("bfloat16", _dt.bfloat16), ("int", _dt.int32), ("long", _dt.int64),
                     ("short", _dt.int16), ("bool", _dt.bool), ("byte", _dt.uint8),
                     ("char", _dt.int8), ("cfloat", _dt.complex64),
                     ("cdouble", _dt.complex128)):
        setattr(cls, name, _caster(dt))
