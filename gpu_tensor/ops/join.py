"""Joining and splitting: cat/concat, stack, split, chunk, tensor_split, hstack/vstack.

split/chunk return views (no copy), as in torch; cat/stack copy and promote dtypes.
"""

from __future__ import annotations

import math

from .. import dtype as _dt
from .._dims import wrap_dim as _wrap_dim
from .._grad import differentiable
from .._out import call as out_call
from .._tensor import Tensor
from ..backends import get_backend
from ._dispatch import mismatch as _mismatch

__all__ = [
    "cat",
    "concat",
    "concatenate",
    "stack",
    "split",
    "chunk",
    "tensor_split",
    "hstack",
    "vstack",
]


def _common(name, tensors):
    if isinstance(tensors, Tensor):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
            f"not Tensor; wrap it: {name}([t1, t2])"
        )
    tensors = list(tensors)
    if not tensors:
        # torch: cat([]) is a ValueError, stack([]) a RuntimeError
        raise (ValueError if name == "cat" else RuntimeError)(
            f"{name}(): expected a non-empty list of Tensors"
        )
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{name}(): expected a sequence of Tensors, got an element of "
                f"type {type(t).__name__}"
            )
    dev = tensors[0].device
    for t in tensors[1:]:
        if t.device is not dev:
            raise _mismatch(tensors[0], t)
    dt = _dt.result_type(*[t.dtype for t in tensors])
    return tensors, dev, dt


def _arrays(tensors, dev, dt):
    b = get_backend(dev)
    return b, [t._data if t.dtype is dt else b.astype(t._data, dt.np) for t in tensors]


@differentiable
def cat(tensors, dim=0, *, out=None):
    if out is not None:
        return out_call("cat", cat, (tensors, dim), {}, out, "cat")
    tensors, dev, dt = _common("cat", tensors)
    # torch's legacy rule: 1-D empty tensors are skipped whatever the other shapes
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    ref = kept[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, ref.ndim)
    for i, t in enumerate(kept):
        if t.ndim != ref.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}"
            )
        for k in range(ref.ndim):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list."
                )
    b, arrs = _arrays(kept, dev, dt)

    def plan():  # (only a backend that allocates results itself asks)
        n = sum(a.shape[d] for a in arrs)
        return (*ref.shape[:d], n, *ref.shape[d + 1 :]), dt.np, False

    arr, st = b.adopt(
        b.compute_into(lambda *a, out=None: b.xp.concatenate(a, d, out=out), arrs, plan)
    )
    return Tensor._make(arr, dev, dt, st)


concat = concatenate = cat


@differentiable
def stack(tensors, dim=0, *, out=None):
    if out is not None:
        return out_call("stack", stack, (tensors, dim), {}, out, "cat")
    tensors, dev, dt = _common("stack", tensors)
    shp = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shp:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shp)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    d = _wrap_dim(dim, len(shp) + 1)
    b, arrs = _arrays(tensors, dev, dt)
    arr, st = b.adopt(
        b.compute_into(
            lambda *a, out=None: b.xp.stack(a, d, out=out),
            arrs,
            lambda: ((*shp[:d], len(arrs), *shp[d:]), dt.np, False),
        )
    )
    return Tensor._make(arr, dev, dt, st)


def hstack(tensors):
    tensors = list(tensors)
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


@differentiable(first=True)
def split(tensor, split_size_or_sections, dim=0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces along `dim`: equal pieces of the given size (the last
    may be smaller), or pieces of the listed sizes."""
    d = _wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and not (size == 0 and n == 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got {size}")
        # torch: an empty dim still gives one (empty) piece
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    out, start = [], 0
    for s in sizes:
        out.append(tensor.narrow(d, start, s))
        start += s
    return tuple(out)


@differentiable(first=True)
def chunk(input, chunks, dim=0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    size = max(math.ceil(n / chunks), 1) if n else 0
    if n == 0:
        return split(input, [0] * chunks, d)  # torch: `chunks` empty pieces
    return split(input, size, d)


@differentiable(first=True)
def tensor_split(input, indices_or_sections, dim=0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"tensor_split(): number of sections must be larger than 0, got {k}")
        base, extra = divmod(n, k)
        sizes = [base + 1] * extra + [base] * (k - extra)
        return split(input, sizes, d)
    # negative indices count from the end (as in Python slicing), then clamp to [0, n]
    bounds = (
        [0]
        + [min(max(int(i) + n if int(i) < 0 else int(i), 0), n) for i in indices_or_sections]
        + [n]
    )
    return tuple(
        input.narrow(d, a, max(b - a, 0)) for a, b in zip(bounds, bounds[1:], strict=False)
    )
