"""Factory functions with PyTorch's semantics: tensor (copies), as_tensor/asarray/from_numpy
(share when they can), empty/zeros/ones/full/eye/arange/linspace, random, and *_like."""

from __future__ import annotations

import math

import numpy as np

from . import _args
from . import _torch_samplers as _samplers
from . import dtype as _dt
from ._data import host_from_data
from ._host_memory import host_memory
from ._layout import empty_with_strides
from ._modes import PASS, intercept, watch
from ._mt19937 import DEFAULT_SEED as _DEFAULT_SEED
from ._mt19937 import MTStream
from ._out import creation as creation_out
from ._tensor import Tensor
from ._torch_samplers import fill_normal, fill_uniform
from .backends import PIECE, get_backend
from .device import CPU as _CPU
from .device import get_default_device, resolve
from .dtype import DType as _DType
from .layouts import contiguous_format, format_strides, memory_format_arg, preserve_format

__all__ = [
    "tensor",
    "as_tensor",
    "asarray",
    "from_numpy",
    "empty",
    "zeros",
    "ones",
    "full",
    "eye",
    "arange",
    "linspace",
    "logspace",
    "rand",
    "randn",
    "randint",
    "randperm",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "scalar_tensor",
    "empty_strided",  # (gt.manual_seed is ops/random.py's, which calls ours)
]

MODES_ON = watch(globals())  # the modes word, read first by every op here (_modes.py)

# The default generator's two parts: torch's cpu twister (rand, randn, randint, randperm,
# the in-place samplers torch's numbers are reproduced for) and a numpy generator for the
# distributions drawn with numpy's algorithms (multinomial, poisson, ...). Both reseed
# together; ops/random.py wraps them as gt.default_generator.
_mt = MTStream(_DEFAULT_SEED)
_rng = np.random.default_rng(_DEFAULT_SEED)
_make = Tensor._make  # a plain function: ~15 ns less than the staticmethod lookup per call


def manual_seed(seed: int):
    """Seed the generator behind rand/randn/randint/randperm (all devices)."""
    global _rng
    _mt.reseed(int(seed))
    _rng = np.random.default_rng(_mt.seed)
    return _rng


def _stream(generator) -> MTStream:
    if generator is None:
        return _mt
    if isinstance(generator, np.random.Generator):  # (accepted before gt.Generator was
        # torch's stream: a twister seeded from it, so its draws stay repeatable)
        return MTStream(int(generator.integers(1 << 63)))
    return generator._mt


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _from_host(host: np.ndarray, dt, device) -> Tensor:
    """A tensor on `device` holding (a copy of) the numpy array `host` (already dtype dt)."""
    dev = resolve(device)
    b = get_backend(dev)
    arr, st = b.from_host(host)
    return Tensor._make(arr, dev, dt, st)


def _generated(shp, dt, device, draw, then=None) -> Tensor:
    """A tensor of `shp` on `device` whose C-order values are `draw(lo, k)` (a host array
    of the k values from flat index lo on, cast to dt like astype) over pieces of at most
    PIECE values. Where the device's arrays are host memory (cpu, emulated cuda) the pieces
    land in the result itself: an impossible size is the device allocator's error before
    any host buffer exists, and numpy's temporaries stay piece-sized. Elsewhere a host
    array is filled the same way and copied over, so every device gets the same values.
    `then(array)` runs on the filled host array before it is copied anywhere."""
    dev = resolve(device)
    b = get_backend(dev)
    if dev.type == "meta":  # shape and dtype only: nothing is drawn
        return Tensor._make(b.empty(shp, dt.np)[0], dev, dt, None)
    n = math.prod(shp)
    if n <= PIECE:  # one piece: numpy's array, as the device takes it
        arr = draw(0, n).astype(dt.np)
        if len(shp) != 1:
            arr = arr.reshape(shp)
        if then is not None:
            then(arr)
        return _from_host(arr, dt, dev)
    in_place = b.host_arrays
    arr, st = b.empty(shp, dt.np) if in_place else (np.empty(shp, dt.np), None)
    fill_drawn(arr.reshape(-1), draw)  # (a view: arr is C-contiguous)
    if then is not None:
        then(arr)
    if in_place:
        return Tensor._make(arr, dev, dt, st)
    return _from_host(arr, dt, dev)


