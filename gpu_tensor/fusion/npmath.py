"""numpy implementations of the ops numpy lacks or defines differently from PyTorch.

Each takes arrays already in the op's compute dtype (float32 for half/bfloat16) and returns the
same dtype, silently (PyTorch does not warn on inf/nan results, so neither do we).
erf, with its rational approximations, lives in nperf.py and is re-exported here.
"""

from __future__ import annotations

import math

import numpy as np

from .nperf import erf  # gelu's, and the erf row's reference (rows_special.py)

__all__ = [
    "erf",
    "gelu",
    "gelu_tanh",
    "sigmoid",
    "silu",
    "sign",
    "relu",
    "where",
    "int_pow",
    "rsqrt",
    "keep_ints",
    "xlogy",
    "xlog1py",
    "nextafter",
    "heaviside",
    "ldexp",
    "isposinf",
    "isneginf",
    "logaddexp2",
    "deg2rad",
    "rad2deg",
    "frac",
    "sgn_complex",
    "angle",
    "angle_complex",
    "nan_to_num",
]


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); torch's default form."""
    phi = erf(x * x.dtype.type(0.7071067811865476))  # a fresh array: update it in place
    phi += 1.0
    phi *= 0.5 * x  # the same products, in the same order, as 0.5 * x * (1 + erf)
    return phi.astype(x.dtype, copy=False)


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
        return x.copy(order="K")
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


def relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """max(x, 0) that keeps NaN (torch's clamp_min propagates it): x where x >= 0 or NaN,
    else 0, bit for bit (-0.0 stays -0.0). np.maximum returns the NaN operand itself but
    may give +0.0 for max(-0.0, 0) (its SIMD loops), so zeros are copied back from x:
    0.36 ms against np.where's 2.3 ms on 512 Ki float32 (one thread, measured); under
    ~1 Ki elements np.where's two calls cost less than three (6 vs 8 us at 256).
    `out`: an array of x's shape and dtype to write into (emulated cuda's allocator block,
    ops/_host_paths._host_relu); np.where has no `out=`, so there x is copied, then 0 set
    where x < 0: the same elements."""
    if x.dtype == np.bool_:
        if out is None:
            return x.copy(order="K")
        np.copyto(out, x)
        return out
    zero = x.dtype.type(0)
    if x.size < 1024:
        if out is None:
            return np.where(x < 0, zero, x)
        np.copyto(out, x)
        np.copyto(out, zero, where=x < 0)
        return out
    r = np.maximum(x, zero, out=out)
    if x.dtype.kind == "f":
        np.copyto(r, x, where=x == 0)
    return r


_SELECT_BITS = {4: np.uint32, 8: np.uint64}  # itemsize -> the unsigned view of its bits


def where(cond, x, y):
    """np.where(cond, x, y), bit for bit and in np.where's layout; a large float32/float64
    select from an array and a zero scalar (relu's backward: g where out > 0, else 0) takes
    the bits of x under an all-ones mask instead: np.where branches per element, 1.9 ms
    against 0.17 ms on 512 Ki float32 with a random mask (one thread, measured)."""
    bits = _SELECT_BITS.get(getattr(x, "itemsize", 0))
    if (
        bits is None
        or type(x) is not np.ndarray
        or x.dtype.kind != "f"
        or x.size < 4096
        or type(cond) is not np.ndarray
        or cond.dtype != np.bool_
        or cond.shape != x.shape
        or np.ndim(y) != 0
        or np.asarray(y).dtype != x.dtype
        or np.asarray(y).view(bits) != 0  # +0.0 only: its bits are all zero
    ):
        return np.where(cond, x, y)
    # the result as np.where allocates it: an iterator over (result, cond, x, y), order K
    out = np.nditer(
        [None, cond, x, y],
        ["zerosize_ok", "refs_ok", "buffered", "external_loop"],
        [["writeonly", "allocate"], ["readonly"], ["readonly"], ["readonly"]],
        [x.dtype, None, None, None],
        order="K",
    ).operands[0]
    mask = np.negative(cond.view(np.uint8), dtype=bits)  # 0 or all ones
    np.bitwise_and(x.view(bits), mask, out=out.view(bits))
    return out


def keep_ints(fn):
    """`fn` for floating arrays; integer and bool arrays pass through as a copy (floor, ceil,
    trunc: torch keeps their values and dtype)."""
    return lambda x: x.copy(order="K") if x.dtype.kind in "iub" else fn(x)


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


# --- binary special functions (issue 23) ----------------------------------------------------
# torch's scalar definitions (aten/src/ATen/native/Math.h, BinaryOps): NaN and zero rules first
def _xlog(x, y, log):
    with np.errstate(all="ignore"):
        r = x * log(y)
        r = np.where(x == 0, x.dtype.type(0), r)
        return np.where(np.isnan(y), y, r).astype(r.dtype, copy=False)


