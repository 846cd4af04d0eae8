"""The modified Bessel functions of the first kind torch.special offers beside i0: i0e,
i1 and i1e (exponentially scaled: e^-|x| I_nu(x), finite where I_nu overflows).

numpy has i0 only (ops/special.py uses it); these run on the host in float64 (a copy each
way on a GPU: correct, not fast), from the power series up to |x| = 30 and the asymptotic
expansion beyond, both accurate to a few float64 ulps there. Their gradients are in
autograd/formulas_more.py.
"""

from __future__ import annotations

import math

import numpy as np

from .special import _unary

__all__ = ["i0e", "i1", "i1e"]

_SERIES_UP_TO = 30.0  # beyond, the asymptotic series converges to float64 precision
_SERIES_TERMS = 90  # (x/2)^2k / (k! (k+nu)!) is below 1e-17 of the sum by then at x = 30
_ASYMPTOTIC_TERMS = 30


def _scaled(nu: int, x: np.ndarray) -> np.ndarray:
    """e^-|x| I_nu(|x|) for nu in (0, 1), float64."""
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


def _i0e(xp, a):
    with np.errstate(all="ignore"):
        return _scaled(0, a.astype(np.float64)).astype(a.dtype)


def _i1e(xp, a):
    x = a.astype(np.float64)
    with np.errstate(all="ignore"):
        return (np.sign(x) * _scaled(1, x)).astype(a.dtype)


def _i1(xp, a):
    x = a.astype(np.float64)
    with np.errstate(all="ignore"):
        return (np.sign(x) * _scaled(1, x) * np.exp(np.abs(x))).astype(a.dtype)


i0e = _unary("i0e", _i0e, host=True, complex_ok=False)
i1 = _unary("i1", _i1, host=True, complex_ok=False)
i1e = _unary("i1e", _i1e, host=True, complex_ok=False)
