"""Tensor dtypes and PyTorch's type promotion.

A `DType` is a small value object (`gt.float32`, ...) carrying its numpy dtype in `.np`.
bfloat16 uses ml_dtypes' numpy dtype on the host (numpy has none of its own).

Promotion follows PyTorch, not numpy: operands fall in three priority tiers
(dimensioned tensors, 0-dim tensors, Python scalars) and a lower tier only matters when
its category (bool < int < float < complex) is higher than every tier above it. So
`int64 tensor + 2.5 -> float32` and `float16 tensor + 2.5 -> float16`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DType",
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "half",
    "float",
    "double",
    "short",
    "int",
    "long",
    "cfloat",
    "cdouble",
    "to_dtype",
    "result_type",
    "promote_types",
    "get_default_dtype",
    "set_default_dtype",
    "can_cast",
    "qint8",
    "quint8",
    "qint32",
    "quint4x2",
]

_py_bool, _py_int, _py_float, _py_complex = bool, int, float, complex

# Categories, ordered: a value in a higher category cannot be held by a lower one.
BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


class DType:
    """A tensor element type (torch.dtype's counterpart)."""

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "_complex", "_real")

    def __init__(self, name: str, np_dtype, category: int, is_signed: bool):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self._complex = None  # the complex type holding this float's values
        self._real = None  # the real type of this complex's parts

    @property
    def is_floating_point(self) -> _py_bool:
        return self.category == FLOAT

    @property
    def is_complex(self) -> _py_bool:
        return self.category == COMPLEX

    def to_real(self) -> DType:
        return self._real if self._real is not None else self

    def to_complex(self) -> DType:
        return self._complex if self._complex is not None else self

    def __repr__(self) -> str:
        return f"gpu_tensor.{self.name}"

    def __reduce__(self):
        return (to_dtype, (self.name,))


bool = DType("bool", np.bool_, BOOL, False)  # noqa: A001  (torch's name)
uint8 = DType("uint8", np.uint8, INT, False)
# torch >= 2.3's "barebones" unsigned types: storage, conversion, views, indexing and a few
# ops (mul, div, eq/ne, bitwise, sum/prod/cumsum, sort); no promotion with any other
# integer or bool type (torch: "Promotion for uint16, uint32, uint64 types is not supported").
uint16 = DType("uint16", np.uint16, INT, False)
uint32 = DType("uint32", np.uint32, INT, False)
uint64 = DType("uint64", np.uint64, INT, False)
BAREBONES_UNSIGNED = (uint16, uint32, uint64)
int8 = DType("int8", np.int8, INT, True)
int16 = DType("int16", np.int16, INT, True)
int32 = DType("int32", np.int32, INT, True)
int64 = DType("int64", np.int64, INT, True)
float16 = DType("float16", np.float16, FLOAT, True)


def _bfloat16_np():
    import ml_dtypes  # a declared dependency; imported here so the reason is visible

    return ml_dtypes.bfloat16


bfloat16 = DType("bfloat16", _bfloat16_np(), FLOAT, True)
float32 = DType("float32", np.float32, FLOAT, True)
float64 = DType("float64", np.float64, FLOAT, True)
complex64 = DType("complex64", np.complex64, COMPLEX, True)
complex128 = DType("complex128", np.complex128, COMPLEX, True)

# torch's aliases
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

# There is no complex32 here: half-precision floats widen to complex64 (torch would
# give ComplexHalf, which neither numpy nor cupy can store).
for _f in (float16, bfloat16, float32):
    _f._complex = complex64
float64._complex = complex128
complex64._real = float32
complex128._real = float64

ALL = (
    bool,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    complex128,
    uint16,
    uint32,
    uint64,
)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(
    half=half,
    float=float32,
    double=float64,
    short=int16,
    int=int32,
    long=int64,
    cfloat=complex64,
    cdouble=complex128,
)
_BY_NP = {d.np: d for d in ALL}

