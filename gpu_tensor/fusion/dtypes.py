"""PyTorch dtype rules on numpy dtypes, as the fusion table and codegen need them.

The fusion layer works on numpy dtypes (ml_dtypes' bfloat16 for bfloat16) because its numpy
functions take numpy arrays. Promotion follows PyTorch, not numpy: categories bool < integer <
floating; a higher category wins outright (int64 + float16 -> float16); Python scalars and
0-dim tensors only decide the result when they raise its category (int32 tensor + 2.5 ->
float32, the default dtype, never float64). The core's `gpu_tensor.dtype.result_type`
does the promotion; this module applies it to numpy arrays and scalars.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import dtype as _core

__all__ = [
    "BFLOAT16",
    "COMPLEX",
    "SUPPORTED",
    "as_np_dtype",
    "category",
    "compute_dtype",
    "promote_types",
    "result_type",
    "default_float",
]

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

SUPPORTED = tuple(
    np.dtype(d)
    for d in (
        np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
        np.uint16, np.uint32, np.uint64,  # torch's barebones unsigned types (few ops)
        np.float16, BFLOAT16, np.float32, np.float64,
    )
)  # fmt: skip

_LOW_PRECISION = (np.dtype(np.float16), BFLOAT16)
# Complex dtypes reach the codegen only through rows with complex C overloads
# (OpDef.complex_kernel): eager cuda ops and @gt.fuse alike (trace.apply refuses the rest).
COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def as_np_dtype(dtype, complex_ok: bool = False) -> np.dtype:
    """A numpy dtype from a numpy dtype, a string, or a gpu_tensor dtype (its `.np`).
    `complex_ok`: complex64/complex128 are taken too (eager graphs of complex_kernel rows)."""
    if hasattr(dtype, "np") and not isinstance(dtype, np.dtype):
        dtype = dtype.np
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if dt not in SUPPORTED and not (complex_ok and dt in COMPLEX):
        raise TypeError(
            f"dtype {dt} is not supported by elementwise ops; supported: "
            + ", ".join(str(d) for d in SUPPORTED)
        )
    return dt


def category(dt: np.dtype) -> int:
    """0 bool, 1 integer, 2 floating."""
    if dt == np.bool_:
        return 0
    if dt.kind in "iu":
        return 1
    return 2


def promote_types(a, b) -> np.dtype:
    """torch.promote_types on numpy dtypes (the core's table)."""
    return _core.promote_types(_core.to_dtype(np.dtype(a)), _core.to_dtype(np.dtype(b))).np


def default_float() -> np.dtype:
    """The default floating dtype (float32 unless gt.set_default_dtype changed it)."""
    return _core.get_default_dtype().np


class _Operand:
    """What the core's result_type reads from a tensor: its dtype and ndim."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, dtype, ndim: int):
        self.dtype, self.ndim = dtype, ndim


def result_type(*operands) -> np.dtype:
    """torch.result_type over numpy arrays (dimensioned or 0-dim tensors), numpy scalars
    (0-dim tensors) and Python scalars (weak), through the core's rule. None operands are
    skipped (clamp's missing bound)."""
    shims = []
    for op in operands:
        if op is None:
            continue
        if isinstance(op, (np.ndarray, np.generic)):
            shims.append(_Operand(_core.to_dtype(as_np_dtype(op.dtype)), np.ndim(op)))
        elif isinstance(op, (bool, int, float)):
            shims.append(op)
        else:
            raise TypeError(
                f"unsupported operand {op!r} ({type(op).__name__}) in an elementwise op; "
                "expected an array or a Python bool/int/float"
            )
    return as_np_dtype(_core.result_type(*shims))


def compute_dtype(dt: np.dtype) -> np.dtype:
    """The dtype arithmetic runs in: float16/bfloat16 are computed in float32 (torch's opmath)."""
    return np.dtype(np.float32) if dt in _LOW_PRECISION else np.dtype(dt)
