"""The derivatives of the unary special-function rows (issue 23), written once in the
convention of fusion/derivatives.py: `grad(g, out, x, **params) -> (gradient,)`, with Python
operators and the methods Tensor and the tracer's traced values share, so each rule serves
eager autograd (autograd/formulas_more.py reads the row's rule) and the fused backward
(autograd/fused.py). The formulas are torch's derivatives.yaml; for complex operands each factor is conjugated
(`conj_factor`: torch's g * conj(f'(z))), real ones are unchanged.

Rules that need a torch.special function with no Tensor method (digamma' = polygamma(1, .),
i0' = i1, ...) call gt.special's, which takes a Tensor or a traced value alike: an upward
import at backward time (tests/test_layering.py lists the edge).
"""

from __future__ import annotations

import math

from .derivatives import conj_factor, where

__all__: list = []

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
_SQRT_2PI = math.sqrt(2 * math.pi)
_LN2, _LN10 = math.log(2), math.log(10)


def _special():
    from .. import special

    return special


def tan(g, out, x):
    return (g * conj_factor(out * out + 1),)


def asin(g, out, x):
    return (g / conj_factor((1 - x * x).sqrt()),)


def acos(g, out, x):
    return (-g / conj_factor((1 - x * x).sqrt()),)


def atan(g, out, x):
    return (g / conj_factor(x * x + 1),)


def sinh(g, out, x):
    return (g * conj_factor(x.cosh()),)


def cosh(g, out, x):
    return (g * conj_factor(x.sinh()),)


def asinh(g, out, x):
    return (g / conj_factor((x * x + 1).sqrt()),)


def acosh(g, out, x):
    if x.dtype.is_complex:  # torch's branch: sqrt(z - 1) sqrt(z + 1), not sqrt(z^2 - 1)
        return (g / ((x - 1).sqrt() * (x + 1).sqrt()).conj(),)
    return (g / (x * x - 1).sqrt(),)


def atanh(g, out, x):
    return (g / conj_factor(1 - x * x),)


def expm1(g, out, x):
    return (g * conj_factor(out + 1),)


def exp2(g, out, x):
    return (g * conj_factor(out) * _LN2,)


def log2(g, out, x):
    return (g / conj_factor(x * _LN2),)


def log10(g, out, x):
    return (g / conj_factor(x * _LN10),)


def sinc(g, out, x):
    px = x * math.pi
    return (g * conj_factor(where(x == 0, 0.0, (px.cos() * px - px.sin()) / (px * x))),)  # 0 at 0


def erf(g, out, x):
    return (g * _TWO_OVER_SQRT_PI * (-(x * x)).exp(),)


def erfc(g, out, x):
    return (-g * _TWO_OVER_SQRT_PI * (-(x * x)).exp(),)


def erfinv(g, out, x):
    return (g * _SQRT_PI_OVER_TWO * (out * out).exp(),)


def lgamma(g, out, x):
    return (g * x.digamma(),)


def digamma(g, out, x):
    return (g * _special().polygamma(1, x),)


def polygamma(g, out, x, n=1):
    return (g * _special().polygamma(n + 1, x),)  # for every order


def i0(g, out, x):
    return (g * _special().i1(x),)


def i0e(g, out, x):
    return (g * (_special().i1e(x) - x.sign() * out),)


def i1(g, out, x):  # i1'(0) = 1/2, the limit of the formula's 0/0
    return (g * where(x == 0, 0.5, _special().i0(x) - out / where(x == 0, 1.0, x)),)


def i1e(g, out, x):
    safe = where(x == 0, 1.0, x)
    return (g * where(x == 0, 0.5, _special().i0e(x) - out * (x.sign() + 1 / safe)),)


def logit(g, out, x, eps=None):
    d = g / (x * (1 - x))
    return (d if eps is None else where((x < eps) | (x > 1 - eps), 0.0, d),)


def erfcx(g, out, x):
    return (g * (2 * x * out - _TWO_OVER_SQRT_PI),)


def ndtr(g, out, x):
    return (g * (x * x * -0.5).exp() / _SQRT_2PI,)


def ndtri(g, out, x):
    return (g * _SQRT_2PI * (out * out * 0.5).exp(),)


def log_ndtr(g, out, x):
    return (g * (x * x * -0.5 - out).exp() / _SQRT_2PI,)


def entr(g, out, x):
    return (-g * (x.log() + 1),)


# -- the last rows (issue 23) ------------------------------------------------------------------
def deg2rad(g, out, x):
    return (g * (math.pi / 180),)


def rad2deg(g, out, x):
    return (g * (180 / math.pi),)


def identity(g, out, x):
    """frac, positive: the slope is 1 wherever the op is differentiable."""
    return (g,)


def conj(g, out, x):
    """conj, conj_physical: the gradient conjugated (torch's ConjBackward0 and
    ConjPhysicalBackward0; of a real gradient, the gradient)."""
    return (g.conj(),)


def angle(g, out, x):
    """0 for real x; for complex z: g z i / |z|^2, 0 at 0 (torch's angle_backward)."""
    if not x.dtype.is_complex:
        return (g * 0,)
    step = g * x / x.abs().pow(2) * 1j
    return (where(x == 0, 0, step),)


def sgn(g, out, x):
    """0 for real x; for complex z: (g - s re(g conj s)) / |z| with s = sgn z, 0 at 0 (torch's
    sgn_backward)."""
    if not x.dtype.is_complex:  # (a traced value is never complex)
        return (g * 0,)
    mag = x.abs()
    s = out
    step = (g - s * (g * s.conj()).real) / where(mag == 0, 1, mag)
    return (where(mag == 0, 0, step),)


def nan_to_num(g, out, x, limits=None):
    if x.dtype.is_complex:  # torch 2.13 has no complex derivative of nan_to_num
        raise RuntimeError(
            "nan_to_num does not support automatic differentiation for outputs with complex dtype."
        )
    return (where(x.isfinite(), g, 0),)


def mvlgamma(g, out, x, p=1):
    total = x.digamma()
    for i in range(1, p):
        total = total + (x - i / 2).digamma()
    return (g * total,)
