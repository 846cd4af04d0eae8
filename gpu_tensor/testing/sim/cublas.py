"""The cuBLAS subset gpu_tensor calls (`cupy.cuda.cublas`), over the simulated device memory:
`gemmEx` and `gemmStridedBatchedEx` on bfloat16 data (CUDA_R_16BF) with fp32 compute, the
bf16 matrix products of backends/cuda_gemm.py; and `cupy.cuda.device.get_cublas_handle`.

Each call is a task on the current stream (it reads A and B and writes C when the stream
reaches it, so a missing wait shows as a race), counted as a kernel launch. Arguments are
checked as cuBLAS checks them (leading dimensions, sizes, operations: status 7,
CUBLAS_STATUS_INVALID_VALUE); data types other than bf16 are not modelled and say so.
Column-major semantics are cuBLAS's: op(A) is m x k, op(B) k x n, C m x n, C = alpha op(A)
op(B) + beta C, each matrix at ptr + batch * stride elements.

The real module cannot be imported to bind signatures where libcublas is missing (this
machine), so the signatures are cupy's as written in cupy_backends/cuda/libs/cublas.pyx.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from .machine import machine
from .memory import host_bytes

__all__ = ["gemmEx", "gemmStridedBatchedEx", "get_cublas_handle", "getPointerMode",
           "setPointerMode", "CUBLASError"]

CUDA_R_16BF, CUBLAS_COMPUTE_32F = 14, 68
_OPS = (0, 1)  # CUBLAS_OP_N, CUBLAS_OP_T (C: conjugate, not modelled)
_ALGOS = (-1, 99)  # CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP
_BF16 = np.dtype(ml_dtypes.bfloat16)


class CUBLASError(RuntimeError):
    """cupy_backends.cuda.libs.cublas.CUBLASError: a cuBLAS status."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"{'CUBLAS_STATUS_INVALID_VALUE' if status == 7 else status}: "
                         f"{detail}")
        self.status = status


def get_cublas_handle() -> int:
    """cupy.cuda.device.get_cublas_handle(): one handle per simulated device."""
    m = machine()
    return 0xB1A5_0000 + m.current_device()


def getPointerMode(handle) -> int:  # noqa: N802
    """CUBLAS_POINTER_MODE_HOST (0): the only mode modelled; alpha/beta are host scalars."""
    return 0


def setPointerMode(handle, mode) -> None:  # noqa: N802
    if mode != 0:
        raise NotImplementedError("the cuBLAS simulator models host pointer mode only")


def _invalid(detail):
    return CUBLASError(7, detail)


def _matrix(ptr, rows, cols, ld, what):
    """A column-major rows x cols bf16 matrix at ptr (a numpy view of the device bytes)."""
    span = ((cols - 1) * ld + rows) * _BF16.itemsize
    machine().space.check_range(ptr, span, what)
    raw = host_bytes(ptr, span).view(_BF16)
    return np.lib.stride_tricks.as_strided(raw, (rows, cols), (_BF16.itemsize,
                                                               ld * _BF16.itemsize))


def gemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,  # noqa: N802,N803
           Ctype, ldc, computeType, algo):
    gemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype,
                         ldb, 0, beta, C, Ctype, ldc, 0, 1, computeType, algo)


def gemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,  # noqa: N802,N803
                         Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,
                         computeType, algo):
    from .streams import get_current_stream

    if handle != get_cublas_handle():
        raise _invalid(f"handle {handle:#x} is not this device's cuBLAS handle")
    if (Atype, Btype, Ctype) != (CUDA_R_16BF,) * 3 or computeType != CUBLAS_COMPUTE_32F:
        raise NotImplementedError("the cuBLAS simulator models bf16 data with fp32 compute "
                                  f"only, got types {(Atype, Btype, Ctype)} compute "
                                  f"{computeType}")
    if transa not in _OPS or transb not in _OPS or algo not in _ALGOS:
        raise _invalid(f"operation {transa}/{transb} or algorithm {algo}")
    ra, ca = (m, k) if transa == 0 else (k, m)
    rb, cb = (k, n) if transb == 0 else (n, k)
    if min(m, n, k, batchCount) < 0 or lda < max(1, ra) or ldb < max(1, rb) or \
            ldc < max(1, m):
        raise _invalid(f"m={m} n={n} k={k} lda={lda} ldb={ldb} ldc={ldc}")
    al = np.float32(ctypes.c_float.from_address(alpha).value)
    be = np.float32(ctypes.c_float.from_address(beta).value)
    es = _BF16.itemsize
    mats = []
    for b in range(batchCount):
        mats.append((_matrix(A + b * strideA * es, ra, ca, lda, "gemm A"),
                     _matrix(B + b * strideB * es, rb, cb, ldb, "gemm B"),
                     _matrix(C + b * strideC * es, m, n, ldc, "gemm C")))
    accesses = []
    for ptr, rows, cols, ld, stride, write in ((A, ra, ca, lda, strideA, False),
                                               (B, rb, cb, ldb, strideB, False),
                                               (C, m, n, ldc, strideC, True)):
        hi = ptr + (((batchCount - 1) * stride + (cols - 1) * ld + rows) * es)
        accesses.append((ptr, hi, write, f"device buffer {ptr:#x}"))
    mach = machine()
    mach.count("kernel_launches")

    def run():
        for a, bm, c in mats:
            opa = (a if transa == 0 else a.T).astype(np.float32)
            opb = (bm if transb == 0 else bm.T).astype(np.float32)
            acc = al * (opa @ opb)
            if be != 0:
                acc = acc + be * c.astype(np.float32)
            c[...] = acc.astype(_BF16)

    mach.sched.enqueue(get_current_stream()._queue(), run, "cublasGemmEx", accesses)
