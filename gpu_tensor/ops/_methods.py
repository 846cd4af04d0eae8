"""Tensor methods and operators for the ops (`t.sum()`, `a + b`, `t.add_(x)`, `t[i] = v`)."""

from __future__ import annotations

from .. import _grad
from .. import dtype as _dt
from . import _dispatch, indexing, join, linalg, reduction, shape
from . import elementwise as ew
from ._inplace import fill_, inplace, zero_

__all__ = ["attach"]


def _binop(key):
    return _dispatch._BINARY[key], _dispatch._RBINARY[key]


def _rev(fn):
    def rop(self, other):
        return fn(other, self)

    return rop


def _invert(self):
    return ew.logical_not(self) if self.dtype is _dt.bool else ew.bitwise_not(self)


def _matmul(self, other):
    return linalg.matmul(self, other)


def _rmatmul(self, other):
    return linalg.matmul(other, self)


def _copy_(self, src, non_blocking=False):
    from .._move import copy_

    return copy_(self, src, non_blocking)


def _where(self, condition, other):
    return ew.where(condition, self, other)


def _clamp_min(self, min):  # noqa: A002
    return ew.clamp(self, min=min)


def _clamp_max(self, max):  # noqa: A002
    return ew.clamp(self, max=max)


def _inplace_op(key):
    def m(self, other):
        return getattr(self, key + "_")(other)

    return m


_METHODS_SAME_NAME = [
    # elementwise
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
    "floor_divide", "remainder", "fmod", "pow", "neg", "negative", "abs", "exp", "log",
    "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "floor", "ceil",
    "round", "trunc", "sign", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "maximum", "minimum", "clamp", "clip", "square", "reciprocal", "isnan",
    "isinf", "isfinite", "conj", "lerp",
]
_REDUCTIONS = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
               "var", "std", "all", "any", "norm", "cumsum", "cumprod", "logsumexp",
               "count_nonzero"]
_INPLACE = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "neg", "abs",
            "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
            "floor", "ceil", "round", "trunc", "sign", "clamp", "clip", "square",
            "reciprocal", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
            "logical_not", "lerp", "fmod"]


def attach(cls) -> None:
    for name in _METHODS_SAME_NAME:
        setattr(cls, name, getattr(ew, name))
    for name in _REDUCTIONS:
        setattr(cls, name, getattr(reduction, name))
    for name in _INPLACE:
        setattr(cls, name + "_", _grad.inplace(name + "_", inplace(getattr(ew, name), name + "_")))
    cls.gelu = ew.gelu
    cls.silu = ew.silu
    cls.real = property(ew.real)
    cls.imag = property(ew.imag)
    cls.clamp_min = _clamp_min
    cls.clamp_max = _clamp_max
    cls.where = _where
    cls.fill_ = _grad.inplace("fill_", fill_)
    cls.zero_ = _grad.inplace("zero_", zero_)
    cls.copy_ = _grad.inplace("copy_", _copy_)
    for name in ("matmul", "mm", "bmm", "mv", "dot", "outer"):
        setattr(cls, name, getattr(linalg, name))
    for name in ("split", "chunk", "tensor_split"):
        setattr(cls, name, getattr(join, name))
    for name in ("gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
                 "index_select", "masked_fill", "masked_fill_", "masked_select", "nonzero",
                 "take", "index_put"):
        fn = getattr(indexing, name)
        setattr(cls, name, _grad.inplace(name, fn) if name.endswith("_") else fn)
    cls.__getitem__ = indexing.getitem
    cls.__setitem__ = _grad.inplace("__setitem__", indexing.setitem)

    for dunder, key in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                        ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow"),
                        ("and", "bitwise_and"), ("or", "bitwise_or"),
                        ("xor", "bitwise_xor")):
        op, rop = _binop(key)
        setattr(cls, f"__{dunder}__", op)
        setattr(cls, f"__r{dunder}__", rop)
    for dunder, key in (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"),
                        ("ge", "ge")):
        setattr(cls, f"__{dunder}__", _binop(key)[0])
    for dunder, name in (("iadd", "add_"), ("isub", "sub_"), ("imul", "mul_"),
                         ("itruediv", "div_"), ("ifloordiv", "floor_divide_"),
                         ("imod", "remainder_"), ("ipow", "pow_"), ("iand", "bitwise_and_"),
                         ("ior", "bitwise_or_"), ("ixor", "bitwise_xor_")):
        setattr(cls, f"__{dunder}__", getattr(cls, name))
    cls.__neg__ = ew.neg
    cls.__pos__ = lambda self: self
    cls.__abs__ = ew.abs
    cls.__invert__ = _invert
    cls.__matmul__ = _matmul
    cls.__rmatmul__ = _rmatmul
    cls.__hash__ = object.__hash__
    shape.attach(cls)
    cls.type_as = lambda self, other: self.to(other.dtype)
    _attach_new(cls)


def _attach_new(cls) -> None:
    """t.new_zeros(...) and friends: factories defaulting to t's dtype and device."""

    def new(name):
        def method(self, *args, dtype=None, device=None, requires_grad=False, **kw):
            from .. import creation  # at call time: creation imports tensor, which imports us

            return getattr(creation, name)(
                *args, dtype=self.dtype if dtype is None else dtype,
                device=self.device if device is None else device,
                requires_grad=requires_grad, **kw)

        method.__name__ = "new_" + name
        return method

    for name in ("zeros", "ones", "empty", "full", "tensor"):
        setattr(cls, "new_" + name, new(name))
