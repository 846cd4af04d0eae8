"""The subset of cupy_backends.cuda.libs.cublas (cupy.cuda.cublas) that gpu_tensor calls,
over the simulated machine, and `cupy.cuda.device.get_cublas_handle`:

- `gemmEx` for int8 x int8 -> int32 with CUBLAS_COMPUTE_32I (the quantized Linear's product,
  backends/cuda_blas.py), and for bf16 x bf16 -> bf16 with CUBLAS_COMPUTE_32F (the bf16
  matrix products of backends/cuda_gemm.py);
- `gemmStridedBatchedEx` for the bf16 case (bmm);
- `setStream` / `getStream` / `setPointerMode` / `getPointerMode`.

Each call is bound against cupy 14.2's own signature (`SIGNATURES`: the first docstring line
of each binding, which tests/testing/test_sim_cublas.py finds in the installed module) and
checks what cuBLAS checks: enum values, leading dimensions against the shapes, device
pointers whose ranges lie in one allocation, and the int8 kernels' documented limits (A and
B 4-byte aligned, lda and ldb multiples of 4: CUBLAS_STATUS_NOT_SUPPORTED otherwise). Other
type combinations are not modelled: they raise, never compute something else.

A product runs as a task on the HANDLE's stream (what `setStream` last gave it; a new handle
has the legacy stream 0), not on cupy's current stream, as in cuBLAS: a caller that forgets
`setStream` races with the kernels of its own stream, and the race detector says so.
Column-major semantics are cuBLAS's: op(A) is m x k, op(B) k x n, C m x n,
C = alpha op(A) op(B) + beta C, each matrix of a batch at ptr + batch * stride elements.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from .machine import machine
from .memory import host_bytes, live_block
from .signatures import bind, parse_cython

__all__ = ["cublas", "get_cublas_handle", "CUBLASError", "SIGNATURES"]

# cupy 14.2: cupy_backends/cuda/libs/cublas.pyx, the first line of each docstring
SIGNATURES = {
    "gemmEx": "gemmEx(intptr_t handle, int transa, int transb, int m, int n, int k, "
    "size_t alpha, size_t A, int Atype, int lda, size_t B, int Btype, int ldb, "
    "size_t beta, size_t C, int Ctype, int ldc, int computeType, int algo)",
    "gemmStridedBatchedEx": "gemmStridedBatchedEx(intptr_t handle, int transa, int transb, "
    "int m, int n, int k, size_t alpha, size_t A, int Atype, int lda, "
    "long long strideA, size_t B, int Btype, int ldb, "
    "long long strideB, size_t beta, size_t C, int Ctype, int ldc, "
    "long long strideC, int batchCount, int computeType, int algo)",
    "setStream": "setStream(intptr_t handle, size_t stream)",
    "getStream": "getStream(intptr_t handle) -> size_t",
    "setPointerMode": "setPointerMode(intptr_t handle, int mode)",
    "getPointerMode": "getPointerMode(intptr_t handle) -> int",
}
HANDLE_SIGNATURE = "get_cublas_handle() -> intptr_t"  # cupy/cuda/device.pyx

# cublas_api.h / library_types.h values (cupy's constants carry the same numbers)
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32I = 68, 72
CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP = -1, 99
CUDA_R_8I, CUDA_R_32I, CUDA_R_16BF = 3, 10, 14
_STATUS = {
    7: "CUBLAS_STATUS_INVALID_VALUE",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    15: "CUBLAS_STATUS_NOT_SUPPORTED",
}
_BF16 = np.dtype(ml_dtypes.bfloat16)
# (A, B, C types, compute) -> (operand dtype, result dtype, accumulator, scalar ctype)
_MODELLED = {
    (CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I): (
        np.dtype(np.int8),
        np.dtype(np.int32),
        np.int64,
        ctypes.c_int32,
    ),
    (CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F): (
        _BF16,
        _BF16,
        np.float32,
        ctypes.c_float,
    ),
}


class CUBLASError(RuntimeError):
    """cupy_backends.cuda.libs.cublas.CUBLASError: str() is the status name."""

    def __init__(self, status: int, detail: str = ""):
        self.status = status
        super().__init__(
            f"{_STATUS.get(status, status)} ({detail})"
            if detail
            else _STATUS.get(status, str(status))
        )


def _bind(name, args, kwargs=None) -> dict:
    """cupy's `name` called with these arguments: them by cuBLAS's parameter names, or
    cupy's TypeError when they do not fit its signature."""
    sig = parse_cython(SIGNATURES[name])
    try:
        return sig.bind(*args, **(kwargs or {})).arguments
    except TypeError as exc:
        raise TypeError(f"cupy.cuda.cublas.{name}(): {exc}") from None


