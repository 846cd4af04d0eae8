"""The subset of cupy_backends.cuda.libs.cublas (cupy.cuda.cublas) that gpu_tensor calls,
over the simulated machine: `gemmEx` for int8 x int8 -> int32 (the quantized Linear's
product), `setStream` / `getStream` / `setPointerMode`, and
`cupy.cuda.device.get_cublas_handle`.

Each call is bound against cupy 14.2's own signature (`SIGNATURES`: the first docstring line
of each binding, which tests/testing/test_sim_cublas.py finds in the installed module) and
checks what cuBLAS checks: enum values, leading dimensions against the shapes, device
pointers whose ranges lie in one allocation, and the int8 kernels' documented limits (A and
B 4-byte aligned, lda and ldb multiples of 4: CUBLAS_STATUS_NOT_SUPPORTED otherwise). Type
combinations other than int8/int8 -> int32 with CUBLAS_COMPUTE_32I are not modelled (they
raise, never compute something else). The product runs as a task on the handle's stream,
reading A and B and writing C, so a missing stream wait is a race as for any kernel.
"""

from __future__ import annotations

import ctypes

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
    "setStream": "setStream(intptr_t handle, size_t stream)",
    "getStream": "getStream(intptr_t handle) -> size_t",
    "setPointerMode": "setPointerMode(intptr_t handle, int mode)",
}
HANDLE_SIGNATURE = "get_cublas_handle() -> intptr_t"  # cupy/cuda/device.pyx

# cublas_api.h / library_types.h values (cupy's constants carry the same numbers)
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_COMPUTE_32I = 72
CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP = -1, 99
CUDA_R_8I, CUDA_R_32I = 3, 10
_STATUS = {7: "CUBLAS_STATUS_INVALID_VALUE", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
           15: "CUBLAS_STATUS_NOT_SUPPORTED"}


class CUBLASError(RuntimeError):
    """cupy_backends.cuda.libs.cublas.CUBLASError: str() is the status name."""

    def __init__(self, status: int, detail: str = ""):
        self.status = status
        super().__init__(f"{_STATUS.get(status, status)} ({detail})" if detail else
                         _STATUS.get(status, str(status)))


def _bind(name, args):
    sig = parse_cython(SIGNATURES[name])
    try:
        sig.bind(*args)
    except TypeError as exc:
        raise TypeError(f"cupy.cuda.cublas.{name}(): {exc}") from None


def get_cublas_handle():
    bind("cuda.device.get_cublas_handle", (), {})
    m = machine()
    return 0x6C00 + m.current_device()  # one handle per device, as cupy keeps


