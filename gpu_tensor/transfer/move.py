"""Moves between devices and dtypes: `.to/.cuda/.cpu/.copy_/.pin_memory/.is_pinned`
(bound as methods by `_tensor_methods.py`).

Cross-device copies, pinned memory and `record_stream` are `gpu_tensor.transfer`'s (async
copies, pinned staging); same-device dtype changes and copies are the backend's.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._grad import differentiable
from .._modes import watch
from .._tensor import Tensor, contiguous_format, preserve_format
from ..backends import get_backend
from ..device import CPU, Device, resolve
from ..dtype import DType
from ..layouts import format_strides, memory_format_arg, strides_like
from ..ops._inplace import check_writable

__all__ = ["to", "move", "astype", "copy_", "pin_memory", "is_pinned", "record_stream"]

MODES_ON = watch(globals())  # the modes word, read first by the casts' warm path (_modes.py)
_new = object.__new__


def _transfer():
    """The transfer package (this module's parent: cross-device copies, pinned memory)."""
    from .. import transfer  # the parent package: loaded before this module, never a cycle

    return transfer


def _is_dtype(x) -> bool:
    return (
        type(x) is DType
        or isinstance(x, (np.dtype, type))
        or (type(x).__name__ == "dtype" and type(x).__module__.startswith("torch"))
    )


def _flag_arg(name: str, value):
    """A positional non_blocking/copy of to(): a bool, as torch's parser takes it (a dtype
    given as a string, or after a tensor, lands here and is refused, not ignored)."""
    if value.__class__ is bool or isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(
        f"to() takes {name} (a bool) here, got {value!r} ({type(value).__name__}): give a "
        "dtype as a gpu_tensor dtype (gt.float16), and after a tensor only the flags (the "
        "tensor gives the device and the dtype)"
    )


def to(t, *args, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None):
    if device is None and dtype is None and memory_format is None and not copy:
        # t.to(dtype), t.to(its own device, dtype): the cast's own method (x.half()'s),
        # warm path included
        n = len(args)
        if n == 1:
            dt = args[0]
            if dt.__class__ is DType and t.__class__ is Tensor:
                return (_CASTERS.get(dt) or _caster(dt))(t)
        elif n == 2:
            dev, dt = args
            if (
                dt.__class__ is DType
                and (dev.__class__ is str or dev.__class__ is Device)
                and t.__class__ is Tensor
                and (dev is t.device or resolve(dev) is t.device)
            ):
                return (_CASTERS.get(dt) or _caster(dt))(t)
    if memory_format is not None:
        memory_format_arg(memory_format, "to")
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
        non_blocking = _flag_arg("non_blocking", args.pop(0))
    if args:
        copy = _flag_arg("copy", args.pop(0))
    if args:
        raise TypeError(f"to() got unexpected extra arguments {args!r}")
    dev = t.device if device is None else resolve(device)
    dt = t.dtype if dtype is None else _dt.to_dtype(dtype)
    if dev is t.device and dt is t.dtype:
        out = t.clone() if copy else t
    elif dev is t.device:  # real cuda: the cast method's warm path (a Tensor's own)
        b = dev._backend
        if b and b.casts_in_kernel and t.__class__ is Tensor:
            out = (_CASTERS.get(dt) or _caster(dt))(t)
        else:
            out = astype(t, dt)
    else:
        out = move(t, dev, non_blocking)
        if dt is not out.dtype:
            out = astype(out, dt)
    if memory_format is contiguous_format:
        out = out.contiguous()
    elif memory_format is not None and memory_format is not preserve_format:
        # channels_last(_3d): torch keeps the tensor itself when its strides already follow
        # the format (its suggest_memory_format), else copies into a new tensor's strides
        shape, strides = out._data.shape, out.stride()
        keep = strides_like if out is t else _is_new_strides
        if not keep(memory_format, shape, strides):
            out = out.clone(memory_format=memory_format)
    return out


def _is_new_strides(fmt, shape, strides) -> bool:
    return format_strides(fmt, shape) == tuple(strides)


@differentiable(first=True)
def astype(t, dt: DType):
    """A new tensor with t's values converted to dtype `dt`, on t's device."""
    b = get_backend(t.device)
    arr = b.astype(t._data, dt.np)
    arr, st = b.adopt(arr)
    return type(t)._make(arr, t.device, dt, st)


@differentiable(first=True)
def move(t, device, non_blocking: bool = False):
    """t on `device` (t itself when already there)."""
    dev = resolve(device)
    if dev is t.device:
        return t
    if t.device.type == "meta":
        raise NotImplementedError(
            "Cannot copy out of meta tensor; no data! Please use "
            "torch.nn.Module.to_empty() instead of torch.nn.Module.to() "
            "when moving module from meta to a different device."
        )
    if dev.type == "meta":  # shape, dtype and (dense) strides; the values stay behind
        return type(t)._make(_meta_like(t), dev, t.dtype, None)
    if dev.type == "cpu":
        return _transfer().to_host(t, non_blocking)
    return _transfer().to_device(t, dev, non_blocking)


def copy_(dst, src, non_blocking: bool = False):
    """dst[...] = src: broadcasts src, converts its dtype, copies across devices."""
    check_writable(dst, "copy_")
    if not hasattr(src, "_data"):  # not a Tensor: torch's parser refuses it
        raise TypeError(
            f"copy_(): argument 'src' (position 1) must be Tensor, not "
            f"{type(src).__name__}; convert it with gpu_tensor.tensor(...) first"
        )
    if "meta" in (src.device.type, dst.device.type) and src.device is not dst.device:
        if dst.device.type != "meta":
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        src = move(src.detach(), dst.device)  # into meta: the shape check only
    if src.device is not dst.device:
        if src.dtype is dst.dtype and src.shape == dst.shape:
            _transfer().copy_(dst, src, non_blocking)
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


@differentiable  # the gradient passes unchanged (autograd/formulas_none.py)
def pin_memory(t):
    if t.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t.device}' memory: only cpu tensors can be pinned")
    return _transfer().pin_memory(t)


