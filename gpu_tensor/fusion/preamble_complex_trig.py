"""The complex sin, cos, tan, sinh, cosh and tanh of the op table's rows, appended to the
preamble after the complex types (fusion/preamble_complex.py), whose helpers they use.

numpy 2.x on Linux calls glibc's csin/ccos/ctan/csinh/ccosh/ctanh for these (checked with
ctypes on 7,369 values per dtype: the same bits), so each overload follows glibc's
algorithm step for step: C99 Annex G's values for infinite and nan parts (nan signs as
glibc's: a written nan is positive, `x - x` of an infinity is the hardware's), exp(|t|)
split into factors exp(t0), t0 = (int)((max_exp - 1) ln 2), where a finite product would
otherwise be lost to exp overflowing alone, and tanh/tan as
(sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y), with 4 sin y cos y / exp(2|x|) for
large |x|. The sim's g++ build calls glibc's real sin/cos/sinh/cosh/exp, so its bits are
numpy's; a GPU's CUDA functions may differ by an ulp. Sums of products go through the
round-to-nearest intrinsics so NVRTC does not contract them into FMAs.

`gt_cx_limits<T>` holds the real type's constants: t0, t0 / 2 (tanh's), the smallest
normal, the largest finite value, the machine epsilon, pi, pi/2, pi/4 and ln 2 (glibc's
M_PI_2f ... as float literals for float).
"""

from __future__ import annotations

__all__ = ["COMPLEX_TRIG"]

