"""The last step of an op that computed an array itself: the array becomes the result Tensor.

numpy (and cupy) hand back a scalar for some full reductions and 1-D products, compute half
types in float32, and allocate outside our allocator; `array_result` makes the value an
array, casts it to the result dtype when it differs, and adopts it into the device's memory
before wrapping it (one helper for the ops in reduction.py, linalg.py and matrix.py).
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor

__all__ = ["array_result"]


def array_result(backend, array, device, dtype, *, contiguous: bool = False) -> Tensor:
    """A Tensor of `device` and `dtype` over `array` (or the scalar a routine returned).
    `contiguous`: lay a strided result out in C order first (0-d results stay 0-d)."""
    if not hasattr(array, "ndim") or isinstance(array, np.generic):
        array = backend.xp.asarray(array)
    if array.dtype != dtype.np:
        array = backend.astype(array, dtype.np)
    if contiguous and array.ndim:
        array = backend.xp.ascontiguousarray(array)  # (it would make a 0-d result 1-d)
    array, storage = backend.adopt(array)
    return Tensor._make(array, device, dtype, storage)
