"""Shape rules of the meta device: result shapes computed from operand shapes alone
(tuples in, tuples out; no arrays), for meta_array.MetaArray."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["reduced", "matmul_shape", "infer", "data_dependent"]


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim if ndim else 0 for a in (int(a) for a in axis))


def reduced(shape, axis, keepdims):
    axes = set(_axes(axis, len(shape)))
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def data_dependent(what):
    return NotImplementedError(
        f"{what} on meta tensors: its output's shape depends on the data, which a meta "
        "tensor does not have; run it on a real device"
    )


def matmul_shape(a, b):
    sa, sb = tuple(a), tuple(b)
    if not sa or not sb:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {b2[-2]} is different from {a2[-1]})"
        )
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return out


def infer(shape, size):
    """numpy's reshape rule for the target shape (one -1 inferred; sizes must agree)."""
    shape = [int(n) for n in shape]
    known = math.prod(n for n in shape if n != -1)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape and known and not size % known:
        shape[shape.index(-1)] = size // known
    if -1 in shape or math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return tuple(shape)
