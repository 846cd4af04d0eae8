// common.cuh -- helpers shared by every copy kernel.
//
// Compiles three ways: NVRTC (device code), nvcc, and g++ under host_emulation.h (the CPU
// check). Nothing here may use the standard library: NVRTC ships none.
//
//   GtCopyParams  the layout of a (coalesced) strided problem, passed by value as one struct
//                 of 64-bit slots so host code can pack it as a plain int64 record
//   gt_decode     linear index -> (src offset, dst offset), innermost dim first, with
//                 magic-number division on the 32-bit path
//   gt_cast<D,S>  the numpy/torch conversion rules between the supported element types
//   gt_bytesN     opaque N-byte units: same-dtype copies move bytes, not typed values
//   GtConvert<T>  gt_cast for one element, or lane by lane for a GtVec
//   gt_copy_decoded  the grid-stride loop of the nd and rows kernels
#pragma once

// The 16-bit float headers only for kernels that use those types (the loader defines
// GT_FP16 for them): every other copy kernel compiles with no CUDA include tree at all.
#if defined(GT_FP16) && (defined(__CUDACC__) || defined(__CUDACC_RTC__) || \
                         defined(GT_EMU_HAVE_FP16))
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define GT_HAVE_FP16 1
#endif

// Dynamic shared memory, spelled so host_emulation.h can map it to a per-launch buffer.
#ifndef GT_EXTERN_SHARED
#define GT_EXTERN_SHARED(type, name) extern __shared__ type name[]
#endif

// Coalescing rarely leaves more than 4 dims; 8 covers every real layout. Deeper problems are
// split by the host into launches over the leading dims (see copy.py).
#define GT_MAX_DIMS 8

// Plain-old-data layout, every field 64-bit so the host record is just int64s (no padding).
struct GtCopyParams {
    long long ndim;   // dims in size/src_stride/dst_stride, outermost first
    long long numel;  // work items: elements (nd), vectors (rows), batches (transpose)
    long long size[GT_MAX_DIMS];
    long long src_stride[GT_MAX_DIMS];  // in units of the source element (or vector)
    long long dst_stride[GT_MAX_DIMS];
    long long magic[GT_MAX_DIMS];       // 32-bit path: n / size == (umulhi(n, magic) + n) >> shift
    long long shift[GT_MAX_DIMS];
    // transpose only: the tiled pair (i = source-contiguous dim, j = destination-contiguous)
    long long tile_ni, tile_nj;
    long long tile_src_si, tile_src_sj, tile_dst_si, tile_dst_sj;
    long long tiles_i, tiles_j;
};

// Offset type -> the unsigned type its coordinates are decoded in.
template <typename Off> struct GtIndex;
template <> struct GtIndex<int> { typedef unsigned int type; };
template <> struct GtIndex<long long> { typedef unsigned long long type; };

__device__ __forceinline__ unsigned int gt_div(unsigned int n, long long size, long long magic,
                                               long long shift) {
    // Valid for n < 2^31 (the planner only picks the 32-bit path below that).
    return (__umulhi(n, (unsigned int)magic) + n) >> (unsigned int)shift;
}

__device__ __forceinline__ unsigned long long gt_div(unsigned long long n, long long size,
                                                     long long magic, long long shift) {
    // 64-bit problems are rare (> 2^31 items); a real division keeps this path simple.
    return n / (unsigned long long)size;
}

// Decode linear index `i` (row-major over p.size) into source and destination offsets.
template <typename Off>
__device__ __forceinline__ void gt_decode(typename GtIndex<Off>::type i, const GtCopyParams& p,
                                          Off& src_off, Off& dst_off) {
    typedef typename GtIndex<Off>::type U;
    Off s = 0, d = 0;
#pragma unroll
    for (int k = GT_MAX_DIMS - 1; k >= 0; --k) {
        if (k < p.ndim) {
            U q = gt_div(i, p.size[k], p.magic[k], p.shift[k]);
            Off c = (Off)(i - q * (U)p.size[k]);
            s += c * (Off)p.src_stride[k];
            d += c * (Off)p.dst_stride[k];
            i = q;
        }
    }
    src_off = s;
    dst_off = d;
}

// ---- element types ------------------------------------------------------------------------

template <typename T>
struct gt_complex {
    T re, im;
};

struct __align__(2) gt_bytes2 { unsigned short v; };
struct __align__(4) gt_bytes4 { unsigned int v; };
struct __align__(8) gt_bytes8 { unsigned long long v; };
struct __align__(16) gt_bytes16 { unsigned long long lo, hi; };
typedef unsigned char gt_bytes1;

// V lanes loaded/stored as one access (V * sizeof(T) <= 16 and a power of two).
template <typename T, int V>
struct __align__(sizeof(T) * V) GtVec {
    T v[V];
};

// ---- conversions --------------------------------------------------------------------------
// Through float for the 16-bit floats (what numpy and torch do for every source but double,
// which rounds once, directly); bool is "nonzero"; complex -> real keeps the real part.

template <typename T> struct gt_is_complex { static const bool value = false; };
template <typename T> struct gt_is_complex<gt_complex<T> > { static const bool value = true; };

template <typename T> struct gt_is_half { static const bool value = false; };
#ifdef GT_HAVE_FP16
template <> struct gt_is_half<__half> { static const bool value = true; };
template <> struct gt_is_half<__nv_bfloat16> { static const bool value = true; };
#endif

