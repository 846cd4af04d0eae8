"""Eager elementwise ops with broadcasting and PyTorch's type promotion (`gt.add`, `gt.exp`,
`gt.where`, ...). The dispatch (promotion, devices, fast path) is in `_dispatch.py`."""

from __future__ import annotations

from .. import dtype as _dt
from .._grad import differentiable
from .._out import call as out_call
from .._out import keyword_out
from .._tensor import Tensor
from ..fusion.optable import OPS
from ._dispatch import _HALF, apply, binary, make_unary, not_implemented
from .row_function import binary_function, tensor_like

__all__ = [
    "add",
    "sub",
    "subtract",
    "mul",
    "multiply",
    "div",
    "divide",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "neg",
    "negative",
    "abs",
    "exp",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "silu",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "maximum",
    "minimum",
    "where",
    "clamp",
    "clip",
    "square",
    "reciprocal",
    "isnan",
    "isinf",
    "isfinite",
    "conj",
    "conj_physical",
    "real",
    "imag",
    "lerp",
]


# torch's functions with no Scalar overload: gt.maximum(t, 2.5) is a TypeError there too
_TENSORS_ONLY = {"maximum", "minimum", "logical_and", "logical_or", "logical_xor"}


def _b(key):
    """The module function of a binary row (row_function.binary_function)."""
    return binary_function(key, tensors_only=key in _TENSORS_ONLY)


def _u(key):
    return make_unary(key)


mul = multiply = _b("mul")
floor_divide = _b("floor_divide")
remainder = _b("remainder")
pow = _b("pow")  # noqa: A001
maximum, minimum = _b("maximum"), _b("minimum")
eq, ne, lt, le, gt, ge = (_b(k) for k in ("eq", "ne", "lt", "le", "gt", "ge"))
logical_and, logical_or, logical_xor = (_b(k) for k in ("logical_and", "logical_or", "logical_xor"))
bitwise_and, bitwise_or, bitwise_xor = (_b(k) for k in ("bitwise_and", "bitwise_or", "bitwise_xor"))
neg = negative = _u("neg")
abs = _u("abs")  # noqa: A001
exp, log, log1p, sqrt, rsqrt = (_u(k) for k in ("exp", "log", "log1p", "sqrt", "rsqrt"))
sin, cos, tanh, sigmoid, relu, silu = (
    _u(k) for k in ("sin", "cos", "tanh", "sigmoid", "relu", "silu")
)
floor, ceil, sign = _u("floor"), _u("ceil"), _u("sign")
logical_not, bitwise_not = _u("logical_not"), _u("bitwise_not")


@differentiable
def round(input, decimals=0, *, out=None):  # noqa: A001
    if out is not None:
        return out_call("round", round, (input, decimals), {}, out, "same")
    if decimals == 0 or input.dtype is _dt.bool:
        return apply("round", input)
    scale = 10.0**decimals
    return div(apply("round", mul(input, scale)), scale)


@differentiable
def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return apply("gelu", input, approximate=approximate)


@differentiable
def add(input, other, *, alpha=1, out=None):
    if out is not None:
        return out_call("add", add, (input, other), {"alpha": alpha}, out)
    if alpha != 1:
        other = mul(other, alpha)
    return binary("add", input, other)


@differentiable
def sub(input, other, *, alpha=1, out=None):
    if out is not None:
        return out_call("sub", sub, (input, other), {"alpha": alpha}, out)
    if alpha != 1:
        other = mul(other, alpha)
    return binary("sub", input, other)


subtract = sub


@differentiable
def div(input, other, *, rounding_mode=None, out=None):
    if out is not None:
        return out_call("div", div, (input, other), {"rounding_mode": rounding_mode}, out)
    if rounding_mode is None:
        return binary("div", input, other)
    if rounding_mode == "floor":
        if _dt.result_type(input, other).category == _dt.COMPLEX:
            raise not_implemented("div_floor", _dt.result_type(input, other))
        return binary("floor_divide", input, other)
    if rounding_mode == "trunc":
        return _div_trunc(input, other)
    raise ValueError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
        f"but found {rounding_mode!r}"
    )


divide = true_divide = div


def _div_trunc(a, b):
    common = _dt.result_type(a, b)
    if common is _dt.bool or common.category == _dt.COMPLEX:
        raise not_implemented("div_trunc", common)
    if common.category < _dt.FLOAT:
        # torch casts both operands to the result dtype first (uint8 / int16(-3) divides by 253)
        a, b = (x.to(common) if isinstance(x, Tensor) else x for x in (a, b))
        return _int_trunc_div(a, b, common)
    if common in _HALF:  # truncate the float32 quotient, then round once to the half type
        a = a.to(common).to(_dt.float32) if tensor_like(a) else a
        if tensor_like(b):  # a one-element divisor keeps its precision (the opmath_scalar rule)
            b = (b if _one_element(b) and b.dtype is not common else b.to(common)).to(_dt.float32)
    return trunc(binary("div", a, b)).to(common)  # trunc: the table's row (traced too)


