"""THE elementwise op table: one key per op, its CUDA expression, its numpy function and
every rule about it. Eager dispatch (ops/_dispatch.py), the `@gt.fuse` tracer (trace.py),
the module functions' aliases, Tensor's methods and operators (_tensor_methods.py) and the
Proxy's operators all read this table, so eager and fused code cannot disagree.

Adding an op means: one row here (with its derivative, `grad`, written in
`fusion/derivatives.py` when it is differentiable: eager autograd and the fused backward both
read it), one `gt_*` CUDA helper in `fusion/preamble.py` (when the expression needs one), its
numpy reference in `fusion/npmath.py` (when numpy has none) and one module function in
`ops/elementwise.py`; `autograd/formulas_elementwise.py` then names torch's node for it.

Keys are torch's function names. Each `OpDef` carries
- `cuda`: an expression template over operands `{0} {1} {2}` that are already in the op's
  compute type (float for half/bfloat16); helpers named `gt_*` live in `fusion/preamble.py`
  and are overloaded per C type, so one template serves every dtype; `{storage}` names the C
  type the result is stored in (nextafter steps in it);
- `np_fn`: the numpy function over arrays in the same compute dtypes (`computes_in`);
- the dtype rule (`kind`): how operands promote and what dtype the result has.

`OpDef.numpy(*operands, out_dtype=None)` is the whole eager op on numpy arrays with PyTorch's
semantics (promotion incl. Python scalars, true division, floor/Python-sign rules, half-to-even
round, NaN-propagating max/min/relu/clamp, half/bfloat16 computed in float32 and cast back);
tests use it as the reference. Codegen reads `cuda`; eager dispatch runs `np_fn` through the
backend with the same rules (`refuse`, the flags below).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import dtype as _core_dt
from . import derivatives as dx
from . import derivatives_special as dxs
from . import npmath, npspecial
from .dtypes import as_np_dtype, category, compute_dtype, default_float, result_type

__all__ = ["OpDef", "OPS", "KINDS", "not_implemented"]

KINDS = ("promote", "same", "float", "compare", "logical", "bitwise", "where", "clamp", "double")
_BOOL = np.dtype(np.bool_)


@dataclass(frozen=True)
class OpDef:
    """One elementwise op. `kind` is the dtype rule:

    promote  operands promote together; the result has that dtype (add, maximum, ...)
    same     unary, the result keeps the input dtype (neg, abs, floor, relu, ...)
    float    like promote, but integer/bool results become float32 (div, exp, gelu, ...)
    compare  operands promote together; the result is bool
    logical  operands are read as bool (nonzero); the result is bool
    bitwise  like promote, integer and bool only
    where    where(cond, a, b): cond read as bool; a and b promote together
    clamp    clamp(x, min, max): all three promote together; a missing bound is None
    double   computed in and returning float64 (complex128 for complex operands): float_power
    """

    name: str
    arity: int
    kind: str
    cuda: str | Mapping[str, str]  # a dict is keyed by the value of the op's one parameter
    np_fn: Callable
    param: str | None = None  # the op's keyword parameter (gelu: approximate)
    param_default: str | None = None
    no_bool: str | None = None  # torch's message when a bool operand is refused
    int_only: bool = False
    refuse_bool: bool = False  # torch has no kernel when the operands promote to bool
    float_only: bool = False  # torch has no integer kernel (gelu, silu)
    real_only: bool | str = False  # complex operands are refused (a str: the error's hint)
    no_complex: str | None = None  # torch's RuntimeError message refusing complex operands
    unsigned: bool = False  # one of the few ops torch has for uint16/uint32/uint64
    quiet: bool = False  # numpy warns (inf/nan/zero division) where torch never does
    int_division: bool = False  # integer operands: division by zero raises, as in torch
    opmath_scalar: bool = False  # torch reads a one-element 2nd operand of a half op in float32
    # computed in the operands' own dtype, half types included (nextafter steps to the next
    # 16-bit value); the CUDA template names that C type `{storage}` (operands arrive as float)
    storage_compute: bool = False
    complex_fn: Callable | None = None  # numpy function for complex operands (np_fn is real)
    operand_check: Callable | None = None  # refusals that depend on the operands themselves
    aliases: tuple = ()  # other names of the function and the method (multiply, clip, ...)
    dunder: str | None = None  # Python operator __<dunder>__ (+ __r<dunder>__ when binary)
    inplace: bool = True  # has a Tensor method <name>_
    doc: str = field(default="", compare=False)
    grad: Callable | None = (
        None  # the derivative: grad(g, out, *inputs, **params) -> one gradient per input (None where none); written with operators and table functions so it serves eager autograd (Tensors) and the fused backward (Proxies) alike
    )

    # -- dtype rule -----------------------------------------------------------------------
    def common_dtype(self, *operands) -> np.dtype:
        """The promoted dtype of the operands (numpy arrays or Python scalars)."""
        ops = operands[1:] if self.kind == "where" else operands
        if self.kind == "logical":
            return _BOOL
        return result_type(*ops)

    def check(self, in_dtypes, common: np.dtype) -> None:
        """Raise torch's error for dtypes this op refuses (the tracer's and `numpy`'s check;
        eager dispatch raises the same: see `refuse`)."""
        if self.no_bool and any(d == _BOOL for d in in_dtypes if d is not None):
            raise RuntimeError(self.no_bool)
        self.refuse(_core(common))

    def refuse(self, common) -> None:
        """Raise torch's NotImplementedError if the promoted operand dtype `common` (a
        gpu_tensor dtype) has no kernel for this op."""
        if common in _core_dt.BAREBONES_UNSIGNED and not self.unsigned:
            raise not_implemented(
                self.name,
                common,
                "torch has only a few ops for this type; convert with .to(gpu_tensor.int64) first",
            )
        if self.int_only and common.category >= _core_dt.FLOAT:
            raise not_implemented(
                self.name,
                common,
                "it is only defined for integer and bool tensors; cast the "
                "operands with .to(gt.int64) (or another integer dtype) first",
            )
        if self.refuse_bool and common is _core_dt.bool:
            raise not_implemented(self.name, common)
        if self.float_only and common.category <= _core_dt.INT:
            raise not_implemented(self.name, common, "convert the input with .float() first")
        if self.no_complex and common.category == _core_dt.COMPLEX:
            raise RuntimeError(self.no_complex)
        if self.real_only and common.category == _core_dt.COMPLEX:
            raise not_implemented(
                self.name,
                common,
                self.real_only
                if isinstance(self.real_only, str)
                else "complex numbers are not ordered",
            )

    def operand_dtypes(self, common: np.dtype, n: int) -> tuple[np.dtype, ...]:
        """The dtype each operand is converted to before the op runs."""
        if self.kind == "logical":
            return (_BOOL,) * n
        if self.kind == "where":
            return (_BOOL,) + (common,) * (n - 1)
        if self.kind == "double":
            return (_double(common),) * n
        if self.kind == "float" and category(common) < 2:
            common = default_float()  # torch: integer inputs are computed in the default float
        return (common,) * n

    def out_dtype(self, common: np.dtype) -> np.dtype:
        """The dtype of the op's result given the promoted operand dtype."""
        if self.kind in ("compare", "logical"):
            return _BOOL
        if self.kind == "double":
            return _double(common)
        if self.kind == "float" and category(common) < 2:
            return default_float()
        return common

    def computes_in(self, dt: np.dtype) -> np.dtype:
        """The numpy dtype an operand of dtype `dt` is computed in (float32 for half types,
        torch's opmath, unless the row computes in its storage dtype)."""
        return dt if self.storage_compute else compute_dtype(dt)

    # -- expressions ----------------------------------------------------------------------
    def template(self, param: str | None = None) -> str:
        """The CUDA expression template for this op (and parameter value)."""
        if isinstance(self.cuda, str):
            return self.cuda
        key = self.param_default if param is None else param
        if key not in self.cuda:
            raise ValueError(
                f"{self.name}: {self.param}={key!r} is not supported; use one of {sorted(self.cuda)}"
            )
        return self.cuda[key]

    def numpy(self, *operands, out_dtype=None, **params) -> np.ndarray:
        """Run the op on numpy arrays / Python scalars with PyTorch's semantics.

        The result is a new array of torch's result dtype (or `out_dtype`, computed in the
        promoted dtype and cast at the end like torch's `out=`)."""
        if len(operands) != self.arity:
            raise TypeError(f"{self.name} takes {self.arity} operands, got {len(operands)}")
        in_dtypes = [_dtype_of(op) for op in operands]
        common = self.common_dtype(*operands)
        self.check(in_dtypes, common)
        targets = self.operand_dtypes(common, len(operands))
        args = [None if op is None else _convert(op, self.computes_in(dt))
                for op, dt in zip(operands, targets, strict=True)]  # fmt: skip
        kwargs = {self.param: params.pop(self.param)} if self.param and self.param in params else {}
        if params:
            raise TypeError(f"{self.name} got unexpected keyword arguments {sorted(params)}")
        with np.errstate(all="ignore"):
            result = np.asarray(self.np_fn(*args, **kwargs))
            target = self.out_dtype(common) if out_dtype is None else as_np_dtype(out_dtype)
            return result.astype(target, copy=False)


