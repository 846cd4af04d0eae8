"""The float32 log and sincos of torch's AVX2 normal kernel, in numpy.

torch's cpu randn for float32 (>= 16 contiguous values) runs Box-Muller through
avx_mathfun.h: cephes' single-precision polynomials, evaluated with separate multiplies
and adds that the compiler fuses into FMAs. To give its numbers bit for bit, every step
here rounds to float32 where torch's does, and each fused step is computed as one
float64 multiply-add of float32 operands (exact product, one rounding to float32 after
the add; the sums stay far from float64's precision limit, so the double rounding never
shows: checked against torch over millions of values). Which multiply-adds fuse was read
off torch's results, not its source: the choices below are the ones that match.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_ps", "sincos_ps"]

_F = np.float32
_LOG_P = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)
_LOG_Q1, _LOG_Q2 = -2.12194440e-4, 0.693359375
_DP = (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)  # -pi/4 in 3 parts
_SIN_P = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_COS_P = (2.443315711809948e-005, -1.388731625493765e-003, 4.166664568298827e-002)
_FOPI = 1.27323954473516  # 4 / pi


def _fma(a, b, c):
    """a * b + c with one rounding to float32 (a, b, c float32 arrays or scalars)."""
    return (np.asarray(a, np.float64) * np.float64(b) + np.asarray(c, np.float64)).astype(_F)


def log_ps(x):
    """Natural log of positive float32 values, as log256_ps."""
    x = np.maximum(x, _F(1.17549435e-38))  # (denormals cut off)
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F) + _F(1)
    x = ((bits & ~0x7F800000) | _F(0.5).view(np.int32)).view(_F)  # mantissa in [0.5, 1)
    small = x < _F(0.707106781186547524)
    x = (x - _F(1)) + np.where(small, x, _F(0))
    e = e - np.where(small, _F(1), _F(0))
    z = x * x
    y = np.full_like(x, _F(_LOG_P[0]))
    for c in _LOG_P[1:]:
        y = _fma(y, x, _F(c))
    y = _fma(y * x, z, e * _F(_LOG_Q1))
    y = _fma(z, _F(-0.5), y)
    return _fma(e, _F(_LOG_Q2), x + y)


def sincos_ps(x):
    """(sin, cos) of float32 values, as sincos256_ps."""
    sign_sin = np.signbit(x)
    x = np.abs(x)
    j = ((x * _F(_FOPI)).astype(np.int32) + 1) & ~1
    y = j.astype(_F)
    sign_sin = sign_sin ^ ((j & 4) != 0)
    sin_poly = (j & 2) == 0
    sign_cos = (~(j - 2) & 4) != 0
    for dp in _DP:  # x - y * pi/4, in extended precision
        x = _fma(y, _F(dp), x)
    z = x * x
    yc = _fma(np.full_like(z, _F(_COS_P[0])), z, _F(_COS_P[1]))
    yc = _fma(yc, z, _F(_COS_P[2])) * z
    yc = _fma(yc, z, -(z * _F(0.5))) + _F(1)
    ys = _fma(np.full_like(z, _F(_SIN_P[0])), z, _F(_SIN_P[1]))
    ys = _fma(ys, z, _F(_SIN_P[2])) * z
    ys = _fma(ys, x, x)
    s = np.where(sin_poly, ys, yc)
    c = np.where(sin_poly, yc, ys)
    return np.where(sign_sin, -s, s), np.where(sign_cos, -c, c)
