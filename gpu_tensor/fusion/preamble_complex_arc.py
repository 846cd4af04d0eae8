"""The complex asin, acos, atan, asinh, acosh and atanh of the op table's rows, appended to
the preamble after fusion/preamble_complex_trig.py (its constants) and
fusion/preamble_complex.py (csqrt, clog, x^2 + y^2 - 1).

numpy 2.x on Linux calls glibc's casin/cacos/catan/casinh/cacosh/catanh (checked with ctypes
on 7,369 values per dtype: the same bits), so each overload follows glibc's algorithm step
for step. asinh, acosh, asin and acos share glibc's __kernel_casinh: the argument reduced to
the first quadrant, then one of seven formulas picked by the size of its parts, each chosen
so that nothing cancels (log1p of the small part of |w|^2 - 1, sqrt of exact differences);
`adj` gives acos/acosh's variant (the parts swapped, the imaginary sign kept). atan and
atanh are one computation with the parts swapped (`gt_catan_parts`). Every product goes
through gt_mul_rn, so NVRTC cannot contract it into an FMA with a sum: each step rounds as
glibc's does (built for x86-64 without FMA).
"""

from __future__ import annotations

__all__ = ["COMPLEX_ARC"]

COMPLEX_ARC = r"""
template <typename T> struct gt_cx_of;
template <> struct gt_cx_of<float> {
  typedef gt_c64 type;
  static GT_FN gt_c64 make(float a, float b) { return gt_c64_of(a, b); }
};
template <> struct gt_cx_of<double> {
  typedef gt_c128 type;
  static GT_FN gt_c128 make(double a, double b) { return gt_c128_of(a, b); }
};
// the kernel's angle atan2(q, p) (asinh), or atan2(p, copysign(q, y)) (adj: acos's variant)
template <typename T> GT_FN T gt_arc_im(bool adj, T p, T q, T y) {
  return adj ? gt_atan2(p, gt_copysign(q, y)) : gt_atan2(q, p);
}
// the kernel's two middle cases, |re| < 1/2 and |im| near 1: base is im^2 - 1 (above 1) or
// 1 - im^2 (below), d = sqrt(base^2 + f) and the parts that do not cancel, dp and dm, swap
// their roles between the two
template <typename T> GT_FN void gt_asinh_mid(T rx, T ix, T base, bool above, bool adj, T y,
                                              T& rr, T& ri) {
  const T rx2 = gt_mul_rn(rx, rx);
  const T f = gt_mul_rn(rx2, (T(2) + rx2) + gt_mul_rn(gt_mul_rn(T(2), ix), ix));
  const T d = gt_sqrt(gt_mul_rn(base, base) + f);
  const T dp = d + base, dm = f / dp;
  const T r1 = gt_sqrt(((above ? dm : dp) + rx2) / T(2)), r2 = gt_mul_rn(rx, ix) / r1;
  const T sum = (rx2 + (above ? dp : dm)) + gt_mul_rn(T(2), gt_mul_rn(rx, r1) + gt_mul_rn(ix, r2));
  rr = gt_log1p(sum) / T(2);
  ri = gt_arc_im(adj, rx + r1, ix + r2, y);
}
// glibc's __kernel_casinh: asinh of x + iy, or with adj the parts of acos's result
template <typename T> GT_FN void gt_kernel_casinh(T x, T y, bool adj, T& rr, T& ri) {
  typedef gt_cx_limits<T> L;
  typedef typename gt_cx_of<T>::type C;
  const T eps = L::eps(), rx = gt_fabs(x), ix = gt_fabs(y);
  if (rx >= T(1) / eps || ix >= T(1) / eps) {  // x + sqrt(1 + x^2) is 2x here: log(2x)
    C w = adj ? gt_cx_of<T>::make(gt_copysign(ix, y), rx) : gt_cx_of<T>::make(rx, ix);
    w = gt_log(w);
    rr = w.re + L::ln2(); ri = w.im;
  } else if (rx >= T(0.5) && ix < eps / T(8)) {
    const T s = gt_hypot(T(1), rx);
    rr = gt_log(rx + s);
    ri = adj ? gt_atan2(s, y) : gt_atan2(ix, s);
  } else if (rx < eps / T(8) && ix >= T(1.5)) {
    const T s = gt_sqrt(gt_mul_rn(ix + T(1), ix - T(1)));
    rr = gt_log(ix + s);
    ri = gt_arc_im(adj, rx, s, y);
  } else if (ix > T(1) && ix < T(1.5) && rx < T(0.5)) {
    const T ix2m1 = gt_mul_rn(ix + T(1), ix - T(1));
    if (rx < eps * eps) {
      const T s = gt_sqrt(ix2m1);
      rr = gt_log1p(gt_mul_rn(T(2), ix2m1 + gt_mul_rn(ix, s))) / T(2);
      ri = gt_arc_im(adj, rx, s, y);
    } else {
      gt_asinh_mid(rx, ix, ix2m1, true, adj, y, rr, ri);
    }
  } else if (ix == T(1) && rx < T(0.5)) {
    if (rx < eps / T(8)) {
      const T sr = gt_sqrt(rx);
      rr = gt_log1p(gt_mul_rn(T(2), rx + sr)) / T(2);
      ri = gt_arc_im(adj, sr, T(1), y);
    } else {
      const T rxx = gt_mul_rn(rx, rx);
      const T d = gt_mul_rn(rx, gt_sqrt(T(4) + rxx));
      const T s1 = gt_sqrt((d + rxx) / T(2)), s2 = gt_sqrt((d - rxx) / T(2));
      rr = gt_log1p((rxx + d) + gt_mul_rn(T(2), gt_mul_rn(rx, s1) + s2)) / T(2);
      ri = gt_arc_im(adj, rx + s1, T(1) + s2, y);
    }
  } else if (ix < T(1) && rx < T(0.5)) {
    if (ix >= eps) {
      const T onemix2 = gt_mul_rn(T(1) + ix, T(1) - ix);
      if (rx < eps * eps) {
        const T s = gt_sqrt(onemix2);
        rr = gt_log1p(gt_mul_rn(T(2), rx) / s) / T(2);
        ri = adj ? gt_atan2(s, y) : gt_atan2(ix, s);
      } else {
        gt_asinh_mid(rx, ix, onemix2, false, adj, y, rr, ri);
      }
    } else {
      const T s = gt_hypot(T(1), rx);
      rr = gt_log1p(gt_mul_rn(gt_mul_rn(T(2), rx), rx + s)) / T(2);
      ri = adj ? gt_atan2(s, y) : gt_atan2(ix, s);
    }
  } else {  // log(w + sqrt(1 + w^2)), w the first-quadrant argument
    C w = gt_sqrt(gt_cx_of<T>::make(gt_mul_rn(rx - ix, rx + ix) + T(1),
                                    gt_mul_rn(gt_mul_rn(T(2), rx), ix)));
    w.re = w.re + rx; w.im = w.im + ix;
    if (adj) w = gt_cx_of<T>::make(gt_copysign(w.im, y), w.re);
    w = gt_log(w);
    rr = w.re; ri = w.im;
  }
  rr = gt_copysign(rr, x);
  ri = gt_copysign(ri, adj ? T(1) : y);
}
// asinh (glibc's casinh): Annex G's values, then the kernel
template <typename T> GT_FN void gt_casinh(T x, T y, T& rr, T& ri) {
  typedef gt_cx_limits<T> L;
  if (!gt_finite(x) || !gt_finite(y)) {
    if (y == y && !gt_finite(y)) {
      rr = gt_copysign(gt_inf<T>(), x);
      ri = x != x ? gt_nan<T>() : gt_copysign(gt_finite(x) ? L::pi_2() : L::pi_4(), y);
    } else if (!gt_finite(x)) {
      rr = x;
      ri = (x == x && gt_finite(y)) || (x != x && y == T(0)) ? gt_copysign(T(0), y) : gt_nan<T>();
    } else { rr = ri = gt_nan<T>(); }
  } else if (x == T(0) && y == T(0)) { rr = x; ri = y; }
  else gt_kernel_casinh(x, y, false, rr, ri);
}
// acosh (glibc's cacosh): the adjusted kernel of i z
template <typename T> GT_FN void gt_cacosh(T x, T y, T& rr, T& ri) {
  typedef gt_cx_limits<T> L;
  if (!gt_finite(x) || !gt_finite(y)) {
    rr = gt_inf<T>();
    if (y == y && !gt_finite(y)) {
      const T a = gt_finite(x) ? L::pi_2() : (x < T(0) ? L::pi() - L::pi_4() : L::pi_4());
      ri = x != x ? gt_nan<T>() : gt_copysign(a, y);
    } else if (x == x && !gt_finite(x)) {
      ri = gt_finite(y) ? gt_copysign(gt_neg_sign(x) ? L::pi() : T(0), y) : gt_nan<T>();
    } else { rr = gt_nan<T>(); ri = x == T(0) ? L::pi_2() : gt_nan<T>(); }
  } else if (x == T(0) && y == T(0)) { rr = T(0); ri = gt_copysign(L::pi_2(), y); }
  else {
    T wr, wi;
    gt_kernel_casinh(-y, x, true, wr, wi);
    if (gt_neg_sign(y)) { rr = wr; ri = -wi; }
    else { rr = -wr; ri = wi; }
  }
}
// asin (glibc's casin): -i asinh(i z)
template <typename T> GT_FN void gt_casin(T x, T y, T& rr, T& ri) {
  if (x != x || y != y) {
    if (x == T(0)) { rr = x; ri = y; }
    else if ((x == x && !gt_finite(x)) || (y == y && !gt_finite(y))) {
      rr = gt_nan<T>(); ri = gt_copysign(gt_inf<T>(), y);
    } else { rr = ri = gt_nan<T>(); }
    return;
  }
  T wr, wi;
  gt_casinh(-y, x, wr, wi);
  rr = wi; ri = -wr;
}
// acos (glibc's cacos): pi/2 - asin z at Annex G's values, else the adjusted kernel
template <typename T> GT_FN void gt_cacos(T x, T y, T& rr, T& ri) {
  if (!gt_finite(x) || !gt_finite(y) || (x == T(0) && y == T(0))) {
    T ar, ai;
    gt_casin(x, y, ar, ai);
    rr = gt_cx_limits<T>::pi_2() - ar;
    if (rr == T(0)) rr = T(0);
    ri = -ai;
    return;
  }
  gt_kernel_casinh(-y, x, true, ri, rr);
}
// atan and atanh for finite, not both zero parts: a is the part whose result is
// atan2(2a, 1 - a^2 - b^2) / 2, b the one whose result is log|(1 + b i) ...| / 4; atan(x + iy)
// is (a, b) = (x, y), atanh(x + iy) is (y, x) with the results swapped (glibc's catan/catanh)
template <typename T> GT_FN void gt_catan_parts(T a, T b, T& ra, T& rb) {
  typedef gt_cx_limits<T> L;
  const T eps = L::eps();
  if (gt_fabs(a) >= T(16) / eps || gt_fabs(b) >= T(16) / eps) {
    ra = gt_copysign(L::pi_2(), a);
    if (gt_fabs(a) <= T(1)) rb = T(1) / b;
    else if (gt_fabs(b) <= T(1)) rb = b / a / a;
    else {
      const T h = gt_hypot(a / T(2), b / T(2));
      rb = b / h / h / T(4);
    }
    return;
  }
  T ax = gt_fabs(a), ay = gt_fabs(b), den;
  if (ax < ay) { const T t = ax; ax = ay; ay = t; }
  if (ay < eps / T(2)) {
    den = gt_mul_rn(T(1) - ax, T(1) + ax);
    if (den == T(0)) den = T(0);
  } else if (ax >= T(1)) den = gt_mul_rn(T(1) - ax, T(1) + ax) - gt_mul_rn(ay, ay);
  else if (ax >= T(0.75) || ay >= T(0.5)) den = -gt_x2y2m1(ax, ay);
  else den = gt_mul_rn(T(1) - ax, T(1) + ax) - gt_mul_rn(ay, ay);
  ra = gt_mul_rn(T(0.5), gt_atan2(gt_mul_rn(T(2), a), den));
  if (gt_fabs(b) == T(1) && gt_fabs(a) < eps * eps) {
    rb = gt_mul_rn(gt_copysign(T(0.5), b), L::ln2() - gt_log(gt_fabs(a)));
  } else {
    const T a2 = gt_fabs(a) >= eps * eps ? gt_mul_rn(a, a) : T(0);
    const T np1 = b + T(1), nm1 = b - T(1);
    const T num = a2 + gt_mul_rn(np1, np1), dn = a2 + gt_mul_rn(nm1, nm1);
    const T f = num / dn;
    rb = f < T(0.5) ? gt_mul_rn(T(0.25), gt_log(f))
                    : gt_mul_rn(T(0.25), gt_log1p(gt_mul_rn(T(4), b) / dn));
  }
}
template <typename T> GT_FN void gt_catan(T x, T y, T& rr, T& ri) {
  typedef gt_cx_limits<T> L;
  if (!gt_finite(x) || !gt_finite(y)) {
    if (x == x && !gt_finite(x)) { rr = gt_copysign(L::pi_2(), x); ri = gt_copysign(T(0), y); }
    else if (y == y && !gt_finite(y)) {
      rr = gt_finite(x) ? gt_copysign(L::pi_2(), x) : gt_nan<T>();
      ri = gt_copysign(T(0), y);
    } else if (y == T(0)) { rr = gt_nan<T>(); ri = gt_copysign(T(0), y); }
    else { rr = ri = gt_nan<T>(); }
  } else if (x == T(0) && y == T(0)) { rr = x; ri = y; }
  else gt_catan_parts(x, y, rr, ri);
}
template <typename T> GT_FN void gt_catanh(T x, T y, T& rr, T& ri) {
  typedef gt_cx_limits<T> L;
  if (!gt_finite(x) || !gt_finite(y)) {
    if (y == y && !gt_finite(y)) { rr = gt_copysign(T(0), x); ri = gt_copysign(L::pi_2(), y); }
    else if ((x == x && !gt_finite(x)) || x == T(0)) {
      rr = gt_copysign(T(0), x);
      ri = gt_finite(y) ? gt_copysign(L::pi_2(), y) : gt_nan<T>();
    } else { rr = ri = gt_nan<T>(); }
  } else if (x == T(0) && y == T(0)) { rr = x; ri = y; }
  else gt_catan_parts(y, x, ri, rr);
}
GT_CX_UNARY_BOTH(gt_asinh, gt_casinh)
GT_CX_UNARY_BOTH(gt_acosh, gt_cacosh)
GT_CX_UNARY_BOTH(gt_asin, gt_casin)
GT_CX_UNARY_BOTH(gt_acos, gt_cacos)
GT_CX_UNARY_BOTH(gt_atan, gt_catan)
GT_CX_UNARY_BOTH(gt_atanh, gt_catanh)
"""
