"""CUDA helpers of the op table's special-function rows (issue 23): appended to the
preamble (fusion/preamble.py), so every generated kernel can call them.

Where CUDA's libm has the function (tanf, erfcf, erfinvf, lgammaf, cyl_bessel_i0f, ...) the
helper is a thin overload; digamma, polygamma and the exponentially scaled Bessel functions
are written here. Under host emulation (g++) the libm names CUDA has and glibc lacks
(erfinvf, cyl_bessel_i0f, erfcxf, normcdff, normcdfinvf, ...) come from
kernels/host_emulation.h. Every helper has float and double overloads (half and bfloat16 are
computed in float); the numpy references are in fusion/npspecial.py.
"""

from __future__ import annotations

__all__ = ["SPECIAL"]

SPECIAL = r"""
template <typename T> GT_FN T gt_inf() { return T(gt_f32_bits(0x7f800000u)); }
template <typename T> GT_FN T gt_nan() { return T(gt_f32_bits(0x7fc00000u)); }

GT_MATH1(gt_tan, tanf, tan)
GT_MATH1(gt_asin, asinf, asin)
GT_MATH1(gt_acos, acosf, acos)
GT_MATH1(gt_atan, atanf, atan)
GT_MATH1(gt_sinh, sinhf, sinh)
GT_MATH1(gt_cosh, coshf, cosh)
GT_MATH1(gt_asinh, asinhf, asinh)
GT_MATH1(gt_acosh, acoshf, acosh)
GT_MATH1(gt_atanh, atanhf, atanh)
GT_MATH1(gt_expm1, expm1f, expm1)
GT_MATH1(gt_exp2, exp2f, exp2)
GT_MATH1(gt_log2, log2f, log2)
GT_MATH1(gt_log10, log10f, log10)
GT_MATH1(gt_erfc, erfcf, erfc)
GT_MATH1(gt_erfinv, erfinvf, erfinv)
GT_MATH1(gt_erfcx, erfcxf, erfcx)
GT_MATH1(gt_ndtr, normcdff, normcdf)
GT_MATH1(gt_ndtri, normcdfinvf, normcdfinv)
GT_MATH1(gt_lgamma, lgammaf, lgamma)
GT_MATH1(gt_i0_libm, cyl_bessel_i0f, cyl_bessel_i0)
GT_MATH1(gt_i1_libm, cyl_bessel_i1f, cyl_bessel_i1)
GT_MATH1(gt_j0_libm, j0f, j0)
GT_MATH1(gt_j1_libm, j1f, j1)
GT_MATH1(gt_y0_libm, y0f, y0)
GT_MATH1(gt_y1_libm, y1f, y1)

// I0 and I1 with torch's edges: nan at +-inf (torch's cephes form is exp(x) chbevl / sqrt(x),
// inf / inf there, on cpu and cuda alike), where the libm functions give +-inf.
template <typename T> GT_FN T gt_i0(T x) {
  return x - x != T(0) ? gt_nan<T>() : gt_i0_libm(x);
}
template <typename T> GT_FN T gt_i1(T x) {
  return x - x != T(0) ? gt_nan<T>() : gt_i1_libm(x);
}

// Bessel J and Y with torch's edges: nan at +-inf (where the limit is 0), Y nan below 0.
template <typename T> GT_FN T gt_bessel_j0(T x) {
  return x - x != T(0) ? gt_nan<T>() : gt_j0_libm(x);
}
template <typename T> GT_FN T gt_bessel_j1(T x) {
  return x - x != T(0) ? gt_nan<T>() : gt_j1_libm(x);
}
template <typename T> GT_FN T gt_bessel_y0(T x) {
  return (x - x != T(0) || x < T(0)) ? gt_nan<T>() : gt_y0_libm(x);
}
template <typename T> GT_FN T gt_bessel_y1(T x) {
  return (x - x != T(0) || x < T(0)) ? gt_nan<T>() : gt_y1_libm(x);
}
template <typename T> GT_FN T gt_spherical_j0(T x) {
  if (x == x && x - x != T(0)) return T(0);  // +-inf
  return x == T(0) ? T(1) : gt_sin(x) / x;
}

// log(ndtr(x)) without underflow: ndtr(x) = erfcx(-x / sqrt 2) exp(-x^2 / 2) / 2 below 0.
template <typename T> GT_FN T gt_log_ndtr(T x) {
  if (x < T(0)) {
    if (x - x != T(0)) return x;  // -inf
    return gt_log(T(0.5) * gt_erfcx(-x * T(0.70710678118654752440))) - T(0.5) * x * x;
  }
  return gt_log1p(T(-0.5) * gt_erfc(x * T(0.70710678118654752440)));
}

// logit: log(x / (1 - x)); with eps, x first clamped to [eps, 1 - eps] (nan stays nan).
template <typename T> GT_FN T gt_logit(T x) { return gt_log(x / (T(1) - x)); }
template <typename T> GT_FN T gt_logit_eps(T x, double eps) {
  const T lo = T(eps), hi = T(1) - lo;
  return gt_logit(x < lo ? lo : (x > hi ? hi : x));
}

// entr: -x log x, 0 at 0, -inf below 0.
template <typename T> GT_FN T gt_entr(T x) {
  if (x > T(0)) return -x * gt_log(x);
  if (x == T(0)) return T(0);
  return x < T(0) ? -gt_inf<T>() : x;
}

// torch.sinc: sin(pi x) / (pi x), 1 at 0.
template <typename T> GT_FN T gt_sinc(T x) {
  if (x == T(0)) return T(1);
  const T px = T(3.14159265358979323846) * x;
  return gt_sin(px) / px;
}

// digamma: reflection below 1/2, the recurrence psi(y) = psi(y + 1) - 1/y up to 10, then the
// asymptotic series in 1/y^2. torch: psi(+-0) = -+inf, nan at the negative integers.
template <typename T> GT_FN T gt_digamma(T x) {
  if (x == T(0)) return T(1) / x > T(0) ? -gt_inf<T>() : gt_inf<T>();
  if (x < T(0) && x == gt_floor(x)) return gt_nan<T>();
  const bool reflect = x < T(0.5);
  T y = reflect ? T(1) - x : x, acc = T(0);
  while (y < T(10)) { acc -= T(1) / y; y += T(1); }
  const T r2 = T(1) / (y * y);
  T r = acc + gt_log(y) - T(0.5) / y - r2 * (T(1.0 / 12) - r2 * (T(1.0 / 120) - r2 * (
      T(1.0 / 252) - r2 * (T(1.0 / 240) - r2 * T(1.0 / 132)))));
  if (reflect) {
    // cot has period 1: reduce x to [-1/2, 1/2] first (x - its nearest integer is exact), so
    // pi * x does not lose float32's precision near a pole of a large negative x
    const T rx = x - gt_floor(x + T(0.5));
    r -= T(3.14159265358979323846) / gt_tan(T(3.14159265358979323846) * rx);
  }
  return r;
}

// polygamma(n, x), n >= 1: psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1) up to 10,
// then the asymptotic series with the Bernoulli numbers B_2 .. B_10.
template <typename T> GT_FN T gt_polygamma(int n, T x) {
  if (n == 0) return gt_digamma(x);
  if (x <= T(0) && x == gt_floor(x)) return (n % 2) ? gt_inf<T>() : gt_nan<T>();
  const T sign = (n % 2) ? T(1) : T(-1);
  T fact = T(1);
  for (int k = 2; k <= n; ++k) fact *= T(k);
  T acc = T(0), y = x;
  for (int k = 0; k < 10 && y < T(10); ++k) {
    acc += sign * fact / gt_pow(y, T(n + 1));
    y += T(1);
  }
  T series = fact / T(n) / gt_pow(y, T(n)) + fact / (T(2) * gt_pow(y, T(n + 1)));
  const double bernoulli[5] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66};
  for (int k = 1; k <= 5; ++k) {
    T ratio = T(1);  // (2k + n - 1)! / (2k)!
    for (int j = 2 * k + 1; j <= 2 * k + n - 1; ++j) ratio *= T(j);
    series += T(bernoulli[k - 1]) * ratio / gt_pow(y, T(2 * k + n));
  }
  return acc + sign * series;
}

// e^-|x| I_nu(|x|), nu = 0 or 1: the power series up to |x| = 30, the asymptotic expansion
// beyond (its terms still shrink there for the 30 taken).
template <typename T> GT_FN T gt_bessel_scaled(int nu, T x) {
  const T ax = gt_abs(x);
  if (ax != ax) return ax;
  if (ax <= T(30)) {
    const T h = ax / T(2), q = h * h;
    T term = nu ? h : T(1), sum = term;
    for (int k = 1; k < 90 && term > sum * T(1e-17); ++k) {
      term *= q / T(k * (k + nu));
      sum += term;
    }
    return sum * gt_exp(-ax);
  }
  const T mu = T(4 * nu * nu);
  T coef = T(1), acc = T(1);
  for (int k = 1; k < 30; ++k) {
    coef = -coef * (mu - T((2 * k - 1) * (2 * k - 1))) / (T(8 * k) * ax);
    acc += coef;
  }
  return acc / gt_sqrt(T(6.283185307179586) * ax);
}
template <typename T> GT_FN T gt_i0e(T x) { return gt_bessel_scaled(0, x); }
template <typename T> GT_FN T gt_i1e(T x) { return gt_sign(x) * gt_bessel_scaled(1, x); }

// e^x K_nu(x), nu = 0 or 1: the power series up to x = 2, the trapezoid rule on
// e^x K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt up to 20, the asymptotic
// series beyond; nan below 0, inf at 0.
template <typename T> GT_FN T gt_bessel_i_series(int nu, T x) {
  const T h = x / T(2), q = h * h;
  T term = nu ? h : T(1), sum = term;
  for (int k = 1; k < 90 && term > sum * T(1e-17); ++k) {
    term *= q / T(k * (k + nu));
    sum += term;
  }
  return sum;
}
template <typename T> GT_FN T gt_k_scaled(int nu, T x) {
  if (x != x || x < T(0)) return gt_nan<T>();
  if (x == T(0)) return gt_inf<T>();
  if (x - x != T(0)) return T(0);
  const T euler = T(0.57721566490153286061);
  if (x <= T(2)) {
    const T q = x * x / T(4), i_nu = gt_bessel_i_series(nu, x);
    T term = T(1), total = T(0), r;
    if (nu == 0) {
      T harmonic = T(0);
      for (int k = 1; k < 60; ++k) {
        term *= q / T(k * k);
        harmonic += T(1) / T(k);
        total += term * harmonic;
      }
      r = -(gt_log(x / T(2)) + euler) * i_nu + total;
    } else {
      T psi1 = -euler, psi2 = T(1) - euler;  // psi(k + 1), psi(k + 2) at k = 0
      for (int k = 0; k < 60; ++k) {
        total += (psi1 + psi2) * term;
        term *= q / T((k + 1) * (k + 2));
        psi1 += T(1) / T(k + 1);
        psi2 += T(1) / T(k + 2);
      }
      r = T(1) / x + gt_log(x / T(2)) * i_nu - x / T(4) * total;
    }
    return r * gt_exp(x);
  }
  if (x <= T(20)) {
    T total = T(0.5);  // the t = 0 end, weighted 1/2
    for (int k = 1; k < 46; ++k) {
      const T t = T(0.1) * T(k);
      total += gt_exp(-x * (gt_cosh(t) - T(1))) * (nu ? gt_cosh(t) : T(1));
    }
    return total * T(0.1);
  }
  const T mu = T(4 * nu * nu);
  T coef = T(1), acc = T(1);
  for (int k = 1; k < 40; ++k) {
    coef *= (mu - T((2 * k - 1) * (2 * k - 1))) / (T(8 * k) * x);
    acc += coef;
  }
  return acc * gt_sqrt(T(1.57079632679489661923) / x);
}
template <typename T> GT_FN T gt_k0e(T x) { return gt_k_scaled(0, x); }
template <typename T> GT_FN T gt_k1e(T x) { return gt_k_scaled(1, x); }
template <typename T> GT_FN T gt_k0(T x) {  // (nan, 0 at +inf: no inf * 0)
  const T r = gt_k_scaled(0, x);
  return x - x != T(0) ? r : r * gt_exp(-x);
}
template <typename T> GT_FN T gt_k1(T x) {
  const T r = gt_k_scaled(1, x);
  return x - x != T(0) ? r : r * gt_exp(-x);
}
// -- the last rows (issue 23): trunc/fix, frac, deg2rad/rad2deg, sgn, angle, nan_to_num,
// mvlgamma. Integer operands of trunc and nan_to_num pass through unchanged.
template <typename T> GT_FN T gt_trunc(T x) { return x; }
template <> GT_FN float gt_trunc<float>(float x) { return truncf(x); }
template <> GT_FN double gt_trunc<double>(double x) { return trunc(x); }
template <typename T> GT_FN T gt_frac(T x) { return x - gt_trunc(x); }
// torch multiplies by pi/180 rounded to the compute type (float for half types)
GT_FN float gt_deg2rad(float x) { return x * 0.017453292519943295f; }
GT_FN double gt_deg2rad(double x) { return x * 0.017453292519943295; }
GT_FN float gt_rad2deg(float x) { return x * 57.29577951308232f; }
GT_FN double gt_rad2deg(double x) { return x * 57.29577951308232; }
// angle of a real number: pi below 0 (-inf too), nan stays nan, 0 otherwise (-0.0 included)
template <typename T> GT_FN T gt_angle(T x) {
  return x < T(0) ? T(3.14159265358979323846) : (x != x ? x : T(0));
}
template <typename T> GT_FN T gt_nan_to_num(T x, double nan, double hi, double lo) { return x; }
template <typename T> GT_FN T gt_nan_to_num_real(T x, double nan, double hi, double lo) {
  if (x != x) return T(nan);
  if (x - x != T(0)) return x > T(0) ? T(hi) : T(lo);
  return x;
}
template <> GT_FN float gt_nan_to_num<float>(float x, double nan, double hi, double lo) {
  return gt_nan_to_num_real(x, nan, hi, lo);
}
template <> GT_FN double gt_nan_to_num<double>(double x, double nan, double hi, double lo) {
  return gt_nan_to_num_real(x, nan, hi, lo);
}
template <typename T> GT_FN T gt_nan_to_num_default(T x) { return x; }
template <> GT_FN float gt_nan_to_num_default<float>(float x) {
  return gt_nan_to_num_real(x, 0.0, 3.4028234663852886e38, -3.4028234663852886e38);
}
template <> GT_FN double gt_nan_to_num_default<double>(double x) {
  return gt_nan_to_num_real(x, 0.0, 1.7976931348623157e308, -1.7976931348623157e308);
}
// mvlgamma(x, p): sum over i < p of lgamma(x - i/2) (torch's order: largest i first), plus
// p (p - 1) / 4 log(pi). Like torch 2.13, no check that x > (p - 1) / 2.
template <typename T> GT_FN T gt_mvlgamma(T x, int p) {
  T r = T(0);
  for (int i = p - 1; i >= 0; --i) r += gt_lgamma(x - T(0.5) * T(i));
  return r + T(0.28618247146235004 * p * (p - 1));
}
"""