def _dtype_of(op) -> np.dtype | None:
    if op is None:
        return None
    if isinstance(op, (np.ndarray, np.generic)):
        return op.dtype
    return np.dtype(np.bool_) if isinstance(op, bool) else None


def _double(common: np.dtype) -> np.dtype:
    return np.dtype(np.complex128 if common.kind == "c" else np.float64)


def _convert(op, dt: np.dtype) -> np.ndarray:
    if isinstance(op, (np.ndarray, np.generic)):
        return np.asarray(op).astype(dt, copy=False)
    # A Python scalar wraps into the operand dtype like torch (int8 tensor + 1000 wraps).
    with np.errstate(all="ignore"):
        return np.asarray(op).astype(dt)


# -- numpy functions that depend on the compute dtype --------------------------------------
def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iub"


def _pow(a, b):
    return npmath.int_pow(a, b) if a.dtype.kind in "iu" else np.power(a, b)


def _clamp(x, lo=None, hi=None):
    if lo is not None:
        x = np.where(x < lo, lo, x) if _is_int(x) else np.maximum(x, lo)
    if hi is not None:
        x = np.where(x > hi, hi, x) if _is_int(x) else np.minimum(x, hi)
    return x


def _round(x):
    return x.copy() if _is_int(x) else np.rint(x)  # rint: half to even, like torch.round


