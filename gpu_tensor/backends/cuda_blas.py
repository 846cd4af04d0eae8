"""int8 x int8 -> int32 products on real cuda: cuBLAS gemmEx through CuPy's low-level
binding (cupy.cuda.cublas, i.e. cupy_backends.cuda.libs.cublas). cupy.matmul has no int8
cuBLAS path (its integer matmul is a generic kernel whose result is int8 and wraps).

`int8_mm_nt(a, w)` computes a (M, K) @ w (N, K)^T in the layout int8 tensor cores want
("TN": both operands K-contiguous, the weight used as stored). Row-major C (M, N) is
column-major C^T (N, M) = op_T(w as column-major K x N) @ (a as column-major K x M), so one
call with transa=T, transb=N, m=N, n=M, lda=ldb=K, ldc=N. cuBLAS's int8 kernels take lda and
ldb multiples of 4 with 4-byte-aligned operands: K is padded with zero columns (exact: they
add nothing), and N to a multiple of 4 with zero rows (ldc), the padding sliced off the
result (a view). Pointer mode is host: alpha = 1, beta = 0 are int32 host scalars.
"""

from __future__ import annotations

import numpy as np

__all__ = ["int8_mm_nt", "CUDA_R_8I", "CUDA_R_32I", "CUBLAS_COMPUTE_32I"]

# library_types.h / cublas_api.h (cupy's runtime module has no CUDA_R_32I constant)
CUDA_R_8I, CUDA_R_32I = 3, 10
CUBLAS_COMPUTE_32I = 72
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1
_POINTER_MODE_HOST = 0
_ONE = np.ones((), np.int32)  # host scalars (pointer mode host), alive for the process
_ZERO = np.zeros((), np.int32)


def _round4(v: int) -> int:
    return -(-v // 4) * 4


def _padded(xp, x, rows: int, cols: int):
    """x (C-contiguous int8) in a zero-padded (rows, cols) array, or x itself."""
    if x.shape == (rows, cols) and x.flags.c_contiguous and x.data.ptr % 4 == 0:
        return x
    out = xp.zeros((rows, cols), dtype=xp.int8)
    out[: x.shape[0], : x.shape[1]] = x
    return out


def int8_mm_nt(backend, a, w):
    """int32 (M, N) = a (M, K) int8 @ w (N, K)^T int8, exactly (int32 accumulation)."""
    xp = backend.xp
    m, k = a.shape
    n = w.shape[0]
    k4, n4 = _round4(max(k, 1)), _round4(max(n, 1))
    with backend._dev:
        a4 = _padded(xp, a, m, k4)
        w4 = _padded(xp, w, n4, k4)
        c, _ = backend.empty((m, n4), np.int32)
        if m == 0:
            return c[:, :n]
        cublas = xp.cuda.cublas
        handle = xp.cuda.device.get_cublas_handle()
        cublas.setStream(handle, xp.cuda.get_current_stream().ptr)
        # alpha/beta are host scalars; cupy's own routines may leave the shared handle in
        # device pointer mode
        cublas.setPointerMode(handle, _POINTER_MODE_HOST)
        cublas.gemmEx(
            handle,
            _OP_T,
            _OP_N,
            n4,
            m,
            k4,
            _ONE.ctypes.data,
            w4.data.ptr,
            CUDA_R_8I,
            k4,
            a4.data.ptr,
            CUDA_R_8I,
            k4,
            _ZERO.ctypes.data,
            c.data.ptr,
            CUDA_R_32I,
            n4,
            CUBLAS_COMPUTE_32I,
            _GEMM_DEFAULT,
        )
        return c if n4 == n else c[:, :n]
