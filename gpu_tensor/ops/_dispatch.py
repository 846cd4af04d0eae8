"""The elementwise dispatcher: PyTorch promotion over the fusion op table, device checks,
and the cpu fast path.

The numpy function, the dtype rule and every per-op rule (refused dtypes, quiet ops, integer
division, complex functions, operand checks) come from the fusion op table
(`gpu_tensor.fusion.optable.OPS`), the same table the CUDA codegen and the tracer read. On cpu/emulated
cuda the numpy function runs directly; on real cuda the backend routes the op to the
fusion engine's eager kernels (backends/cuda.py `elementwise`).

Hot path: `make_binary`/`make_unary` build one function per op (the Tensor operators).
Operands that need no promotion or conversion take a short path: on cpu the numpy ufunc
runs inline; on real cuda they go straight to the backend's `elementwise` (the fusion
engine's kernel). Everything else goes through `apply()`.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .. import dtype as _dt
from .._args import wrap_int
from .._grad import STATE, record
from .._modes import PASS, intercept, watch
from .._out import call as out_call
from .._out import keyword_out
from .._tensor import Tensor
from ..backends import get_backend
from ..backends.base import PIECE
from ..device import CPU
from ..fusion.optable import OPS, not_implemented

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
_HALF = (_dt.float16, _dt.bfloat16)
_SCALAR_CATEGORY = {bool: _dt.BOOL, int: _dt.INT, float: _dt.FLOAT, complex: _dt.COMPLEX}


class _Spec:
    __slots__ = ("key", "op", "fn", "kind", "quiet", "fast", "ufunc")

    def __init__(self, key, op):
        self.key = key
        self.op = op
        self.fn = op.np_fn
        self.kind = op.kind
        # only quiet ops pay for silencing numpy (~0.1 us on the fast path, _quiet_context)
        self.quiet = op.quiet
        self.ufunc = isinstance(op.np_fn, np.ufunc)
        self.fast = {}  # dtype -> out dtype when operands of that dtype need no conversion
        for d in _dt.ALL:
            try:
                compute, out = _dtypes(self, d)
            except RuntimeError:
                continue
            if op.no_bool and d is _dt.bool:
                continue  # refused with torch's message by apply()
            if op.int_division and d.category <= _dt.INT:
                continue  # apply() checks for division by zero
            if op.complex_fn is not None and d.category == _dt.COMPLEX:
                continue  # the table's numpy function is real-only: apply() swaps it
            if compute is d and d not in _HALF:
                self.fast[d] = out


def _dtypes(spec, common):
    """(compute dtype, out dtype) for the promoted operand dtype; NotImplementedError (the
    table's `refuse`) if the op has no kernel for it."""
    op, kind = spec.op, spec.kind
    op.refuse(common)
    if kind == "logical":
        return _dt.bool, _dt.bool
    if kind == "double":  # float_power: computed in double precision (issue 23)
        wide = _dt.complex128 if common.category == _dt.COMPLEX else _dt.float64
        return wide, wide
    compute = common
    if kind == "float" and common.category < _dt.FLOAT:
        compute = _dt.get_default_dtype()
    out = _dt.bool if kind == "compare" else compute
    if compute in _HALF and not op.storage_compute:  # (nextafter steps in half types)
        compute = _dt.float32  # torch's opmath: half types compute in float32
    if common.category == _dt.COMPLEX and op.complex_to_real:
        out = common.to_real()  # torch: |z| of complex64 is float32 (abs)
    return compute, out


SPECS = {k: _Spec(k, op) for k, op in OPS.items()}


def _mismatch(a, b):
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{a.device} and {b.device}! Move one with .to(device) (or .cpu() / .cuda())."
    )


def _broadcast_error(shapes, exc):
    return RuntimeError(
        "shapes "
        + ", ".join(str(list(s)) for s in shapes)
        + " cannot be broadcast together (sizes must match or be 1 at each dimension, "
        "aligned from the right)"
    )