# Quantized dtypes (torch.qint8 & co): what a quantized tensor's elements mean. They hold
# their integer storage type in `.np` but stay out of ALL, _BY_NP and promotion: only the
# quantized package (gpu_tensor/quantized) makes tensors of them, and no op promotes them.
# `quint4x2` packs two 4-bit values a byte (torch's itemsize is 1 as well).
qint8 = DType("qint8", np.int8, INT, True)
quint8 = DType("quint8", np.uint8, INT, False)
qint32 = DType("qint32", np.int32, INT, True)
quint4x2 = DType("quint4x2", np.uint8, INT, False)
QUANTIZED = {qint8: int8, quint8: uint8, qint32: int32, quint4x2: uint8}  # -> storage type
_BY_NAME.update({d.name: d for d in QUANTIZED})
# torch's ScalarType names, used in its "not implemented for 'Float'" errors and its legacy
# tensor type names ('torch.FloatTensor'); our messages use the same words.
SCALAR_TYPE_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "qint8": "QInt8",
    "quint8": "QUInt8",
    "qint32": "QInt32",
    "quint4x2": "QUInt4x2",
}


def tensor_type_name(d: DType, device_type: str = "cpu") -> str:
    """torch's legacy tensor type string (what `x.type()` returns), with our package name:
    'gpu_tensor.FloatTensor', 'gpu_tensor.cuda.LongTensor' (torch: 'torch.FloatTensor')."""
    prefix = "gpu_tensor.cuda." if device_type == "cuda" else "gpu_tensor."
    return f"{prefix}{SCALAR_TYPE_NAMES[d.name]}Tensor"


def from_tensor_type_name(name: str) -> tuple[str, DType]:
    """(device type, dtype) of a legacy tensor type string, torch's ('torch.cuda.HalfTensor')
    or ours ('gpu_tensor.FloatTensor'): what `x.type(name)` converts to. ValueError
    'invalid type' otherwise, as torch's."""
    package, _, rest = name.partition(".")
    cuda = rest.startswith("cuda.")
    dt = _BY_TYPE_NAME.get(rest[5:] if cuda else rest)
    if dt is None or package not in ("torch", "gpu_tensor"):
        raise ValueError(f"invalid type: {name!r}")
    return ("cuda" if cuda else "cpu"), dt


_BY_TYPE_NAME = {v + "Tensor": _BY_NAME[k] for k, v in SCALAR_TYPE_NAMES.items() if k in _BY_NAME}
_default = float32


def get_default_dtype() -> DType:
    """The dtype Python floats (and int/int division) produce; float32 unless changed."""
    return _default


def set_default_dtype(d) -> None:
    """Set the default floating dtype (a floating dtype, as in torch)."""
    global _default
    d = to_dtype(d)
    if d.category != FLOAT:
        raise TypeError(f"set_default_dtype only supports floating point dtypes, got {d}")
    _default = d


def default_complex() -> DType:
    return complex128 if _default is float64 else complex64


def to_dtype(x) -> DType:
    """Accept a gt dtype, a numpy dtype / scalar type, a string, or Python bool/int/float/complex
    (as torch: the types bool/int/float/complex mean bool/int64/float64/complex128)."""
    if type(x) is DType:
        return x
    if isinstance(x, str):
        d = _BY_NAME.get(x.removeprefix("torch.").removeprefix("gpu_tensor."))
        if d is not None:
            return d
    elif x is _py_bool:
        return bool
    elif x is _py_int:
        return int64
    elif x is _py_float:
        return float64  # torch: dtype=float means double (unlike a float *value*)
    elif x is _py_complex:
        return complex128
    else:
        name = getattr(x, "name", None)
        if name in _BY_NAME and type(x).__module__.startswith("torch"):
            return _BY_NAME[name]
    try:
        npd = np.dtype(x)
    except TypeError:
        npd = None
    d = _BY_NP.get(npd) if npd is not None else None
    if d is None:
        supported = ", ".join(d.name for d in ALL)
        raise TypeError(f"unsupported dtype {x!r}; supported dtypes: {supported}")
    return d


