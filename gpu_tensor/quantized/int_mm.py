"""int8 x int8 -> int32 matrix products (torch._int_mm), the speed under dynamic Linear.

cpu and emulated cuda: numpy's float64 BLAS product (integers of |value| <= 128 * 128 * K
are exact in float64 for any K below 2**39, so the sums are the int32 accumulator's exactly,
and BLAS is far faster than numpy's integer matmul), then wrapped to int32 as an int32
accumulator wraps (only reachable past K = 131072 with every value -128). Real cuda:
cuBLAS gemmEx with int32 compute (the backend's `int8_mm_nt`), which needs K and the
leading dimensions multiples of 4: the backend pads K with zeros (exact) where needed.
Unlike torch's CUDA _int_mm there is no M > 16 limit.
"""

from __future__ import annotations

from .. import dtype as _dt
from .._tensor import Tensor

__all__ = ["_int_mm", "int8_mm_nt"]


def int8_mm_nt(a, w) -> Tensor:
    """int32 (M, N) = a (M, K) @ w (N, K)^T for int8 tensors (a may hold uint8 0..127 bits
    viewed as int8), exactly. The weight is used as stored (N, K): the layout the cuBLAS
    int8 kernels take without a transpose."""
    backend = a._backend
    hook = getattr(backend, "int8_mm_nt", None)
    if hook is not None:  # real cuda: cuBLAS gemmEx
        return Tensor._wrap(hook(a._data, w._data), device=a.device)
    xp = backend.xp
    f64 = _dt.float64.np
    out = xp.matmul(a._data.astype(f64), w._data.astype(f64).T)
    arr, st = backend.adopt(out.astype(_dt.int64.np).astype(_dt.int32.np))
    return Tensor._wrap(arr, device=a.device, storage=st)


def _int_mm(input, mat2):  # noqa: A002  (torch's names)
    """torch._int_mm: int8 (M, K) @ int8 (K, N) -> int32 (M, N)."""
    for name, t in (("self", input), ("mat2", mat2)):
        if not isinstance(t, Tensor) or t.dtype is not _dt.int8:
            got = getattr(t, "dtype", type(t).__name__)
            raise RuntimeError(f"Expected {name} dtype to be torch.int8, got {got}")
        if t.ndim != 2:
            raise RuntimeError(f"Expected {name} to be 2-D, but got {t.ndim}-D")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({input.shape[0]}x{input.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    if input.device != mat2.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                           f"least two devices, {input.device} and {mat2.device}!")
    return int8_mm_nt(input.contiguous(), mat2.t().contiguous())