def _quiet_context():
    """(contextvar, token value) that silence numpy's floating-point warnings for a call at
    ~0.1 us instead of np.errstate's ~1 us; (None, None) if numpy's internals differ."""
    try:
        from numpy._core import _ufunc_config

        cv = _ufunc_config._extobj_contextvar
        with np.errstate(all="ignore"):
            return cv, cv.get()
    except (ImportError, AttributeError):
        return None, None


_CV, _QUIET_EXTOBJ = _quiet_context()


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
        elif (backend := dev._backend) is None:
            pass
        elif backend.casts_in_kernel:  # (such a backend has the device fast path)
            # Real cuda: operands go in their own dtypes, mixed ones included (float + int
            # tensor, half + float, a scalar of another kind), cast as the kernel loads
            # them: one launch. Written out here rather than called (a frame of eight
            # arguments less per op; tests/fusion/test_hot_path.py checks it against
            # apply()). The out dtype per operand signature is worked out once (_kernel_out,
            # apply()'s rules) and kept: in `same` (this op's, by dtype) for two tensors of
            # one dtype, else in _KERNEL_OUT.
            table = None
            if type(other) is Tensor:
                if other.device is dev:  # else a 0-dim cpu operand or a mismatch: apply()
                    x, y = self._data, other._data
                    if other.dtype is dt:
                        table, sig = same, dt
                    else:
                        table, sig = _KERNEL_OUT, (key, dt, other.dtype, x.ndim == 0, y.ndim == 0)  # fmt: skip
            elif type(other) in _SCALAR_CATEGORY:
                x, y = self._data, other
                table, sig = _KERNEL_OUT, (key, dt, type(other))
            if table is not None:
                known = table.get(sig)
                if known is None:
                    known = table[sig] = _kernel_out(key, self, other)
                if known:  # (False: apply() must run)
                    out, out_np, extra = known
                    via = None
                    if extra is not None:  # an operand check, or rounding via a half
                        via = _kernel_via(extra, self, other, y, reflected)
                    if via is not False:
                        try:
                            r = backend.kernel(key, (y, x) if reflected else (x, y), out_np, None, via)  # fmt: skip
                        except (ValueError, OverflowError):
                            r = None  # shapes do not broadcast, an int out of range: apply()
                        if r is not None:  # (None: no kernel for these dtypes)
                            return make(r, dev, out)
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

    fast_device = spec.fast  # on a GPU every table op runs as a kernel, ufunc or not
    same = {}  # the cuda path's _kernel_out() for two tensors of one dtype, per dtype
    make = Tensor._make
    f.__name__ = f.__qualname__ = key
    f.__gt_differentiable__ = True
    return f


def _device_fast(backend, key, fn, fast, a, other, dev, dt, reflected):
    """A device backend's short path, skipping apply()'s promotion work: straight to the
    backend's `elementwise`. None: not eligible (apply() then runs the op or raises)."""
    if type(other) is Tensor:
        if other.device is not dev or other.dtype is not dt:
            return None
        y = other._data
    else:
        c = _SCALAR_CATEGORY.get(type(other))
        if c is None or c > dt.category or (c == _dt.BOOL and SPECS[key].op.no_bool):
            return None
        y = other
    out = fast.get(dt)
    if out is None:
        return None
    check = SPECS[key].op.operand_check  # refusals that depend on the operands (int ** -1)
    if check is not None:
        check((other, a) if reflected else (a, other), dt)
    x = a._data
    emulated = backend.host_arrays  # (of the device fast path: emulated cuda)
    if emulated and type(other) is not Tensor and type(fn) is not np.ufunc:
        with np.errstate(all="ignore"):  # a composite gets the scalar as apply() gives it
            y = np.asarray(y).astype(dt.np)[()]
    if reflected:
        x, y = y, x
    try:
        if emulated:
            return _host_fast(backend, key, fn, (x, y), dev, out)
        r = backend.elementwise(key, fn, (x, y), out.np)
    except (ValueError, OverflowError):
        return None  # shapes do not broadcast, an int out of range: apply() raises
    return Tensor._make(r, dev, out)


_KERNEL_OUT: dict = {}  # (key, dtypes/scalar type, 0-dim flags) -> _kernel_out(), or False


