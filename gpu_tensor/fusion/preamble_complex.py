"""Complex C types and the complex overloads of the op table's templates, appended to the
preamble (fusion/preamble.py) after the special functions it reuses.

Only rows marked `complex_kernel` (add, sub, mul, div, neg, eq, ne, where, exp, sigmoid,
silu, sgn, nan_to_num, abs, angle, conj, conj_physical) call these; every other row keeps refusing complex operands in the
codegen (eager cuda falls back to cupy's routines for them, @gt.fuse refuses them). A real
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
struct gt_c64 { float re, im; };
struct gt_c128 { double re, im; };
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
// conj, conj_physical: the imaginary part negated; a real operand is itself (torch: conj of
// a real tensor is the tensor)
template <typename T> GT_FN T gt_conj(T x) { return x; }
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
"""
