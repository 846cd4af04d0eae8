// amp_unscale.cu -- GradScaler's inf/NaN check and unscale over every gradient of one
// (device, dtype) group in one launch (torch's _amp_foreach_non_finite_check_and_unscale_).
//
// Signature:
//   template <typename T>   // float, double, gt_amp_half, gt_amp_bf16 (16-bit floats as bits)
//   __global__ void gt_amp_unscale(const long long* table, long long* flags, int n,
//                                  float* found_inf, const float* factor, int mode,
//                                  long long stamp)
//   table: 3n + 1 int64s describing the n tensors, each a dense run of numel elements:
//     table[i]          the address of tensor i's lowest element
//     table[n + i]      its numel (> 0)
//     table[2n + i]     its first chunk; table[3n] = the total number of chunks. Tensor i owns
//                       chunks table[2n + i] .. table[2n + i + 1] - 1, of GT_AMP_CHUNK elements
//   flags: n int64s; flags[i] = stamp when tensor i holds an inf or NaN (else left alone, so
//     a caller that changes the stamp per launch never has to clear them).
//   found_inf: set to 1.0f when any element is inf or NaN (else left alone: the caller zeroes
//     it once per check, and several launches may share it).
//   mode: 0 check only; 1 multiply by *factor; 2 multiply by float(1.0 / double(*factor))
//     (GradScaler passes its scale: torch's inv_scale, without a separate launch for it).
// Launch shape: 1-D blocks of GT_AMP_BLOCK threads; any grid.x >= 1 (each block walks the
//   chunks blockIdx.x, blockIdx.x + gridDim.x, ...); no shared memory, no __syncthreads.
// numpy equivalent, for each tensor g (i) of the group:
//   if not np.isfinite(g.astype(opmath)).all(): found_inf[...] = 1; flags[i] = stamp
//   if mode and inv != 1: g[...] = (g.astype(opmath) * inv).astype(g.dtype)
//   opmath: double for double, float32 otherwise (torch's opmath_type).
//
// Every element is read once; a thread writes found_inf / flags only when it saw an inf or
// NaN (all such writes store the same value, so their order does not matter).

#define GT_AMP_BLOCK 256                   // 8 warps
#define GT_AMP_CHUNK (GT_AMP_BLOCK * 16)   // elements per chunk: 16 per thread

// 16-bit floats travel as their bits: no cuda_fp16.h needed (NVRTC without headers, g++).
struct gt_amp_half { unsigned short bits; };
struct gt_amp_bf16 { unsigned short bits; };

__device__ __forceinline__ float gt_amp_f32(unsigned int u) {
    union { unsigned int u; float f; } c;
    c.u = u;
    return c.f;
}
__device__ __forceinline__ unsigned int gt_amp_u32(float f) {
    union { unsigned int u; float f; } c;
    c.f = f;
    return c.u;
}

template <typename T> struct GtAmpOp { typedef float type; };
template <> struct GtAmpOp<double> { typedef double type; };

__device__ __forceinline__ float gt_amp_load(float x) { return x; }
__device__ __forceinline__ double gt_amp_load(double x) { return x; }
__device__ __forceinline__ float gt_amp_load(gt_amp_bf16 x) {
    return gt_amp_f32((unsigned int)x.bits << 16);
}
__device__ __forceinline__ float gt_amp_load(gt_amp_half x) {
#ifdef __CUDA_ARCH__
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
#else
    const unsigned int sign = (unsigned int)(x.bits & 0x8000u) << 16;
    const unsigned int e = (x.bits >> 10) & 0x1fu;
    unsigned int m = x.bits & 0x3ffu;
    if (e == 0x1fu) return gt_amp_f32(sign | 0x7f800000u | (m << 13));  // inf, NaN
    if (e != 0) return gt_amp_f32(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return gt_amp_f32(sign);
    unsigned int exp = 113u;  // a subnormal half: normalise the mantissa
    while (!(m & 0x400u)) { m <<= 1; --exp; }
    return gt_amp_f32(sign | (exp << 23) | ((m & 0x3ffu) << 13));
#endif
}

__device__ __forceinline__ void gt_amp_store(float& x, float v) { x = v; }
__device__ __forceinline__ void gt_amp_store(double& x, double v) { x = v; }
__device__ __forceinline__ void gt_amp_store(gt_amp_bf16& x, float v) {
    // round to nearest even; a NaN stays a (quiet) NaN
    const unsigned int u = gt_amp_u32(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) x.bits = (unsigned short)((u >> 16) | 0x40u);
    else x.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ void gt_amp_store(gt_amp_half& x, float v) {
#ifdef __CUDA_ARCH__
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x.bits) : "f"(v));
#else
    const unsigned int u = gt_amp_u32(v), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    unsigned int r;
    if (a > 0x7f800000u) r = 0x7e00u;                        // NaN
    else if (a >= 0x477ff000u) r = 0x7c00u;                  // rounds to inf
    else if (a >= 0x38800000u) {                             // a normal half
        r = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu);
        const unsigned int rest = a & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;
    } else if (a < 0x33000000u) {                            // below half the least subnormal
        r = 0;
    } else {                                                 // a subnormal half
        const unsigned int shift = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u;
        r = m >> shift;
        const unsigned int rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rest > half || (rest == half && (r & 1u))) ++r;
    }
    x.bits = (unsigned short)(sign | r);