class _Cublas:
    """cupy.cuda.cublas over the simulated machine (see the module docstring)."""

    __name__ = "gpu_tensor.testing.sim.cublas"
    CUBLAS_OP_N, CUBLAS_OP_T = CUBLAS_OP_N, CUBLAS_OP_T
    CUBLAS_COMPUTE_32I = CUBLAS_COMPUTE_32I
    CUBLAS_GEMM_DEFAULT = CUBLAS_GEMM_DEFAULT
    CUBLAS_GEMM_DEFAULT_TENSOR_OP = CUBLAS_GEMM_DEFAULT_TENSOR_OP
    CUBLASError = CUBLASError

    @staticmethod
    def _state(handle) -> dict:
        """This handle's settings on the current simulated machine (sim.reset() starts a new
        machine, whose handles start with cuBLAS's defaults: the legacy stream, host mode)."""
        handles = machine().__dict__.setdefault("cublas_handles", {})
        return handles.setdefault(int(handle), {"stream": 0, "pointer_mode": 0})

    def setPointerMode(self, handle, mode):  # noqa: N802
        _bind("setPointerMode", (handle, mode))
        if mode not in (0, 1):
            raise CUBLASError(7, f"pointer mode {mode}")
        self._state(handle)["pointer_mode"] = int(mode)

    def setStream(self, handle, stream):  # noqa: N802 - cupy's names
        _bind("setStream", (handle, stream))
        machine().queue(stream)  # a stream that does not exist is refused here
        self._state(handle)["stream"] = int(stream)

    def getStream(self, handle):  # noqa: N802
        _bind("getStream", (handle,))
        return self._state(handle)["stream"]

    def gemmEx(self, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,  # noqa: N802, N803
               ldb, beta, C, Ctype, ldc, computeType, algo):  # noqa: N803
        _bind("gemmEx", (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                         ldb, beta, C, Ctype, ldc, computeType, algo))
        if (Atype, Btype, Ctype, computeType) != (CUDA_R_8I, CUDA_R_8I, CUDA_R_32I,
                                                  CUBLAS_COMPUTE_32I):
            raise NotImplementedError(
                "the cupy simulator models gemmEx only for int8 x int8 -> int32 with "
                f"CUBLAS_COMPUTE_32I (got types {Atype}, {Btype}, {Ctype}, compute "
                f"{computeType})")
        if transa not in (0, 1) or transb not in (0, 1) or min(m, n, k) < 0:
            raise CUBLASError(7, "transa/transb must be CUBLAS_OP_N or _T; m, n, k >= 0")
        a_rows, b_rows = (m if transa == 0 else k), (k if transb == 0 else n)
        if lda < max(1, a_rows) or ldb < max(1, b_rows) or ldc < max(1, m):
            raise CUBLASError(7, f"lda={lda}, ldb={ldb}, ldc={ldc} below the rows {a_rows}, "
                                 f"{b_rows}, {m}")
        if A % 4 or B % 4 or lda % 4 or ldb % 4:
            raise CUBLASError(15, "int8 gemmEx needs A and B 4-byte aligned and lda, ldb "
                                  "multiples of 4")
        if algo not in (CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP):
            raise NotImplementedError(f"the cupy simulator models only the default algos, "
                                      f"not {algo}")
        mach = machine()
        if self._state(handle)["pointer_mode"]:  # device mode: alpha, beta on the GPU
            for ptr, what in ((alpha, "alpha"), (beta, "beta")):
                if mach.space.find(int(ptr)) is None:
                    raise CUBLASError(13, f"{what} {int(ptr):#x} is not device memory but the "
                                          "handle is in device pointer mode")
        alpha_v = ctypes.c_int32.from_address(int(alpha)).value  # read at the call, as
        beta_v = ctypes.c_int32.from_address(int(beta)).value    # cuBLAS reads host scalars
        a_cols, b_cols = (k if transa == 0 else m), (n if transb == 0 else k)
        spans = [(A, lda * (a_cols - 1) + a_rows, 1, False, "A"),
                 (B, ldb * (b_cols - 1) + b_rows, 1, False, "B"),
                 (C, ldc * (n - 1) + m, 4, True, "C")]
        accesses = []
        for ptr, count, size, write, what in spans:
            if m == 0 or n == 0 or (k == 0 and what != "C"):
                continue
            hit = mach.space.find(ptr)
            if hit is None or ptr + count * size > hit[0] + hit[1]:
                raise CUBLASError(7, f"{what} [{ptr:#x}, +{count * size}) is not device "
                                     "memory of one allocation")
            lo, hi = live_block(ptr, hit)
            accesses.append((lo, hi, write, f"device buffer {hit[0]:#x}"))
        mach.count("kernel_launches")
        queue = mach.queue(self._state(handle)["stream"])

        def product():
            def col_major(ptr, rows, cols, ld, dtype):
                itemsize = np.dtype(dtype).itemsize
                raw = host_bytes(ptr, (ld * (cols - 1) + rows) * itemsize).view(dtype)
                return np.lib.stride_tricks.as_strided(
                    raw, (rows, cols), (itemsize, ld * itemsize))

            a = col_major(A, a_rows, a_cols, lda, np.int8).astype(np.int64)
            b = col_major(B, b_rows, b_cols, ldb, np.int8).astype(np.int64)
            c = col_major(C, m, n, ldc, np.int32)
            acc = (a.T if transa else a) @ (b.T if transb else b)
            acc = alpha_v * acc + (beta_v * c.astype(np.int64) if beta_v else 0)
            c[...] = acc.astype(np.int32)  # int32 wraps, as the accumulator does

        if m and n:
            mach.sched.enqueue(queue, product, "cublas gemmEx int8", accesses)


cublas = _Cublas()
