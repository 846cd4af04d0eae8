"""The complex overloads of sigmoid, silu, sgn, nan_to_num, log1p, expm1, exp2, log2, log10,
rsqrt, pow, sinc, ldexp and the isnan/isinf/isfinite tests, appended to the preamble after
fusion/preamble_complex.py (whose exp, log, sqrt, product and quotient they call) and
preamble_complex_trig.py (sin).

These are not C99 functions: numpy computes each with a formula of its own
(numpy/_core/src/umath/funcs.inc.src), and the cpu path runs numpy, so each overload takes
numpy's steps over the real functions glibc provides (the sim's g++ build calls those, so
its bits are numpy's):
- log1p(z) = log(hypot(re + 1, im)) + i atan2(im, re + 1);
- expm1(z) = expm1(re) cos(im) - 2 sin(im/2)^2 + i exp(re) sin(im);
- exp2(z) = exp(z ln 2), each part multiplied by ln 2 first, then glibc's cexp;
- log2(z), log10(z) = log(z) (glibc's clog) with each part multiplied by log2(e), log10(e);
- rsqrt(z) = 1 / sqrt(z) (the row's numpy function: numpy's Smith division of 1 + 0i);
- pow(a, b): numpy's npy_cpow (below), glibc's cpow past its small-integer cases;
- sinc and ldexp: the rows' numpy functions (np.sinc; x * exp2(e)).
The constants are numpy's, as float literals for complex64 (a double rounded to float could
differ from the literal rounded once). Sums of products round each step (gt_mul_rn, ...) so
NVRTC does not contract them into FMAs.
"""

from __future__ import annotations

__all__ = ["COMPLEX_MATH"]

