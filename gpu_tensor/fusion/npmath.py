"""numpy implementations of the ops numpy lacks or defines differently from PyTorch.

Each takes arrays already in the op's compute dtype (float32 for half/bfloat16) and returns the
same dtype, silently (PyTorch does not warn on inf/nan results, so neither do we).
"""

from __future__ import annotations

import numpy as np

__all__ = ["erf", "gelu", "gelu_tanh", "sigmoid", "silu", "sign", "relu", "int_pow", "rsqrt"]

_ERF_SERIES_TERMS = (
    64  # the all-positive series needs ~x^2 + 40 terms for double precision at |x|=3
)
_ERFC_CF_TERMS = 64  # the continued fraction converges in well under 64 steps for |x| >= 3
_ERF_SPLIT = 3.0  # series below, continued fraction above (both accurate to ~1e-16 there)


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (numpy has none, scipy is not a dependency), returned in x's dtype.

    |x| < 3: erf(x) = 2/sqrt(pi) exp(-x^2) sum_n x^(2n+1) 2^n / (1*3*...*(2n+1)): every term is
    positive, so nothing cancels. |x| >= 3: erfc by its continued fraction, evaluated backwards.
    """
    with np.errstate(all="ignore"):
        return _erf64(np.asarray(x, dtype=np.float64)).astype(np.asarray(x).dtype, copy=False)


def _erf64(v: np.ndarray) -> np.ndarray:
    a = np.abs(v)
    out = np.ones_like(a)  # |x| >= 6 and inf: erf is +-1 to double precision
    small = a < _ERF_SPLIT
    xs = a[small]
    term = xs.copy()
    total = xs.copy()
    x2 = 2.0 * xs * xs
    for n in range(1, _ERF_SERIES_TERMS):
        term = term * x2 / (2 * n + 1)
        total = total + term
        if n % 8 == 0 and not np.any(term > total * 1e-17):
            break  # every remaining term is below double precision
    out[small] = 2.0 / np.sqrt(np.pi) * np.exp(-xs * xs) * total
    mid = (a >= _ERF_SPLIT) & (a < 6.0)
    xb = a[mid]
    frac = np.zeros_like(xb)
    for k in range(_ERFC_CF_TERMS, 0, -1):
        frac = (k / 2.0) / (xb + frac)
    out[mid] = 1.0 - np.exp(-xb * xb) / np.sqrt(np.pi) / (xb + frac)
    return np.where(np.isnan(v), np.nan, np.copysign(out, v))


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); torch's default form."""
    return (0.5 * x * (1.0 + erf(x * x.dtype.type(0.7071067811865476)))).astype(x.dtype)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """torch's approximate='tanh' GELU."""
    t = x.dtype.type
    inner = t(0.7978845608028654) * (x + t(0.044715) * x * x * x)
    return (t(0.5) * x * (t(1.0) + np.tanh(inner))).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1/(1+exp(-x)) written with exp(-|x|), which never overflows; NaN stays NaN."""
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(x))
        one = x.dtype.type(1)
        return np.where(x >= 0, one / (one + e), e / (one + e)).astype(x.dtype)


def silu(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return (x * sigmoid(x)).astype(x.dtype)


def sign(x: np.ndarray) -> np.ndarray:
    """torch.sign: (0 < x) - (x < 0), so sign(NaN) is 0 (torch's behaviour, not numpy's NaN)."""
    if x.dtype == np.bool_:
        return x.copy()
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0) that keeps NaN (torch's clamp_min propagates it)."""
    if x.dtype == np.bool_:
        return x.copy()
    return np.where(x < 0, x.dtype.type(0), x)


def rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return (x.dtype.type(1) / np.sqrt(x)).astype(x.dtype)


def int_pow(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """Integer power as torch computes it: wraps on overflow; a negative exponent gives 0,
    except 1 -> 1 and -1 -> +-1 (numpy would raise instead)."""
    base, exp = np.broadcast_arrays(base, exp)
    neg = exp < 0
    with np.errstate(all="ignore"):
        out = np.power(base, np.where(neg, 0, exp))
    if neg.any():
        one = base.dtype.type(1)
        odd = (exp % 2) != 0
        neg_val = np.where(base == 1, one, 0)
        if base.dtype.kind == "i":
            neg_val = np.where(base == -1, np.where(odd, -one, one), neg_val)
        out = np.where(neg, neg_val.astype(base.dtype), out)
    return out.astype(base.dtype, copy=False)
