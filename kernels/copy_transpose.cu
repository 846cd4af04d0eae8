// copy_transpose.cu -- batched tiled transpose copy through a padded shared-memory tile, with
// an optional cast in the same pass.
//
// Signatures:
//   template <typename D, typename S, typename Off>   // Off: int (32-bit index) or long long
//   __global__ void gt_copy_transpose(D* dst, const S* src, GtCopyParams p)
//   template <typename T, int V, typename Off>        // same dtype, V-wide accesses
//   __global__ void gt_copy_transpose_vec(T* dst, const T* src, GtCopyParams p)
//   The tiled pair is (i, j): i has the smallest source stride (p.tile_src_si, ideally 1), j
//   the smallest destination stride (p.tile_dst_sj, ideally 1). Every other dim is a batch
//   dim described by p.size/src_stride/dst_stride (p.numel = number of batches).
// Launch shape: blocks of (GT_TILE, GT_TILE_ROWS) threads; grid.x = number of tiles
//   (p.tiles_i * p.tiles_j * p.numel), capped at 2^31-1 with a loop over the rest.
//   Tiles are GT_TILE (scalar) or GT_TILE * V (vec) elements square.
//   Static shared memory: tile * (tile + 1) * sizeof(element): 4.1-16.9 KiB (scalar);
//   tile * tile * sizeof(element) (vec): 16 KiB (1-byte, V=4), 32 KiB (2-byte, V=4),
//   16 KiB (4-byte, V=2).
// numpy equivalent:
//   dst_view[...] = src_view.astype(D)   e.g. dst[:] = src.transpose(0, 2, 1) for a batched
//   transpose, or the NCHW -> NHWC permute (0, 2, 3, 1) after H and W coalesce.
//
// Reads go along i (coalesced in the source), writes along j (coalesced in the destination);
// the scalar tile's extra column shifts each row by one bank so the column reads do not
// conflict; the vector tile is swizzled instead (gt_vec_tile_at).
#include "common.cuh"

#define GT_TILE 32      // one warp wide
#define GT_TILE_ROWS 8  // 256 threads per block; each thread moves GT_TILE / GT_TILE_ROWS elements

// Tiles in the problem: p.tiles_i * p.tiles_j per batch, p.numel batches.
__device__ __forceinline__ unsigned long long gt_tile_count(const GtCopyParams& p) {
    return (unsigned long long)p.tiles_i * (unsigned long long)p.tiles_j *
           (unsigned long long)p.numel;
}

// Where tile t starts: element (i0, j0) of the tiled pair for tiles `tile` elements square
// (j varies fastest, then i, then the batch), and its batch's source/destination bases.
template <typename Off>
__device__ __forceinline__ void gt_tile_origin(unsigned long long t, const GtCopyParams& p,
                                               typename GtIndex<Off>::type tile,
                                               typename GtIndex<Off>::type& i0,
                                               typename GtIndex<Off>::type& j0, Off& sb, Off& db) {
    typedef typename GtIndex<Off>::type U;
    const U tiles_i = (U)p.tiles_i, tiles_j = (U)p.tiles_j;
    const U tj = (U)(t % tiles_j);
    const U rest = (U)(t / tiles_j);
    gt_decode<Off>(rest / tiles_i, p, sb, db);
    i0 = (rest % tiles_i) * tile;
    j0 = tj * tile;
}

// The tile loop of both transposes: each block walks tiles t = blockIdx.x, blockIdx.x +
// gridDim.x, ... and for each fills the shared tile from the source (fill(i0, j0, sb)), then
// drains it to the destination (drain(i0, j0, db)). Every thread runs the same number of
// iterations, so the __syncthreads are uniform.
template <typename Off, typename Fill, typename Drain>
__device__ __forceinline__ void gt_for_each_tile(const GtCopyParams& p,
                                                 typename GtIndex<Off>::type tile, Fill fill,
                                                 Drain drain) {
    typedef typename GtIndex<Off>::type U;
    const unsigned long long ntiles = gt_tile_count(p);
    for (unsigned long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        U i0, j0;
        Off sb, db;
        gt_tile_origin<Off>(t, p, tile, i0, j0, sb, db);
        fill(i0, j0, sb);
        __syncthreads();
        drain(i0, j0, db);
        __syncthreads();  // the next tile overwrites this one
    }
}

