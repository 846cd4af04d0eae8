"""Complex C types and the complex overloads of the op table's templates, appended to the
preamble (fusion/preamble.py) after the special functions it reuses.

Only rows marked `complex_kernel` call the complex overloads: add, sub, mul, div, neg, eq,
ne, where, exp, abs, angle, conj, conj_physical, sqrt and log here; the trigonometric and
hyperbolic rows and their inverses in preamble_complex_trig.py and preamble_complex_arc.py;
sigmoid, silu, sgn, nan_to_num, log1p, expm1, exp2, log2, log10, rsqrt, pow, float_power,
sinc, ldexp and isnan/isinf/isfinite in preamble_complex_math.py (the logical ops read a
complex operand through the structs' `operator bool`). Since session 12 that is every row
that takes complex tensors eagerly; the rest refuse them with torch's error. A real
operand of a complex op is converted as it is loaded (`gt_to_c64`/`gt_to_c128`: the
imaginary part 0), as torch and numpy convert it before their complex loops. The structs
are written out by hand because NVRTC gets no headers here (no cuComplex, no thrust); g++
compiles them unchanged under kernels/host_emulation.h.

Values: |z| is hypot(re, im) and sgn divides each part by that real |z| (torch 2.13's
c10::complex). Products and quotients go through the round-to-nearest intrinsics
(`gt_mul_rn`, ...), so NVRTC cannot contract a*b - c*d into an FMA: every step rounds once,
alike under NVRTC and g++. A product is then torch 2.13's vectorized cpu value (numpy's
complex multiply uses FMA where the CPU has it); a quotient is numpy's Smith division, bit
for bit. exp follows glibc's cexp, which numpy and torch's cpu kernels call.
"""

from __future__ import annotations

__all__ = ["COMPLEX_PREAMBLE"]

