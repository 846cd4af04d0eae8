"""The derivative of each op-table row, written once (the `grad` field of `OpDef`).

A rule is `grad(g, out, *inputs, **params) -> one gradient per input (None where none)`:
`g` is the gradient of the op's result, `out` the result, `inputs` the operands as the op
got them (tensors or Python scalars; `None` for a missing clamp bound) and `params` the op's
keyword parameter (gelu's `approximate`). Rules use only Python operators and the methods
that every row gives both `Tensor` and the tracer's traced values (`x.cos()`, `x.where(c, y)`),
so one rule serves eager autograd (autograd/formulas_elementwise.py, over Tensors) and the
fused backward (autograd/fused.py, over traced values inside one kernel).

A rule returns None for an operand that is a Python number or None: no gradient is computed
for it. Gradients come in the broadcast shape of the result; the callers sum them back to
each operand's shape and dtype. The formulas are torch's derivatives.yaml.
"""

from __future__ import annotations

import math
from numbers import Number, Real

__all__ = ["conj_factor", "tensor_like", "where"]


def tensor_like(x) -> bool:
    """Is `x` an operand a gradient flows to (a tensor or traced value, not a number)?"""
    return x is not None and not isinstance(x, Number)


def where(cond, a, b):
    """where(cond, a, b) for a tensor/traced `cond` with at least one of a, b a tensor."""
    if tensor_like(a):
        return a.where(cond, b)
    # a number first: the module function takes it where it is, one kernel on cuda (as a
    # method of b it needs cond's negation first, a second launch); it takes a Tensor or a
    # traced value alike, imported at backward time (tests/test_layering.py lists the edge)
    from ..ops import elementwise

    return elementwise.where(cond, a, b)


def conj_factor(v):
    """v conjugated where it is complex, else v itself. torch's gradient of a complex op is
    g * conj(f'(z)) (the conjugate Wirtinger convention), so every factor a rule multiplies g
    by is conjugated; a real factor is returned as it is, at no cost to real ops."""
    if isinstance(v, Number):  # Python and numpy numbers
        return v if isinstance(v, Real) else v.conjugate()
    return v.conj() if v.dtype.is_complex else v


def _real(v):
    """The real part of a complex tensor (torch compares a complex exponent's real part)."""
    return v.real if tensor_like(v) and v.dtype.is_complex else v


def _zero(g, x):
    return g * 0 if tensor_like(x) else None


# -- binary ---------------------------------------------------------------------------------
def add(g, out, a, b):
    return (g if tensor_like(a) else None), (g if tensor_like(b) else None)


def sub(g, out, a, b):
    return (g if tensor_like(a) else None), (-g if tensor_like(b) else None)


def mul(g, out, a, b):
    return (g * conj_factor(b) if tensor_like(a) else None), (
        g * conj_factor(a) if tensor_like(b) else None
    )


def div(g, out, a, b):
    # torch: -grad * ((self / other) / other); out is self / other
    return (g / conj_factor(b) if tensor_like(a) else None), (
        -g * conj_factor(out / b) if tensor_like(b) else None
    )


def pow(g, out, a, b):  # noqa: A001  (the row's name)
    ga = gb = None
    if tensor_like(a):
        ga = (
            g * 0
            if not tensor_like(b) and b == 0
            else g * conj_factor(b) * conj_factor(a ** (b - 1))
        )
    if tensor_like(b):
        # d(a**b)/db = a**b * log(a); torch masks a == 0 (and b >= 0) to 0 instead of nan
        if tensor_like(a):
            masked = (a == 0) & (_real(b) >= 0)
            # log(1) where the mask zeroes the result anyway: no 0 * -inf (nan)
            gb = where(masked, 0.0, g * conj_factor(out) * conj_factor(where(masked, 1.0, a).log()))
        elif a == 0:  # 0 ** b: torch's mask again (b >= 0 gives 0)
            keep = _real(b) >= 0
            gb = where(keep, 0.0, g * where(keep, 1.0, out) * float("-inf"))
        else:
            gb = g * conj_factor(out) * (math.log(a) if a > 0 else float("nan"))
    return ga, gb


