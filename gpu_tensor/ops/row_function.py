"""The module function of a binary op-table row (`gt.hypot`, `gt.fmod`, ...): torch's
overload rules for Python numbers, `out=`, autograd, and the dispatch of ops/_dispatch.py
(the Tensor operator's fast path, or the general `apply`, which a value traced by `@gt.fuse`
turns into a graph node).

ops/elementwise.py builds the core rows' functions with it too.
"""

from __future__ import annotations

from .._grad import STATE, record
from .._out import call as out_call
from .._out import keyword_out
from .._tensor import Tensor
from ._dispatch import _BINARY, _RBINARY, apply, binary

__all__ = ["binary_function", "tensor_like"]


def tensor_like(x) -> bool:
    """A Tensor, or a value traced by @gt.fuse (which stands for one)."""
    return isinstance(x, Tensor) or hasattr(type(x), "__gt_elementwise__")


def _refuse(key, position, x):
    name = ("input", "other")[position - 1]
    return TypeError(
        f"{key}(): argument '{name}' (position {position}) must be Tensor, not "
        f"{type(x).__name__}; wrap a number with gt.tensor(value)"
    )


def binary_function(key, *, tensors_only=False, tensor_first=False):
    """`f(input, other, *, out=None)` for the row `key`. `tensors_only`: torch has no
    overload for a Python number operand (hypot, atan2, ...); `tensor_first`: only the
    second operand may be a number (fmod, copysign)."""
    fwd, rev = _BINARY[key], _RBINARY[key]
    first_only = tensors_only or tensor_first

    def f(input, other, out=None):  # out: positional-or-keyword, see _out.keyword_out
        if out is not None:
            return out_call(key, f, (input, other), {}, out)
        if type(input) is Tensor:
            if tensors_only and not tensor_like(other):
                raise _refuse(key, 2, other)
            r = fwd(input, other)  # fwd and rev decide about autograd themselves
        elif type(other) is Tensor and not first_only:
            r = rev(other, input)
        else:  # Tensor subclasses, traced values, or a refused number
            if first_only and not tensor_like(input):
                raise _refuse(key, 1, input)
            if tensors_only and not tensor_like(other):
                raise _refuse(key, 2, other)
            if STATE.enabled and (
                getattr(input, "_requires_grad", False) or getattr(other, "_requires_grad", False)
            ):
                return record(f, None, (input, other), None)
            return apply(key, input, other)
        return binary(key, input, other) if r is NotImplemented else r  # raises TypeError

    f.__name__ = f.__qualname__ = key
    f.__gt_differentiable__ = True
    f.__doc__ = f"torch.{key}: elementwise, with broadcasting and type promotion."
    return keyword_out(f)