#endif
}

// Finite: the exponent bits are not all ones (read from the bits, so no math header is
// needed and no compiler flag can fold the test away).
__device__ __forceinline__ bool gt_amp_finite(float v) {
    return (gt_amp_u32(v) & 0x7f800000u) != 0x7f800000u;
}
__device__ __forceinline__ bool gt_amp_finite(double v) {
    union { unsigned long long u; double d; } c;
    c.d = v;
    return (c.u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

// The tensor owning chunk c: the last i with first[i] <= c (every tensor has >= 1 chunk).
__device__ __forceinline__ int gt_amp_owner(const long long* first, int n, long long c) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (first[mid] <= c) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

template <typename T>
__global__ void __launch_bounds__(GT_AMP_BLOCK)
gt_amp_unscale(const long long* __restrict__ table, long long* flags, int n, float* found_inf,
               const float* __restrict__ factor, int mode, long long stamp) {
    typedef typename GtAmpOp<T>::type Op;
    const long long* numels = table + n;
    const long long* first = table + 2 * n;
    const long long total = first[n];
    float inv = 1.0f;
    if (mode == 1) inv = *factor;
    else if (mode == 2) inv = (float)(1.0 / (double)*factor);
    const bool scale = mode != 0 && inv != 1.0f;  // torch: inv_scale == 1 leaves g untouched
    for (long long c = blockIdx.x; c < total; c += gridDim.x) {
        const int i = gt_amp_owner(first, n, c);
        T* g = reinterpret_cast<T*>(table[i]);
        const long long start = (c - first[i]) * (long long)GT_AMP_CHUNK;
        long long stop = start + GT_AMP_CHUNK;
        if (stop > numels[i]) stop = numels[i];
        bool bad = false;
        for (long long k = start + threadIdx.x; k < stop; k += GT_AMP_BLOCK) {
            const Op v = gt_amp_load(g[k]);
            if (!gt_amp_finite(v)) bad = true;
            if (scale) gt_amp_store(g[k], (Op)(v * (Op)inv));
        }
        if (bad) {
            *found_inf = 1.0f;
            flags[i] = stamp;
        }
    }
}

// gt_amp_write_table -- write GT_AMP_TABLE_WORDS int64s of a table from a by-value argument:
//   __global__ void gt_amp_write_table(long long* table, GtAmpTableWords w)
//   table[w.offset : w.offset + w.count] = w.words[:w.count]
// Launch shape: one block of GT_AMP_BLOCK threads. Why: under CUDA graph capture the table
// cannot come from pinned host memory (no pinning, no host buffer a replay would re-read);
// kernel arguments are copied into the graph, so these launches rebuild it on every replay.
#define GT_AMP_TABLE_WORDS 240  // 1936 bytes of arguments, under CUDA's 4 KiB

struct GtAmpTableWords {
    long long count;
    long long offset;
    long long words[GT_AMP_TABLE_WORDS];
};

__global__ void __launch_bounds__(GT_AMP_BLOCK)
gt_amp_write_table(long long* table, GtAmpTableWords w) {
    for (long long k = threadIdx.x; k < w.count; k += GT_AMP_BLOCK) table[w.offset + k] = w.words[k];
}