def _sampled(shp, dt, device, fill) -> Tensor:
    """A tensor of `shp` on `device` whose C-order values `fill(flat)` writes into a 1-d
    host array (in pieces, _torch_samplers): into the result itself where the device's
    arrays are host memory, else into a host array then copied over (same numbers)."""
    dev = resolve(device)
    b = get_backend(dev)
    if dev.type == "meta":  # shape and dtype only: nothing is drawn
        return Tensor._make(b.empty(shp, dt.np)[0], dev, dt, None)
    if b.host_arrays:
        arr, st = b.empty(shp, dt.np)
        fill(arr.reshape(-1))
        return Tensor._make(arr, dev, dt, st)
    arr = np.empty(shp, dt.np)
    fill(arr.reshape(-1))
    return _from_host(arr, dt, dev)


def fill_drawn(flat, draw) -> None:
    """flat[lo:lo + k] = draw(lo, k) (cast unsafely, as astype) over pieces of PIECE values
    of the 1-d host array `flat`: consecutive pieces of one stream of values."""
    n = flat.shape[0]
    for lo in range(0, n, PIECE):
        k = min(PIECE, n - lo)
        np.copyto(flat[lo : lo + k], draw(lo, k), casting="unsafe")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays, tensors).
    Python ints -> int64, floats -> the default dtype, bools -> bool, complex -> complex64."""
    if MODES_ON and (r := intercept("tensor", tensor, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    host, dt = host_from_data(data, dtype)
    if device is None and isinstance(data, Tensor):
        device = data.device
    t = _from_host(host, dt, device)
    if pin_memory:
        t = t.pin_memory()
    return _finish(t, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if MODES_ON and (r := intercept("scalar_tensor", scalar_tensor, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    return tensor(
        s, dtype=dtype or _dt.get_default_dtype(), device=device, requires_grad=requires_grad
    )


def from_numpy(ndarray) -> Tensor:
    """A cpu tensor sharing `ndarray`'s memory (both ways) and keeping it alive; its dtype
    is kept (float64 stays float64)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if type(ndarray) is not np.ndarray:  # a masked array or matrix: torch takes the raw data
        ndarray = ndarray.view(np.ndarray)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not supported. Make a copy first: "
            "gt.from_numpy(arr.copy()) (or np.ascontiguousarray(arr))."
        )
    if ndarray.dtype.byteorder == ">":
        raise TypeError(
            "can't convert a big-endian numpy array; use arr.astype('<' + ...) "
            "or arr.byteswap().view(arr.dtype.newbyteorder())"
        )
    dt = _dt.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(ndarray, resolve("cpu"), dt)


