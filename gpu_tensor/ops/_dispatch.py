"""The elementwise dispatcher: PyTorch promotion over the fusion op table, device checks,
and the cpu fast path.

The numpy function, the dtype rule and every per-op rule (refused dtypes, quiet ops, integer
division, complex functions, operand checks) come from the fusion op table
(`gpu_tensor.fusion.optable.OPS`), the same table the CUDA codegen and the tracer read. On cpu/emulated
cuda the numpy function runs directly; on real cuda the backend routes the op to the
fusion engine's eager kernels (backends/cuda.py `elementwise`).

Hot path: `make_binary`/`make_unary` build one function per op (the Tensor operators).
Operands that need no promotion or conversion take a short path: on cpu the numpy ufunc
runs inline; on real cuda the operator keys its operands and calls the backend's warm
entry for that key (backends/cuda_warm.py: the fusion engine's kernel, planned once).
Everything else goes through `apply()`.

This file holds those operators; the rest of the dispatcher lives beside it, each read by
name at import so the operators' bytecodes are those of one file: the op table and dtype
rule (_specs.py), numpy's cheap silencing (_quiet.py), the cuda kernel path's out dtypes,
its cold half and integer division's zero-divisor refusal (_kernel_out.py), the device and
emulated cuda short paths (_host_paths.py), and the general path apply() (_apply.py).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._grad import STATE, record
from .._modes import PASS, intercept, watch
from .._out import call as out_call
from .._out import keyword_out
from .._tensor import Tensor
from ..backends import get_backend
from ..device import CPU
from ..fusion.optable import not_implemented
from ._apply import _mismatch, apply, result_tensor
from ._host_paths import (
    _device_fast,
    _host_fast,
    host_bias_add,
    host_relu_grad,
    host_relu_grad_fits,
)
from ._kernel_out import warm_entry
from ._quiet import _CV, _QUIET_EXTOBJ
from ._specs import _HALF, _SCALAR_CATEGORY, SPECS

# Kept reachable here after the split into _specs, _quiet, _kernel_out, _host_paths and
# _apply: other modules and tests read these as `_dispatch.X` (a monkeypatched
# host_relu_grad included: autograd's relu formula calls it through this module).
_REEXPORTED = (_HALF, result_tensor, host_bias_add, host_relu_grad, host_relu_grad_fits)

__all__ = [
    "SPECS",
    "apply",
    "binary",
    "make_binary",
    "make_unary",
    "mismatch",
    "not_implemented",
]

MODES_ON = watch(globals())  # the modes word, read first by every op here (_modes.py)

_new = object.__new__


def _finish_fast(r, dev, out):
    """Tensor._make for a cpu fast-path result, written out: the extra call costs ~35 ns
    (measured 200 vs 235 ns here) on ops that take ~800 ns in all. Keep the two in step."""
    if type(r) is not np.ndarray:
        r = np.asarray(r)
    t = _new(Tensor)
    t._data = r
    t._st = None
    t.device = dev
    t.dtype = out
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._base = None
    return t


def _silenced(fn, a, other, categories, reflected):
    """fn over a cpu tensor `a` and `other` (a tensor of a's device and dtype, or a scalar
    the fast path takes) with numpy's warnings off; None where apply() must run it."""
    if type(other) is Tensor:
        if other.device is not a.device or other.dtype is not a.dtype:
            return None
        y = other._data
    elif categories.get(type(other)) is None:
        return None
    else:
        y = other  # (any scalar kind: the tensor is complex)
    x, y = (y, a._data) if reflected else (a._data, y)
    tok = _CV.set(_QUIET_EXTOBJ)
    try:
        return fn(x, y)
    except (ValueError, OverflowError, MemoryError):
        return None  # apply() raises the clear error
    finally:
        _CV.reset(tok)


