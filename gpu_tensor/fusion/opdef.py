"""The row type of the elementwise op table (fusion/optable.py): `OpDef`, one op's CUDA
expression, numpy function and every rule about it, with the dtype rules it applies, the
error torch gives for a dtype an op lacks, the templates made per parameter value, and the
shorthands for the flags rows share. The rows themselves live in the `rows_*.py` modules.

Each `OpDef` carries
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
from .dtypes import as_np_dtype, category, compute_dtype, default_float, result_type

__all__ = [
    "INT_DIV",
    "KINDS",
    "NO_BOOL",
    "NO_INPLACE",
    "OpDef",
    "PerOrder",
    "PerValue",
    "QUIET",
    "REAL",
    "SPECIAL",
    "UNSIGNED",
    "not_implemented",
]

KINDS = ("promote", "same", "float", "compare", "logical", "bitwise", "where", "clamp", "double")
_BOOL = np.dtype(np.bool_)


def _same(dt: np.dtype) -> np.dtype:
    return dt


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
    # the template has complex C overloads (fusion/preamble_complex.py): eager cuda runs
    # complex operands as one generated kernel instead of cupy's routines
    complex_kernel: bool = False
    complex_to_real: bool = False  # a complex operand gives a real result (abs: |z|)
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
        if self.complex_to_real and common.kind == "c":  # torch: |z| of complex64 is float32
            return np.dtype(np.float32 if common == np.complex64 else np.float64)
        return common

    def __post_init__(self):
        # computes_in(dt): the numpy dtype an operand of dtype `dt` is computed in (float32 for
        # half types, torch's opmath, unless the row computes in its storage dtype). A bound
        # function, not a method: the fused cpu evaluation calls it for every operand
        object.__setattr__(self, "computes_in", _same if self.storage_compute else compute_dtype)

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


def not_implemented(name, dtype, hint=""):
    """torch's error for an op a dtype does not support: NotImplementedError (a subclass
    of RuntimeError), naming the dtype the way torch does ('Float', 'Bool', ...)."""
    msg = f"\"{name}\" not implemented for '{_core_dt.SCALAR_TYPE_NAMES[dtype.name]}'"
    return NotImplementedError(f"{msg}; {hint}" if hint else msg)


def _core(np_dtype):
    return _core_dt.to_dtype(np_dtype)


# -- shorthands for the flags rows share ------------------------------------------------------
NO_BOOL = {"refuse_bool": True}
QUIET = {"quiet": True}
INT_DIV = {"quiet": True, "int_division": True, "real_only": True}
NO_INPLACE = {"inplace": False}
UNSIGNED = {
    "unsigned": True
}  # torch (2.3+) has these for uint16/32/64 (checked against torch 2.13)
REAL = {"quiet": True, "real_only": "it is defined for real tensors only"}
SPECIAL = {**REAL, "inplace": False}  # torch.special's own: no Tensor.<name>_ either


# -- templates made per parameter value ---------------------------------------------------------
class PerOrder(Mapping):
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


class PerValue(Mapping):
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