def _kernel_via(extra, a, other, y, reflected):
    """The cuda path's rules that depend on the operands, for a _kernel_out() entry that has
    any (`extra`): the operand check (int ** -1 raises), then the kernel's `via`, or False
    where apply() must run (its opmath_scalar rule: a one-element factor at full precision)."""
    common, check, via = extra
    if check is not None:
        check((other, a) if reflected else (a, other), common)
    if via is not None and via[1] and y.size == 1:
        return False
    return via


def _kernel_out(key, a, other):
    """(out dtype, its numpy dtype, extra) of `a <key> other` (`key(a)` when other is None)
    where a kernel that casts its operands as it loads computes exactly what apply()
    computes; False where apply() must run (it raises or checks values on the host).
    `extra`: None (most ops), or (common dtype, operand check, via) for _kernel_via.
    `via`: None, or (half numpy dtype, opmath_scalar) where apply() rounds the
    operands of another dtype through the half common dtype before computing in float32:
    the kernel does the same (eager.run_planned's `via`), except for a one-element second
    operand of an opmath_scalar op, which apply() reads at full precision."""
    spec = SPECS[key]
    op = spec.op
    if op.no_bool and (
        type(other) is bool
        or a.dtype is _dt.bool
        or (type(other) is Tensor and other.dtype is _dt.bool)
    ):
        return False
    if op.arity != (1 if other is None else 2) or (other is None and op.operand_check):
        return False
    common = _dt.result_type(a) if other is None else _dt.result_type(a, other)
    try:
        compute, out = _dtypes(spec, common)
    except (RuntimeError, NotImplementedError):
        return False
    if compute.category == _dt.COMPLEX or out.category == _dt.COMPLEX:
        return False  # the codegen has no complex types
    check = op.operand_check
    if op.int_division and compute.category <= _dt.INT:
        check = _ZeroDivisor(key, check)
    via = None
    if (
        compute is not common
        and common in _HALF
        and (a.dtype is not common or (type(other) is Tensor and other.dtype is not common))
    ):
        via = (common.np, op.opmath_scalar)  # another dtype is rounded through the half first
    return out, out.np, None if check is None and via is None else (common, check, via)


def refuse_zero_divisor(key, divisor):
    """torch's (cpu) error for an integer division by zero: `divisor` a number or an array
    (a device array costs one reduction and a sync)."""
    zero = (divisor == 0).any() if hasattr(divisor, "ndim") else divisor == 0
    if bool(zero):
        raise RuntimeError(f"ZeroDivisionError: integer {key} by zero")


class _ZeroDivisor:
    """Integer division's refusal of a zero divisor, on every device as on cpu (torch's
    cuda kernels check nothing; ours keep the error the other devices give). A number is
    checked on the host for free; a tensor divisor costs one reduction and a device sync."""

    __slots__ = ("key", "then")

    def __init__(self, key, then):
        self.key, self.then = key, then

    def __call__(self, operands, common):
        d = operands[1]
        refuse_zero_divisor(self.key, d._data if type(d) is Tensor else d)
        if self.then is not None:
            self.then(operands, common)


def _host_fast(backend, key, fn, args, dev, out):
    """Emulated cuda's short path: numpy straight into allocator memory, silenced as
    apply() silences it (its promotion work skipped, ~2x cheaper per tiny op), adopted."""
    if fn is _RELU_FN:  # not a ufunc: computed into its block here, not copied in
        r = _host_relu(backend, args[0], dev, out)
        if r is not None:
            return r
    if _CV is None:
        with np.errstate(all="ignore"):
            r = backend.elementwise(key, fn, args, out.np)
    else:
        tok = _CV.set(_QUIET_EXTOBJ)
        try:
            r = backend.elementwise(key, fn, args, out.np)
        finally:
            _CV.reset(tok)
    if type(r) is not np.ndarray:
        r = np.asarray(r)
    if r.dtype != out.np:
        r = backend.astype(r, out.np)
    r, st = backend.adopt(r)
    return Tensor._make(r, dev, out, st)


