"""CUDA helper functions every generated elementwise kernel starts with.

The op table's templates call these `gt_*` helpers; each is overloaded per C type so one
template serves every dtype. The text compiles three ways: NVRTC (no headers available, so
nothing is #included), nvcc, and g++ under kernels/host_emulation.h (no `__CUDA_ARCH__`, so
the half/bfloat16 conversions and rsqrt fall back to portable code there).

Split by noun: this module holds the GT_FN macro and the math, comparison, division and
binary-special helpers of the op table; the 16-bit float types and their conversions are
preamble_half.py's, the special functions preamble_special.py's, the complex overloads
preamble_complex.py's. PREAMBLE joins them, each after what it calls: GT_FN, the 16-bit
types, the math here, vector access, the special functions, the complex overloads.
"""

from __future__ import annotations

from .preamble_complex import COMPLEX_PREAMBLE
from .preamble_complex_arc import COMPLEX_ARC
from .preamble_complex_math import COMPLEX_MATH
from .preamble_complex_trig import COMPLEX_TRIG
from .preamble_half import HALF
from .preamble_special import SPECIAL

__all__ = ["PREAMBLE", "PREAMBLE_REAL"]

PREAMBLE = r"""
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GT_FN __device__ __forceinline__
#else
#include <math.h>  // host emulation (g++): the C math functions NVRTC provides built in
#define GT_FN inline
#endif
"""
PREAMBLE += HALF  # the 16-bit float types and their conversions (preamble_half.py)
PREAMBLE += r"""
// Math, overloaded for float and double; integer versions where torch defines them.
#define GT_MATH1(name, ffn, dfn) \
  GT_FN float name(float x) { return ffn(x); } \
  GT_FN double name(double x) { return dfn(x); }
GT_MATH1(gt_exp, expf, exp)
GT_MATH1(gt_log, logf, log)
GT_MATH1(gt_log1p, log1pf, log1p)
GT_MATH1(gt_sqrt, sqrtf, sqrt)
GT_MATH1(gt_sin, sinf, sin)
GT_MATH1(gt_cos, cosf, cos)
GT_MATH1(gt_tanh, tanhf, tanh)
GT_MATH1(gt_erf, erff, erf)

#ifdef __CUDA_ARCH__
GT_FN float gt_rsqrt(float x) { return rsqrtf(x); }
GT_FN double gt_rsqrt(double x) { return rsqrt(x); }
#else
GT_FN float gt_rsqrt(float x) { return 1.0f / sqrtf(x); }
GT_FN double gt_rsqrt(double x) { return 1.0 / sqrt(x); }
#endif

template <typename T> GT_FN T gt_floor(T x) { return x; }
template <typename T> GT_FN T gt_ceil(T x) { return x; }
template <typename T> GT_FN T gt_round(T x) { return x; }
template <> GT_FN float gt_floor<float>(float x) { return floorf(x); }
template <> GT_FN double gt_floor<double>(double x) { return floor(x); }
template <> GT_FN float gt_ceil<float>(float x) { return ceilf(x); }
template <> GT_FN double gt_ceil<double>(double x) { return ceil(x); }
template <> GT_FN float gt_round<float>(float x) { return rintf(x); }  // half to even
template <> GT_FN double gt_round<double>(double x) { return rint(x); }

template <typename T> GT_FN T gt_abs(T x) { return x < T(0) ? T(-x) : x; }
template <> GT_FN bool gt_abs<bool>(bool x) { return x; }
template <> GT_FN float gt_abs<float>(float x) { return fabsf(x); }
template <> GT_FN double gt_abs<double>(double x) { return fabs(x); }

// conj of a real operand is the operand (torch: conj of a real tensor is the tensor); the
// complex overloads are preamble_complex.py's. Real derivatives call it too (g * conj(f'))
template <typename T> GT_FN T gt_conj(T x) { return x; }

// torch.sign: (0 < x) - (x < 0), so sign(NaN) == 0 as in torch.
template <typename T> GT_FN T gt_sign(T x) { return T((T(0) < x) - (x < T(0))); }
template <> GT_FN bool gt_sign<bool>(bool x) { return x; }

// max/min/relu/clamp propagate NaN like torch (x != x is only true for NaN).
template <typename T> GT_FN T gt_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> GT_FN T gt_min(T a, T b) { return (a != a || a < b) ? a : b; }
template <> GT_FN bool gt_max<bool>(bool a, bool b) { return a || b; }
template <> GT_FN bool gt_min<bool>(bool a, bool b) { return a && b; }
template <typename T> GT_FN T gt_relu(T x) { return x < T(0) ? T(0) : x; }
template <typename T> GT_FN T gt_clamp(T x, T lo, T hi) { return gt_min(gt_max(x, lo), hi); }
template <typename T> GT_FN T gt_bitnot(T x) { return T(~x); }
template <> GT_FN bool gt_bitnot<bool>(bool x) { return !x; }

template <typename T> GT_FN T gt_sigmoid(T x) {  // exp(-|x|) never overflows
  T e = gt_exp(-gt_abs(x));
  return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}
template <typename T> GT_FN T gt_silu(T x) { return x * gt_sigmoid(x); }
template <typename T> GT_FN T gt_gelu(T x) {  // exact form, torch's default
  return T(0.5) * x * (T(1) + gt_erf(x * T(0.70710678118654752440)));
}
template <typename T> GT_FN T gt_gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + gt_tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
}

// floor_divide / remainder with Python's sign rules (numpy's algorithm for floats).
// b == -1 of a signed type (T(-1) of an unsigned one is its maximum, a valid divisor)
template <typename T> GT_FN bool gt_minus_one(T b) { return T(-1) < T(0) && b == T(-1); }
template <typename T> GT_FN T gt_floordiv(T a, T b) {
  if (b == T(0)) return T(0);  // integer division by zero: 0, like numpy (and no host trap)
  if (gt_minus_one(b)) return T(0 - a);  // avoids the INT_MIN / -1 trap on the host
  T q = a / b;
  if ((a % b != T(0)) && ((a < T(0)) != (b < T(0)))) q = q - T(1);
  return q;
}
template <typename T> GT_FN T gt_remainder(T a, T b) {
  if (b == T(0) || gt_minus_one(b)) return T(0);
  T r = a % b;
  if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = r + b;
  return r;
}
template <> GT_FN bool gt_floordiv<bool>(bool a, bool b) { return b ? a : false; }
template <> GT_FN bool gt_remainder<bool>(bool, bool) { return false; }
#define GT_FLOAT_DIVMOD(T, FMOD, FLOOR, COPYSIGN) \
  template <> GT_FN T gt_floordiv<T>(T a, T b) { \
    if (b == T(0)) return a / b; \
    T mod = FMOD(a, b), div = (a - mod) / b; \
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1); \
    if (div == T(0)) return COPYSIGN(T(0), a / b); \
    T fl = FLOOR(div); \
    if (div - fl > T(0.5)) fl += T(1); \
    return fl; \
  } \
  template <> GT_FN T gt_remainder<T>(T a, T b) { \
    T mod = FMOD(a, b); \
    if (b == T(0)) return mod; \
    if (mod != T(0)) { if ((b < T(0)) != (mod < T(0))) mod += b; } \
    else mod = COPYSIGN(T(0), b); \
    return mod; \
  }
GT_FLOAT_DIVMOD(float, fmodf, floorf, copysignf)
GT_FLOAT_DIVMOD(double, fmod, floor, copysign)

// pow: floats as powf/pow; integers by squaring, wrapping, negative exponents as in torch.
template <typename T> GT_FN T gt_pow(T a, T b) {
  if (b < T(0)) {
    if (a == T(1)) return T(1);
    if (a == T(0) - T(1)) return (b % T(2) == T(0)) ? T(1) : a;
    return T(0);
  }
  T result = T(1);
  while (b != T(0)) {
    if (b % T(2) != T(0)) result = T(result * a);
    b = T(b / T(2));
    a = T(a * a);
  }
  return result;
}
template <> GT_FN bool gt_pow<bool>(bool a, bool b) { return a || !b; }
template <> GT_FN float gt_pow<float>(float a, float b) { return powf(a, b); }
template <> GT_FN double gt_pow<double>(double a, double b) { return pow(a, b); }

// --- binary special functions (issue 23) ----------------------------------------------------
// torch's scalar definitions; floats as float and double (half types arrive as float).
#define GT_MATH2(name, ffn, dfn) \
  GT_FN float name(float a, float b) { return ffn(a, b); } \
  GT_FN double name(double a, double b) { return dfn(a, b); }
GT_MATH2(gt_hypot, hypotf, hypot)
GT_MATH2(gt_atan2, atan2f, atan2)
GT_MATH2(gt_copysign, copysignf, copysign)
GT_MATH2(gt_nextafter, nextafterf, nextafter)
#undef GT_MATH2
// nextafter steps in the type the result is stored in (S, the row's {storage}): float and
// double call C's; half and bfloat16 (computed in float) step to the next 16-bit value, as
// torch's kernels do (torch's rule: NaN wins, equal values give `to`, 0 steps to the
// smallest subnormal with the sign of `to`)
template <typename S, typename T> GT_FN T gt_nextafter_in(T a, T b) { return gt_nextafter(a, b); }
template <typename S> GT_FN float gt_nextafter16(float a, float b) {
  S h = gt_from_float<S>(a);
  const S t = gt_from_float<S>(b);
  const float x = gt_to_float(h), y = gt_to_float(t);
  if (x != x || y != y) return x + y;
  if (x == y) return y;
  if (x == 0.0f) h.bits = (unsigned short)((t.bits & 0x8000u) | 1u);
  else if ((x < y) == (x > 0.0f)) h.bits = (unsigned short)(h.bits + 1u);
  else h.bits = (unsigned short)(h.bits - 1u);
  return gt_to_float(h);
}
template <> GT_FN float gt_nextafter_in<gt_half, float>(float a, float b) {
  return gt_nextafter16<gt_half>(a, b);
}
template <> GT_FN float gt_nextafter_in<gt_bf16, float>(float a, float b) {
  return gt_nextafter16<gt_bf16>(a, b);
}
GT_MATH1(gt_pow2, exp2f, exp2)  // 2**x
GT_FN float gt_fma(float a, float b, float c) { return fmaf(a, b, c); }
GT_FN double gt_fma(double a, double b, double c) { return fma(a, b, c); }
template <typename T> GT_FN T gt_ldexp(T x, T e) { return x * gt_pow2(e); }  // torch: x * 2**e

// No NaN/inf constants without headers: x - x is 0 for finite x and NaN for inf and NaN.
template <typename T> GT_FN bool gt_isnan(T x) { return false; }
template <typename T> GT_FN bool gt_isinf(T x) { return false; }
template <typename T> GT_FN bool gt_isfinite(T x) { return true; }
template <> GT_FN bool gt_isnan<float>(float x) { return x != x; }
template <> GT_FN bool gt_isnan<double>(double x) { return x != x; }
template <> GT_FN bool gt_isinf<float>(float x) { return x == x && (x - x) != (x - x); }
template <> GT_FN bool gt_isinf<double>(double x) { return x == x && (x - x) != (x - x); }
template <> GT_FN bool gt_isfinite<float>(float x) { return (x - x) == (x - x); }
template <> GT_FN bool gt_isfinite<double>(double x) { return (x - x) == (x - x); }
template <typename T> GT_FN bool gt_isposinf(T x) { return x > T(0) && gt_isinf(x); }
template <typename T> GT_FN bool gt_isneginf(T x) { return x < T(0) && gt_isinf(x); }
template <typename T> GT_FN bool gt_signbit(T x) { return x < T(0); }
template <> GT_FN bool gt_signbit<bool>(bool) { return false; }
template <> GT_FN bool gt_signbit<float>(float x) { return (gt_bits_f32(x) >> 31) != 0u; }
template <> GT_FN bool gt_signbit<double>(double x) {
  union { double d; unsigned long long u; } c; c.d = x; return (c.u >> 63) != 0ull;
}

// logaddexp(2): equal infinities are returned as they are; otherwise max + log1p(exp(-|a-b|))
template <typename T> GT_FN T gt_logaddexp(T a, T b) {
  if (gt_isinf(a) && a == b) return a;
  T m = a < b ? b : a;
  return m + gt_log1p(gt_exp(-gt_abs(a - b)));
}
template <typename T> GT_FN T gt_logaddexp2(T a, T b) {
  if (gt_isinf(a) && a == b) return a;
  T m = a < b ? b : a;
  return gt_fma(gt_log1p(gt_pow2(-gt_abs(a - b))), T(1.44269504088896340736), m);  // as torch
}
// xlogy / xlog1py: NaN where y is NaN, 0 where x == 0
template <typename T> GT_FN T gt_xlogy(T x, T y) {
  return y != y ? y : (x == T(0) ? T(0) : x * gt_log(y));
}
template <typename T> GT_FN T gt_xlog1py(T x, T y) {
  return y != y ? y : (x == T(0) ? T(0) : x * gt_log1p(y));
}
// fmod: C's remainder (the dividend's sign); integers by 0 are refused before the launch
template <typename T> GT_FN T gt_fmod(T a, T b) {
  return (b == T(0) || gt_minus_one(b)) ? T(0) : T(a % b);  // (no INT_MIN % -1 trap)
}
template <> GT_FN float gt_fmod<float>(float a, float b) { return fmodf(a, b); }
template <> GT_FN double gt_fmod<double>(double a, double b) { return fmod(a, b); }
// fmax/fmin: NaN loses to a number (C's fmax/fmin)
template <typename T> GT_FN T gt_fmax(T a, T b) { return a < b ? b : a; }
template <typename T> GT_FN T gt_fmin(T a, T b) { return b < a ? b : a; }
template <> GT_FN bool gt_fmax<bool>(bool a, bool b) { return a || b; }
template <> GT_FN bool gt_fmin<bool>(bool a, bool b) { return a && b; }
template <> GT_FN float gt_fmax<float>(float a, float b) { return fmaxf(a, b); }
template <> GT_FN double gt_fmax<double>(double a, double b) { return fmax(a, b); }
template <> GT_FN float gt_fmin<float>(float a, float b) { return fminf(a, b); }
template <> GT_FN double gt_fmin<double>(double a, double b) { return fmin(a, b); }
// heaviside: values where x == 0, else (x > 0) (0 for NaN)
template <typename T> GT_FN T gt_heaviside(T x, T v) { return x == T(0) ? v : T(x > T(0)); }
"""