def _ident_int(fn):
    return lambda x: x.copy() if _is_int(x) else fn(x)


_NEG_BOOL = (
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
    "a mask, use the `~` or `logical_not()` operator instead."
)
_SUB_BOOL = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


def not_implemented(name, dtype, hint=""):
    """torch's error for an op a dtype does not support: NotImplementedError (a subclass
    of RuntimeError), naming the dtype the way torch does ('Float', 'Bool', ...)."""
    msg = f"\"{name}\" not implemented for '{_core_dt.SCALAR_TYPE_NAMES[dtype.name]}'"
    return NotImplementedError(f"{msg}; {hint}" if hint else msg)


def _core(np_dtype):
    return _core_dt.to_dtype(np_dtype)


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


_NB = {"refuse_bool": True}  # shorthands for the rows below
_Q = {"quiet": True}
_INT_DIV = {"quiet": True, "int_division": True, "real_only": True}
_CMP_EQ = {"inplace": False}
_CMP = {"inplace": False, "real_only": True}
_NO_INPLACE = {"inplace": False}
_U = {"unsigned": True}  # torch (2.3+) has these for uint16/32/64 (checked against torch 2.13)


class _PerOrder(Mapping):
    """The CUDA template of an op whose parameter is an order n = 0, 1, 2, ... (polygamma):
    one template per n, made when asked."""

    def __init__(self, pattern: str):
        self.pattern = pattern

    def __getitem__(self, n):
        if type(n) is not int or n < 0:
            raise KeyError(n)
        return self.pattern.format(n=n)

    def __iter__(self):
        return iter(range(3))  # what an error lists: "one of [0, 1, 2]" (and every larger n)

    def __len__(self):
        return 3


