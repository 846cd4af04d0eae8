"""The cuda kernel path's rules: which out dtype a kernel that casts its operands as it loads
them gives for an operand signature (`_kernel_out`), the cold half of the warm path that
binds a backend entry to it (`warm_entry`), with the checks that depend on the operands
(`_kernel_via`, `_checked`), and integer division's refusal of a zero divisor
(`refuse_zero_divisor`, `_ZeroDivisor`), which apply() uses too.

Its own file because these are apply()'s dtype rules restated for the written-out kernel
path of make_binary/make_unary (_dispatch.py), which reads them by name at import.
"""

from __future__ import annotations

from .. import dtype as _dt
from .._tensor import Tensor
from ._specs import _HALF, SPECS, _dtypes


def _kernel_via(extra, y):
    """The kernel's `via` for a _kernel_out() entry with rules that depend on the operands
    (`extra`), or False where apply() must run (its opmath_scalar rule: a one-element second
    operand `y` at full precision). Fixed by the warm key (dtypes and shapes are in it); the
    operand check, which depends on values, is not run here but by the entry (_checked)."""
    via = extra[2]
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
    if (compute.category == _dt.COMPLEX or out.category == _dt.COMPLEX) and not op.complex_kernel:
        return False  # the codegen has complex types for complex_kernel rows only
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


def warm_entry(backend, sig, key, a, other, reflected):
    """The cold half of the cuda warm path (_dispatch.make_binary/make_unary): binds the
    backend's entry for the operator key `sig` of `a <key> other` (`key(a)`: other None),
    kept under `sig`, or keeps False there, where the operator takes apply() (no kernel
    computes what apply() does, the shapes do not broadcast, or these operands are
    refused). The operator then calls itself again, so `sig` holds something on return.

    An op with rules that depend on the operands (`extra`: an operand check, rounding via
    a half) gets them here: the half's one-element rule is fixed by `sig` (shapes and
    dtypes are in it); the check, which depends on values (int ** -1, a zero divisor), is
    run by the entry on every call, this one included (_checked)."""
    known = _kernel_out(key, a, other)
    if not known:
        return backend.warm_entry(sig, None, None, None, None)
    out, out_np, extra = known
    via = None
    if other is None:
        operands = (a._data,)
    else:
        b = other._data if type(other) is Tensor else other
        operands = (b, a._data) if reflected else (a._data, b)
        if extra is not None:
            via = _kernel_via(extra, b)
            if via is False:
                return backend.warm_entry(sig, None, None, None, None)
    try:
        entry = backend.warm_entry(sig, key, operands, out_np, out, reflected, via)
    except (ValueError, OverflowError):  # shapes that do not broadcast: apply() raises
        return backend.warm_entry(sig, None, None, None, None)
    if entry and extra is not None and extra[1] is not None:
        entry = backend.warm[sig] = _checked(entry, extra[1], extra[0], reflected)
    return entry


def _checked(run, check, common, reflected):
    """The warm entry `run` with the operand check `check` (a zero divisor, int ** -1) run
    on every call, the first included, on the operator's arrays and numbers in the op's
    order, as apply() runs it: never at bind, so one refused call leaves the key's entry
    in place. A number out of the kernel's range is refused first (OverflowError: the
    operator then takes apply(), which raises torch's error for it)."""
    to = run.scalar_to

    def checked(x, y):
        if to is not None:
            to(y)
        check((y, x) if reflected else (x, y), common)
        return run(x, y)

    checked.out, checked.key = run.out, run.key
    return checked


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
