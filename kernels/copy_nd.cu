// copy_nd.cu -- generic strided N-d copy with an optional cast, one decode per element.
//
// Signature:
//   template <typename D, typename S, typename Off>   // Off: int (32-bit index) or long long
//   __global__ void gt_copy_nd(D* dst, const S* src, GtCopyParams p)
// Launch shape: 1-D blocks of GT_ND_BLOCK threads; each block covers GT_ND_BLOCK * ITEMS
//   consecutive linear indices (ITEMS: see below); grid.x = ceil(p.numel / that), capped at
//   2^31-1 (a grid-stride loop covers the rest).
// numpy equivalent:
//   dst_view[...] = src_view.astype(D)   where both views are np.lib.stride_tricks.as_strided
//   over (p.size, p.src_stride / p.dst_stride)
//
// The fallback for layouts the other kernels do not take (skinny transposes, gathers, >2
// swapped dims). The planner sorts dims by destination stride, so consecutive threads write
// consecutive destination elements and the writes coalesce even when the reads do not.
#include "common.cuh"

#define GT_ND_BLOCK 256  // 8 warps: enough for latency hiding with 4 loads in flight each
// Loads issued before the first store, for memory-level parallelism: 4 on the hot path
// (32-bit index, same dtype); 2 for casts and 64-bit problems, whose decode/convert code is
// larger (and which would otherwise double the NVRTC time of the compile-every-variant test).
#define GT_ND_ITEMS 4
#define GT_ND_ITEMS_SLOW 2

template <typename D, typename S, typename Off>
__global__ void __launch_bounds__(GT_ND_BLOCK)
gt_copy_nd(D* __restrict__ dst, const S* __restrict__ src, GtCopyParams p) {
    constexpr int ITEMS =
        (gt_same<D, S>::value && sizeof(Off) == 4) ? GT_ND_ITEMS : GT_ND_ITEMS_SLOW;
    gt_copy_decoded<GT_ND_BLOCK, ITEMS, Off>(dst, src, p);
}
