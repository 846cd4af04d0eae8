// host_emulation.h -- compile a CUDA C kernel source with g++ -std=c++20 and run it on the CPU.
//
// Include this first, then the .cu source, then one GT_EMU_EXPORT(symbol, kernel<...>) per
// kernel instantiation to expose. This header is the kernel's side only, kept light because
// every generated kernel compiles it (g++ parses it from a precompiled header, and the
// launcher's std::thread/std::barrier code is compiled once, not per kernel): the launcher
// is host_emulation_runtime.cc, a library of its own, which runs the grid by calling the
// exported entry once per (block, thread):
//
//   extern "C" int symbol(gt_emu::Ctx* ctx, gt_emu::SyncFn sync, void* dynamic_shared,
//                         const unsigned* grid3, const unsigned* block3,
//                         unsigned long long block, unsigned thread, void** args)
//   args[k] points at the bytes of kernel parameter k (a pointer value, a scalar, a struct),
//   the cuLaunchKernel convention, so host code packs arguments the same way for the GPU and
//   for the CPU. Returns 0, or GT_EMU_ERR_EXCEPTION when a C++ exception escaped the kernel.
//
// Model and why it is correct:
//   * threadIdx/blockIdx/blockDim/gridDim are thread_local globals of the kernel's library,
//     set by its entry before each call of the kernel.
//   * A launch starts blockDim.x*y*z std::threads once; together they run the blocks one at a
//     time, in order, with a barrier between blocks. Because no two blocks ever run at the same
//     time, `__shared__` can be a plain `static` (one instance per kernel instantiation, shared
//     by the threads of the running block) -- exactly CUDA's per-block visibility. It must NOT be
//     thread_local (threads of a block share it) and blocks must NOT run concurrently (they
//     would share it too), hence the sequential blocks.
//   * A process-wide mutex (the runtime's) serializes launches: ctypes drops the GIL during
//     the call, and two concurrent launches of one kernel would share its statics.
//   * __syncthreads is a std::barrier over the block's threads, reached through `sync`. As on
//     the GPU, every thread must reach each __syncthreads (no early return before one); the
//     kernels here loop uniformly.
//   * serial = 1 runs the threads of a block one after another on the calling thread (much
//     faster, no OS threads); valid only for kernels without __syncthreads -- calling it then
//     is detected and reported as GT_EMU_ERR_SYNC_IN_SERIAL.
//   * extern shared memory: use GT_EXTERN_SHARED(type, name) (from common code) which maps to a
//     per-launch buffer of shared_bytes here and to `extern __shared__` on the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "host_emulation_abi.h"  // the error codes, Ctx, SyncFn: shared with the runtime

#ifdef GT_EMU_HAVE_FP16
// The CUDA headers give the host the real __half/__nv_bfloat16 types and conversions; they
// also bring dim3/uint3 (vector_types.h) and the __device__-style macros, redefined below.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#else
struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
};
#endif

// Execution-space qualifiers mean nothing on the host.
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __constant__ static
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static  // see the header comment: blocks run one at a time
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
static const int warpSize = 32;

namespace gt_emu {

inline thread_local Ctx* ctx = nullptr;
inline thread_local SyncFn sync = nullptr;
inline thread_local void* dynamic_shared_bytes = nullptr;

inline void syncthreads() { sync(ctx); }

inline void* dynamic_shared() { return dynamic_shared_bytes; }

template <typename... A, std::size_t... I>
void call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(args[I])...);
}

// One (block, thread) of a launch: what the runtime calls through an exported entry.
template <typename... A>
int run(void (*kernel)(A...), Ctx* c, SyncFn s, void* shared, const unsigned* g3,
        const unsigned* b3, unsigned long long blk, unsigned t, void** args) {
    ctx = c;
    sync = s;
    dynamic_shared_bytes = shared;
    gridDim = dim3(g3[0], g3[1], g3[2]);
    blockDim = dim3(b3[0], b3[1], b3[2]);
    blockIdx.x = (unsigned)(blk % g3[0]);
    blockIdx.y = (unsigned)((blk / g3[0]) % g3[1]);
    blockIdx.z = (unsigned)(blk / ((unsigned long long)g3[0] * g3[1]));
    threadIdx.x = t % b3[0];
    threadIdx.y = (t / b3[0]) % b3[1];
    threadIdx.z = t / (b3[0] * b3[1]);
    try {
        call(kernel, args, std::index_sequence_for<A...>{});
    } catch (...) {
        return GT_EMU_ERR_EXCEPTION;
    }
    return 0;
}

}  // namespace gt_emu

#define __syncthreads() gt_emu::syncthreads()
#define __ldg(p) (*(p))
#define GT_EXTERN_SHARED(type, name) type* name = static_cast<type*>(gt_emu::dynamic_shared())

inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

// One exported C entry point per kernel instantiation (the name expression goes in __VA_ARGS__
// so template argument commas survive the macro).
#define GT_EMU_EXPORT(symbol, ...)                                                          \
    extern "C" int symbol(gt_emu::Ctx* c, gt_emu::SyncFn s, void* shared, const unsigned* g, \
                          const unsigned* b, unsigned long long blk, unsigned t, void** args) { \
        return gt_emu::run(&__VA_ARGS__, c, s, shared, g, b, blk, t, args);                 \
    }

