"""The kernel variants the copy planner can ask for: one naming function, one enumeration.

A variant is one template instantiation of one kernel in one ``kernels/*.cu`` file. The
planner names its choice with :func:`variant`; :func:`all_variants` walks the same choice
space (through the same helpers), so the compile-everything test cannot drift from what the
planner emits.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

__all__ = [
    "KernelVariant",
    "CAST_DTYPES",
    "UNIT_SIZES",
    "c_type",
    "cast_vector_width",
    "can_cast_in_kernel",
    "variant",
    "all_variants",
    "unit_type",
]

# Same-dtype copies move opaque units of these byte sizes (never typed values: bit-exact,
# NaN payloads kept, and 5 instantiations instead of one per dtype).
UNIT_SIZES = (1, 2, 4, 8, 16)

_C_TYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.float16): "__half",
    np.dtype(ml_dtypes.bfloat16): "__nv_bfloat16",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.complex64): "gt_complex<float>",
    np.dtype(np.complex128): "gt_complex<double>",
}
# The dtypes a kernel can cast between (PyTorch's common dtypes). Casts touching others
# (uint16/32/64) go through CuPy's own elementwise copy; same-dtype copies of any dtype use
# byte units and need no entry here.
CAST_DTYPES = tuple(_C_TYPES)

_INDEX = {False: "int", True: "long long"}  # index64 -> the kernel's signed offset type

# Same-dtype tiled transposes with V-wide accesses: unit bytes -> V. 4- or 8-byte accesses
# and tiles of 32*V elements whose (swizzled, unpadded) shared tile stays within 48 KiB of
# static shared memory (1 B: 128x128, 2 B: 128x128x2, 4 B: 64x64x4).
TRANSPOSE_VEC = {1: 4, 2: 4, 4: 2}

FILES = {
    "flat": "copy_contiguous.cu",
    "rows": "copy_contiguous.cu",
    "transpose": "copy_transpose.cu",
    "transpose_vec": "copy_transpose.cu",
    "nd": "copy_nd.cu",
}


@dataclasses.dataclass(frozen=True)
class KernelVariant:
    file: str  # kernels/<file>
    name: str  # NVRTC name expression, e.g. 'gt_copy_nd<float, float, int>'
    kernel: str  # 'flat' | 'rows' | 'transpose' | 'transpose_vec' | 'nd'
    needs_fp16: bool  # uses __half / __nv_bfloat16


def c_type(dtype) -> str:
    """The CUDA C type of a cast dtype."""
    try:
        return _C_TYPES[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"no CUDA C type for dtype {np.dtype(dtype)}") from None


def unit_type(nbytes: int) -> str:
    """Opaque C type moving ``nbytes`` bytes (common.cuh's gt_bytesN)."""
    if nbytes not in UNIT_SIZES:
        raise ValueError(f"unit size must be one of {UNIT_SIZES}, got {nbytes}")
    return f"gt_bytes{nbytes}"


def can_cast_in_kernel(dst_dtype, src_dtype) -> bool:
    return np.dtype(dst_dtype) in _C_TYPES and np.dtype(src_dtype) in _C_TYPES


def cast_vector_width(dst_dtype, src_dtype) -> int:
    """Lanes per 16-byte access for a cast: limited by the wider of the two elements."""
    return 16 // max(np.dtype(dst_dtype).itemsize, np.dtype(src_dtype).itemsize)


def variant(kernel: str, dst: str, src: str, vec: int = 1, index64: bool = False) -> KernelVariant:
    """Name one instantiation. ``dst``/``src`` are C type names (c_type / unit_type)."""
    if kernel == "flat":
        name = f"gt_copy_flat<{dst}, {src}, {vec}>"
    elif kernel == "rows":
        name = f"gt_copy_rows<{dst}, {src}, {vec}, {_INDEX[index64]}>"
    elif kernel == "transpose_vec":
        if dst != src:
            raise ValueError("the vector transpose moves one unit type (same dtype only)")
        name = f"gt_copy_transpose_vec<{dst}, {vec}, {_INDEX[index64]}>"
    elif kernel in ("transpose", "nd"):
        name = f"gt_copy_{kernel}<{dst}, {src}, {_INDEX[index64]}>"
    else:
        raise ValueError(f"unknown copy kernel {kernel!r}")
    fp16 = any(t in (dst, src) for t in ("__half", "__nv_bfloat16"))
    return KernelVariant(FILES[kernel], name, kernel, fp16)


def same_dtype_variants():
    for u in UNIT_SIZES:
        t = unit_type(u)
        for index64 in (False, True):
            yield variant("nd", t, t, 1, index64)
            yield variant("transpose", t, t, 1, index64)
        if u in TRANSPOSE_VEC:
            yield variant("transpose_vec", t, t, TRANSPOSE_VEC[u], False)


def cast_variants(dst_dtype, src_dtype):
    """Every variant the planner can pick for one (dst, src) cast pair."""
    d, s = c_type(dst_dtype), c_type(src_dtype)
    v = cast_vector_width(dst_dtype, src_dtype)
    if v > 1:
        yield variant("flat", d, s, v)
        yield variant("rows", d, s, v, False)
    yield variant("transpose", d, s, 1, False)
    yield variant("nd", d, s, 1, False)
    yield variant("nd", d, s, 1, True)


def all_variants() -> list[KernelVariant]:
    """Every kernel instantiation the copy planner can emit."""
    out = list(same_dtype_variants())
    for dst in CAST_DTYPES:
        for src in CAST_DTYPES:
            if dst != src:
                out.extend(cast_variants(dst, src))
    return out
