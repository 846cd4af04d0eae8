"""Matrix products: matmul (`@`), mm, bmm, mv, dot, outer, einsum.

Like torch, operands must share a dtype (no promotion: a float32 @ float64 mistake is an
error, not a silent upcast); half types compute in float32 and round back.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._grad import differentiable
from .._host_memory import host_memory
from .._out import call as out_call
from .._out import keyword_out
from .._tensor import Tensor
from ..backends import get_backend
from ..backends.cuda_gemm import bf16_matmul
from ._dispatch import mismatch as _mismatch
from ._result import array_result

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "outer", "einsum"]

_HALF = (_dt.float16, _dt.bfloat16)


def _check(name, a, b):
    for x in (a, b):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): expected Tensor operands, got {type(x).__name__}")
    if a.device is not b.device:
        raise _mismatch(a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{name}: expected both operands to have the same dtype, but got {a.dtype.name} "
            f"and {b.dtype.name}; convert one with .to(dtype)"
        )
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"{name}: both arguments need at least 1 dimension, got {a.ndim}D and {b.ndim}D"
        )


def _result(bk, r, like):
    """A tensor of `like`'s device and dtype over the product `r` (numpy returns scalars for
    1-D dot products; half types computed in float32 round back here)."""
    return array_result(bk, r, like.device, like.dtype)


def _run(name, a, b, fn):
    """`fn` ("matmul", "dot" or "outer": the xp routine, which takes `out=`) of a and b,
    computed where the backend puts results (emulated cuda: straight into allocator
    memory)."""
    bk = get_backend(a.device)
    x, y = a._data, b._data
    comp = np.float32 if a.dtype in _HALF else a.dtype.np
    if a.dtype is _dt.float16 and not bk.host_arrays:
        comp = np.float16  # cupy: cuBLAS gemmEx on the fp16 operands, fp32 accumulation
    elif a.dtype is _dt.bfloat16 and not bk.host_arrays and fn == "matmul":
        r = bf16_matmul(bk, x, y)  # cuBLAS on the bf16 bits, fp32 accumulation
        if r is not None:
            return Tensor._make(r, a.device, a.dtype, None)
    if x.dtype != comp:
        x, y = bk.astype(x, comp), bk.astype(y, comp)
    routine = getattr(bk.xp, fn)
    try:
        r = bk.compute_into(
            lambda x, y, out=None: routine(x, y, out=out), (x, y), lambda: _product_plan(fn, x, y)
        )
    except ValueError as exc:
        raise RuntimeError(
            f"{name}: shapes {list(a.shape)} and {list(b.shape)} cannot be multiplied ({exc})"
        ) from None
    return _result(bk, r, a)


def _product_plan(fn, x, y):
    """`(shape, dtype, c_order)` of the product, or None when the shapes do not multiply
    (numpy then raises its own error). numpy lays a matmul out in C order unless it has
    batch dims, which follow the operands' layout; dot and outer are always C order."""
    if fn == "outer":
        return (x.size, y.size), x.dtype, True
    if fn == "dot":
        return (), x.dtype, True
    xs, ys = x.shape, y.shape
    if xs[-1] != ys[-2 if len(ys) > 1 else -1]:
        return None
    batch = ()
    if len(xs) > 2 or len(ys) > 2:
        try:
            batch = np.broadcast_shapes(xs[:-2], ys[:-2])
        except ValueError:
            return None
    core = xs[-2:-1] + ys[-1:] if len(ys) > 1 else xs[-2:-1]
    return batch + core, x.dtype, not batch


@differentiable
@keyword_out
def matmul(input, other, out=None):
    if out is not None:
        return out_call("matmul", matmul, (input, other), {}, out, "same")
    _check("matmul", input, other)
    return _run("matmul", input, other, "matmul")


@differentiable
@keyword_out
def mm(input, mat2, out=None):
    if out is not None:
        return out_call("mm", mm, (input, mat2), {}, out, "same")
    _check("mm", input, mat2)
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return _run("mm", input, mat2, "matmul")


@differentiable
@keyword_out
def bmm(input, mat2, out=None):
    if out is not None:
        return out_call("bmm", bmm, (input, mat2), {}, out, "same")
    _check("bmm", input, mat2)
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: {input.shape[0]} vs {mat2.shape[0]}")
    return _run("bmm", input, mat2, "matmul")


@differentiable
@keyword_out
def mv(input, vec, out=None):
    if out is not None:
        return out_call("mv", mv, (input, vec), {}, out, "same")
    _check("mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"mv: expected a 2D matrix and a 1D vector, got {input.ndim}D and {vec.ndim}D"
        )
    return _run("mv", input, vec, "matmul")


@differentiable
@keyword_out
def dot(input, other, out=None):
    if out is not None:
        return out_call("dot", dot, (input, other), {}, out, "same")
    _check("dot", input, other)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return _run("dot", input, other, "dot")


@differentiable
@keyword_out
def outer(input, vec2, out=None):
    if out is not None:
        return out_call("outer", outer, (input, vec2), {}, out, "same")
    _check("outer", input, vec2)
    return _run("outer", input, vec2, "outer")


def _einsum_plan(equation, arrs):
    """(shape, dtype, c_order) of np.einsum(equation, *arrs) for a compute_into plan, or
    None where numpy should allocate: an ellipsis, a malformed equation (numpy's error),
    or a result numpy does not lay out in C order (found on the operands' first two
    elements of every dim, as compute_into does for its own probe)."""
    if not isinstance(equation, str) or "." in equation:
        return None
    eq = equation.replace(" ", "")
    inputs, arrow, output = eq.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(arrs):
        return None
    sizes = {}
    for term, a in zip(terms, arrs, strict=True):
        if len(term) != a.ndim:
            return None
        for label, n in zip(term, a.shape, strict=True):
            sizes[label] = max(sizes.get(label, 1), n)  # (a size-1 dim broadcasts)
    if not arrow:  # implicit: the labels seen once, in order (numpy's: by code point)
        output = "".join(sorted(c for c in sizes if inputs.count(c) == 1))
    if any(c not in sizes for c in output):
        return None
    like = np.einsum(eq, *[a[(slice(0, 2),) * a.ndim] for a in arrs])
    if not like.flags.c_contiguous:
        return None
    return tuple(sizes[c] for c in output), like.dtype, True


@differentiable  # formula: autograd/formulas_einsum.py
@host_memory
def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    first = operands[0]
    for o in operands[1:]:
        _check("einsum", first, o) if o.ndim and first.ndim else None
    bk = get_backend(first.device)
    comp = np.float32 if first.dtype in _HALF else first.dtype.np
    arrs = [o._data if o._data.dtype == comp else bk.astype(o._data, comp) for o in operands]
    try:
        if len(arrs) < 2:  # (one operand: numpy may return a view, as torch does)
            r = bk.xp.einsum(equation, *arrs)
        else:  # a fresh result: where the backend computes (emulated cuda: allocator memory)

            def product(*a, out=None):  # (cupy's einsum takes no out=, not even None)
                if out is None:
                    return bk.xp.einsum(equation, *a)
                return bk.xp.einsum(equation, *a, out=out)

            r = bk.compute_into(product, arrs, lambda: _einsum_plan(equation, arrs))
    except ValueError as exc:  # numpy's words for a bad equation or shapes: torch's class
        raise RuntimeError(
            f"einsum(): {exc} (equation {equation!r} with operand shapes "
            f"{[tuple(o.shape) for o in operands]})"
        ) from None
    return _result(bk, r, first)
