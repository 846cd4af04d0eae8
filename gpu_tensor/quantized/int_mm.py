"""int8 x int8 -> int32 matrix products (torch._int_mm), the speed under dynamic Linear.

cpu and emulated cuda: numpy's float32 BLAS over K in chunks of 1024. numpy has no int8
GEMM (its integer matmul is a scalar loop); every |a * w| <= 2**14, so every partial sum of a
1024-long chunk is an integer of at most 2**24, exact in float32 whatever order BLAS adds in;
the chunks' results are summed in int32, wrapping as an int32 accumulator does. The caller may
pass the weight already in float32 (the dynamic Linear caches it on host devices). Real cuda:
cuBLAS gemmEx with int32 compute (the backend's `int8_mm_nt`), which needs K and the
leading dimensions multiples of 4: the backend pads K with zeros (exact) where needed.
Unlike torch's CUDA _int_mm there is no M > 16 limit.
"""

from __future__ import annotations

from .. import dtype as _dt
from .._tensor import Tensor

__all__ = ["_int_mm", "int8_mm_nt"]


_CHUNK = 1024  # 1024 * 128 * 128 = 2**24: float32 sums of this many int8 products are exact


def int8_mm_nt(a, w, w_float=None) -> Tensor:
    """int32 (M, N) = a (M, K) @ w (N, K)^T for int8 tensors, exactly. The weight is used
    as stored (N, K): the layout the cuBLAS int8 kernels take without a transpose.
    `w_float`: w's values as a float32 host array (a cache), used on host devices."""
    backend = a._backend
    hook = getattr(backend, "int8_mm_nt", None)
    if hook is not None:  # real cuda: cuBLAS gemmEx
        return Tensor._wrap(hook(a._data, w._data), device=a.device)
    xp = backend.xp
    f32, i32 = _dt.float32.np, _dt.int32.np
    af = a._data.astype(f32)
    wf = w._data.astype(f32) if w_float is None else w_float
    k = af.shape[1]
    out = None
    for start in range(0, max(k, 1), _CHUNK):
        part = xp.matmul(af[:, start : start + _CHUNK], wf[:, start : start + _CHUNK].T).astype(i32)
        out = part if out is None else xp.add(out, part, out=out)
    arr, st = backend.adopt(out)
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
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied "
            f"({input.shape[0]}x{input.shape[1]} and "
            f"{mat2.shape[0]}x{mat2.shape[1]})"
        )
    if input.device != mat2.device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at "
            f"least two devices, {input.device} and {mat2.device}!"
        )
    return int8_mm_nt(input.contiguous(), mat2.t().contiguous())