def host_relu_grad_fits(g, out) -> bool:
    """Whether relu's gradient `0 where out <= 0 else g` may take host_relu_grad: emulated
    cuda tensors of one float32/float64 dtype, shape and device, nothing recording (no
    create_graph) or watching (no mode)."""
    dev = g.device
    backend = dev._backend
    return (
        backend is not None
        and backend.device_fast_path  # ... and host arrays: _device_fast's emulated branch
        and backend.host_arrays
        and out.device is dev
        and type(g) is Tensor
        and g.dtype is out.dtype
        and g.dtype in _RELU_ZERO
        and g._data.shape == out._data.shape
        and not STATE.enabled
        and not MODES_ON
    )


def host_relu_grad(g, out):
    """relu's gradient `where(out <= 0, 0.0, g)` (torch's threshold_backward: g where out
    is NaN) on emulated cuda, without the ops' dispatch. Up to PIECE elements of
    C-contiguous operands (the layout where gives then): one allocator block, given g and
    then +0.0 where out <= 0 (a NaN in g is copied as it is), the mask a host temporary;
    torch's threshold_backward is one kernel with no mask either. Otherwise the ops' numpy
    calls, each into allocator memory as _host_fast makes them (the mask, inverted in its
    own block, the result, then the mask's block back)."""
    dev = g.device
    backend = dev._backend
    d, gd = out._data, g._data
    if d.size <= PIECE and d.flags.c_contiguous and gd.flags.c_contiguous:
        r, st = backend.empty(gd.shape, gd.dtype)
        np.copyto(r, gd)
        np.copyto(r, _RELU_ZERO[g.dtype], where=d <= 0)  # (comparisons with NaN warn about nothing)
        return Tensor._make(r, dev, g.dtype, st)
    mask = _host_fast(backend, "le", _LE_FN, (d, 0), dev, _dt.bool)
    np.logical_not(mask._data, out=mask._data)  # a block only this call holds
    zero = _RELU_ZERO[g.dtype]  # (apply()'s value for where's scalar: np.asarray(0.0).astype)
    return _host_fast(backend, "where", _WHERE_FN, (mask._data, gd, zero), dev, g.dtype)


def _host_relu(backend, x, dev, out):
    """relu(x) on emulated cuda for up to PIECE elements of a C-contiguous x, computed
    straight into one allocator block (the layout numpy gives the result then), with the
    bits of fusion.npmath.relu, whose two branches it repeats with `out=`: under 1 Ki
    elements x with +0 where x < 0; above, maximum(x, 0) with x's zeros copied back
    (-0.0 stays). None: larger or strided, for _host_fast's general path (pieces)."""
    n = x.size
    if n > PIECE or not x.flags.c_contiguous:
        return None
    r, st = backend.empty(x.shape, x.dtype)
    zero = x.dtype.type(0)
    if n < 1024:
        np.copyto(r, x)
        np.copyto(r, zero, where=x < 0)
    else:
        np.maximum(x, zero, out=r)
        if x.dtype.kind == "f":
            np.copyto(r, x, where=x == 0)
    return Tensor._make(r, dev, out, st)


def host_bias_add(out, bias) -> bool:
    """Linear's bias added into its product `out` (a result nobody else holds yet) in
    place, on the cpu and emulated cuda: numpy's add of each element, as `out + bias`
    computes it (same bits, quiet as apply() is), with no second result and no dispatch.
    For one float32/float64 dtype and device, a bias of out's shape or of its last dim,
    nothing recording or watching (no mode: the profiler sees aten::add). False: not
    eligible, the caller adds as usual."""
    if MODES_ON or type(out) is not Tensor:
        return False
    cls = type(bias)
    if cls is not Tensor:  # nn.Parameter adds as a Tensor; a subclass's own __radd__ runs
        plain = _ADDS_AS_TENSOR.get(cls)
        if plain is None:
            plain = issubclass(cls, Tensor) and cls.__radd__ is Tensor.__radd__
            _ADDS_AS_TENSOR[cls] = plain
        if not plain:
            return False
    dev = out.device
    dt = out.dtype
    if bias.device is not dev or bias.dtype is not dt or dt not in _RELU_ZERO:
        return False
    if STATE.enabled and (out._requires_grad or bias._requires_grad):
        return False
    if dev is not CPU and (dev._backend is None or not dev._backend.host_arrays):
        return False
    o, b = out._data, bias._data
    if b.shape != o.shape and (b.ndim != 1 or o.ndim < 1 or b.shape[0] != o.shape[-1]):
        return False
    if _CV is None:
        with np.errstate(all="ignore"):
            np.add(o, b, out=o)
    else:
        tok = _CV.set(_QUIET_EXTOBJ)
        try:
            np.add(o, b, out=o)
        finally:
            _CV.reset(tok)
    return True