def from_dlpack(ext) -> Tensor:
    from ._interop import from_dlpack as _fd

    return _fd(ext)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share `data`'s memory when dtype and device allow (ndarrays, cupy arrays, tensors,
    DLPack producers); copy otherwise."""
    dt = None if dtype is None else _dt.to_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dt)
    if isinstance(data, np.ndarray):
        if (
            data.dtype != object
            and data.dtype.kind not in "USV"
            and all(s >= 0 for s in data.strides)
        ):
            t = from_numpy(data)
            return t.to(device=device, dtype=dt)
        return tensor(data, dtype=dt, device=device)
    if type(data).__module__.startswith("cupy") and hasattr(data, "__cuda_array_interface__"):
        from ._interop import from_cupy

        return from_cupy(data).to(device=device, dtype=dt)
    if hasattr(data, "__dlpack__") and hasattr(data, "__dlpack_device__"):
        return from_dlpack(data).to(device=device, dtype=dt)
    return tensor(data, dtype=dt, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """torch.asarray: shares memory unless a copy is required or `copy=True`; `copy=False`
    raises when sharing is impossible."""
    if copy:
        t = tensor(obj, dtype=dtype, device=device)
        if device is None and isinstance(obj, Tensor):
            t = t.to(obj.device)
        return _finish(t, requires_grad)
    t = as_tensor(obj, dtype=dtype, device=device)
    if copy is False:
        shares = (
            isinstance(obj, Tensor)
            and t._data is obj._data
            or (isinstance(obj, np.ndarray) and t.device.type == "cpu" and t._data is obj)
            or (
                not isinstance(obj, (Tensor, np.ndarray, list, tuple, int, float, bool, complex))
                and t.dtype is (_dt.to_dtype(dtype) if dtype is not None else t.dtype)
            )
        )
        if not shares:
            raise ValueError("asarray(copy=False): the requested dtype/device needs a copy")
    return _finish(t, requires_grad)


# -- filled tensors -------------------------------------------------------------------
def _size(size, fn="empty", itemsize=8) -> tuple:
    """A factory's size argument, checked: whole numbers, none negative, a byte count that
    fits in int64 (torch: "Storage size calculation overflowed")."""
    seq = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    for s in seq:  # a plain loop: the all-int case is every well-formed call
        if type(s) is not int:
            shp = _args.sizes(size, fn)
            break
    else:
        shp = tuple(seq)
    n = itemsize
    for s in shp:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shp)}; sizes "
                "must be >= 0"
            )
        if s > _I64_MAX:
            raise TypeError(
                f"{fn}(): size {s} does not fit in int64 (Overflow when unpacking long long)"
            )
        n *= s
    if n > _I64_MAX:
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(shp)}: "
            f"{fn}() cannot hold that many elements"
        )
    return shp


_I64_MAX = 2**63 - 1


def _kw(args, star=None):
    """A factory's arguments (its locals() on entry) as the keywords a mode handler is
    given; `star`: the *size argument, passed positionally instead."""
    kw = dict(args)
    if star is not None:
        del kw[star]
    return kw


def _dtype_or_default(dtype):
    return _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)


def empty(
    *size,
    out=None,
    dtype=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    memory_format=None,
) -> Tensor:
    """Uninitialised memory. `pin_memory=True` (cpu) gives a page-locked host tensor."""
    if MODES_ON and (r := intercept("empty", empty, size, _kw(locals(), "size"))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if out is not None:
        extra = {"pin_memory": pin_memory, "memory_format": memory_format}
        return _out("empty", empty, size, out, dtype, device, requires_grad, **extra)
    dt = (
        _dt.get_default_dtype()
        if dtype is None
        else (dtype if type(dtype) is _DType else _dt.to_dtype(dtype))
    )
    if len(size) == 1 and type(size[0]) is int and 0 <= size[0] < 1 << 59:  # no overflow
        shp = size  # empty(n): the commonest call, parsed without helpers
    else:
        shp = _size(size, "empty", dt.itemsize)
    if device is None:
        dev = _CPU if pin_memory else get_default_device()  # torch: pinning implies cpu
    elif device is _CPU or type(device) is str and device == "cpu":
        dev = _CPU  # the commonest explicit device: nothing to resolve or check
    else:
        dev = resolve(device)
    if not (pin_memory or requires_grad or memory_format):
        b = dev._backend or get_backend(dev)
        arr, st = b.empty(shp, dt.np)
        return _make(arr, dev, dt, st)
    if memory_format is not None:
        memory_format_arg(memory_format, "empty")
        if memory_format is preserve_format:
            raise RuntimeError("unsupported memory format Preserve")
    if pin_memory:
        if dev.type != "cpu":
            raise RuntimeError("pin_memory=True only applies to cpu tensors")
        from .transfer import empty_pinned  # the user-facing layer: imported when asked for

        t = empty_pinned(shp, dt)
        if memory_format is not None and memory_format is not contiguous_format:
            t = t.clone(memory_format=memory_format)
    elif memory_format is not None and memory_format is not contiguous_format:
        t = empty_with_strides(shp, format_strides(memory_format, shp), dt, dev)  # torch's
    else:
        t = _empty(shp, dt, dev)
    return _finish(t, requires_grad)


def _empty(shp, dt, dev) -> Tensor:
    arr, st = get_backend(dev).empty(shp, dt.np)
    return Tensor._make(arr, dev, dt, st)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if MODES_ON and (r := intercept("empty_strided", empty_strided, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    size, stride = (
        _size((size,), "empty_strided"),
        _args.sizes((stride,), "empty_strided", "stride"),
    )
    if len(size) != len(stride):
        raise RuntimeError(
            f"empty_strided(): dimensionality of sizes ({len(size)}) must match "
            f"dimensionality of strides ({len(stride)})"
        )
    n = 1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True)) if 0 not in size else 0
    base = empty(n, dtype=dtype, device=device)
    return _finish(base.as_strided(size, stride, 0), requires_grad)


def _filled(shp, dt, dev, value) -> Tensor:
    arr, st = get_backend(dev).empty(shp, dt.np)
    if arr.dtype != dt.np:  # real cuda keeps bfloat16 as uint16 bits
        value = np.array(value, dt.np).view(arr.dtype).item()
    arr.fill(value)
    return Tensor._make(arr, dev, dt, st)


def full(size, fill_value, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    if MODES_ON and (r := intercept("full", full, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if out is not None:
        return _out("full", full, (size, fill_value), out, dtype, device, requires_grad)
    fill_value = _args.number_arg(fill_value, "full", "fill_value")
    dt = _dt.scalar_dtype(fill_value) if dtype is None else _dt.to_dtype(dtype)
    fill_value = _args.check_fits(fill_value, dt, "full")
    shp = _size((size,), "full", dt.itemsize)
    return _finish(_filled(shp, dt, resolve(device), fill_value), requires_grad)


def zeros(*size, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    if MODES_ON and (r := intercept("zeros", zeros, size, _kw(locals(), "size"))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    return _constant(zeros, 0, size, out, dtype, device, requires_grad)


def ones(*size, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    if MODES_ON and (r := intercept("ones", ones, size, _kw(locals(), "size"))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    return _constant(ones, 1, size, out, dtype, device, requires_grad)


def _constant(fn, value, size, out, dtype, device, requires_grad) -> Tensor:
    """zeros' and ones' body: a tensor of `size` filled with `value`."""
    name = fn.__name__
    if out is not None:
        return _out(name, fn, size, out, dtype, device, requires_grad)
    dt = _dtype_or_default(dtype)
    shp = _size(size, name, dt.itemsize)
    return _finish(_filled(shp, dt, resolve(device), value), requires_grad)


def _out(name, fn, args, out, dtype, device, requires_grad, **kwargs) -> Tensor:
    """A factory called with `out=`: called again without it, then written into `out`."""
    kwargs.update(dtype=dtype, device=device, requires_grad=requires_grad)
    return creation_out(name, fn, args, kwargs, out)


@host_memory
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if MODES_ON and (r := intercept("eye", eye, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    dt = _dtype_or_default(dtype)
    n = _args.int_arg(n, "eye", "n")
    m = None if m is None else _args.int_arg(m, "eye", "m", 2)
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye: n and m must be >= 0, got n={n}, m={m}")
    m = n if m is None else m
    _size((n, m), "eye", dt.itemsize)
    t = _filled((n, m), dt, resolve(device), 0)
    if n and m:  # the diagonal: every (m + 1)th element of the flat array
        one = 1 if t._data.dtype == dt.np else np.array(1, dt.np).view(t._data.dtype).item()
        t._data.reshape(-1)[: min(n, m) * (m + 1) : m + 1] = one
    return _finish(t, requires_grad)


@host_memory
def arange(
    start, end=None, step=1, *, out=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    if MODES_ON and (r := intercept("arange", arange, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if out is not None:
        return _out("arange", arange, (start, end, step), out, dtype, device, requires_grad)
    if end is None:
        start, end = 0, start
    vals = [start, end, step]
    for i, v in enumerate(vals):  # plain ints (the common case) need no check
        if type(v) is not int:
            vals[i] = v = _args.number_arg(v, "arange", ("start", "end", "step")[i])
            if isinstance(v, complex):
                raise TypeError("arange(): start, end and step must be real numbers, not complex")
            if not math.isfinite(v):
                raise RuntimeError(
                    f"arange(): unsupported range: {vals[0]} -> {vals[1]} "
                    f"(step {vals[2]}); start, end and step must be finite"
                )
    if vals[2] == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError(
            f"arange: upper bound and larger bound inconsistent with step sign "
            f"(start={vals[0]}, end={vals[1]}, step={vals[2]})"
        )
    if dtype is None:
        dt = (
            _dt.int64
            if all(isinstance(v, (int, np.integer)) for v in vals)
            else (_dt.get_default_dtype())
        )
    else:
        dt = _dt.to_dtype(dtype)
    if dt is _dt.bool:
        raise _dt_not_implemented(
            "arange", dt, "make an integer range and compare it, e.g. arange(n) % 2 == 0"
        )
    span = (vals[1] - vals[0]) / vals[2]
    n = max(math.ceil(span), 0) if span < _I64_MAX // 8 else _I64_MAX
    if n > _I64_MAX // 8:
        raise RuntimeError(
            f"arange(): invalid size {n}, possible overflow: the range "
            f"{vals[0]} -> {vals[1]} with step {vals[2]} is too long"
        )
    # computed in float64 (or int64) then cast, as torch does for its accumulate type
    acc = (
        np.int64
        if dt.category <= _dt.INT and all(isinstance(v, (int, np.integer)) for v in vals)
        else np.float64
    )
    first, step = vals[0], vals[2]
    return _finish(
        _generated((n,), dt, device, lambda lo, k: first + np.arange(lo, lo + k, dtype=acc) * step),
        requires_grad,
    )


@host_memory
def linspace(
    start, end, steps, *, out=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    if MODES_ON and (r := intercept("linspace", linspace, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if out is not None:
        return _out("linspace", linspace, (start, end, steps), out, dtype, device, requires_grad)
    dt = _dtype_or_default(dtype)
    steps = _args.int_arg(steps, "linspace", "steps", 3)
    start = _args.number_arg(start, "linspace", "start")
    end = _args.number_arg(end, "linspace", "end")
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    # (a complex end point keeps its real part: numpy's cast to the float64 it computes in)
    values = _linspace_values(start.real, end.real, steps, trunc=dt.category < _dt.FLOAT)
    return _finish(_generated((steps,), dt, device, values), requires_grad)


def logspace(
    start, end, steps, base=10.0, *, out=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """`base ** linspace(start, end, steps)`, as torch's: the exponents step from `start`
    for the first half and back from `end` for the rest; computed in float64 (torch's
    float32 results for an integer base, within an ulp of them for another)."""
    if MODES_ON and (r := intercept("logspace", logspace, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if out is not None:
        args = (start, end, steps, base)
        return _out("logspace", logspace, args, out, dtype, device, requires_grad)
    dt = _dtype_or_default(dtype)
    steps = _args.int_arg(steps, "logspace", "steps", 3)
    start = float(_args.number_arg(start, "logspace", "start").real)
    end = float(_args.number_arg(end, "logspace", "end").real)
    base = np.float64(_args.number_arg(base, "logspace", "base").real)
    if steps < 0:
        raise RuntimeError(f"logspace(): number of steps must be non-negative, got {steps}")
    if dt.category < _dt.FLOAT:  # torch takes the end points in the integer dtype
        start, end = float(int(start)), float(int(end))
    step = (end - start) / (steps - 1) if steps > 1 else 0.0

    def values(lo, k):
        i = np.arange(lo, lo + k, dtype=np.float64)
        exps = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
        y = np.power(base, exps)
        return np.trunc(y, out=y) if dt.category < _dt.FLOAT else y

    return _finish(_generated((steps,), dt, device, values), requires_grad)


def _linspace_values(start, end, steps: int, trunc: bool):
    """linspace's values lo..lo+k-1 in float64, exactly as np.linspace computes them (step
    = (end - start) / (steps - 1) times the index, plus start, with end itself last);
    `trunc`: rounded toward zero, for an integer dtype."""
    div = steps - 1
    delta = np.subtract(np.float64(end), np.float64(start))
    step = delta / div if div > 0 else None

    def values(lo, k):
        y = np.arange(lo, lo + k, dtype=np.float64)
        if step is None:  # 0 or 1 values: start
            y = y * delta
        elif step == 0:  # denormal steps (numpy's gh-5437)
            y /= div
            y *= delta
        else:
            y *= step
        y += start
        if lo + k == steps and steps > 1:
            y[-1] = end
        return np.trunc(y, out=y) if trunc else y

    return values


@host_memory
def rand(*size, out=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    if MODES_ON and (r := intercept("rand", rand, size, _kw(locals(), "size"))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    return _random_floats(rand, fill_uniform, size, out, dtype, device, requires_grad, generator)


@host_memory
def randn(*size, out=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    if MODES_ON and (r := intercept("randn", randn, size, _kw(locals(), "size"))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    return _random_floats(randn, fill_normal, size, out, dtype, device, requires_grad, generator)


def _random_floats(fn, fill, size, out, dtype, device, requires_grad, generator) -> Tensor:
    """rand's and randn's body: a float tensor of `size` that `fill(stream, flat)` samples."""
    name = fn.__name__
    if out is not None:
        return _out(name, fn, size, out, dtype, device, requires_grad, generator=generator)
    dt = _dtype_or_default(dtype)
    _need_float(dt, name)
    st = _stream(generator)
    shp = _size(size, name)
    return _finish(_sampled(shp, dt, device, lambda flat: fill(st, flat)), requires_grad)


def _need_float(dt, name):
    if dt.category < _dt.FLOAT:  # torch: NotImplementedError (a RuntimeError subclass)
        raise _dt_not_implemented(
            name, dt, "random floats need a floating dtype; use randint for integers"
        )


def _dt_not_implemented(name, dt, hint):
    return NotImplementedError(
        f"\"{name}\" not implemented for '{_dt.SCALAR_TYPE_NAMES[dt.name]}'; {hint}"
    )


@host_memory
def randint(
    low, high=None, size=None, *, dtype=None, device=None, requires_grad=False, generator=None
) -> Tensor:
    if MODES_ON and (r := intercept("randint", randint, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if size is None and isinstance(high, (tuple, list)):
        high, size = None, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size' (a tuple of ints)")
    if not isinstance(size, (tuple, list)):
        raise TypeError(
            f"randint(): argument 'size' must be tuple of ints, not "
            f"{type(size).__name__}; write randint(low, high, ({size!r},))"
        )
    low = _args.int_arg(low, "randint", "low")
    high = _args.int_arg(high, "randint", "high", 2)
    if high <= low:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    dt = _dt.int64 if dtype is None else _dt.to_dtype(dtype)
    st = _stream(generator)
    return _finish(
        _sampled(
            _size((size,), "randint"),
            dt,
            device,
            lambda flat: _samplers.fill_randint(st, flat, low, high),
        ),
        requires_grad,
    )


@host_memory
def randperm(n, *, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    if MODES_ON and (r := intercept("randperm", randperm, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    dt = _dt.int64 if dtype is None else _dt.to_dtype(dtype)
    n = _args.int_arg(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    st = _stream(generator)
    return _finish(
        _sampled((n,), dt, device, lambda flat: _samplers.fill_randperm(st, flat)), requires_grad
    )


def _like(fn, name, input, dtype, device, requires_grad, memory_format, before=(), after=()):
    """`fn(*before, <input's shape>, *after)` in input's dtype and on its device unless given."""
    if memory_format is not None:
        memory_format_arg(memory_format, name)
    t = fn(
        *before,
        _shape(input, name),
        *after,
        dtype=input.dtype if dtype is None else dtype,
        device=input.device if device is None else device,
    )
    return _finish(_relayout(t, input, memory_format), requires_grad)