COMPLEX_TRIG = r"""
template <typename T> struct gt_cx_limits;
template <> struct gt_cx_limits<float> {
  static GT_FN int t() { return 88; }
  static GT_FN int t2() { return 44; }
  static GT_FN float tiny() { return 1.17549435e-38f; }
  static GT_FN float big() { return 3.40282347e+38f; }
  static GT_FN float eps() { return 1.1920929e-07f; }
  static GT_FN float pi() { return 3.14159265358979323846f; }
  static GT_FN float pi_2() { return 1.57079632679489661923f; }
  static GT_FN float pi_4() { return 0.78539816339744830962f; }
  static GT_FN float ln2() { return 0.69314718055994530942f; }
};
template <> struct gt_cx_limits<double> {
  static GT_FN int t() { return 709; }
  static GT_FN int t2() { return 354; }
  static GT_FN double tiny() { return 2.2250738585072014e-308; }
  static GT_FN double big() { return 1.7976931348623157e308; }
  static GT_FN double eps() { return 2.220446049250313e-16; }
  static GT_FN double pi() { return 3.14159265358979323846; }
  static GT_FN double pi_2() { return 1.57079632679489661923; }
  static GT_FN double pi_4() { return 0.78539816339744830962; }
  static GT_FN double ln2() { return 0.69314718055994530942; }
};
template <typename T> GT_FN bool gt_neg_sign(T x) { return gt_copysign(T(1), x) < T(0); }
// (sin, cos) of v, or (v, 1) where |v| is below the smallest normal (glibc skips sincos)
template <typename T> GT_FN void gt_sincos_tiny(T v, T* s, T* c) {
  if (gt_fabs(v) > gt_cx_limits<T>::tiny()) gt_sincos(v, s, c);
  else { *s = v; *c = T(1); }
}
// e^a (c + i s) / 2 for a > t0 (each of sinh, cosh near e^a / 2), the scale applied in
// factors of e^t0 so that a product that is finite stays finite; a > 3 t0 overflows
template <typename T> GT_FN void gt_half_exp_scaled(T a, T& c, T& s) {
  typedef gt_cx_limits<T> L;
  const T et = gt_exp(T(L::t()));
  a -= T(L::t());
  s *= et / T(2); c *= et / T(2);
  if (a > T(L::t())) { a -= T(L::t()); s *= et; c *= et; }
  if (a > T(L::t())) { c = L::big() * c; s = L::big() * s; return; }
  const T e = gt_exp(a);
  c = e * c; s = e * s;
}
// sinh(x + iy) = sinh x cos y + i cosh x sin y (glibc's csinh)
template <typename T> GT_FN void gt_csinh(T x, T y, T& rr, T& ri) {
  const bool negate = gt_neg_sign(x);
  x = gt_fabs(x);
  if (gt_finite(x)) {
    if (gt_finite(y)) {
      T s, c;
      gt_sincos_tiny(y, &s, &c);
      if (negate) c = -c;
      if (x > T(gt_cx_limits<T>::t())) { gt_half_exp_scaled(x, c, s); rr = c; ri = s; }
      else { rr = gt_sinh(x) * c; ri = gt_cosh(x) * s; }
    } else if (x == T(0)) { rr = negate ? -T(0) : T(0); ri = y - y; }
    else { rr = ri = gt_nan<T>(); }
  } else if (x == x) {  // re is infinite
    if (gt_finite(y) && y != T(0)) {
      T s, c;
      gt_sincos_tiny(y, &s, &c);
      rr = gt_copysign(gt_inf<T>(), c); ri = gt_copysign(gt_inf<T>(), s);
      if (negate) rr = -rr;
    } else if (y == T(0)) { rr = negate ? -gt_inf<T>() : gt_inf<T>(); ri = y; }
    else { rr = gt_inf<T>(); ri = y - y; }
  } else { rr = gt_nan<T>(); ri = y == T(0) ? y : gt_nan<T>(); }
}
// cosh(x + iy) = cosh x cos y + i sinh x sin y (glibc's ccosh); cos z = cosh(iz)
template <typename T> GT_FN void gt_ccosh(T x, T y, T& rr, T& ri) {
  if (gt_finite(x)) {
    if (gt_finite(y)) {
      T s, c;
      gt_sincos_tiny(y, &s, &c);
      if (gt_fabs(x) > T(gt_cx_limits<T>::t())) {
        if (gt_neg_sign(x)) s = -s;
        gt_half_exp_scaled(gt_fabs(x), c, s);
        rr = c; ri = s;
      } else { rr = gt_cosh(x) * c; ri = gt_sinh(x) * s; }
    } else { ri = x == T(0) ? T(0) : gt_nan<T>(); rr = y - y; }
  } else if (x == x) {  // re is infinite
    if (gt_finite(y) && y != T(0)) {
      T s, c;
      gt_sincos_tiny(y, &s, &c);
      rr = gt_copysign(gt_inf<T>(), c);
      ri = gt_copysign(gt_inf<T>(), s) * gt_copysign(T(1), x);
    } else if (y == T(0)) { rr = gt_inf<T>(); ri = y * gt_copysign(T(1), x); }
    else { rr = gt_inf<T>(); ri = y - y; }
  } else { rr = gt_nan<T>(); ri = y == T(0) ? y : gt_nan<T>(); }
}
// sin(x + iy) = sin x cosh y + i cos x sinh y (glibc's csin)
template <typename T> GT_FN void gt_csin(T x, T y, T& rr, T& ri) {
  const bool negate = gt_neg_sign(x);
  const bool x_zero = x == T(0);
  x = gt_fabs(x);
  if (gt_finite(y)) {
    if (gt_finite(x)) {
      T s, c;
      gt_sincos_tiny(x, &s, &c);
      if (negate) s = -s;
      if (gt_fabs(y) > T(gt_cx_limits<T>::t())) {
        if (gt_neg_sign(y)) c = -c;
        gt_half_exp_scaled(gt_fabs(y), s, c);
        rr = s; ri = c;
      } else { rr = gt_cosh(y) * s; ri = gt_sinh(y) * c; }
    } else if (y == T(0)) { rr = x - x; ri = y; }
    else { rr = ri = gt_nan<T>(); }
  } else if (y == y) {  // im is infinite
    if (x_zero) { rr = negate ? -T(0) : T(0); ri = y; }
    else if (gt_finite(x)) {
      T s, c;
      gt_sincos_tiny(x, &s, &c);
      rr = gt_copysign(gt_inf<T>(), s); ri = gt_copysign(gt_inf<T>(), c);
      if (negate) rr = -rr;
      if (gt_neg_sign(y)) ri = -ri;
    } else { rr = x - x; ri = gt_inf<T>(); }
  } else {
    rr = x_zero ? (negate ? -T(0) : T(0)) : gt_nan<T>();
    ri = gt_nan<T>();
  }
}
// (sinh a cosh a + i sin b cos b) / (sinh^2 a + cos^2 b) for finite a, b: tanh(a + ib),
// and tan(x + iy) with a = y, b = x and the parts swapped (glibc's ctanh and ctan share it)
template <typename T> GT_FN void gt_tanh_parts(T a, T b, T& ra, T& rb) {
  typedef gt_cx_limits<T> L;
  T s, c;
  gt_sincos_tiny(b, &s, &c);
  if (gt_fabs(a) > T(L::t2())) {  // ra = +-1, rb = 4 sin b cos b / e^(2|a|), in two steps
    const T e2t = gt_exp(T(2 * L::t2()));
    ra = gt_copysign(T(1), a);
    const T q = gt_mul_rn(gt_mul_rn(T(4), s), c) / e2t;
    const T rest = gt_fabs(a) - T(L::t2());
    rb = rest > T(L::t2()) ? q / e2t : q / gt_exp(gt_mul_rn(T(2), rest));
    return;
  }
  T sh = a, ch = T(1);
  if (gt_fabs(a) > L::tiny()) { sh = gt_sinh(a); ch = gt_cosh(a); }
  const T cc = gt_mul_rn(c, c);
  const T den = gt_fabs(sh) > gt_mul_rn(gt_fabs(c), L::eps()) ? gt_add_rn(gt_mul_rn(sh, sh), cc) : cc;
  ra = gt_mul_rn(sh, ch) / den;
  rb = gt_mul_rn(s, c) / den;
}
// copysign(0, sin v cos v) for a finite |v| > 1, else copysign(0, v): the zero part of tanh at
// an infinite re (v = im) and of tan at an infinite im (v = re)
template <typename T> GT_FN T gt_tanh_zero(T v) {
  if (!gt_finite(v) || gt_fabs(v) <= T(1)) return gt_copysign(T(0), v);
  T s, c;
  gt_sincos(v, &s, &c);
  return gt_copysign(T(0), gt_mul_rn(s, c));
}
// tanh(x + iy) (glibc's ctanh)
template <typename T> GT_FN void gt_ctanh(T x, T y, T& rr, T& ri) {
  if (gt_finite(x) && gt_finite(y)) gt_tanh_parts(x, y, rr, ri);
  else if (x == x && !gt_finite(x)) { rr = gt_copysign(T(1), x); ri = gt_tanh_zero(y); }
  else if (y == T(0)) { rr = x; ri = y; }
  else { rr = x == T(0) ? x : gt_nan<T>(); ri = gt_nan<T>(); }
}
// tan(x + iy) = (sin x cos x + i sinh y cosh y) / (cos^2 x + sinh^2 y) (glibc's ctan)
template <typename T> GT_FN void gt_ctan(T x, T y, T& rr, T& ri) {
  if (gt_finite(x) && gt_finite(y)) gt_tanh_parts(y, x, ri, rr);
  else if (y == y && !gt_finite(y)) { rr = gt_tanh_zero(x); ri = gt_copysign(T(1), y); }
  else if (x == T(0)) { rr = x; ri = y; }
  else { rr = gt_nan<T>(); ri = y == T(0) ? y : gt_nan<T>(); }
}
// the rows' overloads: one per function and complex type
#define GT_CX_UNARY(name, impl, C) \
  GT_FN C name(C z) { C r; impl(z.re, z.im, r.re, r.im); return r; }
#define GT_CX_UNARY_BOTH(name, impl) GT_CX_UNARY(name, impl, gt_c64) GT_CX_UNARY(name, impl, gt_c128)
GT_CX_UNARY_BOTH(gt_sinh, gt_csinh)
GT_CX_UNARY_BOTH(gt_cosh, gt_ccosh)
GT_CX_UNARY_BOTH(gt_sin, gt_csin)
GT_CX_UNARY_BOTH(gt_tanh, gt_ctanh)
GT_CX_UNARY_BOTH(gt_tan, gt_ctan)
GT_FN gt_c64 gt_cos(gt_c64 z) { return gt_cosh(gt_c64_of(-z.im, z.re)); }
GT_FN gt_c128 gt_cos(gt_c128 z) { return gt_cosh(gt_c128_of(-z.im, z.re)); }
"""
