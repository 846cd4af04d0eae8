"""numpy references of the op table's special functions (erfc, erfinv, lgamma, digamma,
polygamma, the modified Bessel functions, sinc): what cpu and emulated cuda run, and what
the CUDA helpers of fusion/preamble_special.py are tested against.

numpy has none of these but i0 and sinc (scipy is not a dependency). Each takes an array in
the op's compute dtype (float32 for half/bfloat16), works in float64 and returns the input's
dtype, silently. The values are those ops/special.py computed before the functions became
table rows (they match torch's CPU results within the repository's tolerances).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["erfc", "erfinv", "lgamma", "digamma", "polygamma", "i0", "i0e", "i1", "i1e",
           "sinc"]


def _per_element(fn):
    """A float64 function of one Python float, over an array (in its own dtype)."""
    ufunc = np.frompyfunc(fn, 1, 1)

    def run(a):
        a = np.asarray(a)
        if a.size == 0:
            return a.copy()
        return np.asarray(ufunc(a.astype(np.float64)), dtype=np.float64).astype(a.dtype)

    return run


def _safe_lgamma(v):
    try:
        return math.lgamma(v)
    except ValueError:  # the poles 0, -1, -2, ...: torch gives inf
        return math.inf


erfc = _per_element(math.erfc)
lgamma = _per_element(_safe_lgamma)

# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): single-precision
# polynomials in w = -log(1 - x^2), for w < 5 and beyond; two Newton steps then reach float64.
_GILES_SMALL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_GILES_LARGE = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]
_ERF = np.frompyfunc(math.erf, 1, 1)


def erfinv(a):
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        w = -np.log((1.0 - x) * (1.0 + x))
        small = w < 5.0
        p = np.where(small, np.polyval(_GILES_SMALL, w - 2.5),
                     np.polyval(_GILES_LARGE, np.sqrt(np.where(small, 5.0, w)) - 3.0))
        y = p * x
        for _ in range(2):
            finite = np.isfinite(y)
            yf = np.where(finite, y, 0.0)
            err = _ERF(yf).astype(np.float64) - x
            y = np.where(finite, yf - err / (2 / math.sqrt(math.pi) * np.exp(-yf * yf)), y)
        y = np.where(x == 1, np.inf, np.where(x == -1, -np.inf, y))
        return np.where(np.abs(x) > 1, np.nan, y).astype(np.asarray(a).dtype)


def digamma(a):
    """Reflection below 0.5, the recurrence up to 6, then the asymptotic series."""
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        reflect = x < 0.5
        y = np.where(reflect, 1.0 - x, x)
        acc = np.zeros_like(y)
        for _ in range(6):
            low = y < 6.0
            acc -= np.where(low, 1.0 / np.where(low, y, 1.0), 0.0)
            y = np.where(low, y + 1.0, y)
        inv2 = 1.0 / (y * y)
        series = np.log(y) - 0.5 / y - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (
            1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
        r = acc + series
        r = np.where(reflect, r - math.pi / np.tan(math.pi * x), r)
        pole = (x <= 0) & (x == np.floor(x))
        # torch: digamma(+-0) = -+inf, the negative integers nan
        r = np.where(pole, np.where(x == 0, np.copysign(np.inf, -x), np.nan), r)
        return r.astype(np.asarray(a).dtype)


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66)  # B_2 .. B_10


def polygamma(a, n=1):
    """psi^(n)(x): digamma for n = 0; for n >= 1 the recurrence up to x >= 10, then the
    asymptotic series."""
    if n == 0:
        return digamma(a)
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
        fact = math.factorial(n)
        acc = np.zeros_like(x)
        y = x.copy()
        for _ in range(10):
            low = y < 10
            acc += np.where(low, sign * fact / np.where(low, y, 1.0) ** (n + 1), 0.0)
            y = np.where(low, y + 1, y)
        series = math.factorial(n - 1) / y ** n + fact / (2 * y ** (n + 1))
        for k, b in enumerate(_BERNOULLI, 1):
            series = series + b * math.factorial(2 * k + n - 1) / (
                math.factorial(2 * k) * y ** (2 * k + n))
        r = acc + sign * series
        pole = (x <= 0) & (x == np.floor(x))
        return np.where(pole, np.inf if n % 2 else np.nan, r).astype(np.asarray(a).dtype)


# -- modified Bessel functions of the first kind --------------------------------------------
_SERIES_UP_TO = 30.0  # beyond, the asymptotic series converges to float64 precision
_SERIES_TERMS = 90  # (x/2)^2k / (k! (k+nu)!) is below 1e-17 of the sum by then at x = 30
_ASYMPTOTIC_TERMS = 30


def _scaled(nu: int, x: np.ndarray) -> np.ndarray:
    """e^-|x| I_nu(|x|) for nu in (0, 1), float64: the power series up to |x| = 30, the
    asymptotic expansion beyond (both accurate to a few float64 ulps there)."""
    ax = np.abs(x)
    small = ax <= _SERIES_UP_TO
    xs = np.where(small, ax, 0.0)
    q = (xs / 2) ** 2
    term = (xs / 2) ** nu / math.factorial(nu)
    total = term.copy()
    for k in range(1, _SERIES_TERMS):
        term = term * q / (k * (k + nu))
        total = total + term
    series = total * np.exp(-xs)
    xl = np.where(small, 1.0, ax)
    mu, coef, acc = 4.0 * nu * nu, np.ones_like(xl), np.ones_like(xl)
    for k in range(1, _ASYMPTOTIC_TERMS):
        coef = -coef * (mu - (2 * k - 1) ** 2) / (k * 8 * xl)
        acc = acc + coef
    asymptotic = acc / np.sqrt(2 * math.pi * xl)
    return np.where(small, series, asymptotic)


def i0(a):
    with np.errstate(all="ignore"):
        return np.i0(a).astype(np.asarray(a).dtype)


def i0e(a):
    with np.errstate(all="ignore"):
        return _scaled(0, np.asarray(a).astype(np.float64)).astype(np.asarray(a).dtype)


def i1e(a):
    x = np.asarray(a).astype(np.float64)
    with np.errstate(all="ignore"):
        return (np.sign(x) * _scaled(1, x)).astype(np.asarray(a).dtype)


def i1(a):
    x = np.asarray(a).astype(np.float64)
    with np.errstate(all="ignore"):
        return (np.sign(x) * _scaled(1, x) * np.exp(np.abs(x))).astype(np.asarray(a).dtype)


def sinc(a):
    with np.errstate(all="ignore"):
        return np.sinc(a).astype(np.asarray(a).dtype, copy=False)