# Vector access: VEC elements moved in chunks of at most 16 bytes (one 128-bit access each);
# the caller guarantees each chunk is aligned to its size (layout.plan checks the pointers).
PREAMBLE += r"""
template <typename T, int N> struct alignas(sizeof(T) * N) gt_pack { T v[N]; };
template <typename T, int N> struct gt_chunk {
  static constexpr int n = (16 / (int)sizeof(T)) < N ? (16 / (int)sizeof(T)) : N;
};
template <typename T, int N> GT_FN void gt_load(const T* p, T (&out)[N]) {
  constexpr int C = gt_chunk<T, N>::n;
#pragma unroll
  for (int k = 0; k < N; k += C) {
    const gt_pack<T, C> c = *reinterpret_cast<const gt_pack<T, C>*>(p + k);
#pragma unroll
    for (int j = 0; j < C; ++j) out[k + j] = c.v[j];
  }
}
template <typename T, int N> GT_FN void gt_store(T* p, const T (&in)[N]) {
  constexpr int C = gt_chunk<T, N>::n;
#pragma unroll
  for (int k = 0; k < N; k += C) {
    gt_pack<T, C> c;
#pragma unroll
    for (int j = 0; j < C; ++j) c.v[j] = in[k + j];
    *reinterpret_cast<gt_pack<T, C>*>(p + k) = c;
  }
}
"""

# The special functions of the op table (erfc, erfinv, lgamma, digamma, Bessel, ...): issue 23.
PREAMBLE += SPECIAL
# A kernel with no complex operand or scalar compiles without the complex part (about 800
# lines): NVRTC took 28 ms for a float32 axpb kernel without it, 44 ms with it (this machine)
PREAMBLE_REAL = PREAMBLE
PREAMBLE += COMPLEX_PREAMBLE  # complex types and overloads (sgn, nan_to_num): after SPECIAL
PREAMBLE += COMPLEX_TRIG  # complex sin ... tanh, over COMPLEX_PREAMBLE's helpers
PREAMBLE += COMPLEX_MATH  # complex log1p, expm1, exp2, log2, log10, rsqrt, isnan ...
PREAMBLE += COMPLEX_ARC  # complex asin ... atanh, over the trig file's constants
