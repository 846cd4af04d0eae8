"""Small ints that name operand layouts, for the keys of the warm cuda paths.

A warm cuda op (ops/_dispatch.py's operators, the casts of transfer/move.py) finds the entry
bound for its operands by their layouts: dtype, shape, strides (True where C-contiguous) and
the data pointer's alignment mod 16. Reading those off the arrays and hashing them for every
operand of every op cost about a tenth of a warm op's own host time (issue 23). So a tensor
names its layout once, with the int this module gives (`Tensor._key`, made by
`Tensor._warm_key` when first asked), and an op's key is (op, int, int). Every result of one
entry has the same layout, so a result carries its id from birth (the entry's `key`).

Ids are never reused. When the table passes MAX_IDS entries it starts over with new
numbers: a tensor that still holds an old id names its own layout, never another one (at
worst an op keyed by it binds its entry once more).
"""

from __future__ import annotations

from itertools import count

from .layouts import dense_in_order

__all__ = ["IDS", "layout_id", "new_id", "layout_of", "MAX_IDS"]

MAX_IDS = 1 << 16  # layouts that never repeat (shapes that keep changing) must not grow it forever
IDS: dict[tuple, int] = {}  # (dtype, shape, layout, align) -> its id; read it, never write it
_fresh = count()


def layout_id(dtype, shape: tuple, layout, align: int) -> int:
    """The id of (dtype, shape, layout, align); `layout`: True where C-contiguous, else the
    strides in bytes (cupy's `x._c_contiguous or x.strides`); `align`: `x.data.ptr & 15`."""
    key = (dtype, shape, layout, align)
    i = IDS.get(key)
    return new_id(key) if i is None else i


def new_id(key: tuple) -> int:
    """The id of a (dtype, shape, layout, align) that IDS does not hold (Tensor._warm_key
    looks IDS up itself, and calls this on a miss)."""
    if len(IDS) >= MAX_IDS:
        IDS.clear()
    i = IDS[key] = next(_fresh)  # (two threads may both name a layout: both ids hold)
    return i


def layout_of(shape: tuple, strides, itemsize: int):
    """What cupy's `x._c_contiguous or x.strides` reads for an array of `shape` with byte
    `strides` (None: C order), without making one: True where C-contiguous by cupy's rule
    (no elements, or every dim longer than 1 at its C stride), else the strides."""
    if strides is None or 0 in shape:
        return True
    if dense_in_order(shape, strides, range(len(shape) - 1, -1, -1), itemsize):
        return True
    return tuple(strides)