class _PerValue(Mapping):
    """The CUDA template of an op whose parameter is a number (logit's eps) or None, made
    by `make(value)` when asked; a value it cannot take raises KeyError."""

    def __init__(self, make):
        self.make = make

    def __getitem__(self, value):
        return self.make(value)

    def __iter__(self):
        return iter((None,))  # what an error lists (any finite float is taken too)

    def __len__(self):
        return 1


def _logit_template(eps):
    if eps is None:
        return "gt_logit({0})"
    if type(eps) is not float or eps != eps or eps in (float("inf"), float("-inf")):
        raise KeyError(eps)
    return f"gt_logit_eps({{0}}, {eps!r})"


_REAL = {"quiet": True, "real_only": "it is defined for real tensors only"}
_SPECIAL = {**_REAL, "inplace": False}  # torch.special's own: no Tensor.<name>_ either


def _no_half(name):
    """The row fields of a torch.special function with no float16/bfloat16 kernel in torch
    (erfcx, ndtri, log_ndtr, the Bessel family): such operands are refused."""

    def check(operands, common):
        if common in (_core_dt.float16, _core_dt.bfloat16):
            raise not_implemented(name, common, "convert the input with .float() first")

    return {**_SPECIAL, "operand_check": check}


def _bessel_rows():
    """torch.special's Bessel functions (no float16/bfloat16 kernels in torch)."""
    rows = {
        "bessel_j0": "gt_bessel_j0",
        "bessel_j1": "gt_bessel_j1",
        "bessel_y0": "gt_bessel_y0",
        "bessel_y1": "gt_bessel_y1",
        "modified_bessel_i0": "gt_i0",
        "modified_bessel_i1": "gt_i1",
        "modified_bessel_k0": "gt_k0",
        "modified_bessel_k1": "gt_k1",
        "scaled_modified_bessel_k0": "gt_k0e",
        "scaled_modified_bessel_k1": "gt_k1e",
        "spherical_bessel_j0": "gt_spherical_j0",
    }
    numpy = {"modified_bessel_i0": npspecial.i0, "modified_bessel_i1": npspecial.i1}
    return [
        (
            "special_" + name,
            1,
            "float",
            helper + "({0})",
            numpy.get(name) or getattr(npspecial, name),
            _no_half(name),
        )
        for name, helper in rows.items()
    ]


