"""torch's cpu transforms from twister words to samples, written into flat host arrays.

Each `fill_*` writes the values torch's cpu kernel would write into a tensor of
`flat.size` elements (C order) after the same generator state, in pieces of PIECE / 8 values
so that no temporary grows with the tensor. The rules, read from ATen's
DistributionsHelper.h and cpu/DistributionTemplates.h and checked against torch 2.13:

- uniform: float64 takes a 64-bit draw's low 53 bits times 2**-53; every other dtype a
  32-bit draw's low 24 bits times 2**-24, then `x * (to - from) + from` fused (FMA) in
  float, rounded to the dtype; a value that rounds up to `to` becomes `from`.
- normal, >= 16 contiguous elements: uniforms for the whole tensor, Box-Muller on each
  block of 16 (u1 = 1 - first 8, u2 = last 8), and when the size is not a multiple of 16
  the last 16 values are redone from 16 fresh uniforms. float32 takes torch's AVX2 kernel
  (avx_mathfun's cephes log and sincos with its FMA contractions, _cephes_f32.py);
  float64 glibc's log (numpy's differs in the last bit now and then), cos and sin;
  half and bfloat16 float32's, rounded, with their own tail (fill_normal).
- normal, fewer or strided: one double Box-Muller pair per two values, the second kept
  on the generator for the next call (torch's normal_distribution<double>).
- randint/random_(from, to): a 32-bit word modulo the range plus `from`, or a 64-bit one
  when the range is >= 2**28 (any dtype; measured on torch 2.13, which moved this
  threshold down from the 2**32 its older sources show).
- bernoulli(p number): a float64 uniform < p; p a tensor: float64 uniform for float64 p,
  float32 uniform (24 bits) otherwise.
- exponential_(lambda): -1/lambda * log1p(-u), u a float64 uniform.
- randperm(n): identity then swap i with i + word % (n - i) for n < 2**32 / 20; above,
  the inside-out shuffle with 64-bit words modulo i + 1.
"""

from __future__ import annotations

import math

import numpy as np

from ._cephes_f32 import log_ps, sincos_ps
from .backends.base import PIECE

__all__ = [
    "fill_uniform",
    "fill_normal",
    "fill_randint",
    "fill_bernoulli",
    "fill_randperm",
    "fill_exponential",
    "uniform01",
]

_M24 = np.uint32((1 << 24) - 1)
_M53 = np.uint64((1 << 53) - 1)


def uniform01(stream, k, double):
    """k uniforms in [0, 1): float64 from 53 bits when `double`, else float32 from 24."""
    if double:
        return (stream.words64(k) & _M53).astype(np.float64) * 2.0**-53
    return (stream.words(k) & _M24).astype(np.float32) * np.float32(2.0**-24)


def _fma64(x, y, z):
    """x * y + z for float64 arrays with (almost always) one rounding, as the FMA torch's
    compiler emits: the product's rounding error recovered exactly (Dekker's split) and
    folded in with the sum's (Knuth's two-sum)."""
    p = x * y

    def split(a):
        c = 134217729.0 * a  # 2**27 + 1
        hi = c - (c - a)
        return hi, a - hi

    xh, xl = split(x)
    yh, yl = split(np.float64(y))
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    bb = s - p
    t = (p - (s - bb)) + (z - bb)
    return s + (t + e)


_STEP = PIECE // 8  # values per piece: the transforms' temporaries stay well under
#                     a PIECE-sized result buffer (a multiple of 16, for normal's rows)


def _pieces(n, step=_STEP):
    for lo in range(0, n, step):
        yield lo, min(step, n - lo)


def fill_uniform(stream, flat, low=0.0, high=1.0):
    dt = flat.dtype
    double = dt == np.float64
    if double:
        lo_, hi_ = float(low), float(high)
    else:  # from/to cast to the dtype, the arithmetic in float
        lo_ = np.float32(np.asarray(low).astype(dt))
        hi_ = np.float32(np.asarray(high).astype(dt))
    span = hi_ - lo_
    top = np.asarray(hi_).astype(dt)
    for lo, k in _pieces(flat.shape[0]):
        x = uniform01(stream, k, double)
        if double:
            v = x if (lo_, hi_) == (0.0, 1.0) else _fma64(x, span, lo_)
        else:  # a 24-bit times a 24-bit product is exact in float64: one rounding, as FMA
            v = (x.astype(np.float64) * np.float64(span) + np.float64(lo_)).astype(np.float32)
        v = v.astype(dt)
        v[v >= top] = np.asarray(lo_).astype(dt)
        flat[lo : lo + k] = v


