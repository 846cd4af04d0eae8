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

__all__ = [
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "polygamma",
    "mvlgamma",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "sinc",
    "logit",
    "erfcx",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "entr",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "spherical_bessel_j0",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
]


def _per_element(fn):
    """A float64 function of one Python float, over an array (in its own dtype)."""
    ufunc = np.frompyfunc(fn, 1, 1)

    def run(a):
        a = np.asarray(a)
        if a.size == 0:
            return a.copy(order="K")
        with np.errstate(all="ignore"):
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
_GILES_SMALL = [
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
]
_GILES_LARGE = [
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
]
_ERF = np.frompyfunc(math.erf, 1, 1)


def erfinv(a):
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        w = -np.log((1.0 - x) * (1.0 + x))
        small = w < 5.0
        p = np.where(
            small,
            np.polyval(_GILES_SMALL, w - 2.5),
            np.polyval(_GILES_LARGE, np.sqrt(np.where(small, 5.0, w)) - 3.0),
        )
        y = p * x
        for _ in range(2):
            finite = np.isfinite(y)
            yf = np.where(finite, y, 0.0)
            err = _ERF(yf).astype(np.float64) - x
            y = np.where(finite, yf - err / (2 / math.sqrt(math.pi) * np.exp(-yf * yf)), y)
        y = np.where(x == 1, np.inf, np.where(x == -1, -np.inf, y))
        return np.where(np.abs(x) > 1, np.nan, y).astype(np.asarray(a).dtype)


def digamma(a):
    """Reflection below 0.5, the recurrence up to 10, then the asymptotic series (its first
    omitted term is below 2e-14 of the result there)."""
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        reflect = x < 0.5
        y = np.where(reflect, 1.0 - x, x)
        acc = np.zeros_like(y)
        for _ in range(10):
            low = y < 10.0
            acc -= np.where(low, 1.0 / np.where(low, y, 1.0), 0.0)
            y = np.where(low, y + 1.0, y)
        inv2 = 1.0 / (y * y)
        series = (
            np.log(y)
            - 0.5 / y
            - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
        )
        r = acc + series
        # cot has period 1: x less its nearest integer is exact, so pi * x keeps its precision
        # near the poles of a large negative x (the CUDA helper reduces the same way)
        rx = x - np.floor(x + 0.5)
        r = np.where(reflect, r - math.pi / np.tan(math.pi * rx), r)
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
        y = x.copy(order="K")
        for _ in range(10):
            low = y < 10
            acc += np.where(low, sign * fact / np.where(low, y, 1.0) ** (n + 1), 0.0)
            y = np.where(low, y + 1, y)
        series = math.factorial(n - 1) / y**n + fact / (2 * y ** (n + 1))
        for k, b in enumerate(_BERNOULLI, 1):
            series = series + b * math.factorial(2 * k + n - 1) / (
                math.factorial(2 * k) * y ** (2 * k + n)
            )
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
    total = term.copy(order="K")
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


# -- the normal distribution, erfcx, entr ---------------------------------------------------
def _erfcx_scalar(v: float) -> float:
    """exp(x^2) erfc(x): directly while erfc does not underflow, else the asymptotic series
    x sqrt(pi) erfcx(x) = 1 - 1/(2x^2) + 1*3/(2x^2)^2 - ... (converged well before x = 12)."""
    if v != v:
        return v
    if v < 12.0:
        return math.inf if v < -26.7 else math.exp(v * v) * math.erfc(v)
    if v == math.inf:
        return 0.0
    t, term, total = 1.0 / (2.0 * v * v), 1.0, 1.0
    for k in range(1, 40):
        term *= -(2.0 * k - 1.0) * t
        total += term
    return total / (v * math.sqrt(math.pi))


def _ndtr_scalar(v: float) -> float:
    return 0.5 * math.erfc(-v / math.sqrt(2.0))


def _ndtri_scalar(p: float) -> float:
    """The lower half by Newton steps on ndtr (exact in the far tail, where erfc keeps its
    relative precision) from the logarithmic tail guess; the upper half by symmetry."""
    if p != p or p < 0.0 or p > 1.0:
        return math.nan
    if p in (0.0, 0.5, 1.0):
        return {0.0: -math.inf, 0.5: 0.0, 1.0: math.inf}[p]
    if p > 0.5:
        return -_ndtri_scalar(1.0 - p)
    t = math.sqrt(-2.0 * math.log(p))
    y = -(
        t
        - (2.515517 + 0.802853 * t + 0.010328 * t * t)
        / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
    )
    for _ in range(60):
        step = (_ndtr_scalar(y) - p) / (math.exp(-0.5 * y * y) / math.sqrt(2.0 * math.pi))
        y -= step
        if abs(step) <= 1e-16 * abs(y) + 1e-300:
            break
    return y


def _log_ndtr_scalar(v: float) -> float:
    if v != v:
        return v
    if v == -math.inf:
        return v
    if v < 0.0:  # ndtr(x) = erfcx(-x/sqrt2) exp(-x^2/2) / 2, without its underflow
        return math.log(0.5 * _erfcx_scalar(-v / math.sqrt(2.0))) - 0.5 * v * v
    return math.log1p(-0.5 * math.erfc(v / math.sqrt(2.0)))


erfcx = _per_element(_erfcx_scalar)
ndtr = _per_element(_ndtr_scalar)
ndtri = _per_element(_ndtri_scalar)
log_ndtr = _per_element(_log_ndtr_scalar)