def remainder(g, out, a, b):
    return (g if tensor_like(a) else None), (-g * (a // b) if tensor_like(b) else None)


def floor_divide(g, out, a, b):
    return _zero(g, a), _zero(g, b)  # piecewise constant


def _pair(win_of):
    """maximum/minimum: the gradient goes to the larger (smaller) operand, halved on ties."""

    def rule(g, out, a, b):
        win, tie = win_of(a, b), a == b
        half = g * 0.5
        ga = where(win, g, where(tie, half, 0.0)) if tensor_like(a) else None
        gb = where(win, 0.0, where(tie, half, g)) if tensor_like(b) else None
        return ga, gb

    return rule


maximum = _pair(lambda a, b: a > b)
minimum = _pair(lambda a, b: a < b)


# -- unary ----------------------------------------------------------------------------------
def neg(g, out, x):
    return (-g,)


def abs(g, out, x):  # noqa: A001
    # torch: g * sgn(x); sgn is sign for a real x (sign refuses complex operands)
    return (g * (x.sgn() if x.dtype.is_complex else x.sign()),)


def exp(g, out, x):
    return (g * conj_factor(out),)


def log(g, out, x):
    return (g / conj_factor(x),)


def log1p(g, out, x):
    return (g / conj_factor(x + 1),)


def sqrt(g, out, x):
    return (g / conj_factor(out * 2),)


def rsqrt(g, out, x):
    return (g * conj_factor(out * out * out) * -0.5,)


def sin(g, out, x):
    return (g * conj_factor(x.cos()),)


def cos(g, out, x):
    return (-g * conj_factor(x.sin()),)


def tanh(g, out, x):
    return (g * conj_factor(1 - out * out),)


def sigmoid(g, out, x):
    return (g * conj_factor(out) * conj_factor(1 - out),)


def relu(g, out, x):
    # torch's threshold_backward: 0 where out <= 0, else g (so g where out is NaN)
    return (where(out <= 0, 0.0, g),)


def silu(g, out, x):
    if x.dtype.is_complex:  # torch 2.13 has no complex derivative of silu
        raise RuntimeError(
            "silu does not support automatic differentiation for outputs with complex dtype."
        )
    s = x.sigmoid()
    return (g * s * (1 + x * (1 - s)),)


_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)  # the standard normal density's constant
_K = math.sqrt(2 / math.pi)  # tanh-gelu's constant
_C = 0.044715  # tanh-gelu's cubic coefficient


def _phi(x):
    """The standard normal CDF from the forward op, without an erf of our own:
    gelu(x) + gelu(-x) = x*Phi(x) - x*(1 - Phi(x)) = x*(2*Phi(x) - 1)."""
    zero = x == 0
    safe = where(zero, 1.0, x)
    return where(zero, 0.5, ((x.gelu() + (-x).gelu()) / safe + 1) * 0.5)


def gelu(g, out, x, approximate="none"):
    if approximate == "tanh":
        t = ((x + _C * x * x * x) * _K).tanh()
        d_inner = (1 + 3 * _C * x * x) * _K
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner),)
    # d/dx x*Phi(x) = Phi(x) + x*phi(x)
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return (g * (_phi(x) + x * pdf),)


def zero(g, out, x):
    """floor, ceil, round, sign: piecewise constant."""
    return (g * 0,)


# -- where, clamp ---------------------------------------------------------------------------
def where_grad(g, out, cond, a, b):
    return (
        None,
        where(cond, g, 0.0) if tensor_like(a) else None,
        where(cond, 0.0, g) if tensor_like(b) else None,
    )


