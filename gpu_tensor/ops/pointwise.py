"""Pointwise functions written with other ops rather than rows of the op table
(fusion/optable.py): hardshrink and prelu (where-based), the integer bit shifts, and frexp
(mantissa and exponent, torch's named tuple).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .. import return_types
from .._grad import differentiable
from .._tensor import Tensor
from ..backends import get_backend
from .elementwise import where

__all__ = ["bitwise_left_shift", "bitwise_right_shift", "frexp", "hardshrink", "prelu"]

FrexpResult = return_types.frexp


def hardshrink(input, lambd=0.5):
    return where(input.abs() > lambd, input, 0).to(input.dtype)


def prelu(input, weight):
    """x where x >= 0, weight * x elsewhere; a weight per channel (dim 1) or one for all."""
    w = weight
    if weight.numel() > 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(
                f"prelu: the weight has {weight.numel()} elements but the "
                f"input has {input.shape[1] if input.ndim > 1 else 1} channels"
            )
        w = weight.reshape(-1, *([1] * (input.ndim - 2)))
    return where(input >= 0, input, w * input)


def _shift(name, ufunc):
    def op(input, other):
        bk = get_backend(input.device)
        o = other._data if isinstance(other, Tensor) else other
        if input.dtype.category > _dt.INT:
            raise NotImplementedError(
                f"\"{name}_cpu\" not implemented for '{_dt.SCALAR_TYPE_NAMES[input.dtype.name]}'"
            )
        r = bk.elementwise(None, getattr(bk.xp, ufunc), (input._data, o), None)
        arr, st = bk.adopt(r if r.dtype == input.dtype.np else bk.astype(r, input.dtype.np))
        return Tensor._make(arr, input.device, input.dtype, st)

    op.__name__ = op.__qualname__ = name
    return op


bitwise_left_shift = _shift("bitwise_left_shift", "left_shift")
bitwise_right_shift = _shift("bitwise_right_shift", "right_shift")


@differentiable  # formula: autograd/formulas_more.py (the mantissa's)
def frexp(input):
    if input.dtype.category != _dt.FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    bk = get_backend(input.device)
    m, e = bk.xp.frexp(
        input._data.astype(np.float32) if input.dtype is _dt.bfloat16 else input._data
    )
    ma, st = bk.adopt(m.astype(input.dtype.np))
    ea, st2 = bk.adopt(e.astype(np.int32))
    return FrexpResult(
        Tensor._make(ma, input.device, input.dtype, st),
        Tensor._make(ea, input.device, _dt.int32, st2),
    )