def entr(a):
    """-x log x; 0 at 0, -inf below 0."""
    with np.errstate(all="ignore"):
        x = np.asarray(a)
        r = np.where(x > 0, -x * np.log(np.where(x > 0, x, 1)), np.where(x < 0, -np.inf, 0))
        return np.where(np.isnan(x), x, r).astype(x.dtype)


# -- Bessel functions: J and Y from the C library (glibc has j0 j1 y0 y1, as CUDA has) ------
def _libm(name):
    import ctypes
    import ctypes.util

    fn = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return fn


def _from_libm(name):
    holder = []

    def run(a):
        if not holder:
            holder.append(_per_element(_libm(name)))
        return holder[0](a)

    return run


def _torch_edges(fn, negative_nan=False):
    """torch's values at the edges: nan at +-inf (where the limit is 0), and for Y, nan
    below 0."""

    def run(a):
        x = np.asarray(a)
        r = fn(x)
        bad = np.isinf(x) | (x < 0) if negative_nan else np.isinf(x)
        return np.where(bad, np.nan, r).astype(x.dtype)

    return run


bessel_j0 = _torch_edges(_from_libm("j0"))
bessel_j1 = _torch_edges(_from_libm("j1"))
bessel_y0 = _torch_edges(_from_libm("y0"), negative_nan=True)
bessel_y1 = _torch_edges(_from_libm("y1"), negative_nan=True)


def spherical_bessel_j0(a):
    """sin(x) / x, 1 at 0, 0 at +-inf."""
    with np.errstate(all="ignore"):
        x = np.asarray(a)
        r = np.where(x == 0, 1, np.sin(x) / np.where(x == 0, 1, x))
        return np.where(np.isinf(x), 0, r).astype(x.dtype)


# K_0 and K_1, scaled by e^x: the power series up to x = 2, the integral
# e^x K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoid rule up to 20
# (steps of 0.1 reach float64 accuracy there), the asymptotic series beyond.
_EULER = 0.5772156649015329
_TRAPEZOID_T = np.arange(46) * 0.1


def _k_scaled(nu: int, a) -> np.ndarray:
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        small, mid = x <= 2.0, (x > 2.0) & (x <= 20.0)
        xs = np.where(small & (x > 0), x, 1.0)
        q = xs * xs / 4
        i_nu = np.exp(xs) * _scaled(nu, xs)
        term, total = np.ones_like(xs), np.zeros_like(xs)
        if nu == 0:
            harmonic = 0.0
            for k in range(1, 60):
                term = term * q / (k * k)
                harmonic += 1.0 / k
                total += term * harmonic
            series = -(np.log(xs / 2) + _EULER) * i_nu + total
        else:
            psi1, psi2 = -_EULER, 1.0 - _EULER  # psi(k + 1), psi(k + 2) at k = 0
            for k in range(60):
                total += (psi1 + psi2) * term
                term = term * q / ((k + 1) * (k + 2))
                psi1, psi2 = psi1 + 1.0 / (k + 1), psi2 + 1.0 / (k + 2)
            series = 1.0 / xs + np.log(xs / 2) * i_nu - xs / 4 * total
        series = series * np.exp(xs)
        xm = np.where(mid, x, 10.0)[..., None]
        weights = np.exp(-xm * (np.cosh(_TRAPEZOID_T) - 1.0)) * np.cosh(nu * _TRAPEZOID_T)
        trapezoid = (weights.sum(-1) - 0.5 * weights[..., 0]) * 0.1
        xl = np.where(small | mid, 30.0, x)
        mu, coef, acc = 4.0 * nu * nu, np.ones_like(xl), np.ones_like(xl)
        for k in range(1, 40):
            coef = coef * (mu - (2 * k - 1) ** 2) / (k * 8 * xl)
            acc = acc + coef
        asymptotic = acc * np.sqrt(math.pi / (2 * xl))
        r = np.where(small, series, np.where(mid, trapezoid, asymptotic))
        r = np.where(x == 0, np.inf, np.where(x < 0, np.nan, r))
        return np.where(x == np.inf, 0.0, r)


def scaled_modified_bessel_k0(a):
    return _k_scaled(0, a).astype(np.asarray(a).dtype)


def scaled_modified_bessel_k1(a):
    return _k_scaled(1, a).astype(np.asarray(a).dtype)


def modified_bessel_k0(a):
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        return (_k_scaled(0, x) * np.exp(-x)).astype(np.asarray(a).dtype)


def modified_bessel_k1(a):
    with np.errstate(all="ignore"):
        x = np.asarray(a).astype(np.float64)
        return (_k_scaled(1, x) * np.exp(-x)).astype(np.asarray(a).dtype)


def logit(a, eps=None):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (both bounds in
    x's dtype, as torch computes them)."""
    x = np.asarray(a)
    with np.errstate(all="ignore"):
        if eps is not None:
            lo = x.dtype.type(eps)
            hi = x.dtype.type(1) - lo
            x = np.where(x < lo, lo, np.where(x > hi, hi, x))
        one = x.dtype.type(1)
        return np.log(x / (one - x)).astype(np.asarray(a).dtype)


def mvlgamma(x, p=1):
    """log of the multivariate gamma function: sum over i < p of lgamma(x - i/2), largest i
    first (torch's order), plus p (p - 1) / 4 log(pi)."""
    total = np.zeros_like(x)
    for i in range(p - 1, -1, -1):
        total = total + lgamma(x - x.dtype.type(0.5 * i))
    return total + x.dtype.type(p * (p - 1) / 4 * math.log(math.pi))
