"""Backward formulas of the primitives in ops/special.py and ops/matrix.py (torch's
derivatives.yaml, same node names). The composites of those modules need none: they are
written with differentiable ops. Registering here also wires the in-place forms bound by
_tensor_methods.py (the names in ops/_inplace.py).
"""

from __future__ import annotations

import math

from ..ops import _inplace, index_write, matrix, pointwise
from ..ops import special as sp
from .record import formula, inplace, positional

__all__: list = []


def _unary(name, key, deriv, save_out=False):
    """A unary op whose gradient is deriv(g, x, out)."""

    @formula(name, (sp, key))
    def fwd(ctx, out, x):
        ctx.save_for_backward(x, out if save_out else None)

    @fwd.backward
    def _(ctx, g):
        x, out = ctx.saved_tensors
        return deriv(g, x, out)

    return fwd


_LN2, _LN10 = math.log(2), math.log(10)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

_unary("AsinBackward0", "asin", lambda g, x, out: g / (1 - x * x).sqrt())
_unary("AcosBackward0", "acos", lambda g, x, out: -g / (1 - x * x).sqrt())
_unary("AtanBackward0", "atan", lambda g, x, out: g / (x * x + 1))
_unary("SinhBackward0", "sinh", lambda g, x, out: g * sp.cosh(x))
_unary("CoshBackward0", "cosh", lambda g, x, out: g * sp.sinh(x))
_unary("TanBackward0", "tan", lambda g, x, out: g * (out * out + 1), True)
_unary("AsinhBackward0", "asinh", lambda g, x, out: g / (x * x + 1).sqrt())
_unary("AcoshBackward0", "acosh", lambda g, x, out: g / (x * x - 1).sqrt())
_unary("AtanhBackward0", "atanh", lambda g, x, out: g / (1 - x * x))
_unary("Log2Backward0", "log2", lambda g, x, out: g / (x * _LN2))
_unary("Log10Backward0", "log10", lambda g, x, out: g / (x * _LN10))
_unary("Expm1Backward0", "expm1", lambda g, x, out: g * (out + 1), True)
_unary("Exp2Backward0", "exp2", lambda g, x, out: g * out * _LN2, True)
_unary("ErfBackward0", "erf", lambda g, x, out: g * _TWO_OVER_SQRT_PI * (-(x * x)).exp())
_unary("ErfcBackward0", "erfc", lambda g, x, out: -g * _TWO_OVER_SQRT_PI * (-(x * x)).exp())
_unary("ErfinvBackward0", "erfinv",
       lambda g, x, out: g * (math.sqrt(math.pi) / 2) * (out * out).exp(), True)
_unary("LgammaBackward0", "lgamma", lambda g, x, out: g * sp.digamma(x))
_unary("DigammaBackward0", "digamma", lambda g, x, out: g * sp.polygamma(1, x))
_unary("Deg2RadBackward0", "deg2rad", lambda g, x, out: g * (math.pi / 180))
_unary("Rad2DegBackward0", "rad2deg", lambda g, x, out: g * (180 / math.pi))


def _sinc(g, x, out):
    from ..ops.elementwise import where

    px = x * math.pi
    d = (px.cos() * px - px.sin()) / (px * x)
    return g * where(x == 0, 0.0, d)


_unary("SincBackward0", "sinc", _sinc)


@formula("Atan2Backward0", (sp, "atan2"), inputs=positional)
def _atan2(ctx, out, a, b):
    ctx.save_for_backward(a, b)


@_atan2.backward
def _(ctx, g):
    a, b = ctx.saved_tensors
    denom = a * a + b * b
    ga = g * b / denom if ctx.needs_input_grad[0] else None
    if len(ctx.needs_input_grad) < 2:
        return ga
    return ga, (-g * a / denom if ctx.needs_input_grad[1] else None)


# -- linear algebra -------------------------------------------------------------------------
@formula("LinalgDetBackward0", (matrix, "det"))
def _det(ctx, out, a):
    ctx.save_for_backward(a, out)


@_det.backward
def _(ctx, g):
    a, d = ctx.saved_tensors  # d(det A) = det(A) * inv(A)^T (A invertible)
    return (g * d).unsqueeze(-1).unsqueeze(-1) * matrix.inverse(a).mT


