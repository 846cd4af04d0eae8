"""Complex C types and the complex overloads of the op table's templates, appended to the
preamble (fusion/preamble.py) after the special functions it reuses.

Only rows marked `complex_kernel` (sgn, nan_to_num, abs) call these; every other row keeps
refusing complex operands in the codegen (eager cuda falls back to cupy for them). The
structs are written out by hand because NVRTC gets no headers here (no cuComplex, no
thrust); g++ compiles them unchanged under kernels/host_emulation.h. Values follow torch
2.13's c10::complex: |z| is hypot(re, im), and sgn divides each part by that real |z|
(a complex division would round differently).
"""

from __future__ import annotations

__all__ = ["COMPLEX_PREAMBLE"]

COMPLEX_PREAMBLE = r"""
struct gt_c64 { float re, im; };
struct gt_c128 { double re, im; };
GT_FN gt_c64 gt_c64_of(float re, float im) { gt_c64 z; z.re = re; z.im = im; return z; }
GT_FN gt_c128 gt_c128_of(double re, double im) { gt_c128 z; z.re = re; z.im = im; return z; }
GT_FN float gt_cabs(gt_c64 z) { return hypotf(z.re, z.im); }
GT_FN double gt_cabs(gt_c128 z) { return hypot(z.re, z.im); }
// abs: |z|, real (the row's out dtype is the real type)
GT_FN float gt_abs(gt_c64 z) { return gt_cabs(z); }
GT_FN double gt_abs(gt_c128 z) { return gt_cabs(z); }
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
