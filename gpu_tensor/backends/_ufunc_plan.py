"""The shape, dtype and memory layout of a numpy ufunc's result, found without computing it.

A backend that keeps its arrays in memory numpy does not allocate (emulated cuda: the
caching allocator's blocks) allocates the result from this plan and calls the ufunc with
`out=`: no host temporary, no second copy, and the layout numpy (the cpu device) gives.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plan"]

# (ufunc, operand dtypes / scalar types) -> (result dtype, the loop's input dtypes): bounded
# by the op table's ufuncs times the dtypes they take
_RESOLVED: dict = {}
_FIRST_TWO = slice(0, 2)
_C, _F = 1, 2
# how numpy's ufuncs call their iterator (numpy/_core/src/umath/ufunc_object.c): the same
# flags allocate the same result layout
_ITER_FLAGS = [
    "external_loop",
    "refs_ok",
    "zerosize_ok",
    "buffered",
    "grow_inner",
    "delay_bufalloc",
    "copy_if_overlap",
]
_ITER_IN = ["readonly", "aligned", "overlap_assume_elementwise"]
_ITER_OUT = ["writeonly", "aligned", "allocate", "no_broadcast", "no_subtype"]
_REFUSALS = (TypeError, ValueError, OverflowError, ArithmeticError)


def plan(fn, args):
    """`(shape, dtype, strides)` of `fn(*args)`'s result; `strides` is None when numpy's
    result is C-contiguous, else the strides numpy gives it (compact, axes in its order).
    None where the caller must let numpy allocate: operands that are all scalars, shapes
    that do not broadcast, dtypes numpy refuses (numpy then raises its own error)."""
    key, arrays, shape = [fn], [], None
    ordered = True  # every array operand C-contiguous: so is numpy's result
    for a in args:  # (one pass: this runs on every emulated op)
        if type(a) is np.ndarray:
            key.append(a.dtype)
            arrays.append(a)
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                shape = False
            if ordered and not a.flags.c_contiguous:
                ordered = False
        else:
            key.append(type(a))
    if shape is None:
        return None
    key = tuple(key)
    resolved = _RESOLVED.get(key)
    if resolved is None:
        resolved = _resolve(fn, args)
        if resolved is None:
            return None
        _RESOLVED[key] = resolved
    dtype, loop = resolved
    if shape is False:
        shape = _broadcast([a.shape for a in arrays])
        if shape is None:
            return None
    if ordered or 0 in shape:  # (numpy flags empty arrays C-contiguous)
        return shape, dtype, None
    strides = _layout(args, loop, shape, dtype)
    return None if strides is False else (shape, dtype, strides)


def _resolve(fn, args):
    """(result dtype, loop input dtypes) for these operands, or None."""
    if fn.nout != 1:
        return None
    spec = tuple(
        a.dtype
        if isinstance(a, (np.ndarray, np.generic))
        else np.dtype(bool)
        if type(a) is bool
        else type(a)
        for a in args
    )
    try:
        loop = fn.resolve_dtypes((*spec, None))
        # numpy's own call on empty operands: the dtype the real call gives
        got = fn(*[np.empty(0, a.dtype) if type(a) is np.ndarray else a for a in args]).dtype
    except _REFUSALS:  # (not remembered: a Python int's range check depends on its value)
        return None
    if loop[-1] != got:
        return None  # the two resolutions disagree: leave the call to numpy
    return got, loop[:-1]


def _layout(args, loop, shape, dtype):
    """numpy's result strides (None: C-contiguous) for non-C-contiguous operands; False
    where the iterator refuses them.

    numpy has two paths. Array operands of one shape that need no cast, each aligned and
    1-D or contiguous in one order (C, F or both: 0-d operands do not count) get a fresh
    C or F array. Anything else goes through its iterator in order "K", which orders axes
    by the operands' strides alone and treats size-1 dims alike at any size: the first two
    elements of each dim (the same strides, a few bytes) stand in for the operands there,
    and its compact result has its axes in the same order."""
    order = 0
    for a, want in zip(args, loop, strict=True):
        if type(a) is not np.ndarray or not a.ndim:
            continue
        if a.shape != shape or a.dtype != want or not a.flags.aligned:
            order = None
            break
        if a.ndim > 1:
            flags = a.flags
            this = (_C if flags.c_contiguous else 0) | (_F if flags.f_contiguous else 0)
            if not this or (order and order != this):
                order = None
                break
            order = this
    if order is not None:
        if order != _F:  # C, both, or only 1-D and 0-d operands: C
            return None
        strides, step = [], dtype.itemsize
        for n in shape:
            strides.append(step)
            step *= n
        return tuple(strides)
    tiny = [a[(_FIRST_TWO,) * a.ndim] for a in args if type(a) is np.ndarray]
    try:
        it = np.nditer(
            tiny + [None],
            _ITER_FLAGS,
            [_ITER_IN] * len(tiny) + [_ITER_OUT],
            op_dtypes=[None] * len(tiny) + [dtype],
            order="K",
            casting="unsafe",
        )
    except ValueError:
        return False
    out = it.operands[-1]
    return None if out.flags.c_contiguous else out.strides


def _broadcast(shapes):
    """numpy's broadcast shape of `shapes`, or None if they do not broadcast (cheaper than
    np.broadcast_shapes on this per-op path)."""
    out = [1] * max(len(s) for s in shapes)
    for s in shapes:
        offset = len(out) - len(s)
        for i, n in enumerate(s):
            m = out[offset + i]
            if n != m:
                if m == 1:
                    out[offset + i] = n
                elif n != 1:
                    return None
    return tuple(out)