@formula("LinalgInvExBackward0", (matrix, "inverse"))
def _inverse(ctx, out, a):
    ctx.save_for_backward(out)


@_inverse.backward
def _(ctx, g):
    (inv,) = ctx.saved_tensors
    return -(inv.mH @ g @ inv.mH)


@formula("LinalgSolveExBackward0", (matrix, "solve"), inputs=positional)
def _solve(ctx, out, a, b, *, left=True):
    ctx.vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    ctx.save_for_backward(a, out)


@_solve.backward
def _(ctx, g):
    a, x = ctx.saved_tensors
    gb = matrix.solve(a.mH, g)
    if ctx.vector:
        ga = -(gb.unsqueeze(-1) @ x.unsqueeze(-1).mH)
    else:
        ga = -(gb @ x.mH)
    return (ga if ctx.needs_input_grad[0] else None), gb


@formula("LinalgSlogdetBackward0", (matrix, "slogdet"), output=lambda r: r[1])
def _slogdet(ctx, out, a):
    ctx.save_for_backward(a)


@_slogdet.backward
def _(ctx, g):
    (a,) = ctx.saved_tensors
    return g.unsqueeze(-1).unsqueeze(-1) * matrix.inverse(a).mH


def _register_inplace() -> None:
    """The op modules' in-place forms with a gradient: recorded as the out-of-place op on a
    copy of self (fill_diagonal_ through its function, the others through Tensor.<name>)."""
    for name in _inplace.INPLACE_GRAD:
        inplace(name + "_", lambda n=name: _inplace.late_method(n) if n != "fill_diagonal"
                else index_write.fill_diagonal)


_register_inplace()


# -- Bessel functions, polygamma, nextafter, frexp (issue 24: no silent gradient loss) -----
def _bessel():
    from ..ops import bessel
    from ..ops.elementwise import sign, where

    def at_zero(x, d):  # i1'(0) = i1e'(0) = 1/2, the limit of the formula's 0/0
        return where(x == 0, 0.5, d)

    def safe(x):  # x, with 1 where it is 0 (that entry is replaced by at_zero)
        return where(x == 0, 1.0, x)

    unary = [
        ("I0Backward0", sp, "i0", lambda g, x, out: g * bessel.i1(x)),
        ("SpecialI0EBackward0", bessel, "i0e",
         lambda g, x, out: g * (bessel.i1e(x) - sign(x) * out)),
        ("SpecialI1Backward0", bessel, "i1",
         lambda g, x, out: g * at_zero(x, sp.i0(x) - out / safe(x))),
        ("SpecialI1EBackward0", bessel, "i1e",
         lambda g, x, out: g * at_zero(x, bessel.i0e(x) - out * (sign(x) + 1 / safe(x)))),
    ]
    for name, ns, key, deriv in unary:
        @formula(name, (ns, key))
        def fwd(ctx, out, x):
            ctx.save_for_backward(x, out)

        fwd.backward(lambda ctx, g, deriv=deriv: deriv(g, *ctx.saved_tensors))


_bessel()


def _second(args, kwargs):
    x = args[1] if len(args) > 1 else kwargs.get("input")
    return [None, x]


@formula("PolygammaBackward0", (sp, "polygamma"), inputs=_second)
def _polygamma(ctx, out, n, x):
    ctx.n = n
    ctx.save_for_backward(x)


@_polygamma.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors  # d/dx psi^(n)(x) = psi^(n+1)(x), for every order
    return None, g * sp.polygamma(ctx.n + 1, x)


@formula("NextafterBackward0", (sp, "nextafter"))
def _nextafter(ctx, out, a, b):
    pass


@_nextafter.backward
def _(ctx, g):
    return g, g * 0  # torch's: the input's gradient passes, the direction's is zero


@formula("FrexpBackward0", (pointwise, "frexp"), output=lambda r: r[0])
def _frexp(ctx, out, x):
    ctx.save_for_backward(x)


@_frexp.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors  # mantissa = x / 2**exponent, the exponent held constant
    return g / (2.0 ** pointwise.frexp(x)[1].to(g.dtype))
