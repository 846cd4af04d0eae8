// copy_contiguous.cu -- copies whose innermost run is contiguous on both sides, moved in
// 16-byte (or narrower) vector accesses, with an optional cast in the same pass.
//
// Signatures:
//   template <typename D, typename S, int V>
//   __global__ void gt_copy_flat(D* dst, const S* src, unsigned long long n)
//     both sides fully contiguous: dst[0:n] = src[0:n].astype(D)
//   template <typename D, typename S, int V, typename Off>   // Off: int or long long
//   __global__ void gt_copy_rows(D* dst, const S* src, GtCopyParams p)
//     rows of V-element vectors: p describes the problem in units of V elements (the innermost
//     dim has stride 1 on both sides; outer strides are multiples of V, checked by the planner)
// Launch shape: 1-D blocks of GT_VEC_BLOCK threads; flat: each thread moves GT_VEC_ITEMS
//   vectors per block pass (grid.x = ceil(n / V / (GT_VEC_BLOCK * GT_VEC_ITEMS)), capped;
//   a grid-stride loop covers the rest); rows: same with p.numel vectors.
// numpy equivalent:
//   flat: dst.reshape(-1)[:] = src.reshape(-1).astype(dst.dtype)
//   rows: dst_view[...] = src_view.astype(D) with an inner dim contiguous on both sides
//
// Alignment: V * sizeof(S) and V * sizeof(D) bytes for both base pointers (the planner picks
// V; V == 1 is always legal). The flat kernel finishes the n % V tail with scalar accesses.
#include "common.cuh"

#define GT_VEC_BLOCK 256  // 8 warps per block
#define GT_VEC_ITEMS 4    // vector loads in flight per thread before the stores

template <typename D, typename S, int V>
__global__ void __launch_bounds__(GT_VEC_BLOCK)
gt_copy_flat(D* __restrict__ dst, const S* __restrict__ src, unsigned long long n) {
    typedef unsigned long long U;  // no division here, so 64-bit costs nothing
    const U nvec = n / V;
    const U chunk = (U)GT_VEC_BLOCK * GT_VEC_ITEMS;
    const GtVec<S, V>* vsrc = reinterpret_cast<const GtVec<S, V>*>(src);
    GtVec<D, V>* vdst = reinterpret_cast<GtVec<D, V>*>(dst);
    for (U base = (U)blockIdx.x * chunk; base < nvec; base += (U)gridDim.x * chunk) {
        GtVec<S, V> v[GT_VEC_ITEMS];
#pragma unroll
        for (int k = 0; k < GT_VEC_ITEMS; ++k) {
            U i = base + (U)k * GT_VEC_BLOCK + threadIdx.x;
            if (i < nvec) v[k] = vsrc[i];
        }
#pragma unroll
        for (int k = 0; k < GT_VEC_ITEMS; ++k) {
            U i = base + (U)k * GT_VEC_BLOCK + threadIdx.x;
            if (i < nvec) vdst[i] = GtConvert<GtVec<D, V> >::from(v[k]);
        }
    }
    // Tail (fewer than V elements): the first block's first threads.
    if (blockIdx.x == 0) {
        U i = nvec * V + threadIdx.x;
        if (i < n) dst[i] = gt_cast<D>(src[i]);
    }
}

template <typename D, typename S, int V, typename Off>
__global__ void __launch_bounds__(GT_VEC_BLOCK)
gt_copy_rows(D* __restrict__ dst, const S* __restrict__ src, GtCopyParams p) {
    gt_copy_decoded<GT_VEC_BLOCK, GT_VEC_ITEMS, Off>(reinterpret_cast<GtVec<D, V>*>(dst),
                                                      reinterpret_cast<const GtVec<S, V>*>(src), p);
}