def make_binary(key, reflected=False):
    """`f(self, other)` computing self <op> other (other <op> self when reflected), with
    a fast path for cpu operands that need no promotion or conversion."""
    spec = SPECS[key]
    fn = spec.fn
    quiet = spec.quiet
    # no cheap way to silence numpy (its internals changed): quiet ops take apply()'s path
    fast = spec.fast if spec.ufunc and not (quiet and _CV is None) else {}
    cv, qv = _CV, _QUIET_EXTOBJ
    categories = _SCALAR_CATEGORY
    if spec.op.no_bool:  # tensor - True: apply() raises torch's error
        categories = {k: v for k, v in categories.items() if k is not bool}
    ndarray, asarray, new = np.ndarray, np.asarray, _new
    state = STATE
    name = key if not reflected else _REFLECTED.get(key, key)
    bool_dt, wide_floats, float_by_bool = _dt.bool, (_dt.float32, _dt.float64), key == "mul"
    # complex operands of a loud op: the fast path, silenced (_specs.py's fast_quiet)
    loud = {d: o for d, o in spec.fast_quiet.items() if d not in fast} if fast and cv else {}

    def f(self, other):
        if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
            r = intercept(name, f, (self, other), None)
            if r is not PASS:
                return r
        # autograd, decided here (gpu_tensor/_grad.py): one or two slot reads when no
        # input requires grad; a Tensor subclass `other` is checked on the slow path below
        if self._requires_grad or (other.__class__ is Tensor and other._requires_grad):
            if state.enabled:
                return record(f, None, (self, other), None)
        dev = self.device
        dt = self.dtype
        if dev is CPU:
            if type(other) is Tensor:
                if other.device is not dev or other.dtype is not dt:
                    out = None
                else:
                    out = fast.get(dt)
                    y = other._data
            else:
                c = categories.get(type(other))
                out = fast.get(dt) if c is not None and c <= dt.category else None
                y = other
            if out is not None:
                x = self._data
                if reflected:
                    x, y = y, x
                try:
                    if quiet:
                        tok = cv.set(qv)
                        try:
                            r = fn(x, y)
                        finally:
                            cv.reset(tok)
                    else:
                        r = fn(x, y)
                except (ValueError, OverflowError, MemoryError):
                    pass  # e.g. shapes do not broadcast: apply() raises the clear error
                else:
                    if type(r) is not ndarray:
                        r = asarray(r)
                    t = new(Tensor)  # _finish_fast, inlined: this is the hot path
                    t._data = r
                    t._st = None
                    t.device = dev
                    t.dtype = out
                    t._requires_grad = False
                    t._grad = None
                    t.grad_fn = None
                    t._base = None
                    return t
            elif dt in loud:  # (after the real fast path: it pays nothing for this)
                r = _silenced(fn, self, other, categories, reflected)
                if r is not None:
                    return _finish_fast(r, dev, loud[dt])
        elif (backend := dev._backend) is None:
            pass
        elif backend.casts_in_kernel:  # (such a backend has the device fast path)
            # Real cuda: operands go in their own dtypes, mixed ones included (float + int
            # tensor, half + float, a scalar of another kind), cast as the kernel loads
            # them: one launch. This operator's key of its operands (their layouts' ids,
            # _layout_ids.py: dtype, shape, strides, alignment, eager.run_planned's rules;
            # a number's type) finds the backend's warm entry (backends/cuda_warm.py), which
            # allocates, packs and launches in one frame; the Tensor is made here
            # (Tensor._make, written out, with its layout's id). False: apply().
            # tests/fusion/test_hot_path.py and test_warm_entry.py check it against apply().
            if other.__class__ is Tensor:
                if other.device is dev:
                    try:
                        k, j = self._key, other._key
                    except AttributeError:  # made where no `_key` is set (a subclass's own)
                        k = j = None
                    if k is None:  # not named yet: named once, here
                        k = self._warm_key()
                    if j is None:
                        j = other._warm_key()
                    sig = (token, k, j)
                    x, y = self._data, other._data
                else:  # a 0-dim cpu operand or a mismatch: apply()
                    sig = None
            elif other.__class__ in _SCALAR_CATEGORY:
                try:
                    k = self._key
                except AttributeError:
                    k = None
                sig = (token, k if k is not None else self._warm_key(), other.__class__)
                x = self._data
                y = other
            else:
                sig = None
            if sig is not None:
                try:
                    entry = backend.warm[sig]
                except KeyError:  # a key not seen yet: bind its entry, then take it
                    warm_entry(backend, sig, key, self, other, reflected)
                    return f(self, other)
                if entry:
                    try:
                        r = entry(x, y)
                    except (ValueError, OverflowError):
                        pass  # a number out of the kernel's range (int64): apply()
                    else:
                        t = new(Tensor)  # Tensor._make, inlined: this is the hot path
                        t._data = r
                        t._st = None
                        t.device = dev
                        t.dtype = entry.out
                        t._requires_grad = False
                        t._grad = None
                        t.grad_fn = None
                        t._base = None
                        t._key = entry.key
                        return t
        elif backend.device_fast_path:
            r = _device_fast(backend, key, fn, fast_device, self, other, dev, dt, reflected)
            if r is not None:
                return r
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented  # Python then tries the other side / raises TypeError
        if (
            other.__class__ is not Tensor
            and isinstance(other, Tensor)
            and other._requires_grad
            and state.enabled
        ):
            return record(f, None, (self, other), None)
        if (
            cv is not None
            and isinstance(other, Tensor)
            and other.device is dev
            and (
                other.dtype is dt
                or (other.dtype is bool_dt and float_by_bool and dt in wide_floats)
            )
        ):
            # a subclass operand (nn.Parameter) recording nothing, or a float times a bool
            # mask (relu's backward: numpy's loop casts the bool to the float as apply()
            # would): apply()'s numpy call, as quiet, without its promotion work
            out = fast.get(dt)
            if out is not None and dev is not CPU:
                backend = dev._backend
                if backend is not None and backend.host_arrays:
                    x, y = (other._data, self._data) if reflected else (self._data, other._data)
                    try:
                        return _host_fast(backend, key, fn, (x, y), dev, out)
                    except (ValueError, OverflowError):
                        pass  # apply() raises the clear error
                out = None
            if out is not None:
                x, y = (other._data, self._data) if reflected else (self._data, other._data)
                tok = cv.set(qv)
                try:
                    r = fn(x, y)
                except (ValueError, OverflowError, MemoryError):
                    r = None  # apply() raises the clear error
                finally:
                    cv.reset(tok)
                if r is not None:
                    return _finish_fast(r, dev, out)
        return apply(key, other, self) if reflected else apply(key, self, other)

    fast_device = spec.fast_quiet  # on a GPU every table op runs as a kernel, ufunc or not
    token = key + (":reflected" if reflected else ":warm")  # the warm key's first item
    f.__name__ = f.__qualname__ = key
    f.__gt_differentiable__ = True
    return f