// ---------------------------------------------------------------------------------------------
// CUDA libm functions glibc lacks, for the generated elementwise kernels (fusion/preamble_special.py
// calls them by CUDA's names). Double precision throughout; the float forms round once.
#include <cmath>

// erfinv: an initial guess from the logarithmic tail form, then Halley steps on erf(y) - x
// (erf'' = -2y erf', so each step is y -= f / (f' + y f)); three reach double precision.
inline double erfinv(double x) {
    if (x != x || x < -1.0 || x > 1.0) return NAN;
    if (x == 1.0) return INFINITY;
    if (x == -1.0) return -INFINITY;
    if (x == 0.0) return x;  // keeps the sign of zero
    const double w = -std::log((1.0 - x) * (1.0 + x));
    double y = (w < 6.25 ? std::sqrt(3.14159265358979323846) / 2 * x * (1.0 + w / 12.0)
                         : std::copysign(std::sqrt(w - std::log(w)), x));
    for (int k = 0; k < 60; ++k) {
        const double f = std::erf(y) - x;
        const double d = 2.0 / std::sqrt(3.14159265358979323846) * std::exp(-y * y);
        const double step = f / (d + y * f);
        y -= step;
        if (std::fabs(step) <= 1e-17 * std::fabs(y)) break;
    }
    return y;
}
inline float erfinvf(float x) { return (float)erfinv((double)x); }

// erfcx(x) = exp(x^2) erfc(x): directly while erfc does not underflow, the asymptotic series
// of x sqrt(pi) erfcx(x) = 1 - 1/(2x^2) + 3/(2x^2)^2 - ... beyond.
inline double erfcx(double x) {
    if (x != x) return x;
    if (x < 12.0) return x < -26.7 ? INFINITY : std::exp(x * x) * std::erfc(x);
    if (x == INFINITY) return 0.0;
    const double t = 1.0 / (2.0 * x * x);
    double term = 1.0, sum = 1.0;
    for (int k = 1; k < 40; ++k) {
        term *= -(2.0 * k - 1.0) * t;
        sum += term;
        if (std::fabs(term) < 1e-17 * sum) break;
    }
    return sum / (x * std::sqrt(3.14159265358979323846));
}
inline float erfcxf(float x) { return (float)erfcx((double)x); }

inline double normcdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
inline float normcdff(float x) { return (float)normcdf((double)x); }

// normcdfinv: the lower half by Newton steps on normcdf (accurate in the far tail, where erfc
// keeps its relative precision), from the logarithmic tail guess; the upper half by symmetry.
inline double normcdfinv(double p) {
    if (p != p || p < 0.0 || p > 1.0) return NAN;
    if (p == 0.0) return -INFINITY;
    if (p == 1.0) return INFINITY;
    if (p == 0.5) return 0.0;  // (Newton would stop a few 1e-18 short of it)
    if (p > 0.5) return -normcdfinv(1.0 - p);
    const double t = std::sqrt(-2.0 * std::log(p));
    double y = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                         (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
    for (int k = 0; k < 60; ++k) {
        const double pdf = std::exp(-0.5 * y * y) / std::sqrt(2.0 * 3.14159265358979323846);
        const double step = (normcdf(y) - p) / pdf;
        y -= step;
        if (std::fabs(step) <= 1e-16 * std::fabs(y) + 1e-300) break;
    }
    return y;
}
inline float normcdfinvf(float p) { return (float)normcdfinv((double)p); }

// I_nu(x), nu = 0 or 1: the power series up to |x| = 30, the asymptotic expansion beyond.
inline double gt_emu_bessel_i(int nu, double x) {
    const double ax = std::fabs(x);
    if (ax != ax) return ax;
    double r;
    if (ax <= 30.0) {
        const double h = ax / 2.0, q = h * h;
        double term = nu ? h : 1.0, sum = term;
        for (int k = 1; k < 120 && term > sum * 1e-18; ++k) {
            term *= q / (double)(k * (k + nu));
            sum += term;
        }
        r = sum;
    } else {
        const double mu = 4.0 * nu * nu;
        double coef = 1.0, acc = 1.0;
        for (int k = 1; k < 30; ++k) {
            coef = -coef * (mu - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (8.0 * k * ax);
            acc += coef;
        }
        r = std::exp(ax) * acc / std::sqrt(2.0 * 3.14159265358979323846 * ax);
    }
    return nu && x < 0 ? -r : r;
}
inline double cyl_bessel_i0(double x) { return gt_emu_bessel_i(0, x); }
inline double cyl_bessel_i1(double x) { return gt_emu_bessel_i(1, x); }
inline float cyl_bessel_i0f(float x) { return (float)cyl_bessel_i0((double)x); }
inline float cyl_bessel_i1f(float x) { return (float)cyl_bessel_i1((double)x); }