_RELU_ZERO = {d: d.np.type(0.0) for d in (_dt.float32, _dt.float64)}
_LE_FN, _WHERE_FN, _RELU_FN = SPECS["le"].fn, SPECS["where"].fn, SPECS["relu"].fn
_ADDS_AS_TENSOR: dict = {}  # operand class -> whether `out + it` is Tensor's own add


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
    composed = spec.fast if not spec.ufunc and _CV is not None else {}

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
                # real cuda: any dtype the op takes, cast in the kernel, the out dtype kept
                # per dtype in `kernel_out` (_kernel_out(); a unary one has no `extra`);
                # written out, not called, as in make_binary
                known = kernel_out.get(input.dtype)
                if known is None:
                    known = kernel_out[input.dtype] = _kernel_out(key, input, None)
                if known:
                    r = backend.kernel(key, (input._data,), known[1], None, None)
                    if r is not None:  # (None: no kernel for these dtypes)
                        return make(r, dev, known[0])
            elif backend is not None and backend.device_fast_path:
                out = fast_device.get(input.dtype)
                if out is not None:
                    if backend.host_arrays:
                        return _host_fast(backend, key, fn, (input._data,), dev, out)
                    r = backend.elementwise(key, fn, (input._data,), out.np)
                    return Tensor._make(r, dev, out)
        return apply(key, input)

    fast_device = spec.fast
    kernel_out = {}  # the cuda path's _kernel_out() per dtype
    make = Tensor._make

    f.__name__ = f.__qualname__ = key
    f.__doc__ = f"torch.{key}: elementwise."
    keyword_out(f)
    f.__gt_differentiable__ = True
    return f


def _device_of(operands):
    """The device the op runs on; 0-dim cpu tensors may join any device (like scalars)."""
    dev = None
    first = None
    for x in operands:
        if type(x) is Tensor or isinstance(x, Tensor):
            if dev is None:
                dev, first = x.device, x
            elif x.device is not dev:
                if x.device is CPU and x._data.ndim == 0:
                    continue
                if dev is CPU and first._data.ndim == 0:
                    dev, first = x.device, x
                    continue
                raise _mismatch(first, x)
    for x in operands:  # re-check against the final device
        if (
            isinstance(x, Tensor)
            and x.device is not dev
            and not (x.device is CPU and x._data.ndim == 0)
        ):
            raise _mismatch(first, x)
    return dev