# torch's names for the reflected operators that have their own op (2 - x is aten::rsub)
_REFLECTED = {"sub": "rsub"}

_OPERAND_TYPES = (Tensor, bool, int, float, complex, np.ndarray, np.generic)


def binary(key, a, b):
    """a <op> b where a or b is a Tensor (reflected ops pass the scalar as `a`)."""
    if type(a) is Tensor:
        r = _BINARY[key](a, b)
    elif type(b) is Tensor:
        r = _RBINARY[key](b, a)
    else:
        return apply(key, a, b)
    if r is NotImplemented:
        raise TypeError(
            f"{key}(): unsupported operand types {type(a).__name__} and "
            f"{type(b).__name__}; expected Tensors or Python numbers"
        )
    return r


def make_unary(key):
    spec = SPECS[key]
    fn = spec.fn
    quiet = spec.quiet
    # no cheap way to silence numpy (its internals changed): quiet ops take apply()'s path
    fast = spec.fast if spec.ufunc and not (quiet and _CV is None) else {}
    cv, qv = _CV, _QUIET_EXTOBJ
    state = STATE
    # torch: float ops (exp, sin) cast into a wider out; neg/abs/floor want out's dtype equal
    out_rule = "same" if spec.kind in ("same", "bitwise") else "cast"
    # not a ufunc: on cpu, the operand dtypes apply() calls it with as they are, silenced as
    # apply() silences it (relu: 16 calls a step of bench_train's deep MLP went through apply)
    # (complex operands of a ufunc too: apply()'s call, quiet; _specs.py's fast_quiet)
    composed = (spec.fast if not spec.ufunc else spec.fast_quiet) if _CV is not None else {}

    def f(input, out=None):  # out: positional-or-keyword, see _out.keyword_out
        if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
            r = intercept(key, f, (input,), None if out is None else {"out": out})
            if r is not PASS:
                return r
        if out is not None:
            return out_call(key, f, (input,), {}, out, out_rule)
        if type(input) is not Tensor:  # subclasses, and values traced by @gt.fuse
            if isinstance(input, Tensor) and input._requires_grad and state.enabled:
                return record(f, None, (input,), None)
            return apply(key, input)
        if input._requires_grad and state.enabled:  # autograd (gpu_tensor/_grad.py)
            return record(f, None, (input,), None)
        if input.device is CPU:
            out = fast.get(input.dtype)
            if out is not None:
                try:
                    if quiet:
                        tok = cv.set(qv)
                        try:
                            r = fn(input._data)
                        finally:
                            cv.reset(tok)
                    else:
                        r = fn(input._data)
                except MemoryError as exc:  # an impossible result: torch's error
                    raise get_backend(CPU).host_memory_error(exc, key) from None
                return _finish_fast(r, CPU, out)
            out = composed.get(input.dtype)
            if out is not None:  # a composite of numpy calls (relu): apply()'s call, quiet
                tok = cv.set(qv)
                try:
                    r = fn(input._data)
                except MemoryError as exc:
                    raise get_backend(CPU).host_memory_error(exc, key) from None
                finally:
                    cv.reset(tok)
                if type(r) is np.ndarray and r.dtype == out.np:
                    return _finish_fast(r, CPU, out)
        else:
            dev = input.device
            backend = dev._backend
            if backend is not None and backend.casts_in_kernel:
                # real cuda: any dtype the op takes, cast in the kernel; the warm entry
                # found by the operand's key, as in make_binary (False: apply())
                try:
                    k = input._key
                except AttributeError:  # made where no `_key` is set (a subclass's own)
                    k = None
                sig = (token, k if k is not None else input._warm_key())  # (None: not named yet)
                x = input._data
                try:
                    entry = backend.warm[sig]
                except KeyError:  # a key not seen yet: bind its entry, then take it
                    warm_entry(backend, sig, key, input, None, False)
                    return f(input)
                if entry:
                    t = new(Tensor)  # Tensor._make, inlined: this is the hot path
                    t._data = entry(x)
                    t._st = None
                    t.device = dev
                    t.dtype = entry.out
                    t._requires_grad = False
                    t._grad = None
                    t.grad_fn = None
                    t._base = None
                    t._key = entry.key
                    return t
            elif backend is not None and backend.device_fast_path:
                out = fast_device.get(input.dtype)
                if out is not None:
                    if backend.host_arrays:
                        return _host_fast(backend, key, fn, (input._data,), dev, out)
                    r = backend.elementwise(key, fn, (input._data,), out.np)
                    return Tensor._make(r, dev, out)
        return apply(key, input)

    fast_device = spec.fast_quiet
    token = key + ":warm"  # the warm key's first item
    new = _new

    f.__name__ = f.__qualname__ = key
    f.__doc__ = f"torch.{key}: elementwise."
    keyword_out(f)
    f.__gt_differentiable__ = True
    return f


# -- public functions -----------------------------------------------------------------
_BINARY = {k: make_binary(k) for k, s in SPECS.items() if s.op.arity == 2}
_RBINARY = {k: make_binary(k, reflected=True) for k, s in SPECS.items() if s.op.arity == 2}

mismatch = _mismatch
