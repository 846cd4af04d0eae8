"""cupy's indexing: basic indices make views; integer-array indices gather and scatter, and
out-of-range ones WRAP instead of raising. cupy docs, "Differences between CuPy and NumPy",
Out-of-bounds indices: "CuPy handles out-of-bounds indices differently by default from NumPy
when using integer array indexing. NumPy handles them by raising an error, but CuPy wraps
around them." (cupy/_core/_routines_indexing.pyx takes indices modulo the dimension.)
Python integers out of range still raise IndexError, as they do in cupy.
"""

from __future__ import annotations

import numpy as np

from .ndarray import ndarray, saturating_cast
from .tasks import run, sim_arrays, view_or_run

__all__ = ["getitem", "setitem", "wrap_indices"]


def _is_int_array(k) -> bool:
    if isinstance(k, ndarray):
        return k.dtype.kind in "iu"
    if isinstance(k, np.ndarray):
        return k.dtype.kind in "iu"
    if isinstance(k, list):
        return len(k) > 0 and all(isinstance(v, (int, np.integer)) for v in np.ravel(k))
    return False


def _consumes(k) -> int:
    if k is None:
        return 0
    if isinstance(k, (ndarray, np.ndarray)) and k.dtype.kind == "b":
        return k.ndim
    return 1


def wrap_indices(key, shape):
    """`key` with every integer-array component taken modulo its dimension (host arrays)."""
    key = key if isinstance(key, tuple) else (key,)
    explicit = sum(_consumes(k) for k in key if k is not Ellipsis)
    out, dim = [], 0
    for k in key:
        if k is Ellipsis:
            out.append(k)
            dim += len(shape) - explicit
            continue
        if _is_int_array(k):
            arr = k._host() if isinstance(k, ndarray) else np.asarray(k)
            n = shape[dim] if dim < len(shape) else 0
            out.append(np.mod(arr, n) if n else arr)
        elif isinstance(k, ndarray):
            out.append(k._host())
        else:
            out.append(k)
        dim += _consumes(k)
    return tuple(out)


def _advanced(key) -> bool:
    key = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (ndarray, np.ndarray, list)) for k in key)


def getitem(a: ndarray, key):
    if not _advanced(key):
        k = key if isinstance(key, tuple) else (key,)
        if Ellipsis not in k:
            k = k + (Ellipsis,)  # a 0-d view, not a numpy scalar, for a full integer index
        r = view_or_run("getitem", lambda h: h[k], (a,), {})
        if r.size == 0 and a.size != 0:
            # numpy 2 moves an empty slice's pointer back to the start; cupy adds the
            # slices' starts and the integers' positions (`_view_getitem`)
            return ndarray(r.shape, r.dtype, memptr=a.data + _offset(k, a), strides=r.strides)
        return r
    index_arrays = tuple(sim_arrays(key, []))
    return run(
        "gather (advanced indexing)",
        lambda h, *_: h[wrap_indices(key, a.shape)],
        (a, *index_arrays),
        {},
    )


def _offset(key, a: ndarray) -> int:
    """The bytes cupy's `_view_getitem` adds to `a`'s pointer for basic index `key` (a tuple
    with an Ellipsis): each integer's position and each slice's start past 0, times the
    stride of the dim it indexes."""
    explicit = sum(k is not None and k is not Ellipsis for k in key)
    offset, dim = 0, 0
    for k in key:
        if k is None:
            continue
        if k is Ellipsis:
            dim += a.ndim - explicit
            continue
        n = a.shape[dim]
        if isinstance(k, slice):
            start = k.indices(n)[0]
            offset += a.strides[dim] * start if start > 0 else 0
        else:
            i = int(k)
            offset += a.strides[dim] * (i + n if i < 0 else i)
        dim += 1
    return offset


def setitem(a: ndarray, key, value) -> None:
    index_arrays = tuple(sim_arrays(key, []))
    if isinstance(value, np.ndarray) and value.ndim:
        raise TypeError("Unsupported type <class 'numpy.ndarray'>")  # cupy takes no host arrays

    def assign(h, v, *_):
        k = wrap_indices(key, a.shape) if _advanced(key) else key
        if isinstance(v, np.ndarray):
            v = saturating_cast(v, h.dtype)
        elif isinstance(v, float) and h.dtype.kind in "iu":
            v = saturating_cast(np.asarray(v), h.dtype)
        h[k] = v

    run("setitem", assign, (a, value, *index_arrays), {}, writes=(a,))