COMPLEX_MATH = r"""
// sigmoid 1 / (1 + exp(-z)) and silu z sigmoid(z), each step as numpy's (the rows'
// complex_fn): the sum and quotient as numpy's, exp glibc's, the product gt_mul_rn's
GT_FN gt_c64 gt_sigmoid(gt_c64 z) {
  const gt_c64 one = gt_c64_of(1.0f, 0.0f);
  return one / (one + gt_exp(-z));
}
GT_FN gt_c128 gt_sigmoid(gt_c128 z) {
  const gt_c128 one = gt_c128_of(1.0, 0.0);
  return one / (one + gt_exp(-z));
}
GT_FN gt_c64 gt_silu(gt_c64 z) { return z * gt_sigmoid(z); }
GT_FN gt_c128 gt_silu(gt_c128 z) { return z * gt_sigmoid(z); }
// sgn: z / |z| part by part, 0 at 0 (nan parts give nan, an infinite part gives nan / 0)
GT_FN gt_c64 gt_sign(gt_c64 z) {
  const float m = gt_cabs(z);
  return m == 0.0f ? gt_c64_of(0.0f, 0.0f) : gt_c64_of(z.re / m, z.im / m);
}
GT_FN gt_c128 gt_sign(gt_c128 z) {
  const double m = gt_cabs(z);
  return m == 0.0 ? gt_c128_of(0.0, 0.0) : gt_c128_of(z.re / m, z.im / m);
}
// nan_to_num: each part replaced as a real number is, with the real type's limits
GT_FN gt_c64 gt_nan_to_num(gt_c64 z, double nan, double hi, double lo) {
  return gt_c64_of(gt_nan_to_num_real(z.re, nan, hi, lo), gt_nan_to_num_real(z.im, nan, hi, lo));
}
GT_FN gt_c128 gt_nan_to_num(gt_c128 z, double nan, double hi, double lo) {
  return gt_c128_of(gt_nan_to_num_real(z.re, nan, hi, lo), gt_nan_to_num_real(z.im, nan, hi, lo));
}
GT_FN gt_c64 gt_nan_to_num_default(gt_c64 z) {
  return gt_c64_of(gt_nan_to_num_default(z.re), gt_nan_to_num_default(z.im));
}
GT_FN gt_c128 gt_nan_to_num_default(gt_c128 z) {
  return gt_c128_of(gt_nan_to_num_default(z.re), gt_nan_to_num_default(z.im));
}
template <typename T> GT_FN void gt_clog1p(T x, T y, T& rr, T& ri) {
  const T x1 = x + T(1);
  const T l = gt_hypot(x1, y);
  ri = gt_atan2(y, x1);
  rr = gt_log(l);
}
template <typename T> GT_FN void gt_cexpm1(T x, T y, T& rr, T& ri) {
  const T a = gt_sin(y / T(2));
  rr = gt_sub_rn(gt_mul_rn(gt_expm1(x), gt_cos(y)), gt_mul_rn(gt_mul_rn(T(2), a), a));
  ri = gt_mul_rn(gt_exp(x), gt_sin(y));
}
GT_FN gt_c64 gt_log1p(gt_c64 z) { gt_c64 r; gt_clog1p(z.re, z.im, r.re, r.im); return r; }
GT_FN gt_c128 gt_log1p(gt_c128 z) { gt_c128 r; gt_clog1p(z.re, z.im, r.re, r.im); return r; }
GT_FN gt_c64 gt_expm1(gt_c64 z) { gt_c64 r; gt_cexpm1(z.re, z.im, r.re, r.im); return r; }
GT_FN gt_c128 gt_expm1(gt_c128 z) { gt_c128 r; gt_cexpm1(z.re, z.im, r.re, r.im); return r; }
// z with each part multiplied by k (numpy's NPY_LOGE2, NPY_LOG2E, NPY_LOG10E)
GT_FN gt_c64 gt_cscale(gt_c64 z, float k) { return gt_c64_of(gt_mul_rn(z.re, k), gt_mul_rn(z.im, k)); }
GT_FN gt_c128 gt_cscale(gt_c128 z, double k) {
  return gt_c128_of(gt_mul_rn(z.re, k), gt_mul_rn(z.im, k));
}
GT_FN gt_c64 gt_exp2(gt_c64 z) { return gt_exp(gt_cscale(z, 0.693147180559945309417232121458176568f)); }
GT_FN gt_c128 gt_exp2(gt_c128 z) { return gt_exp(gt_cscale(z, 0.693147180559945309417232121458176568)); }
GT_FN gt_c64 gt_log2(gt_c64 z) { return gt_cscale(gt_log(z), 1.442695040888963407359924681001892137f); }
GT_FN gt_c128 gt_log2(gt_c128 z) { return gt_cscale(gt_log(z), 1.442695040888963407359924681001892137); }
GT_FN gt_c64 gt_log10(gt_c64 z) { return gt_cscale(gt_log(z), 0.434294481903251827651128918916605082f); }
GT_FN gt_c128 gt_log10(gt_c128 z) { return gt_cscale(gt_log(z), 0.434294481903251827651128918916605082); }
GT_FN gt_c64 gt_rsqrt(gt_c64 z) { return gt_c64_of(1.0f, 0.0f) / gt_sqrt(z); }
GT_FN gt_c128 gt_rsqrt(gt_c128 z) { return gt_c128_of(1.0, 0.0) / gt_sqrt(z); }
// pow: numpy's npy_cpow. b = 0 gives 1 and a = 0 gives 0 (re b > 0) or nan; an integer b in
// (-100, 100) is a's square-and-multiply product (numpy's cmul: plain products, our operator*;
// 1 / product for b < 0, numpy's Smith division); anything else glibc's cpow,
// cexp(b clog(a)), whose product is C99's (GCC: plain products, then libgcc's __mul?c3 where
// both parts are nan: infinities recovered as C11 Annex G.5.1 has it)
template <typename T> GT_FN T gt_inf_or_zero(T v) { return gt_copysign(gt_isinf(v) ? T(1) : T(0), v); }
template <typename T> GT_FN T gt_nan_to_zero(T v) { return v != v ? gt_copysign(T(0), v) : v; }
template <typename T> GT_FN void gt_cmul_c99(T a, T b, T c, T d, T& x, T& y) {
  const T ac = gt_mul_rn(a, c), bd = gt_mul_rn(b, d), ad = gt_mul_rn(a, d), bc = gt_mul_rn(b, c);
  x = ac - bd;
  y = ad + bc;
  if (x == x || y == y) return;
  bool recalc = false;
  if (gt_isinf(a) || gt_isinf(b)) {
    a = gt_inf_or_zero(a); b = gt_inf_or_zero(b); c = gt_nan_to_zero(c); d = gt_nan_to_zero(d);
    recalc = true;
  }
  if (gt_isinf(c) || gt_isinf(d)) {
    c = gt_inf_or_zero(c); d = gt_inf_or_zero(d); a = gt_nan_to_zero(a); b = gt_nan_to_zero(b);
    recalc = true;
  }
  if (!recalc && (gt_isinf(ac) || gt_isinf(bd) || gt_isinf(ad) || gt_isinf(bc))) {
    a = gt_nan_to_zero(a); b = gt_nan_to_zero(b); c = gt_nan_to_zero(c); d = gt_nan_to_zero(d);
    recalc = true;
  }
  if (recalc) {
    x = gt_inf<T>() * (gt_mul_rn(a, c) - gt_mul_rn(b, d));
    y = gt_inf<T>() * (gt_mul_rn(a, d) + gt_mul_rn(b, c));
  }
}
template <typename C, typename T> GT_FN C gt_cpow(C a, C b, T one) {
  C unit; unit.re = one; unit.im = T(0);
  if (b.re == T(0) && b.im == T(0)) return unit;
  if (a.re == T(0) && a.im == T(0)) {
    C r; r.re = r.im = b.re > T(0) ? T(0) : gt_nan<T>();
    return r;
  }
  if (b.im == T(0) && b.re > T(-100) && b.re < T(100) && T((int)b.re) == b.re) {
    const int n = (int)b.re;
    if (n == 1) return a;
    if (n == 2) return a * a;
    if (n == 3) return a * (a * a);
    const int m = n < 0 ? -n : n;
    C p = a, acc = unit;
    for (int mask = 1;; mask <<= 1) {
      if (m & mask) acc = acc * p;
      if (m < (mask << 1)) break;
      p = p * p;
    }
    return b.re < T(0) ? unit / acc : acc;
  }
  const C l = gt_log(a);
  C w;
  gt_cmul_c99(b.re, b.im, l.re, l.im, w.re, w.im);
  return gt_exp(w);
}
GT_FN gt_c64 gt_pow(gt_c64 a, gt_c64 b) { return gt_cpow(a, b, 1.0f); }
GT_FN gt_c128 gt_pow(gt_c128 a, gt_c128 b) { return gt_cpow(a, b, 1.0); }
// sinc as the row's numpy function (np.sinc): y = pi (z, or 1e-20 where z is 0), sin(y) / y,
// with numpy's product of pi + 0i and y (plain products: exact here whether or not numpy's
// complex multiply fuses them) and its Smith division
template <typename C, typename T> GT_FN C gt_csinc(C z, T pi, T tiny) {
  C w = z, p;
  if (z.re == T(0) && z.im == T(0)) { w.re = tiny; w.im = T(0); }
  p.re = pi; p.im = T(0);
  const C y = p * w;
  return gt_sin(y) / y;
}
GT_FN gt_c64 gt_sinc(gt_c64 z) { return gt_csinc(z, 3.14159265358979323846f, 1.0e-20f); }
GT_FN gt_c128 gt_sinc(gt_c128 z) { return gt_csinc(z, 3.14159265358979323846, 1.0e-20); }
// ldexp as the row's numpy function: x * exp2(e), numpy's exp2 and the kernel's product (on
// cpu numpy's complex multiply may fuse a product into an FMA: an ulp apart there)
GT_FN gt_c64 gt_ldexp(gt_c64 x, gt_c64 e) { return x * gt_exp2(e); }
GT_FN gt_c128 gt_ldexp(gt_c128 x, gt_c128 e) { return x * gt_exp2(e); }
// a part that is nan (isnan), infinite (isinf); both finite (isfinite): numpy's and torch's
GT_FN bool gt_isnan(gt_c64 z) { return gt_isnan(z.re) || gt_isnan(z.im); }
GT_FN bool gt_isnan(gt_c128 z) { return gt_isnan(z.re) || gt_isnan(z.im); }
GT_FN bool gt_isinf(gt_c64 z) { return gt_isinf(z.re) || gt_isinf(z.im); }
GT_FN bool gt_isinf(gt_c128 z) { return gt_isinf(z.re) || gt_isinf(z.im); }
GT_FN bool gt_isfinite(gt_c64 z) { return gt_isfinite(z.re) && gt_isfinite(z.im); }
GT_FN bool gt_isfinite(gt_c128 z) { return gt_isfinite(z.re) && gt_isfinite(z.im); }
"""