// Integer ranges (no <limits> under NVRTC): float -> integer conversions saturate.
template <typename T> struct gt_int_range { static const bool value = false; };
#define GT_INT_RANGE(T, LO, HI) \
    template <> struct gt_int_range<T> { \
        static const bool value = true; \
        static __device__ __forceinline__ T lo() { return LO; } \
        static __device__ __forceinline__ T hi() { return HI; } \
    };
GT_INT_RANGE(signed char, -128, 127)
GT_INT_RANGE(unsigned char, 0, 255)
GT_INT_RANGE(short, -32768, 32767)
GT_INT_RANGE(unsigned short, 0, 65535)
GT_INT_RANGE(int, -2147483647 - 1, 2147483647)
GT_INT_RANGE(unsigned int, 0u, 4294967295u)
GT_INT_RANGE(long long, -9223372036854775807LL - 1, 9223372036854775807LL)
GT_INT_RANGE(unsigned long long, 0ull, 18446744073709551615ull)
#undef GT_INT_RANGE

template <typename T> struct gt_is_float { static const bool value = false; };
template <> struct gt_is_float<float> { static const bool value = true; };
template <> struct gt_is_float<double> { static const bool value = true; };

template <typename A, typename B> struct gt_same { static const bool value = false; };
template <typename A> struct gt_same<A, A> { static const bool value = true; };

// Real value of a non-complex, non-16-bit-float source as a double or integer C++ value.
template <typename D, typename S>
__device__ __forceinline__ D gt_cast_real(S x) {
    if constexpr (gt_is_half<S>::value) {
        return gt_cast_real<D>(static_cast<float>(x));
#ifdef GT_HAVE_FP16
    } else if constexpr (sizeof(D) == 2 && gt_is_half<D>::value) {
        // D is __half or __nv_bfloat16
        if constexpr (gt_same<S, double>::value) {
            // double: one rounding step, as numpy does
            if constexpr (gt_same<D, __half>::value) return __double2half(x);
            else return __double2bfloat16(x);
        } else {
            if constexpr (gt_same<D, __half>::value) return __float2half_rn((float)x);
            else return __float2bfloat16_rn((float)x);
        }
#endif
    } else if constexpr (gt_same<D, bool>::value) {
        return x != S(0);
    } else if constexpr (gt_is_float<S>::value && gt_int_range<D>::value) {
        // gpu_tensor's one rule for float -> integer: saturate, NaN -> 0. It is what the
        // GPU's cvt.rzi does; written out so the host emulation (where an out-of-range
        // static_cast is undefined and x86 gives INT_MIN) and the cpu backend agree.
        if (x != x) return D(0);
        if (x <= static_cast<S>(gt_int_range<D>::lo())) return gt_int_range<D>::lo();
        if (x >= static_cast<S>(gt_int_range<D>::hi())) return gt_int_range<D>::hi();
        return static_cast<D>(x);
    } else {
        return static_cast<D>(x);
    }
}

template <typename D, typename S>
__device__ __forceinline__ D gt_cast(S x) {
    if constexpr (gt_is_complex<S>::value && gt_is_complex<D>::value) {
        D r;
        r.re = gt_cast_real<decltype(r.re)>(x.re);
        r.im = gt_cast_real<decltype(r.im)>(x.im);
        return r;
    } else if constexpr (gt_is_complex<S>::value) {
        if constexpr (gt_same<D, bool>::value) return x.re != 0 || x.im != 0;
        else return gt_cast_real<D>(x.re);
    } else if constexpr (gt_is_complex<D>::value) {
        D r;
        r.re = gt_cast_real<decltype(r.re)>(x);
        r.im = 0;
        return r;
    } else {
        return gt_cast_real<D>(x);
    }
}

// gt_cast applied to one value, or lane by lane to a vector (built in registers, so the caller
// still stores it as one access).
template <typename D>
struct GtConvert {
    template <typename S>
    static __device__ __forceinline__ D from(S x) {
        return gt_cast<D>(x);
    }
};
template <typename D, int V>
struct GtConvert<GtVec<D, V> > {
    template <typename S>
    static __device__ __forceinline__ GtVec<D, V> from(const GtVec<S, V>& x) {
        GtVec<D, V> o;
#pragma unroll
        for (int l = 0; l < V; ++l) o.v[l] = gt_cast<D>(x.v[l]);
        return o;
    }
};

// ---- the strided copy loop ----------------------------------------------------------------
// Shared by gt_copy_nd (items are elements) and gt_copy_rows (items are V-element vectors):
// a grid-stride loop over p.numel linear indices in chunks of BLOCK * ITEMS, where each thread
// decodes and loads its ITEMS items before the first store (memory-level parallelism), and
// consecutive threads take consecutive indices, so the writes coalesce.
template <int BLOCK, int ITEMS, typename Off, typename DT, typename ST>
__device__ __forceinline__ void gt_copy_decoded(DT* __restrict__ dst, const ST* __restrict__ src,
                                                const GtCopyParams& p) {
    typedef typename GtIndex<Off>::type U;
    const U n = (U)p.numel;
    const U chunk = (U)BLOCK * ITEMS;
    for (U base = (U)blockIdx.x * chunk; base < n; base += (U)gridDim.x * chunk) {
        ST v[ITEMS];
        Off doff[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            U i = base + (U)k * BLOCK + threadIdx.x;
            if (i < n) {
                Off soff;
                gt_decode<Off>(i, p, soff, doff[k]);
                v[k] = src[soff];
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            U i = base + (U)k * BLOCK + threadIdx.x;
            if (i < n) dst[doff[k]] = GtConvert<DT>::from(v[k]);
        }
    }
}