template <typename D, typename S, typename Off>
__global__ void __launch_bounds__(GT_TILE * GT_TILE_ROWS)
gt_copy_transpose(D* __restrict__ dst, const S* __restrict__ src, GtCopyParams p) {
    typedef typename GtIndex<Off>::type U;
    __shared__ S tile[GT_TILE][GT_TILE + 1];
    const U ni = (U)p.tile_ni, nj = (U)p.tile_nj;
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    auto fill = [&](U i0, U j0, Off sb) {
#pragma unroll
        for (unsigned r = 0; r < GT_TILE; r += GT_TILE_ROWS) {
            const U i = i0 + tx, j = j0 + ty + r;
            if (i < ni && j < nj)
                tile[ty + r][tx] = src[sb + (Off)i * (Off)p.tile_src_si + (Off)j * (Off)p.tile_src_sj];
        }
    };
    auto drain = [&](U i0, U j0, Off db) {
#pragma unroll
        for (unsigned r = 0; r < GT_TILE; r += GT_TILE_ROWS) {
            const U j = j0 + tx, i = i0 + ty + r;
            if (i < ni && j < nj)
                dst[db + (Off)i * (Off)p.tile_dst_si + (Off)j * (Off)p.tile_dst_sj] =
                    gt_cast<D>(tile[tx][ty + r]);
        }
    };
    gt_for_each_tile<Off>(p, GT_TILE, fill, drain);
}

// Where element (row, col) of the vector transpose's tile lives: the tile is 32*V elements
// square, unpadded, with each row's 4-byte words permuted by an XOR. Its accesses are
// "thread tx, lane l": row r, column V*tx + l (filling) and column c, row V*tx + l
// (draining). A padded row cannot serve both when V is even: a warp's lane spans 2 bank
// cycles of a row (V*sizeof(T) = 8 bytes per thread) and its column walk steps V rows, an
// even number of banks, so both phases would be 2-way conflicts (fp16/bf16 and fp32). The
// XOR key is (row / V) -- distinct for the 32 threads draining a column -- flipped in its low
// bit in a row's second bank cycle -- so threads tx and tx + 16 filling a row hit banks of
// opposite parity. It only permutes words within a row (key < 32 words <= the row's length),
// so the tile holds every element once. tests/kernel/test_emulated_copy.py counts the banks.
template <typename T, int V>
__host__ __device__ __forceinline__ int gt_vec_tile_at(int row, int col) {
    static_assert(sizeof(T) <= 4 && 4 % sizeof(T) == 0, "elements of 1, 2 or 4 bytes");
    constexpr int E = 4 / (int)sizeof(T);  // elements per bank word
    const int key = ((row / V) ^ (col / E >> 5)) & 31;
    return row * (GT_TILE * V) + (col ^ key * E);
}

// The vector variant moves V consecutive elements per access on both sides, so each thread
// keeps 4*V accesses of V*sizeof(T) bytes in flight per phase instead of 4 single elements:
// small elements (1-2 bytes) and fp32 need those bytes in flight to reach the copy bandwidth.
// Needs (checked by the planner): tile_src_si == 1 and tile_dst_sj == 1; tile_ni, tile_nj,
// tile_src_sj, tile_dst_si and every batch stride multiples of V; both bases aligned to
// V * sizeof(T).
template <typename T, int V, typename Off>
__global__ void __launch_bounds__(GT_TILE * GT_TILE_ROWS)
gt_copy_transpose_vec(T* __restrict__ dst, const T* __restrict__ src, GtCopyParams p) {
    typedef typename GtIndex<Off>::type U;
    const int TILE_V = GT_TILE * V;
    __shared__ T tile[GT_TILE * V * GT_TILE * V];  // indexed through gt_vec_tile_at
    const U ni = (U)p.tile_ni, nj = (U)p.tile_nj;
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    auto fill = [&](U i0, U j0, Off sb) {
#pragma unroll
        for (int r = 0; r < TILE_V; r += GT_TILE_ROWS) {
            const U i = i0 + tx * V, j = j0 + ty + r;
            if (i < ni && j < nj) {
                const GtVec<T, V> v = *reinterpret_cast<const GtVec<T, V>*>(
                    src + sb + (Off)i + (Off)j * (Off)p.tile_src_sj);
#pragma unroll
                for (int l = 0; l < V; ++l) tile[gt_vec_tile_at<T, V>(ty + r, tx * V + l)] = v.v[l];
            }
        }
    };
    auto drain = [&](U i0, U j0, Off db) {
#pragma unroll
        for (int r = 0; r < TILE_V; r += GT_TILE_ROWS) {
            const U j = j0 + tx * V, i = i0 + ty + r;
            if (i < ni && j < nj) {
                GtVec<T, V> v;
#pragma unroll
                for (int l = 0; l < V; ++l) v.v[l] = tile[gt_vec_tile_at<T, V>(tx * V + l, ty + r)];
                *reinterpret_cast<GtVec<T, V>*>(dst + db + (Off)i * (Off)p.tile_dst_si + (Off)j) = v;
            }
        }
    };
    gt_for_each_tile<Off>(p, TILE_V, fill, drain);
}