def clamp(g, out, x, lo=None, hi=None):
    """torch's clamp_backward(_min_max): x gets g inside [lo, hi]; a tensor bound gets g
    where it is the active one (lo where x < lo and lo < hi; hi where x > hi or hi < lo)."""
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        keep = (x <= hi) if keep is None else keep & (x <= hi)
    glo = ghi = None
    if tensor_like(lo):
        below = x < lo
        glo = where(below & (lo < hi) if hi is not None else below, g, 0.0)
    if tensor_like(hi):
        above = x > hi
        ghi = where(above | (hi < lo) if lo is not None else above, g, 0.0)
    return where(keep, g, 0.0), glo, ghi


# --- binary special functions (issue 23) ----------------------------------------------------
_LN2 = math.log(2)


def hypot(g, out, a, b):
    return (g * a / out if tensor_like(a) else None), (g * b / out if tensor_like(b) else None)


def logaddexp(g, out, a, b):
    return (
        (g / ((b - a).exp() + 1) if tensor_like(a) else None),
        (g / ((a - b).exp() + 1) if tensor_like(b) else None),
    )


def logaddexp2(g, out, a, b):
    return (
        (g / (2.0 ** (b - a) + 1) if tensor_like(a) else None),
        (g / (2.0 ** (a - b) + 1) if tensor_like(b) else None),
    )


def xlogy(g, out, a, b):
    """x: xlogy(g, y), 0 where x == 0 and y <= 0; y: g * x / y."""
    ga = gb = None
    if tensor_like(a):
        ga = where((a == 0) & (b <= 0), 0.0, g.xlogy(b))
    if tensor_like(b):
        gb = g * a / b
    return ga, gb


def _log1p(y):
    if tensor_like(y):
        return y.log1p()
    return math.log1p(y) if y > -1 else -math.inf if y == -1 else math.nan


def xlog1py(g, out, a, b):
    """x: g * log1p(y), 0 where x == 0 and y <= -1; y: g * x / (y + 1)."""
    ga = gb = None
    if tensor_like(a):
        ga = where((a == 0) & (b <= -1), 0.0, g * _log1p(b))
    if tensor_like(b):
        gb = g * a / (b + 1)
    return ga, gb


def atan2(g, out, a, b):
    """torch's atan2_backward: (g * b, -g * a) / (a**2 + b**2)."""
    recip = 1 / (a * a + b * b)
    return (g * b * recip if tensor_like(a) else None), (-g * a * recip if tensor_like(b) else None)


def copysign(g, out, a, b):
    """x: g * out / x (0 where x == 0); the sign's source gets 0."""
    ga = g * where(a == 0, 0.0, out / a) if tensor_like(a) else None
    return ga, _zero(g, b)


def nextafter(g, out, a, b):
    return (g if tensor_like(a) else None), _zero(g, b)  # torch: the step is not differentiated


def fmod(g, out, a, b):
    """y: -g * trunc(x / y)."""
    if not tensor_like(b):
        return g, None
    q = a / b
    return (g if tensor_like(a) else None), -g * (q.sign() * q.abs().floor())


def ldexp(g, out, a, b):
    ga = g * conj_factor(2.0**b) if tensor_like(a) else None
    return ga, (g * conj_factor(out) * _LN2 if tensor_like(b) else None)


def _nan_aware(keep_first):
    """fmax/fmin: the gradient goes to x where it is the result (ties included), else y."""

    def rule(g, out, a, b):
        first = keep_first(a, b) | b.isnan()
        return where(first, g, 0.0), where(first, 0.0, g)

    return rule


fmax = _nan_aware(lambda a, b: a >= b)
fmin = _nan_aware(lambda a, b: a <= b)


def float_power(g, out, a, b):
    """pow's rule in float_power's double (complex128) precision."""
    wide = out.dtype
    return pow(g, out, a.to(wide) if tensor_like(a) else a, b.to(wide) if tensor_like(b) else b)