def _shape(input, fn):
    if isinstance(input, Tensor):
        return input.shape
    return _args.tensor_arg(input, fn)  # raises torch's "must be Tensor, not list"


def _relayout(t, input, memory_format):
    """`t` (C-contiguous, shaped like `input`) in the layout torch's *_like gives: for
    preserve_format (the default) the input's strides when it is non-overlapping and dense
    (a transpose, channels_last), else dense strides in the input's stride order."""
    name = getattr(memory_format, "name", "preserve_format")
    if name.startswith("channels_last"):  # torch's strides for a new tensor in that format
        return t.clone(memory_format=memory_format)
    data = input._data
    if name != "preserve_format" or (data.flags.c_contiguous and data.size and 1 not in data.shape):
        return t  # standard C strides already
    from ._layout import empty_preserving, preserved_strides

    if preserved_strides(data.shape, input.stride()) == t.stride():
        return t
    out = empty_preserving(input, t.dtype, t.device)
    get_backend(t.device).copy_(out._data, t._data)
    return out


def _like_of(fn):
    """torch's `<fn>_like(input)`: `fn` of input's shape, in input's dtype and on its device
    unless told otherwise, laid out as `_relayout` says."""
    name = f"{fn.__name__}_like"

    def like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
        if MODES_ON:
            kw = {"input": input, "dtype": dtype, "device": device}
            kw.update(requires_grad=requires_grad, memory_format=memory_format)
            if (r := intercept(name, like, (), kw)) is not PASS:
                return r  # a mode took the op (gpu_tensor/_modes.py)
        return _like(fn, name, input, dtype, device, requires_grad, memory_format)

    like.__name__ = like.__qualname__ = name
    return like


empty_like = _like_of(empty)
zeros_like = _like_of(zeros)
ones_like = _like_of(ones)
rand_like = _like_of(rand)
randn_like = _like_of(randn)


def full_like(
    input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None
):
    if MODES_ON and (r := intercept("full_like", full_like, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    return _like(
        full, "full_like", input, dtype, device, requires_grad, memory_format, after=(fill_value,)
    )


def randint_like(
    input, low, high=None, *, dtype=None, device=None, requires_grad=False, memory_format=None
):
    if MODES_ON and (r := intercept("randint_like", randint_like, (), _kw(locals()))) is not PASS:
        return r  # a mode took the op (gpu_tensor/_modes.py)
    if high is None:
        low, high = 0, low
    return _like(
        randint,
        "randint_like",
        input,
        dtype,
        device,
        requires_grad,
        memory_format,
        before=(low, high),
    )