def _coerce(x):
    """numpy arrays and numpy scalars become operands torch would accept."""
    if isinstance(x, np.ndarray):
        from ..creation import from_numpy

        return from_numpy(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def apply(key, *operands, **params):
    """The general elementwise path: promotion, device checks, conversion, backend."""
    if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
        r = intercept(key, partial(apply, key), operands, params)
        if r is not PASS:
            return r
    spec = SPECS[key]
    operands = tuple(_coerce(x) for x in operands)
    dev = _device_of(operands)
    if dev is None:
        for x in operands:  # a value traced by @gt.fuse records the op instead of running it
            hook = getattr(type(x), "__gt_elementwise__", None)
            if hook is not None:
                return hook(x, key, *operands, **params)
        raise TypeError(f"{key}: expected at least one Tensor operand")
    op = spec.op
    if op.no_bool and any(
        (isinstance(x, Tensor) and x.dtype is _dt.bool) or type(x) is bool for x in operands
    ):
        raise RuntimeError(op.no_bool)
    typed = operands[1:] if spec.kind == "where" else operands
    common = _dt.result_type(*(x for x in typed if x is not None))
    compute, out = _dtypes(spec, common)
    if op.operand_check is not None:
        op.operand_check(operands, common)
    backend = get_backend(dev)
    cnp = compute.np
    # torch casts operands to the common dtype before its kernel widens half types to
    # float32: a float16 operand of a bfloat16 op is rounded to bfloat16 first
    via = common.np if compute is not common and common in _HALF else None
    # real cuda: tensors go in their own dtypes, the kernel casts as it loads (one launch)
    in_kernel = backend.casts_in_kernel and compute.category != _dt.COMPLEX
    args = []
    for i, x in enumerate(operands):
        target = cnp
        if spec.kind == "where" and i == 0:
            target = np.dtype(np.bool_)
        if (
            via is not None
            and i == 1
            and op.opmath_scalar
            and isinstance(x, Tensor)
            and x._data.size == 1
        ):
            via = None  # ... except a one-element divisor/factor, read at full precision
        if isinstance(x, Tensor):
            if x.device is not dev:  # a 0-dim cpu tensor: joins as a scalar of its dtype
                v = x._data
                if via is not None and v.dtype != via and target is cnp:
                    v = v.astype(via)
                v = v.item()
                args.append(v if spec.ufunc else np.asarray(v).astype(target)[()])
                continue
            arr = x._data
            if via is not None and arr.dtype != via and target is cnp:
                arr = backend.astype(arr, via)  # (float32 operands too: round, widen back)
            if arr.dtype != target and not in_kernel:
                arr = backend.astype(arr, target)
            args.append(arr)
        elif x is None:
            args.append(None)
        elif spec.ufunc and _SCALAR_CATEGORY.get(type(x), 9) <= compute.category:
            # weak Python scalar: numpy keeps the array's dtype; ints wrap as in torch
            args.append(wrap_int(x, cnp) if type(x) is int and cnp.kind in "iu" else x)
        else:
            with np.errstate(all="ignore"):
                args.append(np.asarray(x).astype(target)[()])
    if op.int_division and compute.category <= _dt.INT:
        refuse_zero_divisor(key, args[1])
    kwargs = {}
    if op.param and op.param in params:
        kwargs[op.param] = params.pop(op.param)
    if params:
        raise TypeError(f"{key}() got unexpected keyword arguments {sorted(params)}")
    fn = op.complex_fn or spec.fn if compute.category == _dt.COMPLEX else spec.fn
    try:
        with np.errstate(all="ignore"):
            r = backend.elementwise(key, fn, args, out.np, kwargs)
    except ValueError as exc:
        if "broadcast" in str(exc):
            raise _broadcast_error(
                [x.shape for x in operands if isinstance(x, Tensor)], exc
            ) from None
        raise
    except MemoryError as exc:  # numpy's, for an impossible result: torch's error
        raise backend.host_memory_error(exc, key) from None
    return result_tensor(backend, r, dev, out)


def result_tensor(backend, r, dev, out):
    """The Tensor of dtype `out` on `dev` holding `backend.elementwise`'s result `r` (an
    array, or a numpy scalar for 0-dim operands), cast and adopted as the device needs."""
    own = backend.casts_in_kernel  # its elementwise results are its own already
    if not hasattr(r, "ndim") or isinstance(r, np.generic):
        r, own = backend.xp.asarray(r), False
    if r.dtype != out.np and not (out is _dt.bfloat16 and r.dtype == np.uint16):
        r = backend.astype(r, out.np)  # (uint16 results are real cuda's bfloat16 bits)
    r, st = (r, None) if own else backend.adopt(r)
    return Tensor._make(r, dev, out, st)


# -- public functions -----------------------------------------------------------------
_BINARY = {k: make_binary(k) for k, s in SPECS.items() if s.op.arity == 2}
_RBINARY = {k: make_binary(k, reflected=True) for k, s in SPECS.items() if s.op.arity == 2}

mismatch = _mismatch
