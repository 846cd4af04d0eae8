"""THE elementwise op table: one key per op, its CUDA expression and its numpy function.

Keys are torch's function names. Each `OpDef` carries
- `cuda`: an expression template over operands `{0} {1} {2}` that are already in the op's
  compute type (float for half/bfloat16); helpers named `gt_*` live in `fusion/preamble.py`
  and are overloaded per C type, so one template serves every dtype;
- `np_fn`: the numpy function over arrays in the same compute dtypes;
- the dtype rule (`kind`): how operands promote and what dtype the result has.

`OpDef.numpy(*operands, out_dtype=None)` is the whole eager op on numpy arrays with PyTorch's
semantics (promotion incl. Python scalars, true division, floor/Python-sign rules, half-to-even
round, NaN-propagating max/min/relu/clamp, half/bfloat16 computed in float32 and cast back);
the core uses it for eager elementwise ops on cpu and emulated cuda. Codegen reads `cuda`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from . import npmath
from .dtypes import as_np_dtype, category, compute_dtype, default_float, result_type

__all__ = ["OpDef", "OPS", "KINDS"]

KINDS = ("promote", "same", "float", "compare", "logical", "bitwise", "where", "clamp")
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
    doc: str = field(default="", compare=False)

    # -- dtype rule -----------------------------------------------------------------------
    def common_dtype(self, *operands) -> np.dtype:
        """The promoted dtype of the operands (numpy arrays or Python scalars)."""
        ops = operands[1:] if self.kind == "where" else operands
        if self.kind == "logical":
            return _BOOL
        return result_type(*ops)

    def check(self, in_dtypes, common: np.dtype) -> None:
        """Raise torch's error for dtypes this op refuses: TypeError (FusionError when
        traced) for the bool/int_only rules, NotImplementedError (torch's class, which eager
        code raises too) for refuse_bool/float_only."""
        if self.no_bool and any(d == _BOOL for d in in_dtypes if d is not None):
            raise TypeError(self.no_bool)
        if self.int_only and category(common) == 2:
            raise TypeError(
                f"{self.name} is only defined for integer and bool dtypes, got {common}; "
                "cast the operands with .to(gt.int32) (or another integer dtype) first"
            )
        if self.refuse_bool and common == _BOOL:
            raise _not_implemented(self.name, common)
        if self.float_only and category(common) < 2:
            raise _not_implemented(self.name, common, "convert the input with .float() first")

    def operand_dtypes(self, common: np.dtype, n: int) -> tuple[np.dtype, ...]:
        """The dtype each operand is converted to before the op runs."""
        if self.kind == "logical":
            return (_BOOL,) * n
        if self.kind == "where":
            return (_BOOL,) + (common,) * (n - 1)
        if self.kind == "float" and category(common) < 2:
            common = default_float()  # torch: integer inputs are computed in the default float
        return (common,) * n

    def out_dtype(self, common: np.dtype) -> np.dtype:
        """The dtype of the op's result given the promoted operand dtype."""
        if self.kind in ("compare", "logical"):
            return _BOOL
        if self.kind == "float" and category(common) < 2:
            return default_float()
        return common

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
        args = [None if op is None else _convert(op, compute_dtype(dt))
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

def _not_implemented(name, common, hint=""):
    """torch's NotImplementedError for a dtype an op has no kernel for (eager code raises
    the same, from the same row: ops/_dispatch.py)."""
    from ..dtype import SCALAR_TYPE_NAMES, to_dtype

    msg = f'"{name}" not implemented for \'{SCALAR_TYPE_NAMES[to_dtype(common).name]}\''
    return NotImplementedError(f"{msg}; {hint}" if hint else msg)


_NB = {"refuse_bool": True}

_ENTRIES = [
    # name, arity, kind, cuda template, numpy function, extra fields
    ("add", 2, "promote", "({0} + {1})", np.add, {}),
    ("sub", 2, "promote", "({0} - {1})", np.subtract, {"no_bool": _SUB_BOOL}),
    ("mul", 2, "promote", "({0} * {1})", np.multiply, {}),
    ("div", 2, "float", "({0} / {1})", np.true_divide, {}),
    ("floor_divide", 2, "promote", "gt_floordiv({0}, {1})", np.floor_divide, _NB),
    ("remainder", 2, "promote", "gt_remainder({0}, {1})", np.remainder, _NB),
    ("pow", 2, "promote", "gt_pow({0}, {1})", _pow, {}),
    ("neg", 1, "same", "(-{0})", np.negative, {"no_bool": _NEG_BOOL}),
    ("abs", 1, "same", "gt_abs({0})", lambda x: x.copy() if x.dtype == _BOOL else np.abs(x), _NB),
    ("exp", 1, "float", "gt_exp({0})", np.exp, {}),
    ("log", 1, "float", "gt_log({0})", np.log, {}),
    ("log1p", 1, "float", "gt_log1p({0})", np.log1p, {}),
    ("sqrt", 1, "float", "gt_sqrt({0})", np.sqrt, {}),
    ("rsqrt", 1, "float", "gt_rsqrt({0})", npmath.rsqrt, {}),
    ("sin", 1, "float", "gt_sin({0})", np.sin, {}),
    ("cos", 1, "float", "gt_cos({0})", np.cos, {}),
    ("tanh", 1, "float", "gt_tanh({0})", np.tanh, {}),
    ("sigmoid", 1, "float", "gt_sigmoid({0})", npmath.sigmoid, {}),
    ("relu", 1, "same", "gt_relu({0})", npmath.relu, _NB),
    (
        "gelu",
        1,
        "float",
        {"none": "gt_gelu({0})", "tanh": "gt_gelu_tanh({0})"},
        lambda x, approximate="none": (npmath.gelu_tanh if approximate == "tanh" else npmath.gelu)(
            x
        ),
        {"param": "approximate", "param_default": "none", "refuse_bool": True, "float_only": True},
    ),
    ("silu", 1, "float", "gt_silu({0})", npmath.silu, {**_NB, "float_only": True}),
    ("floor", 1, "same", "gt_floor({0})", _ident_int(np.floor), _NB),
    ("ceil", 1, "same", "gt_ceil({0})", _ident_int(np.ceil), _NB),
    ("round", 1, "same", "gt_round({0})", _round, _NB),
    ("sign", 1, "same", "gt_sign({0})", npmath.sign, {}),
    ("eq", 2, "compare", "({0} == {1})", np.equal, {}),
    ("ne", 2, "compare", "({0} != {1})", np.not_equal, {}),
    ("lt", 2, "compare", "({0} < {1})", np.less, {}),
    ("le", 2, "compare", "({0} <= {1})", np.less_equal, {}),
    ("gt", 2, "compare", "({0} > {1})", np.greater, {}),
    ("ge", 2, "compare", "({0} >= {1})", np.greater_equal, {}),
    ("logical_and", 2, "logical", "({0} && {1})", np.logical_and, {}),
    ("logical_or", 2, "logical", "({0} || {1})", np.logical_or, {}),
    ("logical_xor", 2, "logical", "({0} != {1})", np.logical_xor, {}),
    ("logical_not", 1, "logical", "(!{0})", np.logical_not, {}),
    ("bitwise_and", 2, "bitwise", "({0} & {1})", np.bitwise_and, {"int_only": True}),
    ("bitwise_or", 2, "bitwise", "({0} | {1})", np.bitwise_or, {"int_only": True}),
    ("bitwise_xor", 2, "bitwise", "({0} ^ {1})", np.bitwise_xor, {"int_only": True}),
    ("bitwise_not", 1, "bitwise", "gt_bitnot({0})", np.invert, {"int_only": True}),
    ("maximum", 2, "promote", "gt_max({0}, {1})", np.maximum, {}),
    ("minimum", 2, "promote", "gt_min({0}, {1})", np.minimum, {}),
    ("where", 3, "where", "({0} ? {1} : {2})", np.where, {}),
    ("clamp", 3, "clamp", "gt_clamp({0}, {1}, {2})", _clamp, {}),
]

OPS: dict[str, OpDef] = {
    name: OpDef(name=name, arity=arity, kind=kind, cuda=cuda, np_fn=fn, **extra)
    for name, arity, kind, cuda, fn, extra in _ENTRIES
}