_ENTRIES = [
    # name, arity, kind, cuda template, numpy function, extra fields
    ("add", 2, "promote", "({0} + {1})", np.add, {"dunder": "add", "grad": dx.add}),
    (
        "sub",
        2,
        "promote",
        "({0} - {1})",
        np.subtract,
        {"no_bool": _SUB_BOOL, "aliases": ("subtract",), "dunder": "sub", "grad": dx.sub},
    ),
    (
        "mul",
        2,
        "promote",
        "({0} * {1})",
        np.multiply,
        {"aliases": ("multiply",), "dunder": "mul", "opmath_scalar": True, **_U, "grad": dx.mul},
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
            **_U,
            "grad": dx.div,
        },
    ),
    (
        "floor_divide",
        2,
        "promote",
        "gt_floordiv({0}, {1})",
        np.floor_divide,
        {**_NB, **_INT_DIV, "dunder": "floordiv", "opmath_scalar": True, "grad": dx.floor_divide},
    ),
    (
        "remainder",
        2,
        "promote",
        "gt_remainder({0}, {1})",
        np.remainder,
        {**_NB, **_INT_DIV, "dunder": "mod", "grad": dx.remainder},
    ),
    (
        "pow",
        2,
        "promote",
        "gt_pow({0}, {1})",
        _pow,
        {"dunder": "pow", "quiet": True, "operand_check": _check_pow, "grad": dx.pow},
    ),
    (
        "neg",
        1,
        "same",
        "(-{0})",
        np.negative,
        {"no_bool": _NEG_BOOL, "aliases": ("negative",), "dunder": "neg", "grad": dx.neg},
    ),
    (
        "abs",
        1,
        "same",
        "gt_abs({0})",
        lambda x: x.copy() if x.dtype == _BOOL else np.abs(x),
        {**_NB, "dunder": "abs", "grad": dx.abs},
    ),
    ("exp", 1, "float", "gt_exp({0})", np.exp, {**_Q, "grad": dx.exp}),
    ("log", 1, "float", "gt_log({0})", np.log, {**_Q, "grad": dx.log}),
    ("log1p", 1, "float", "gt_log1p({0})", np.log1p, {**_Q, "grad": dx.log1p}),
    ("sqrt", 1, "float", "gt_sqrt({0})", np.sqrt, {**_Q, "grad": dx.sqrt}),
    ("rsqrt", 1, "float", "gt_rsqrt({0})", npmath.rsqrt, {**_Q, "grad": dx.rsqrt}),
    ("sin", 1, "float", "gt_sin({0})", np.sin, {**_Q, "grad": dx.sin}),
    ("cos", 1, "float", "gt_cos({0})", np.cos, {**_Q, "grad": dx.cos}),
    ("tanh", 1, "float", "gt_tanh({0})", np.tanh, {**_Q, "grad": dx.tanh}),
    (
        "sigmoid",
        1,
        "float",
        "gt_sigmoid({0})",
        npmath.sigmoid,
        {"quiet": True, "complex_fn": _complex_sigmoid, "grad": dx.sigmoid},
    ),
    ("relu", 1, "same", "gt_relu({0})", npmath.relu, {**_NB, "real_only": True, "grad": dx.relu}),
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
            **_NB,
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
            **_NB,
            "float_only": True,
            "quiet": True,
            "complex_fn": _complex_silu,
            "inplace": False,
            "grad": dx.silu,
        },
    ),
    (
        "floor",
        1,
        "same",
        "gt_floor({0})",
        _ident_int(np.floor),
        {**_NB, "real_only": True, "grad": dx.zero},
    ),
    (
        "ceil",
        1,
        "same",
        "gt_ceil({0})",
        _ident_int(np.ceil),
        {**_NB, "real_only": True, "grad": dx.zero},
    ),
    ("round", 1, "same", "gt_round({0})", _round, {**_NB, "real_only": True, "grad": dx.zero}),
    ("sign", 1, "same", "gt_sign({0})", npmath.sign, {"real_only": True, "grad": dx.zero}),
    ("eq", 2, "compare", "({0} == {1})", np.equal, {**_CMP_EQ, **_U, "dunder": "eq"}),
    ("ne", 2, "compare", "({0} != {1})", np.not_equal, {**_CMP_EQ, **_U, "dunder": "ne"}),
    ("lt", 2, "compare", "({0} < {1})", np.less, {**_CMP, "dunder": "lt"}),
    ("le", 2, "compare", "({0} <= {1})", np.less_equal, {**_CMP, "dunder": "le"}),
    ("gt", 2, "compare", "({0} > {1})", np.greater, {**_CMP, "dunder": "gt"}),
    ("ge", 2, "compare", "({0} >= {1})", np.greater_equal, {**_CMP, "dunder": "ge"}),
    ("logical_and", 2, "logical", "({0} && {1})", np.logical_and, _NO_INPLACE),
    ("logical_or", 2, "logical", "({0} || {1})", np.logical_or, _NO_INPLACE),
    ("logical_xor", 2, "logical", "({0} != {1})", np.logical_xor, _NO_INPLACE),
    ("logical_not", 1, "logical", "(!{0})", np.logical_not, {}),
    (
        "bitwise_and",
        2,
        "bitwise",
        "({0} & {1})",
        np.bitwise_and,
        {"int_only": True, **_U, "dunder": "and"},
    ),
    (
        "bitwise_or",
        2,
        "bitwise",
        "({0} | {1})",
        np.bitwise_or,
        {"int_only": True, **_U, "dunder": "or"},
    ),
    (
        "bitwise_xor",
        2,
        "bitwise",
        "({0} ^ {1})",
        np.bitwise_xor,
        {"int_only": True, **_U, "dunder": "xor"},
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
        {"operand_check": _check_where, "inplace": False, "grad": dx.where_grad},
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


# --- binary special functions (issue 23) ----------------------------------------------------
# (with the elementwise flags logaddexp and the fused backward need); module functions in
# ops/special.py, CUDA helpers and numpy references in the same-named blocks of preamble.py
# and npmath.py
def _check_heaviside(operands, common):
    dts = [x.dtype for x in operands if isinstance(getattr(x, "dtype", None), _core_dt.DType)]
    if len(dts) == 2 and dts[0] is not dts[1]:
        raise RuntimeError(
            "heaviside is not yet implemented for tensors with different "
            "dtypes; convert one operand with .to(other.dtype)"
        )


# inplace False: their in-place methods (hypot_, fmod_, ...) come from the breadth block of
# _tensor_methods.py (their names are listed in ops/_inplace.py), as before
_SPECIAL2 = {"quiet": True, "real_only": True, "inplace": False}
_FLOAT2 = {**_SPECIAL2, "float_only": True}  # torch has no integer kernel
_FLAG = {"inplace": False, **_U}

_ENTRIES += [
    ("hypot", 2, "float", "gt_hypot({0}, {1})", np.hypot, {**_FLOAT2, "grad": dx.hypot}),
    (
        "logaddexp",
        2,
        "float",
        "gt_logaddexp({0}, {1})",
        np.logaddexp,
        {**_FLOAT2, "grad": dx.logaddexp},
    ),
    (
        "logaddexp2",
        2,
        "float",
        "gt_logaddexp2({0}, {1})",
        npmath.logaddexp2,
        {**_FLOAT2, "grad": dx.logaddexp2},
    ),
    ("xlogy", 2, "float", "gt_xlogy({0}, {1})", npmath.xlogy, {**_SPECIAL2, "grad": dx.xlogy}),
    (
        "xlog1py",
        2,
        "float",
        "gt_xlog1py({0}, {1})",
        npmath.xlog1py,
        {**_SPECIAL2, "grad": dx.xlog1py},
    ),
    (
        "atan2",
        2,
        "float",
        "gt_atan2({0}, {1})",
        np.arctan2,
        {**_SPECIAL2, "aliases": ("arctan2",), "grad": dx.atan2},
    ),
    (
        "copysign",
        2,
        "float",
        "gt_copysign({0}, {1})",
        np.copysign,
        {**_SPECIAL2, "grad": dx.copysign},
    ),
    (
        "nextafter",
        2,
        "float",
        "gt_nextafter_in<{storage}>({0}, {1})",
        npmath.nextafter,
        {**_FLOAT2, "storage_compute": True, "grad": dx.nextafter},
    ),
    (
        "fmod",
        2,
        "promote",
        "gt_fmod({0}, {1})",
        np.fmod,
        {**_NB, **_INT_DIV, "inplace": False, "grad": dx.fmod},
    ),
    (
        "ldexp",
        2,
        "float",
        "gt_ldexp({0}, {1})",
        npmath.ldexp,
        {**_NO_INPLACE, "quiet": True, "grad": dx.ldexp},
    ),
    (
        "heaviside",
        2,
        "promote",
        "gt_heaviside({0}, {1})",
        npmath.heaviside,
        {**_NO_INPLACE, "real_only": True, "operand_check": _check_heaviside},
    ),
    (
        "fmax",
        2,
        "promote",
        "gt_fmax({0}, {1})",
        np.fmax,
        {**_NO_INPLACE, "real_only": True, "grad": dx.fmax},
    ),
    (
        "fmin",
        2,
        "promote",
        "gt_fmin({0}, {1})",
        np.fmin,
        {**_NO_INPLACE, "real_only": True, "grad": dx.fmin},
    ),
    (
        "float_power",
        2,
        "double",
        "gt_pow({0}, {1})",
        np.float_power,
        {**_NO_INPLACE, "quiet": True, "grad": dx.float_power},
    ),
    ("isnan", 1, "compare", "gt_isnan({0})", np.isnan, _FLAG),
    ("isinf", 1, "compare", "gt_isinf({0})", np.isinf, _FLAG),
    ("isfinite", 1, "compare", "gt_isfinite({0})", np.isfinite, _FLAG),
    ("isposinf", 1, "compare", "gt_isposinf({0})", npmath.isposinf, {**_FLAG, "real_only": True}),
    ("isneginf", 1, "compare", "gt_isneginf({0})", npmath.isneginf, {**_FLAG, "real_only": True}),
    ("signbit", 1, "compare", "gt_signbit({0})", np.signbit, {**_FLAG, "real_only": True}),
]


# --- unary special functions (issue 23) -----------------------------------------------------
def _arc_rows():
    """asin, acos, atan and their hyperbolic kin, with numpy's names (arcsin, ...) as the
    aliases torch has too."""
    rows = []
    for key in ("asin", "acos", "atan", "asinh", "acosh", "atanh"):
        alias = "arc" + key[1:]
        extra = {**_Q, "aliases": (alias,), "grad": getattr(dxs, key)}
        rows.append((key, 1, "float", f"gt_{key}({{0}})", getattr(np, alias), extra))
    return rows


_ENTRIES += [
    # Names with a "special_" prefix are torch.special's functions that are no Tensor method
    # (gt.special.i0e is the row special_i0e).
    ("tan", 1, "float", "gt_tan({0})", np.tan, {**_Q, "grad": dxs.tan}),
    *_arc_rows(),
    ("sinh", 1, "float", "gt_sinh({0})", np.sinh, {**_Q, "grad": dxs.sinh}),
    ("cosh", 1, "float", "gt_cosh({0})", np.cosh, {**_Q, "grad": dxs.cosh}),
    ("expm1", 1, "float", "gt_expm1({0})", np.expm1, {**_Q, "grad": dxs.expm1}),
    ("exp2", 1, "float", "gt_exp2({0})", np.exp2, {**_Q, "grad": dxs.exp2}),
    ("log2", 1, "float", "gt_log2({0})", np.log2, {**_Q, "grad": dxs.log2}),
    ("log10", 1, "float", "gt_log10({0})", np.log10, {**_Q, "grad": dxs.log10}),
    ("sinc", 1, "float", "gt_sinc({0})", npspecial.sinc, {**_Q, "grad": dxs.sinc}),
    ("erf", 1, "float", "gt_erf({0})", npmath.erf, {**_REAL, "grad": dxs.erf}),
    ("erfc", 1, "float", "gt_erfc({0})", npspecial.erfc, {**_REAL, "grad": dxs.erfc}),
    ("erfinv", 1, "float", "gt_erfinv({0})", npspecial.erfinv, {**_REAL, "grad": dxs.erfinv}),
    ("lgamma", 1, "float", "gt_lgamma({0})", npspecial.lgamma, {**_REAL, "grad": dxs.lgamma}),
    ("digamma", 1, "float", "gt_digamma({0})", npspecial.digamma, {**_REAL, "grad": dxs.digamma}),
    ("i0", 1, "float", "gt_i0({0})", npspecial.i0, {**_REAL, "grad": dxs.i0}),
    ("special_i0e", 1, "float", "gt_i0e({0})", npspecial.i0e, {**_SPECIAL, "grad": dxs.i0e}),
    ("special_i1", 1, "float", "gt_i1({0})", npspecial.i1, {**_SPECIAL, "grad": dxs.i1}),
    ("special_i1e", 1, "float", "gt_i1e({0})", npspecial.i1e, {**_SPECIAL, "grad": dxs.i1e}),
    (
        "logit",
        1,
        "float",
        _PerValue(_logit_template),
        npspecial.logit,
        {**_REAL, "param": "eps", "grad": dxs.logit},
    ),
    (
        "special_erfcx",
        1,
        "float",
        "gt_erfcx({0})",
        npspecial.erfcx,
        {**_no_half("erfcx"), "grad": dxs.erfcx},
    ),
    ("special_ndtr", 1, "float", "gt_ndtr({0})", npspecial.ndtr, {**_SPECIAL, "grad": dxs.ndtr}),
    (
        "special_ndtri",
        1,
        "float",
        "gt_ndtri({0})",
        npspecial.ndtri,
        {**_no_half("ndtri"), "grad": dxs.ndtri},
    ),
    (
        "special_log_ndtr",
        1,
        "float",
        "gt_log_ndtr({0})",
        npspecial.log_ndtr,
        {**_no_half("log_ndtr"), "grad": dxs.log_ndtr},
    ),
    ("special_entr", 1, "float", "gt_entr({0})", npspecial.entr, {**_SPECIAL, "grad": dxs.entr}),
    *_bessel_rows(),
    (
        "special_polygamma",
        1,
        "float",
        _PerOrder("gt_polygamma({n}, {{0}})"),
        npspecial.polygamma,
        {**_SPECIAL, "param": "n", "param_default": 1, "grad": dxs.polygamma},
    ),
]


# --- the last rows (issue 23) ----------------------------------------------------------------
# Module functions in ops/special.py (trunc: ops/elementwise.py); their in-place methods come
# from the breadth block of _tensor_methods.py (ops/_inplace.py), as before.
def _literal(v: float) -> str:
    """A C double expression for a Python float (inf and nan have no literal)."""
    if v != v:
        return "gt_nan<double>()"
    if v in (float("inf"), float("-inf")):
        return ("-" if v < 0 else "") + "gt_inf<double>()"
    return repr(v)


def _nan_to_num_template(limits):
    """limits: (nan, posinf, neginf), floats (gt.nan_to_num resolves torch's defaults from
    the tensor's dtype); None: (0, the compute type's largest and smallest finite values)."""
    if limits is None:
        return "gt_nan_to_num_default({0})"
    if type(limits) is not tuple or len(limits) != 3 or any(type(v) is not float for v in limits):
        raise KeyError(limits)
    return "gt_nan_to_num({{0}}, {}, {}, {})".format(*map(_literal, limits))


_LAST = {"inplace": False}
_NO_COMPLEX = "is not supported for complex tensors."
_MVLGAMMA_BOOL = "The input tensor may not be a boolean tensor."
_POS_BOOL = "The `+` operator, on a bool tensor is not supported."

_ENTRIES += [
    (
        "trunc",
        1,
        "same",
        "gt_trunc({0})",
        _ident_int(np.trunc),
        {**_NB, **_LAST, "real_only": True, "aliases": ("fix",), "grad": dx.zero},
    ),
    (
        "frac",
        1,
        "same",
        "gt_frac({0})",
        npmath.frac,
        {**_LAST, **_Q, "float_only": True, "real_only": True, "grad": dxs.identity},
    ),
    (
        "deg2rad",
        1,
        "float",
        "gt_deg2rad({0})",
        npmath.deg2rad,
        {**_LAST, "no_complex": f"deg2rad {_NO_COMPLEX}", "grad": dxs.deg2rad},
    ),
    (
        "rad2deg",
        1,
        "float",
        "gt_rad2deg({0})",
        npmath.rad2deg,
        {**_LAST, "no_complex": f"rad2deg {_NO_COMPLEX}", "grad": dxs.rad2deg},
    ),
    (
        "sgn",
        1,
        "same",
        "gt_sign({0})",  # (complex operands never reach a kernel: complex_fn)
        npmath.sign,
        {**_LAST, "complex_fn": npmath.sgn_complex, "grad": dxs.sgn},
    ),
    # complex input: ops/special.angle computes atan2(imag, real) (a real result)
    (
        "angle",
        1,
        "float",
        "gt_angle({0})",
        npmath.angle,
        {**_LAST, **_Q, "real_only": True, "grad": dx.zero},
    ),
    ("positive", 1, "same", "{0}", np.copy, {**_LAST, "no_bool": _POS_BOOL, "grad": dxs.identity}),
    (
        "nan_to_num",
        1,
        "same",
        _PerValue(_nan_to_num_template),
        npmath.nan_to_num,
        {**_LAST, **_Q, "param": "limits", "complex_fn": npmath.nan_to_num, "grad": dxs.nan_to_num},
    ),
    (
        "mvlgamma",
        1,
        "float",
        _PerOrder("gt_mvlgamma({{0}}, {n})"),
        npspecial.mvlgamma,
        {
            **_LAST,
            **_REAL,
            "no_bool": _MVLGAMMA_BOOL,
            "param": "p",
            "param_default": 1,
            "grad": dxs.mvlgamma,
        },
    ),
]

OPS: dict[str, OpDef] = {
    name: OpDef(name=name, arity=arity, kind=kind, cuda=cuda, np_fn=fn, **extra)
    for name, arity, kind, cuda, fn, extra in _ENTRIES
}
