"""bfloat16 matrix products on cuda through cuBLAS `gemmEx`: bf16 operands and result, fp32
compute (CUBLAS_COMPUTE_32F, tensor-op algorithms), as torch's bf16 GEMM does.

cupy's matmul cannot take this path: cupy has no bfloat16 dtype, and gpu_tensor stores
bf16 as uint16 bits (backends/cuda.py). The product is laid out for column-major cuBLAS the
usual way: row-major C (M, N) = A (M, K) @ B (K, N) is C^T = B^T @ A^T, so cuBLAS gets B as
its first operand; an operand stored transposed (w.t() in a Linear) is passed with
CUBLAS_OP_T instead of being copied. Shapes it does not cover return None and the caller
takes the float32 path (exact products of bf16 values, rounded once).
"""

from __future__ import annotations

import contextlib
import importlib

import numpy as np

from .. import dtype as _dt
from ._cupy import cupy

__all__ = ["bf16_matmul"]

CUDA_R_16BF = 14  # cudaDataType for __nv_bfloat16
CUBLAS_COMPUTE_32F = 68  # accumulate in fp32
CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99  # tensor cores where they apply
OP_N, OP_T = 0, 1
_ONE = np.ones(1, np.float32)  # host-side alpha/beta (cuBLAS reads them during the call)
_ZERO = np.zeros(1, np.float32)


def _cublas(cp):
    lib = getattr(cp.cuda, "cublas", None)
    return lib if lib is not None else importlib.import_module("cupy.cuda.cublas")


def _operand(a):
    """(op, ld) of a matrix (the last two dims of `a`) for cuBLAS, or None when neither its
    rows nor its columns are unit-stride (the caller then copies or falls back)."""
    rows, cols = a.shape[-2:]
    es = a.itemsize
    s_row, s_col = a.strides[-2] // es, a.strides[-1] // es
    if s_col == 1 and s_row >= max(cols, 1):
        return OP_N, s_row  # row-major: column-major memory holds its transpose
    if s_row == 1 and s_col >= max(rows, 1):
        return OP_T, s_col  # column-major: transpose it back
    return None


def bf16_matmul(bk, x, y):
    """x @ y for uint16 arrays holding bfloat16 bits: the result's bits in a fresh array
    from `bk`'s allocator, or None where this path does not apply (2-D @ 2-D, N-D @ 2-D with
    a C-contiguous left operand, and 3-D @ 3-D of one batch are covered)."""
    if x.ndim < 2 or y.ndim < 2 or x.shape[-1] != y.shape[-2] or 0 in x.shape + y.shape:
        return None
    if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
        out = bf16_matmul(bk, x.reshape(-1, x.shape[-1]), y)
        return None if out is None else out.reshape(*x.shape[:-1], y.shape[-1])
    if x.ndim != y.ndim or x.ndim > 3 or (x.ndim == 3 and x.shape[0] != y.shape[0]):
        return None
    la, lb = _operand(y), _operand(x)  # cuBLAS's A is our right operand (see the docstring)
    if la is None or lb is None:
        return None
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    batch = x.shape[0] if x.ndim == 3 else None
    with getattr(bk, "_dev", None) or contextlib.nullcontext():  # (the tensors' device)
        return _gemm(bk, x, y, la, lb, m, k, n, batch)


def _gemm(bk, x, y, la, lb, m, k, n, batch):
    out, _ = bk.empty(((batch,) if batch else ()) + (m, n), _dt.bfloat16.np)  # uint16 bits
    cp = cupy()
    lib = _cublas(cp)
    handle = cp.cuda.device.get_cublas_handle()
    # the handle is cupy's, shared with its own routines: the product goes on OUR current
    # stream (a handle keeps the stream it was last given) and reads host alpha/beta
    lib.setStream(handle, cp.cuda.get_current_stream().ptr)
    if lib.getPointerMode(handle) != 0:
        lib.setPointerMode(handle, 0)
    es = x.itemsize
    args = (
        handle,
        la[0],
        lb[0],
        n,
        m,
        k,
        _ONE.ctypes.data,
        y.data.ptr,
        CUDA_R_16BF,
        la[1],
        x.data.ptr,
        CUDA_R_16BF,
        lb[1],
        _ZERO.ctypes.data,
        out.data.ptr,
        CUDA_R_16BF,
        n,
    )
    if batch is None:
        lib.gemmEx(*args, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)
    else:
        (h, ta, tb, n_, m_, k_, alpha, pa, ta_, lda, pb, tb_, ldb, beta, pc, tc, ldc) = args
        lib.gemmStridedBatchedEx(
            h,
            ta,
            tb,
            n_,
            m_,
            k_,
            alpha,
            pa,
            ta_,
            lda,
            y.strides[0] // es,
            pb,
            tb_,
            ldb,
            x.strides[0] // es,
            beta,
            pc,
            tc,
            ldc,
            m * n,
            batch,
            CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT_TENSOR_OP,
        )
    return out
