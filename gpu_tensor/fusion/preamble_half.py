"""The 16-bit float types of the generated kernels and their conversions (preamble part).

half and bfloat16 are stored as 16-bit structs and converted with single PTX `cvt`
instructions on the device (round to nearest even), so no cuda_fp16.h is needed; under host
emulation (g++, no `__CUDA_ARCH__`) the same conversions are written out in portable code.
Placed in fusion/preamble.py's PREAMBLE right after the GT_FN macro, before every helper
that computes half types in float.
"""

from __future__ import annotations

__all__ = ["HALF"]

HALF = r"""
struct gt_half { unsigned short bits; };
struct gt_bf16 { unsigned short bits; };

GT_FN float gt_f32_bits(unsigned int u) { union { unsigned int u; float f; } c; c.u = u; return c.f; }
GT_FN unsigned int gt_bits_f32(float f) { union { unsigned int u; float f; } c; c.f = f; return c.u; }

GT_FN float gt_to_float(gt_half h) {
#ifdef __CUDA_ARCH__
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f;
#else
  unsigned int sign = (unsigned int)(h.bits & 0x8000u) << 16;
  unsigned int e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 0x1fu) return gt_f32_bits(sign | 0x7f800000u | (m << 13));
  if (e != 0) return gt_f32_bits(sign | ((e + 112u) << 23) | (m << 13));
  if (m == 0) return gt_f32_bits(sign);
  int shift = 0;
  while (!(m & 0x400u)) { m <<= 1; ++shift; }
  return gt_f32_bits(sign | ((unsigned int)(113 - shift) << 23) | ((m & 0x3ffu) << 13));
#endif
}

GT_FN float gt_to_float(gt_bf16 h) { return gt_f32_bits((unsigned int)h.bits << 16); }

template <typename T> GT_FN T gt_from_float(float f);

template <> GT_FN gt_half gt_from_float<gt_half>(float f) {
  gt_half h;
#ifdef __CUDA_ARCH__
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  unsigned int x = gt_bits_f32(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) { h.bits = (unsigned short)(sign | 0x7e00u); return h; }
  if (a >= 0x477ff000u) { h.bits = (unsigned short)(sign | 0x7c00u); return h; }  // rounds to inf
  unsigned int r;
  if (a >= 0x38800000u) {  // a normal half: drop 13 mantissa bits, ties to even
    r = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu);
    unsigned int rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;
  } else if (a < 0x33000000u) {  // below half the smallest subnormal: zero
    r = 0;
  } else {  // a subnormal half
    unsigned int shift = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u;
    r = m >> shift;
    unsigned int rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (r & 1u))) ++r;
  }
  h.bits = (unsigned short)(sign | r);
#endif
  return h;
}

template <> GT_FN gt_bf16 gt_from_float<gt_bf16>(float f) {
  gt_bf16 h;
#ifdef __CUDA_ARCH__
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  unsigned int x = gt_bits_f32(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) h.bits = (unsigned short)((x >> 16) | 0x40u);
  else h.bits = (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
  return h;
}

// Rounding through a 16-bit type (an explicit .half() / .bfloat16() inside a fused chain).
GT_FN float gt_round_half(float x) { return gt_to_float(gt_from_float<gt_half>(x)); }
GT_FN float gt_round_bf16(float x) { return gt_to_float(gt_from_float<gt_bf16>(x)); }
"""
