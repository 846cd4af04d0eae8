"""In-place ops (`add_`, `copy_`, `fill_`, ...): checks, then a write into the tensor's memory.

They refuse to write where torch does: into expanded views (one memory location shared
by several elements, e.g. `x.expand(3, 4)`), into read-only memory, and when the result
dtype cannot be cast to the tensor's (float result into an int tensor).
"""

from __future__ import annotations

from .. import _args
from .. import dtype as _dt
from ..backends import get_backend
from .matrix import ACCUMULATING

__all__ = [
    "check_writable",
    "inplace",
    "fill_",
    "zero_",
    "INPLACE_GRAD",
    "INPLACE_NOGRAD",
    "late_method",
]

# The in-place forms of the op-module functions that are not rows of the op table (special,
# matrix, index_write, ...; the rows' own are ops/elementwise.INPLACE, and a test keeps the
# two apart): `<name>_` = `<name>` computed out of place and written back.
# _tensor_methods.py binds them; autograd/formulas_more.py records the first
# group as "the out-of-place op on a copy". The second group has no gradient in torch
# (integer or boolean results, or piecewise-constant values).
INPLACE_GRAD = (  # (arcsin & co. are aliases of rows now: ops/elementwise.INPLACE)
    "deg2rad",
    "rad2deg",
    "frac",
    "sgn",
    "fix",
    "absolute",
    "atan2",
    "arctan2",
    "xlogy",
    "hypot",
    "copysign",
    "float_power",
    "nan_to_num",
    "ldexp",
    "clamp_min",
    "clamp_max",
    "cumsum",
    "cumprod",
    "tril",
    "triu",
    *ACCUMULATING,
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "masked_scatter",
    "put",
    "scatter_reduce",
    "renorm",
    "fill_diagonal",
    "mvlgamma",
    "index_reduce",
    "polygamma",
    "nextafter",
)
INPLACE_NOGRAD = (
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "bitwise_not",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "heaviside",
    "gcd",
    "lcm",
    "logical_and",
    "logical_or",
    "logical_xor",
)


def late_method(name: str):
    """Tensor.<name>, looked up when called (the method table is bound after ops load)."""

    def call(self, *args, **kwargs):
        return getattr(type(self), name)(self, *args, **kwargs)

    call.__name__ = name
    return call


def check_writable(t, name: str, *, overlap_ok: bool = False) -> None:
    """Refuse writes torch refuses. `overlap_ok`: fill_/zero_ may write an expanded view
    (every alias gets the same value), as in torch. An empty tensor has nothing to write
    (numpy gives empty arrays 0 strides; they are not expanded views)."""
    data = t._data
    if not overlap_ok and data.size:
        for n, s in zip(data.shape, data.strides, strict=True):
            if s == 0 and n > 1:
                raise RuntimeError(
                    f"{name}: unsupported operation: more than one element of the "
                    "written-to tensor refers to a single memory location (an expanded "
                    "view). Please clone() the tensor before performing the operation."
                )
    flags = getattr(data, "flags", None)
    if flags is not None and hasattr(flags, "writeable") and not flags.writeable:
        raise RuntimeError(
            f"{name}: the tensor's memory is read-only (e.g. from_numpy of a non-writeable "
            "array); clone() it first"
        )


def _write(t, result, name: str):
    if not _dt.can_cast(result.dtype, t.dtype):
        raise RuntimeError(
            f"{name}: result type {result.dtype.name} can't be cast to the desired output "
            f"type {t.dtype.name}"
        )
    if tuple(result.shape) != tuple(t.shape):
        raise RuntimeError(
            f"{name}: output with shape {list(t.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    b = get_backend(t.device)
    arr = result._data
    if result.dtype is not t.dtype:
        arr = b.astype(arr, t.dtype.np)
    b.copy_(t._data, arr)
    t._bump_version()
    return t


def inplace(fn, name: str):
    """The in-place form of the out-of-place op `fn(self, *args, **kw)`."""

    def method(self, *args, **kwargs):
        check_writable(self, name)
        return _write(self, fn(self, *args, **kwargs), name)

    method.__name__ = name
    method.__doc__ = f"In-place {fn.__name__}: writes into self (refuses expanded views)."
    return method


def fill_(self, value):
    from .._tensor import Tensor

    check_writable(self, "fill_", overlap_ok=True)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions."
            )
        value = value.item()
    value = _args.check_fits(_args.number_arg(value, "fill_", "value"), self.dtype, "fill_")
    arr = self._data
    if arr.dtype != self.dtype.np:  # real cuda bfloat16 bits
        import numpy as np

        value = np.array(value, self.dtype.np).view(arr.dtype).item()
    elif self.dtype.category < _dt.COMPLEX and isinstance(value, complex):
        raise RuntimeError(f"fill_: can't fill a {self.dtype.name} tensor with a complex value")
    arr.fill(value)
    self._bump_version()
    return self


def zero_(self):
    return fill_(self, 0)