def _one_element(x) -> bool:
    return x.numel() == 1 if isinstance(x, Tensor) else x.ndim == 0  # traced: 0-dim only


def _int_trunc_div(a, b, common):
    fl = floor_divide(a, b)
    rem = remainder(a, b)
    neg = ne(
        lt(a, 0) if isinstance(a, Tensor) else a < 0, lt(b, 0) if isinstance(b, Tensor) else b < 0
    )
    fix = logical_and(ne(rem, 0), neg)
    return add(fl, fix.to(common))


@differentiable
def where(condition, input=None, other=None, *, out=None):
    if out is not None:
        return out_call("where", where, (condition, input, other), {}, out, "same")
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    return apply("where", condition, input, other)


@differentiable
def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    if out is not None:
        return out_call("clamp", clamp, (input, min, max), {}, out, "same")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return apply("clamp", input, min, max)


clip = clamp


@differentiable
@keyword_out
def square(input, out=None):
    if out is not None:
        return out_call("square", square, (input,), {}, out)
    return binary("mul", input, input) if input.dtype is not _dt.bool else pow(input, 2)


@differentiable
@keyword_out
def reciprocal(input, out=None):
    if out is not None:
        return out_call("reciprocal", reciprocal, (input,), {}, out)
    return div(1.0, input) if input.dtype.category < _dt.FLOAT else div(1, input)


def _part_view(t, arr):
    v = t._view_of(arr)
    v.dtype = t.dtype.to_real()
    return v


_conj, _conj_physical = _u("conj"), _u("conj_physical")  # the rows' warm paths


@differentiable  # formula: autograd/formulas_decomp.py (complex parts)
def conj(input):
    """The row conj for complex tensors (a copy: no lazy conjugate flag here); a real tensor
    is returned itself, as torch does."""
    if input.dtype.category != _dt.COMPLEX:
        return input
    return _conj(input)


@differentiable  # formula: autograd/formulas_decomp.py (complex parts)
def conj_physical(input, *, out=None):
    """The row conj_physical: like conj, always computed for complex tensors; a real tensor
    is returned itself (torch 2.13 too)."""
    if out is not None:
        return out_call("conj_physical", conj_physical, (input,), {}, out, "same")
    if input.dtype.category != _dt.COMPLEX:
        return input
    return _conj_physical(input)


@differentiable  # formula: autograd/formulas_decomp.py (complex parts)
def real(input):
    """The real parts (a view for complex tensors, the tensor itself otherwise)."""
    if input.dtype.category != _dt.COMPLEX:
        return input
    return _part_view(input, input._data.real)


@differentiable  # formula: autograd/formulas_decomp.py (complex parts)
def imag(input):
    if input.dtype.category != _dt.COMPLEX:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part_view(input, input._data.imag)


@differentiable
def lerp(input, end, weight, *, out=None):
    if out is not None:
        return out_call("lerp", lerp, (input, end, weight), {}, out)
    return add(input, mul(weight, sub(end, input)))


# -- fmod, the elementwise flags and the binary special functions: rows of the op table whose
# functions live in special.py (issue 23); every row is named here too, where the method
# table (gpu_tensor/_tensor_methods.py) reads the rows' functions
from . import special as _special_rows  # noqa: E402

globals().update(_special_rows.BINARY_ROWS)
fmod, isnan, isinf, isfinite = (
    _special_rows.BINARY_ROWS[k] for k in ("fmod", "isnan", "isinf", "isfinite")
)
trunc = _special_rows.trunc  # a row of the table (issue 23), with its alias fix

# -- the special-function rows of the op table (issue 23) --------------------------------------
# Their functions live in special.py and bessel.py; every row of the table is also named here,
# where the method table (gpu_tensor/_tensor_methods.py) reads the rows' functions.
from . import bessel as _bessel  # noqa: E402

globals().update(_special_rows.ROWS)
globals().update(_bessel.ROWS)
# every row's aliases (arcsin, fix, ...) name its function
globals().update({a: globals()[k] for k, op in OPS.items() for a in op.aliases if k in globals()})

# -- the in-place methods `<name>_` whose out-of-place op is named here: every row with
# `inplace` (and its aliases), plus the composites above. The method table binds them all;
# autograd records those with a derivative as their out-of-place op on a copy.
_COMPOSITES_INPLACE = ("fmod", "trunc", "square", "reciprocal", "lerp")
INPLACE = tuple(n for k, op in OPS.items() if op.inplace for n in (k, *op.aliases))
INPLACE += _COMPOSITES_INPLACE
INPLACE_GRAD = tuple(
    n for k, op in OPS.items() if op.inplace and op.grad is not None for n in (k, *op.aliases)
)
INPLACE_GRAD += _COMPOSITES_INPLACE