def get_cublas_handle():
    bind("cuda.device.get_cublas_handle", (), {})
    m = machine()
    return 0x6C00 + m.current_device()  # one handle per device, as cupy keeps


def _col_major(ptr, rows, cols, ld, dtype):
    """A column-major rows x cols matrix at ptr: a numpy view of the simulated bytes."""
    itemsize = dtype.itemsize
    raw = host_bytes(ptr, (ld * (cols - 1) + rows) * itemsize).view(dtype)
    return np.lib.stride_tricks.as_strided(raw, (rows, cols), (itemsize, ld * itemsize))


class _Cublas:
    """cupy.cuda.cublas over the simulated machine (see the module docstring)."""

    __name__ = "gpu_tensor.testing.sim.cublas"
    CUBLAS_OP_N, CUBLAS_OP_T = CUBLAS_OP_N, CUBLAS_OP_T
    CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32I = CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32I
    CUBLAS_GEMM_DEFAULT = CUBLAS_GEMM_DEFAULT
    CUBLAS_GEMM_DEFAULT_TENSOR_OP = CUBLAS_GEMM_DEFAULT_TENSOR_OP
    CUBLASError = CUBLASError

    @staticmethod
    def _state(handle) -> dict:
        """This handle's settings on the current simulated machine (sim.reset() starts a new
        machine, whose handles start with cuBLAS's defaults: the legacy stream, host mode)."""
        handles = machine().__dict__.setdefault("cublas_handles", {})
        return handles.setdefault(int(handle), {"stream": 0, "pointer_mode": 0})

    def setPointerMode(self, handle, mode):  # noqa: N802 - cupy's names
        _bind("setPointerMode", (handle, mode))
        if mode not in (0, 1):
            raise CUBLASError(7, f"pointer mode {mode}")
        self._state(handle)["pointer_mode"] = int(mode)

    def getPointerMode(self, handle):  # noqa: N802
        _bind("getPointerMode", (handle,))
        return self._state(handle)["pointer_mode"]

    def setStream(self, handle, stream):  # noqa: N802
        _bind("setStream", (handle, stream))
        machine().queue(stream)  # a stream that does not exist is refused here
        self._state(handle)["stream"] = int(stream)

    def getStream(self, handle):  # noqa: N802
        _bind("getStream", (handle,))
        return self._state(handle)["stream"]

    def gemmEx(self, *args, **kwargs):  # noqa: N802 - cupy's signature, SIGNATURES["gemmEx"]
        call = _bind("gemmEx", args, kwargs)
        self._gemm("gemmEx", strideA=0, strideB=0, strideC=0, batchCount=1, **call)

    def gemmStridedBatchedEx(self, *args, **kwargs):  # noqa: N802 - SIGNATURES' too
        call = _bind("gemmStridedBatchedEx", args, kwargs)
        if (call["Atype"], call["computeType"]) != (CUDA_R_16BF, CUBLAS_COMPUTE_32F):
            raise NotImplementedError(
                "the cupy simulator models gemmStridedBatchedEx only "
                "for bf16 data with CUBLAS_COMPUTE_32F"
            )
        self._gemm("gemmStridedBatchedEx", **call)

    def _gemm(
        self,
        what,
        *,
        handle,
        transa,
        transb,
        m,
        n,
        k,
        alpha,
        A,
        Atype,
        lda,
        strideA,
        B,
        Btype,
        ldb,
        strideB,
        beta,
        C,
        Ctype,
        ldc,
        strideC,
        batchCount,
        computeType,
        algo,
    ):  # noqa: N803 - cuBLAS's parameter names
        """Both gemms: `batchCount` products, each operand `stride*` elements after the last."""
        sA, sB, sC, batch = strideA, strideB, strideC, batchCount
        kinds = _MODELLED.get((Atype, Btype, Ctype, computeType))
        if kinds is None:
            raise NotImplementedError(
                f"the cupy simulator models {what} only for int8 x int8 -> int32 with "
                "CUBLAS_COMPUTE_32I and bf16 with CUBLAS_COMPUTE_32F (got types "
                f"{Atype}, {Btype}, {Ctype}, compute {computeType})"
            )
        operand, result, acc_t, scalar = kinds
        if transa not in (0, 1) or transb not in (0, 1) or min(m, n, k, batch) < 0:
            raise CUBLASError(7, "transa/transb must be CUBLAS_OP_N or _T; m, n, k >= 0")
        a_rows, b_rows = (m if transa == 0 else k), (k if transb == 0 else n)
        if lda < max(1, a_rows) or ldb < max(1, b_rows) or ldc < max(1, m):
            raise CUBLASError(
                7, f"lda={lda}, ldb={ldb}, ldc={ldc} below the rows {a_rows}, {b_rows}, {m}"
            )
        if Atype == CUDA_R_8I and (A % 4 or B % 4 or lda % 4 or ldb % 4):
            raise CUBLASError(
                15, "int8 gemmEx needs A and B 4-byte aligned and lda, ldb multiples of 4"
            )
        if algo not in (CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP):
            raise NotImplementedError(
                f"the cupy simulator models only the default algos, not {algo}"
            )
        mach = machine()
        if self._state(handle)["pointer_mode"]:  # device mode: alpha, beta on the GPU
            for ptr, name in ((alpha, "alpha"), (beta, "beta")):
                if mach.space.find(int(ptr)) is None:
                    raise CUBLASError(
                        13,
                        f"{name} {int(ptr):#x} is not device memory but the "
                        "handle is in device pointer mode",
                    )
        alpha_v = scalar.from_address(int(alpha)).value  # read at the call, as cuBLAS
        beta_v = scalar.from_address(int(beta)).value  # reads host scalars
        a_cols, b_cols = (k if transa == 0 else m), (n if transb == 0 else k)
        spans = [
            (A, sA, lda * (a_cols - 1) + a_rows, operand.itemsize, False, "A"),
            (B, sB, ldb * (b_cols - 1) + b_rows, operand.itemsize, False, "B"),
            (C, sC, ldc * (n - 1) + m, result.itemsize, True, "C"),
        ]
        accesses = []
        for ptr, stride, count, size, write, name in spans:
            if m == 0 or n == 0 or batch == 0 or (k == 0 and name != "C"):
                continue
            hi = ptr + ((batch - 1) * stride + count) * size
            hit = mach.space.find(ptr)
            if hit is None or hi > hit[0] + hit[1]:
                raise CUBLASError(
                    7, f"{name} [{ptr:#x}, {hi:#x}) is not device memory of one allocation"
                )
            lo, top = live_block(ptr, hit)
            accesses.append((lo, top, write, f"device buffer {hit[0]:#x}"))
        mach.count("kernel_launches")
        queue = mach.queue(self._state(handle)["stream"])

        def product():
            for b in range(batch):
                a = _col_major(A + b * sA * operand.itemsize, a_rows, a_cols, lda, operand)
                bm = _col_major(B + b * sB * operand.itemsize, b_rows, b_cols, ldb, operand)
                c = _col_major(C + b * sC * result.itemsize, m, n, ldc, result)
                a, bm = a.astype(acc_t), bm.astype(acc_t)
                acc = acc_t(alpha_v) * ((a.T if transa else a) @ (bm.T if transb else bm))
                if beta_v:
                    acc = acc + acc_t(beta_v) * c.astype(acc_t)
                c[...] = acc.astype(result)  # int32 wraps, as the accumulator does

        if accesses and m and n:
            mach.sched.enqueue(queue, product, f"cublas {what}", accesses)


cublas = _Cublas()