def _box_muller16(u, mean, std):
    """torch's normal_fill_16 over rows of 16 uniforms (in place on a (m, 16) array)."""
    if u.dtype == np.float32:
        rad = np.sqrt(np.float32(-2) * log_ps(np.float32(1) - u[:, :8]))
        s, c = sincos_ps(np.float32(2.0 * math.pi) * u[:, 8:])
        m, sd = np.float64(np.float32(mean)), np.float64(np.float32(std))
        u[:, :8] = ((rad * c).astype(np.float64) * sd + m).astype(np.float32)  # FMA
        u[:, 8:] = ((rad * s).astype(np.float64) * sd + m).astype(np.float32)
        return u
    u1 = 1.0 - u[:, :8]
    logs = np.fromiter(map(math.log, u1.ravel().tolist()), np.float64, u1.size)
    rad = np.sqrt(-2.0 * logs.reshape(u1.shape))
    theta = 2.0 * math.pi * u[:, 8:]
    u[:, :8] = _fma64(rad * np.cos(theta), std, mean)
    u[:, 8:] = _fma64(rad * np.sin(theta), std, mean)
    return u


def fill_normal(stream, flat, mean=0.0, std=1.0, contiguous=True):
    n = flat.shape[0]
    if n < 16 or not contiguous:
        flat[:] = _scalar_normals(stream, n, mean, std)
        return
    # half and bfloat16 run float32's kernel and round, but their last 16 values reuse the
    # partial block's uniforms and draw only the rest (measured on torch 2.13)
    reduced = flat.dtype not in (np.float32, np.float64)
    double = flat.dtype == np.float64
    rest = None
    for lo, k in _pieces(n):
        u = uniform01(stream, k, double)
        whole = k // 16 * 16  # (_STEP is a multiple of 16: only the last piece has a rest)
        if whole:
            flat[lo : lo + whole] = _box_muller16(u[:whole].reshape(-1, 16), mean, std).ravel()
        rest = u[whole:]
    if n % 16:
        fresh = uniform01(stream, 16 - rest.size if reduced else 16, double)
        u = np.concatenate([rest, fresh]) if reduced else fresh
        flat[n - 16 :] = _box_muller16(u.reshape(1, 16), mean, std).ravel()


def _scalar_normals(stream, n, mean, std):
    base = np.empty(n, np.float64)
    for i in range(n):
        if stream.next_double_normal is not None:
            base[i] = stream.next_double_normal
            stream.next_double_normal = None
            continue
        u1, u2 = uniform01(stream, 2, True).tolist()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        stream.next_double_normal = r * math.sin(theta)
        base[i] = r * math.cos(theta)
    return _fma64(base, std, mean)


def fill_exponential(stream, flat, lambd):
    """-1/lambda * log1p(-u) over float64 uniforms, glibc's log1p (numpy's can differ in
    the last bit), rounded to flat's dtype."""
    scale = -1.0 / lambd
    for lo, k in _pieces(flat.shape[0]):
        u = uniform01(stream, k, True).tolist()
        logs = np.fromiter(map(math.log1p, (-x for x in u)), np.float64, k)
        np.copyto(flat[lo : lo + k], scale * logs, casting="unsafe")


def fill_randint(stream, flat, low, high):
    span = int(high) - int(low)
    wide = span >= 1 << 28
    for lo, k in _pieces(flat.shape[0]):
        w = stream.words64(k) if wide else stream.words(k).astype(np.uint64)
        v = (w % np.uint64(span)).astype(np.int64) + np.int64(low)
        np.copyto(flat[lo : lo + k], v, casting="unsafe")


def fill_bernoulli(stream, flat, p):
    """p a number, or a flat float array of flat's size (a probability each)."""
    per = isinstance(p, np.ndarray)
    double = not per or p.dtype == np.float64
    for lo, k in _pieces(flat.shape[0]):
        u = uniform01(stream, k, double)
        q = p[lo : lo + k].astype(u.dtype) if per else p
        np.copyto(flat[lo : lo + k], u < q, casting="unsafe")


def fill_randperm(stream, flat):
    """torch's cpu randperm(flat.size), written into flat (any dtype holding the indices).
    The swaps run on flat's raw bits (an unsigned view through a memoryview: Python ints,
    no dtype arithmetic), so no buffer of the result's size is made."""
    n = flat.shape[0]
    for lo, k in _pieces(n):
        np.copyto(flat[lo : lo + k], np.arange(lo, lo + k), casting="unsafe")
    bits = memoryview(flat.view(f"u{flat.dtype.itemsize}"))
    if n < (1 << 32) // 20:
        for lo, k in _pieces(n - 1 if n > 1 else 0, _STEP // 8):  # (Python ints: 40 B)
            w = stream.words(k).astype(np.int64)
            z = (w % np.arange(n - lo, n - lo - k, -1, dtype=np.int64)).tolist()
            for i, zi in enumerate(z, lo):
                j = i + zi
                bits[i], bits[j] = bits[j], bits[i]
        return
    # the inside-out shuffle, torch's choice for huge n (64-bit draws against the skew)
    for lo, k in _pieces(n, _STEP // 8):
        z = (stream.words64(k) % np.arange(lo + 1, lo + k + 1, dtype=np.uint64)).tolist()
        for i, zi in enumerate(z, lo):
            bits[i] = bits[zi]
            bits[zi] = int(np.asarray(i).astype(flat.dtype).view(f"u{flat.dtype.itemsize}"))