def from_numpy_dtype(npd) -> DType:
    """The gt dtype for a numpy dtype; TypeError naming the supported ones if none."""
    d = _BY_NP.get(npd)
    if d is None:
        return to_dtype(npd)
    return d


def _promote_uncached(a: DType, b: DType) -> DType | None:
    if (
        a is not b
        and (a in BAREBONES_UNSIGNED or b in BAREBONES_UNSIGNED)
        and (a.category <= INT and b.category <= INT)
    ):
        return None  # refused, as torch does (floats and complex still win)
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo is float64:
            return complex128
        return hi
    if a.category == BOOL:
        return a
    if a.category == INT:
        return _BY_NP[np.promote_types(a.np, b.np)]
    if a.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32  # neither holds the other's range/precision; torch picks float32
        return a if a.itemsize >= b.itemsize else b
    return a if a.itemsize >= b.itemsize else b


class _PromotionTable(dict):
    """(a, b) -> promoted dtype; a refused pair is missing, and looking it up raises
    torch's RuntimeError (so the hot path pays nothing for the check)."""

    def __missing__(self, key):
        a, b = key
        raise RuntimeError(
            f"Promotion for uint16, uint32, uint64 types is not supported, attempted to "
            f"promote {SCALAR_TYPE_NAMES[a.name]} and {SCALAR_TYPE_NAMES[b.name]}; convert one "
            "operand first (e.g. .to(gpu_tensor.int64))"
        )


_PROMO = _PromotionTable(
    ((a, b), p) for a in ALL for b in ALL if (p := _promote_uncached(a, b)) is not None
)


def promote_types(a, b) -> DType:
    """torch.promote_types: the smallest dtype both `a` and `b` convert to without losing
    their category."""
    return _PROMO[(to_dtype(a), to_dtype(b))]


def can_cast(from_, to) -> _py_bool:
    """torch.can_cast: casting is allowed unless it lowers the category."""
    return to_dtype(from_).category <= to_dtype(to).category


def scalar_dtype(x) -> DType | None:
    """The dtype a Python scalar takes as a 'wrapped number' (None if not a scalar)."""
    t = type(x)
    if t is _py_float:
        return _default
    if t is _py_int:
        return int64
    if t is _py_bool:
        return bool
    if t is _py_complex:
        return default_complex()
    if isinstance(x, np.generic):
        return scalar_dtype(x.item())
    return None


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's combine_categories: the lower tier matters only if its category is higher."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher.category == BOOL or lower.category == FLOAT:
        return _PROMO[(higher, lower)]
    return higher


def result_type(*operands) -> DType:
    """PyTorch's result type for tensors, 0-dim tensors and Python scalars (and dtypes,
    which count as dimensioned tensors)."""
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if type(d) is DType:
            if x.ndim == 0:
                zero = d if zero is None else _PROMO[(zero, d)]
            else:
                dim = d if dim is None else _PROMO[(dim, d)]
            continue
        if type(x) is DType:
            dim = x if dim is None else _PROMO[(dim, x)]
            continue
        d = scalar_dtype(x)
        if d is None:
            raise TypeError(
                f"unsupported operand of type {type(x).__name__}; expected a Tensor or a "
                "Python bool/int/float/complex"
            )
        wrapped = d if wrapped is None else _PROMO[(wrapped, d)]
    out = _combine(dim, _combine(zero, wrapped))
    if out is None:
        raise TypeError("result_type needs at least one operand")
    return out


class _DTypeModule(type(np)):
    """This module's class. torch.dtype is the class of the dtypes, and torch code checks
    `isinstance(x, torch.dtype)`; gt.dtype is this module (the package's imports name it),
    so isinstance and issubclass against it answer for DType instead of raising
    "isinstance() arg 2 must be a type"."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, DType)

    def __subclasscheck__(cls, sub) -> bool:
        return isinstance(sub, type) and issubclass(sub, DType)


__import__("sys").modules[__name__].__class__ = _DTypeModule