def xlogy(x, y):
    """x * log(y); 0 where x == 0, NaN where y is NaN (that rule first)."""
    return _xlog(x, y, np.log)


def xlog1py(x, y):
    """x * log1p(y); 0 where x == 0, NaN where y is NaN (that rule first)."""
    return _xlog(x, y, np.log1p)


def logaddexp2(a, b):
    """torch's formula, max + log1p(2**-|a - b|) / ln 2, as one fused multiply-add (so
    torch's logaddexp2(-1, -1) in float32 is -1.06e-8, not numpy's 0); equal infinities are
    returned as they are."""
    with np.errstate(all="ignore"):
        m = np.where(a < b, b, a)
        t = np.log1p(np.exp2(-np.abs(a - b)))
        inv_ln2 = m.dtype.type(1.4426950408889634)
        if m.dtype == np.float32:  # an FMA's one rounding: the product is exact in float64
            r = (m.astype(np.float64) + t.astype(np.float64) * np.float64(inv_ln2)).astype(m.dtype)
        elif m.dtype == np.float64:
            r = _fma64(t, inv_ln2, m)
        else:
            r = m + t * inv_ln2
        return np.where(np.isinf(a) & (a == b), a, r).astype(m.dtype, copy=False)


def _fma64(a, b, c):
    """a * b + c with the product's rounding error kept (Dekker's exact product, then an
    error-free sum): an FMA's result wherever a * b + c cancels, as near logaddexp2's a == b."""
    split = 134217729.0  # 2**27 + 1: halves of a 53-bit mantissa
    p = a * b
    ah = a * split - (a * split - a)
    bh = b * split - (b * split - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    v = s - p
    err = (p - (s - v)) + (c - v)
    return s + (err + e)


def heaviside(x, values):
    """values where x == 0, else 1 where x > 0 and 0 elsewhere, NaN included (numpy's
    heaviside gives NaN for NaN; torch gives 0)."""
    dt = np.result_type(x, values)
    return np.where(x == 0, values, x > 0).astype(dt, copy=False)


def ldexp(x, e):
    """x * 2**e (torch computes it as that product, so e need not be an integer)."""
    with np.errstate(all="ignore"):
        return (x * np.exp2(e)).astype(np.result_type(x, e), copy=False)


def nextafter(a, b):
    """np.nextafter, except that equal float16 operands give `b`, as C's and torch's do
    (numpy's float16 loop gives `a`: nextafter(0.0, -0.0) is +0.0 there, -0.0 in torch)."""
    r = np.nextafter(a, b)
    if r.dtype != np.float16:
        return r
    return np.where(a == b, b, r).astype(r.dtype, copy=False)


def isposinf(x):
    return np.isposinf(x) if x.dtype.kind == "f" else np.zeros_like(x, np.bool_)


def isneginf(x):
    return np.isneginf(x) if x.dtype.kind == "f" else np.zeros_like(x, np.bool_)


# -- the last rows (issue 23) ------------------------------------------------------------------
def _scale(name, factor):
    """x * factor, factor rounded to x's dtype as torch does."""

    def fn(x):
        return x * x.dtype.type(factor)

    fn.__name__ = name
    return fn


deg2rad = _scale("deg2rad", math.pi / 180)
rad2deg = _scale("rad2deg", 180 / math.pi)


def frac(x):
    return x - np.trunc(x)


def sgn_complex(z):
    """z / |z|, 0 at 0 (torch.sgn of a complex tensor). |z| is hypot(re, im), as torch's
    (np.abs of complex128 rounds 1e38+1e38j's modulus one ulp off it)."""
    mag = np.hypot(z.real, z.imag)
    safe = np.where(mag == 0, 1, mag)
    out = np.empty_like(z)  # each part divided by |z| (a complex division rounds otherwise)
    out.real, out.imag = z.real / safe, z.imag / safe
    return np.where(mag == 0, 0, out).astype(z.dtype, copy=False)


def angle(x):
    """The argument of a real number: pi below 0, nan for nan, 0 otherwise (-0.0 too)."""
    pi = x.dtype.type(math.pi)
    return np.where(x < 0, pi, np.where(x != x, x, 0)).astype(x.dtype, copy=False)


def angle_complex(z):
    """The argument of a complex number: atan2(imag, real), real (what ops/special.angle
    computes eagerly with the atan2 row)."""
    return np.arctan2(z.imag, z.real)


def nan_to_num(x, limits=None):
    """nan, +inf and -inf replaced by limits = (nan, posinf, neginf); None: (0, the largest
    finite value of x's dtype, the smallest). Integer and bool arrays are copied."""
    if x.dtype.kind not in "fc":
        return x.copy(order="K")
    if limits is None:
        return np.nan_to_num(x)
    nan, hi, lo = limits
    return np.nan_to_num(x, nan=nan, posinf=hi, neginf=lo)