def is_pinned(t) -> bool:
    return bool(_transfer().is_pinned(t))


def record_stream(t, stream) -> None:
    """Mark t's memory as used by `stream` so the allocator waits for it before reuse."""
    _transfer().record_stream(t, stream)


def _type(self, dtype=None, non_blocking=False) -> str | Tensor:
    """t.type() -> torch's legacy name with our prefix ('gpu_tensor.FloatTensor',
    'gpu_tensor.cuda.LongTensor'); t.type(dtype) -> t.to(dtype); t.type(name), torch's name
    or ours ('torch.cuda.HalfTensor', what t.type() gave), or a legacy class
    (gt.cuda.HalfTensor) -> t on that device kind in that dtype."""
    if dtype is None:
        return _dt.tensor_type_name(self.dtype, self.device.type)
    if dtype.__class__ is str:
        device, dt = _dt.from_tensor_type_name(dtype)
    elif hasattr(dtype, "device_type") and dtype.dtype.__class__ is DType:  # legacy.py's
        device, dt = dtype.device_type, dtype.dtype
    else:
        return self.to(dtype, non_blocking=non_blocking)
    if device == self.device.type:
        return self.to(dt, non_blocking=non_blocking)
    return self.to(device, dt, non_blocking)


_CASTERS: dict = {}  # DType -> its cast method (x.half(), and x.to(dtype) on x's device)


def _caster(dt: DType):
    """The method casting a tensor to `dt` on its device (the tensor itself when it is
    `dt` already), made once per dtype. On real cuda a warm cast is the backend's entry
    for the source's dtype, shape, layout and alignment (backends/cuda_warm.py
    `bind_copy`: the copy kernel's one launch into a fresh block), bound on the first
    cast of that key from the general path's result (`astype`), which every other case
    takes: a mode on, a source that requires grad, a cast with no one-launch kernel. A
    Tensor subclass's cast is its own `to` (SparseTensor's, QTensor's), as before."""
    method = _CASTERS.get(dt)
    if method is not None:
        return method
    token, new = "to:" + dt.name, _new  # the warm key's first item: no op table key

    def method(self):
        if self.__class__ is not Tensor:  # a subclass's own `to` (sparse, quantized)
            return self.to(dt)
        if self.dtype is dt:
            return self
        if not MODES_ON and not self._requires_grad:
            backend = self.device._backend
            if backend is not None and backend.casts_in_kernel:
                try:  # the source's layout id (_layout_ids.py); None: not named yet
                    k = self._key
                except AttributeError:  # made where no `_key` is set (a subclass's own)
                    k = None
                sig = (token, k if k is not None else self._warm_key())
                x = self._data
                try:
                    entry = backend.warm[sig]
                except KeyError:  # first sight of this key: the general path binds it
                    r = astype(self, dt)
                    backend.copy_entry(sig, x, r._data, r._warm_key())
                    return r
                if entry:
                    t = new(Tensor)  # Tensor._make, inlined: this is the hot path
                    t._data = entry(x)
                    t._st = None
                    t.device = self.device
                    t.dtype = dt
                    t._requires_grad = False
                    t._grad = None
                    t.grad_fn = None
                    t._base = None
                    t._key = entry.key
                    return t
        return astype(self, dt)

    method.__doc__ = f"self.to(gpu_tensor.{dt.name})"
    _CASTERS[dt] = method
    return method


def _cuda(self, device=None, non_blocking: bool = False):
    return move(self, "cuda" if device is None else device, non_blocking)


def _cpu(self):
    return move(self, CPU, False)


def _meta_like(t):
    """A meta array of t's shape: t's strides when t is dense (a permutation of a
    contiguous layout, as torch keeps them), else contiguous."""
    from ..backends.meta_array import FAKE_BASE, MetaArray, meta_empty, phantom

    dims = sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n != 1)
    step = 1
    for s, n in dims:
        if s != step:
            return meta_empty(tuple(t.shape), t.dtype.np)
        step *= n
    isz = t.dtype.itemsize
    return MetaArray(
        phantom(FAKE_BASE, tuple(t.shape), tuple(s * isz for s in t.stride()), t.dtype.np)
    )