COMPLEX_PREAMBLE = r"""
// as a bool (the logical ops read their operands so): nonzero, a nan part included
struct gt_c64 {
  float re, im;
  GT_FN explicit operator bool() const { return re != 0.0f || im != 0.0f; }
};
struct gt_c128 {
  double re, im;
  GT_FN explicit operator bool() const { return re != 0.0 || im != 0.0; }
};
GT_FN gt_c64 gt_c64_of(float re, float im) { gt_c64 z; z.re = re; z.im = im; return z; }
GT_FN gt_c128 gt_c128_of(double re, double im) { gt_c128 z; z.re = re; z.im = im; return z; }
// a real or complex value as a complex one (torch's cast: the imaginary part 0; complex128
// to complex64 rounds each part to float)
template <typename T> GT_FN gt_c64 gt_to_c64(T x) { return gt_c64_of((float)x, 0.0f); }
template <typename T> GT_FN gt_c128 gt_to_c128(T x) { return gt_c128_of((double)x, 0.0); }
GT_FN gt_c64 gt_to_c64(gt_c64 z) { return z; }
GT_FN gt_c64 gt_to_c64(gt_c128 z) { return gt_c64_of((float)z.re, (float)z.im); }
GT_FN gt_c128 gt_to_c128(gt_c64 z) { return gt_c128_of(z.re, z.im); }
GT_FN gt_c128 gt_to_c128(gt_c128 z) { return z; }
// products and sums that round once each, whatever the compiler's contraction setting
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
GT_FN float gt_mul_rn(float a, float b) { return __fmul_rn(a, b); }
GT_FN double gt_mul_rn(double a, double b) { return __dmul_rn(a, b); }
GT_FN float gt_add_rn(float a, float b) { return __fadd_rn(a, b); }
GT_FN double gt_add_rn(double a, double b) { return __dadd_rn(a, b); }
GT_FN float gt_sub_rn(float a, float b) { return __fsub_rn(a, b); }
GT_FN double gt_sub_rn(double a, double b) { return __dsub_rn(a, b); }
GT_FN float gt_div_rn(float a, float b) { return __fdiv_rn(a, b); }
GT_FN double gt_div_rn(double a, double b) { return __ddiv_rn(a, b); }
#else  // g++ under host emulation: x86-64 without -march has no FMA to contract into
template <typename T> GT_FN T gt_mul_rn(T a, T b) { return a * b; }
template <typename T> GT_FN T gt_add_rn(T a, T b) { return a + b; }
template <typename T> GT_FN T gt_sub_rn(T a, T b) { return a - b; }
template <typename T> GT_FN T gt_div_rn(T a, T b) { return a / b; }
#endif
// a quotient as numpy computes it (Smith's: the larger part of the divisor divides the
// other, a ratio and a scale), every step rounded once: numpy's bits
template <typename T> GT_FN void gt_cdiv(T a, T b, T c, T d, T& re, T& im) {
  const T ac = gt_copysign(c, T(1)), ad = gt_copysign(d, T(1));  // |c|, |d| (of -0: +0)
  if (ac >= ad) {
    if (ac == T(0) && ad == T(0)) {  // a zero divisor: inf or nan parts, as numpy gives
      re = gt_div_rn(a, ac);
      im = gt_div_rn(b, ac);
      return;
    }
    const T rat = gt_div_rn(d, c), scl = gt_div_rn(T(1), gt_add_rn(c, gt_mul_rn(d, rat)));
    re = gt_mul_rn(gt_add_rn(a, gt_mul_rn(b, rat)), scl);
    im = gt_mul_rn(gt_sub_rn(b, gt_mul_rn(a, rat)), scl);
  } else {
    const T rat = gt_div_rn(c, d), scl = gt_div_rn(T(1), gt_add_rn(d, gt_mul_rn(c, rat)));
    re = gt_mul_rn(gt_add_rn(gt_mul_rn(a, rat), b), scl);
    im = gt_mul_rn(gt_sub_rn(gt_mul_rn(b, rat), a), scl);
  }
}
// arithmetic and comparison, part by part (a product: (ac - bd) + (ad + bc)i; a quotient:
// gt_cdiv)
#define GT_COMPLEX_OPS(C)                                                             \
  GT_FN C operator+(C a, C b) { C r; r.re = a.re + b.re; r.im = a.im + b.im; return r; } \
  GT_FN C operator-(C a, C b) { C r; r.re = a.re - b.re; r.im = a.im - b.im; return r; } \
  GT_FN C operator-(C a) { C r; r.re = -a.re; r.im = -a.im; return r; }                \
  GT_FN C operator*(C a, C b) {                                                       \
    C r;                                                                              \
    r.re = gt_sub_rn(gt_mul_rn(a.re, b.re), gt_mul_rn(a.im, b.im));                   \
    r.im = gt_add_rn(gt_mul_rn(a.re, b.im), gt_mul_rn(a.im, b.re));                   \
    return r;                                                                         \
  }                                                                                   \
  GT_FN C operator/(C a, C b) { C r; gt_cdiv(a.re, a.im, b.re, b.im, r.re, r.im); return r; } \
  GT_FN bool operator==(C a, C b) { return a.re == b.re && a.im == b.im; }             \
  GT_FN bool operator!=(C a, C b) { return !(a == b); }
GT_COMPLEX_OPS(gt_c64)
GT_COMPLEX_OPS(gt_c128)
// conj, conj_physical: the imaginary part negated (a real operand's: preamble.py)
GT_FN gt_c64 gt_conj(gt_c64 z) { return gt_c64_of(z.re, -z.im); }
GT_FN gt_c128 gt_conj(gt_c128 z) { return gt_c128_of(z.re, -z.im); }
GT_FN float gt_cabs(gt_c64 z) { return hypotf(z.re, z.im); }
GT_FN double gt_cabs(gt_c128 z) { return hypot(z.re, z.im); }
// abs: |z|, real (the row's out dtype is the real type)
GT_FN float gt_abs(gt_c64 z) { return gt_cabs(z); }
GT_FN double gt_abs(gt_c128 z) { return gt_cabs(z); }
// angle: atan2(im, re), real (eagerly the atan2 row over .imag and .real: the same call)
GT_FN float gt_angle(gt_c64 z) { return gt_atan2(z.im, z.re); }
GT_FN double gt_angle(gt_c128 z) { return gt_atan2(z.im, z.re); }
// exp: glibc's cexp step for step (numpy and torch 2.13's cpu kernels call it, so the
// sim's g++ build gives their bits): exp(re) (cos im + i sin im), exp(re) split into
// factors exp(t), t = (int)((max_exp - 1) ln 2), where re > t (a finite product is not lost
// to exp(re) overflowing alone); C99 Annex G's values for infinite and nan parts
GT_FN void gt_sincos(float x, float* s, float* c) { sincosf(x, s, c); }
GT_FN void gt_sincos(double x, double* s, double* c) { sincos(x, s, c); }
template <typename T> GT_FN void gt_cexp(T re, T im, int t, T tiny, T big, T& rr, T& ri) {
  const bool re_finite = re - re == T(0), im_finite = im - im == T(0);
  T s = im, c = T(1);  // (sin, cos) of an im below the smallest normal: (im, 1)
  if (im_finite && (im < T(0) ? -im : im) > tiny) gt_sincos(im, &s, &c);
  if (re_finite) {
    if (!im_finite) { rr = ri = gt_nan<T>(); return; }
    if (re > T(t)) {
      const T et = gt_exp(T(t));
      re -= T(t); s *= et; c *= et;
      if (re > T(t)) { re -= T(t); s *= et; c *= et; }
    }
    if (re > T(t)) { rr = big * c; ri = big * s; return; }  // re was above 3t: overflow
    const T e = gt_exp(re);
    rr = e * c; ri = e * s;
  } else if (re == re) {  // re is +-inf
    const T v = re < T(0) ? T(0) : gt_inf<T>();
    if (im == T(0)) { rr = v; ri = im; }
    else if (im_finite) { rr = gt_copysign(v, c); ri = gt_copysign(v, s); }
    else if (re > T(0)) { rr = v; ri = im - im; }
    else { rr = T(0); ri = gt_copysign(T(0), im); }
  } else {  // re is nan
    rr = gt_nan<T>(); ri = im == T(0) ? im : gt_nan<T>();
  }
}
GT_FN gt_c64 gt_exp(gt_c64 z) {
  gt_c64 r;
  gt_cexp(z.re, z.im, 88, 1.17549435e-38f, 3.40282347e+38f, r.re, r.im);
  return r;
}
GT_FN gt_c128 gt_exp(gt_c128 z) {
  gt_c128 r;
  gt_cexp(z.re, z.im, 709, 2.2250738585072014e-308, 1.7976931348623157e308, r.re, r.im);
  return r;
}
// sqrt and log: glibc's csqrt and clog step for step (numpy calls them, so the sim's g++
// build gives numpy's bits; a GPU's sqrt/hypot/log/log1p/atan2 may differ by an ulp). tiny and
// big are the real type's smallest normal and largest finite value
template <typename T> GT_FN T gt_fabs(T x) { return gt_copysign(x, T(1)); }
template <typename T> GT_FN bool gt_finite(T x) { return x - x == T(0); }
template <typename T> GT_FN void gt_csqrt(T x, T y, T tiny, T big, int half_mant, T& rr, T& ri) {
  if (!gt_finite(x) || !gt_finite(y)) {  // C99 Annex G: an infinite im wins, then re
    if (y == y && !gt_finite(y)) { rr = gt_inf<T>(); ri = y; }
    else if (x == x && !gt_finite(x)) {
      if (x < T(0)) { rr = y != y ? gt_nan<T>() : T(0); ri = gt_copysign(gt_inf<T>(), y); }
      else { rr = x; ri = y != y ? gt_nan<T>() : gt_copysign(T(0), y); }
    } else { rr = ri = gt_nan<T>(); }
    return;
  }
  if (y == T(0)) {
    if (x < T(0)) { rr = T(0); ri = gt_copysign(gt_sqrt(-x), y); }
    else { rr = gt_fabs(gt_sqrt(x)); ri = gt_copysign(T(0), y); }
    return;
  }
  if (x == T(0)) {
    const T ay = gt_fabs(y);
    const T r = ay >= T(2) * tiny ? gt_sqrt(T(0.5) * ay) : T(0.5) * gt_sqrt(T(2) * ay);
    rr = r; ri = gt_copysign(r, y);
    return;
  }
  int scale = 0;  // huge parts are scaled down by 4, tiny ones up, so hypot neither overflows
  if (gt_fabs(x) > big / T(4)) { scale = 1; x = scalbn(x, -2); y = scalbn(y, -2); }
  if (gt_fabs(y) > big / T(4)) {
    scale = 1;
    x = gt_fabs(x) >= T(4) * tiny ? scalbn(x, -2) : T(0);
    y = scalbn(y, -2);
  } else if (gt_fabs(x) < T(2) * tiny && gt_fabs(y) < T(2) * tiny) {
    scale = -half_mant;
    x = scalbn(x, -2 * scale); y = scalbn(y, -2 * scale);
  }
  const T d = gt_hypot(x, y);
  T r, s;  // 2 re(res) im(res) = im(x): the part that d +- re(x) would cancel is a quotient
  if (x > T(0)) {
    r = gt_sqrt(T(0.5) * (d + x));
    if (scale == 1 && gt_fabs(y) < T(1)) { s = y / r; r = scalbn(r, scale); scale = 0; }
    else s = T(0.5) * (y / r);
  } else {
    s = gt_sqrt(T(0.5) * (d - x));
    if (scale == 1 && gt_fabs(y) < T(1)) { r = gt_fabs(y / s); s = scalbn(s, scale); scale = 0; }
    else r = gt_fabs(T(0.5) * (y / s));
  }
  if (scale) { r = scalbn(r, scale); s = scalbn(s, scale); }
  rr = r; ri = gt_copysign(s, y);
}
GT_FN gt_c64 gt_sqrt(gt_c64 z) {
  gt_c64 r;
  gt_csqrt(z.re, z.im, 1.17549435e-38f, 3.40282347e+38f, 12, r.re, r.im);
  return r;
}
GT_FN gt_c128 gt_sqrt(gt_c128 z) {
  gt_c128 r;
  gt_csqrt(z.re, z.im, 2.2250738585072014e-308, 1.7976931348623157e308, 27, r.re, r.im);
  return r;
}
// x^2 + y^2 - 1 for 0.5 <= x < 1 without cancellation (glibc's __x2y2m1): float in double,
// where the products are exact; double as an exact sum of the products' split parts
GT_FN float gt_x2y2m1(float x, float y) {
  const double dx = x, dy = y;
  return (float)gt_add_rn(gt_mul_rn(dx - 1.0, dx + 1.0), gt_mul_rn(dy, dy));
}
GT_FN void gt_sort_abs(double* v, int n) {  // insertion sort by magnitude (equal ones: any order)
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && gt_fabs(v[j - 1]) > gt_fabs(v[j]); --j) {
      const double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
    }
}
GT_FN double gt_x2y2m1(double x, double y) {
  double v[5];
  v[1] = gt_mul_rn(x, x); v[0] = fma(x, x, -v[1]);  // x^2 = v[1] + v[0] exactly
  v[3] = gt_mul_rn(y, y); v[2] = fma(y, y, -v[3]);
  v[4] = -1.0;
  gt_sort_abs(v, 5);
  for (int i = 0; i <= 3; ++i) {  // each step's error goes down to the next smaller slot
    const double hi = v[i + 1] + v[i];
    v[i] = (v[i + 1] - hi) + v[i];
    v[i + 1] = hi;
    gt_sort_abs(v + i + 1, 4 - i);
  }
  return (((v[4] + v[3]) + v[2]) + v[1]) + v[0];
}
template <typename T>
GT_FN void gt_clog(T x, T y, T tiny, T big, T eps, int mant, T pi, T ln2, T& rr, T& ri) {
  if (x == T(0) && y == T(0)) {  // -inf, and the angle of a signed zero
    ri = gt_copysign(gt_copysign(T(1), x) < T(0) ? pi : T(0), y);
    rr = T(-1) / gt_fabs(x);
    return;
  }
  if (x != x || y != y) {
    ri = gt_nan<T>();
    rr = (x == x && !gt_finite(x)) || (y == y && !gt_finite(y)) ? gt_inf<T>() : gt_nan<T>();
    return;
  }
  T ax = gt_fabs(x), ay = gt_fabs(y);
  if (ax < ay) { const T t = ax; ax = ay; ay = t; }
  int scale = 0;
  if (ax > big / T(2)) {
    scale = -1;
    ax = scalbn(ax, scale);
    ay = ay >= tiny * T(2) ? scalbn(ay, scale) : T(0);
  } else if (ax < tiny && ay < tiny) {
    scale = mant;
    ax = scalbn(ax, scale); ay = scalbn(ay, scale);
  }
  // log |z| near |z| = 1 as log1p(|z|^2 - 1) / 2, |z|^2 - 1 computed without cancellation
  if (ax == T(1) && scale == 0) {
    rr = gt_log1p(gt_mul_rn(ay, ay)) / T(2);
  } else if (ax > T(1) && ax < T(2) && ay < T(1) && scale == 0) {
    T d2m1 = gt_mul_rn(ax - T(1), ax + T(1));
    if (ay >= eps) d2m1 = gt_add_rn(d2m1, gt_mul_rn(ay, ay));
    rr = gt_log1p(d2m1) / T(2);
  } else if (ax < T(1) && ax >= T(0.5) && ay < eps / T(2) && scale == 0) {
    rr = gt_log1p(gt_mul_rn(ax - T(1), ax + T(1))) / T(2);
  } else if (ax < T(1) && ax >= T(0.5) && scale == 0 &&
             gt_add_rn(gt_mul_rn(ax, ax), gt_mul_rn(ay, ay)) >= T(0.5)) {
    rr = gt_log1p(gt_x2y2m1(ax, ay)) / T(2);
  } else {
    rr = gt_sub_rn(gt_log(gt_hypot(ax, ay)), gt_mul_rn(T(scale), ln2));
  }
  ri = gt_atan2(y, x);
}
GT_FN gt_c64 gt_log(gt_c64 z) {
  gt_c64 r;
  gt_clog(z.re, z.im, 1.17549435e-38f, 3.40282347e+38f, 1.1920929e-07f, 24, 3.14159265f,
          0.693147181f, r.re, r.im);
  return r;
}
GT_FN gt_c128 gt_log(gt_c128 z) {
  gt_c128 r;
  gt_clog(z.re, z.im, 2.2250738585072014e-308, 1.7976931348623157e308, 2.220446049250313e-16, 53,
          3.141592653589793, 0.6931471805599453, r.re, r.im);
  return r;
}
"""
