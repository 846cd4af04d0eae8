"""The op table's core rows: arithmetic (add ... pow, neg, abs), exp/log/sqrt and the
trigonometric basics, activations (sigmoid, relu, gelu, silu), rounding, comparisons, logical
and bitwise ops, maximum/minimum, where and clamp; with the numpy functions and operand
checks only they use. optable.py joins them with the other row families into `OPS`.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _core_dt
from . import derivatives as dx
from . import npmath
from .opdef import INT_DIV, NO_BOOL, NO_INPLACE, QUIET, UNSIGNED, not_implemented

__all__ = ["ROWS"]

_BOOL = np.dtype(np.bool_)
_CMP_EQ = {"inplace": False, "complex_kernel": True}
_CK = {"complex_kernel": True}  # (their complex overloads: fusion/preamble_complex_*.py)
_CMP = {"inplace": False, "real_only": True}


# -- numpy functions that depend on the compute dtype --------------------------------------
def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iub"


def _pow(a, b):
    try:
        ints = a.dtype.kind in "iu"
    except AttributeError:  # a Python number base (cuda's routine path passes it as it is)
        ints = type(a) is int
    return npmath.int_pow(a, b) if ints else np.power(a, b)


def _clamp(x, lo=None, hi=None):
    if lo is not None:
        x = np.where(x < lo, lo, x) if _is_int(x) else np.maximum(x, lo)
    if hi is not None:
        x = np.where(x > hi, hi, x) if _is_int(x) else np.minimum(x, hi)
    return x


def _round(x):
    return x.copy() if _is_int(x) else np.rint(x)  # rint: half to even, like torch.round


_NEG_BOOL = (
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
    "a mask, use the `~` or `logical_not()` operator instead."
)
_SUB_BOOL = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


# -- rules that depend on the operands, not only on their common dtype ---------------------
def _check_pow(operands, common):
    base, exp = operands
    if common is _core_dt.bool and type(exp) is not bool:
        raise not_implemented("pow", common)
    if type(exp) is int and exp < 0 and common.category == _core_dt.INT:
        raise RuntimeError(
            "Integers to negative integer powers are not allowed; use a float "
            "exponent (e.g. ** -1.0) or convert the base with .float()"
        )


def _check_clamp(operands, common):
    if common is _core_dt.bool and any(type(x) is bool for x in operands[1:]):
        raise not_implemented("clamp", common)


def _check_where(operands, common):
    dt = getattr(operands[0], "dtype", None)  # a Tensor, or a value traced by @gt.fuse
    if isinstance(dt, _core_dt.DType) and dt is not _core_dt.bool and dt is not _core_dt.uint8:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{_core_dt.SCALAR_TYPE_NAMES[dt.name]}; compare it first (e.g. cond != 0)"
        )


def _complex_sigmoid(x):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))  # numpy protocols: cupy arrays stay on the device


def _complex_silu(x):
    return x * _complex_sigmoid(x)


ROWS = [
    # name, arity, kind, cuda template, numpy function, extra fields
    # add, sub, mul, div, neg, eq, ne and where take complex operands in their kernels too
    # (complex_kernel: fusion/preamble_complex.py's operators; a real operand is converted
    # as it is loaded)
    (
        "add",
        2,
        "promote",
        "({0} + {1})",
        np.add,
        {"dunder": "add", "grad": dx.add, "complex_kernel": True},
    ),
    (
        "sub",
        2,
        "promote",
        "({0} - {1})",
        np.subtract,
        {
            "no_bool": _SUB_BOOL,
            "aliases": ("subtract",),
            "dunder": "sub",
            "grad": dx.sub,
            "complex_kernel": True,
        },
    ),
    (
        "mul",
        2,
        "promote",
        "({0} * {1})",
        np.multiply,
        {
            "aliases": ("multiply",),
            "dunder": "mul",
            "opmath_scalar": True,
            **UNSIGNED,
            "grad": dx.mul,
            "complex_kernel": True,
        },
    ),
    (
        "div",
        2,
        "float",
        "({0} / {1})",
        np.true_divide,
        {
            "aliases": ("divide", "true_divide"),
            "dunder": "truediv",
            "quiet": True,
            "opmath_scalar": True,
            **UNSIGNED,
            "grad": dx.div,
            "complex_kernel": True,
        },
    ),
    (
        "floor_divide",
        2,
        "promote",
        "gt_floordiv({0}, {1})",
        np.floor_divide,
        {
            **NO_BOOL,
            **INT_DIV,
            "dunder": "floordiv",
            "opmath_scalar": True,
            "grad": dx.floor_divide,
        },
    ),
    (
        "remainder",
        2,
        "promote",
        "gt_remainder({0}, {1})",
        np.remainder,
        {**NO_BOOL, **INT_DIV, "dunder": "mod", "grad": dx.remainder},
    ),
    (
        "pow",
        2,
        "promote",
        "gt_pow({0}, {1})",
        _pow,
        {"dunder": "pow", "quiet": True, "operand_check": _check_pow, **_CK, "grad": dx.pow},
    ),
    (
        "neg",
        1,
        "same",
        "(-{0})",
        np.negative,
        {
            "no_bool": _NEG_BOOL,
            "aliases": ("negative",),
            "dunder": "neg",
            "grad": dx.neg,
            "complex_kernel": True,
        },
    ),
    (
        "abs",
        1,
        "same",
        "gt_abs({0})",  # complex: hypot(re, im), a real result (fusion/preamble_complex.py)
        lambda x: x.copy() if x.dtype == _BOOL else np.abs(x),
        {
            **NO_BOOL,
            "dunder": "abs",
            "grad": dx.abs,
            "complex_kernel": True,
            "complex_to_real": True,
        },
    ),
    # complex: glibc's cexp, step for step (fusion/preamble_complex.py)
    ("exp", 1, "float", "gt_exp({0})", np.exp, {**QUIET, "grad": dx.exp, "complex_kernel": True}),
    # log, sqrt of complex: glibc's clog/csqrt in the kernel (fusion/preamble_complex.py)
    ("log", 1, "float", "gt_log({0})", np.log, {**QUIET, "complex_kernel": True, "grad": dx.log}),
    ("log1p", 1, "float", "gt_log1p({0})", np.log1p, {**QUIET, **_CK, "grad": dx.log1p}),
    (
        "sqrt",
        1,
        "float",
        "gt_sqrt({0})",
        np.sqrt,
        {**QUIET, "complex_kernel": True, "grad": dx.sqrt},
    ),
    ("rsqrt", 1, "float", "gt_rsqrt({0})", npmath.rsqrt, {**QUIET, **_CK, "grad": dx.rsqrt}),
    ("sin", 1, "float", "gt_sin({0})", np.sin, {**QUIET, **_CK, "grad": dx.sin}),
    ("cos", 1, "float", "gt_cos({0})", np.cos, {**QUIET, **_CK, "grad": dx.cos}),
    ("tanh", 1, "float", "gt_tanh({0})", np.tanh, {**QUIET, **_CK, "grad": dx.tanh}),
    (
        "sigmoid",
        1,
        "float",
        "gt_sigmoid({0})",
        npmath.sigmoid,
        {
            "quiet": True,
            "complex_fn": _complex_sigmoid,
            "complex_kernel": True,  # (its overload: _complex_sigmoid's steps)
            "grad": dx.sigmoid,
        },
    ),
    (
        "relu",
        1,
        "same",
        "gt_relu({0})",
        npmath.relu,
        {**NO_BOOL, "real_only": True, "grad": dx.relu},
    ),
    (
        "gelu",
        1,
        "float",
        {"none": "gt_gelu({0})", "tanh": "gt_gelu_tanh({0})"},
        lambda x, approximate="none": (npmath.gelu_tanh if approximate == "tanh" else npmath.gelu)(
            x
        ),
        {
            "param": "approximate",
            "param_default": "none",
            **NO_BOOL,
            "float_only": True,
            "quiet": True,
            "real_only": True,
            "inplace": False,
            "grad": dx.gelu,
        },
    ),
    (
        "silu",
        1,
        "float",
        "gt_silu({0})",
        npmath.silu,
        {
            **NO_BOOL,
            "float_only": True,
            "quiet": True,
            "complex_fn": _complex_silu,
            "complex_kernel": True,
            "inplace": False,
            "grad": dx.silu,
        },
    ),
    (
        "floor",
        1,
        "same",
        "gt_floor({0})",
        npmath.keep_ints(np.floor),
        {**NO_BOOL, "real_only": True, "grad": dx.zero},
    ),
    (
        "ceil",
        1,
        "same",
        "gt_ceil({0})",
        npmath.keep_ints(np.ceil),
        {**NO_BOOL, "real_only": True, "grad": dx.zero},
    ),
    ("round", 1, "same", "gt_round({0})", _round, {**NO_BOOL, "real_only": True, "grad": dx.zero}),
    ("sign", 1, "same", "gt_sign({0})", npmath.sign, {"real_only": True, "grad": dx.zero}),
    ("eq", 2, "compare", "({0} == {1})", np.equal, {**_CMP_EQ, **UNSIGNED, "dunder": "eq"}),
    ("ne", 2, "compare", "({0} != {1})", np.not_equal, {**_CMP_EQ, **UNSIGNED, "dunder": "ne"}),
    ("lt", 2, "compare", "({0} < {1})", np.less, {**_CMP, "dunder": "lt"}),
    ("le", 2, "compare", "({0} <= {1})", np.less_equal, {**_CMP, "dunder": "le"}),
    ("gt", 2, "compare", "({0} > {1})", np.greater, {**_CMP, "dunder": "gt"}),
    ("ge", 2, "compare", "({0} >= {1})", np.greater_equal, {**_CMP, "dunder": "ge"}),
    # (a complex operand is read as bool: nonzero, gt_c64's operator bool)
    ("logical_and", 2, "logical", "({0} && {1})", np.logical_and, {**NO_INPLACE, **_CK}),
    ("logical_or", 2, "logical", "({0} || {1})", np.logical_or, {**NO_INPLACE, **_CK}),
    ("logical_xor", 2, "logical", "({0} != {1})", np.logical_xor, {**NO_INPLACE, **_CK}),
    ("logical_not", 1, "logical", "(!{0})", np.logical_not, _CK),
    (
        "bitwise_and",
        2,
        "bitwise",
        "({0} & {1})",
        np.bitwise_and,
        {"int_only": True, **UNSIGNED, "dunder": "and"},
    ),
    (
        "bitwise_or",
        2,
        "bitwise",
        "({0} | {1})",
        np.bitwise_or,
        {"int_only": True, **UNSIGNED, "dunder": "or"},
    ),
    (
        "bitwise_xor",
        2,
        "bitwise",
        "({0} ^ {1})",
        np.bitwise_xor,
        {"int_only": True, **UNSIGNED, "dunder": "xor"},
    ),
    (
        "bitwise_not",
        1,
        "bitwise",
        "gt_bitnot({0})",
        np.invert,
        {"int_only": True, "inplace": False},
    ),
    (
        "maximum",
        2,
        "promote",
        "gt_max({0}, {1})",
        np.maximum,
        {"real_only": True, "grad": dx.maximum},
    ),
    (
        "minimum",
        2,
        "promote",
        "gt_min({0}, {1})",
        np.minimum,
        {"real_only": True, "grad": dx.minimum},
    ),
    (
        "where",
        3,
        "where",
        "({0} ? {1} : {2})",
        npmath.where,
        {
            "operand_check": _check_where,
            "inplace": False,
            "grad": dx.where_grad,
            "complex_kernel": True,
        },
    ),
    (
        "clamp",
        3,
        "clamp",
        "gt_clamp({0}, {1}, {2})",
        _clamp,
        {"real_only": True, "aliases": ("clip",), "operand_check": _check_clamp, "grad": dx.clamp},
    ),
]
