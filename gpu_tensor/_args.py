"""Argument checks at the API boundary (the role of torch's argument parser): sizes, dims,
integer and number arguments, tensor arguments, and whether a value fits a dtype.

Callers keep their all-int fast paths and come here only when an argument is not a plain
int, so a well-formed call pays nothing. Everything raises torch's class with a message
naming the argument, what was wrong, and what to pass instead. Pure Python + numpy (the
layer of `dtype`): a Tensor is recognised by duck typing, never imported.
"""

from __future__ import annotations

import math
import operator

import numpy as np

__all__ = [
    "MAX_DIMS",
    "sizes",
    "int_arg",
    "number_arg",
    "tensor_arg",
    "check_fits",
    "check_float_to_int",
    "check_int_to_int",
    "wrap_int",
]

_RANGES: dict = {}  # numpy dtype -> (lowest, largest): np.finfo/iinfo cost ~1 us a call


def _range(npd):
    r = _RANGES.get(npd)
    if r is None:
        if npd.kind in "iub":
            info = np.iinfo(npd) if npd.kind != "b" else None
            r = (int(info.min), int(info.max)) if info else (0, 1)
        else:
            import ml_dtypes  # a declared dependency; its finfo also knows bfloat16

            info = ml_dtypes.finfo(npd) if npd.name == "bfloat16" else np.finfo(npd)
            r = (float(info.min), float(info.max))
        _RANGES[npd] = r
    return r


MAX_DIMS = 128  # torch.tensor(): nested data deeper than this is "too many dimensions"
_I64_MAX = 2**63 - 1


def _int_tensor(x) -> bool:
    """A 0-d integer gpu_tensor/torch tensor: torch takes it wherever an int goes."""
    dt = getattr(x, "dtype", None)
    return (
        getattr(x, "ndim", None) == 0
        and hasattr(x, "item")
        and not isinstance(x, np.ndarray)
        and getattr(dt, "is_floating_point", True) is False
        and not getattr(dt, "is_complex", False)
        and str(dt).rsplit(".", 1)[-1] != "bool"
    )


def _as_int(x):
    """x as a Python int, or None when it is not an integer (bools are rejected by the
    caller where torch rejects them)."""
    if type(x) is int:
        return x
    if isinstance(x, np.integer) or _int_tensor(x):
        return int(x.item())
    if isinstance(x, bool):
        return int(x)
    return None


def _describe(x) -> str:
    t = type(x)
    return (
        t.__name__ if t.__module__ == "builtins" else (f"{t.__module__.split('.')[0]}.{t.__name__}")
    )


def sizes(args, fn: str = "view", arg: str = "size") -> tuple:
    """(2, 3), ((2, 3),), ([2, 3],) and (Size,) all mean (2, 3). TypeError for anything that
    is not a whole number (floats, strings, None, nested sequences, a bool in first place),
    TypeError for values beyond int64. Negative values are left to the caller (view takes
    -1, factories refuse them)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
        where = f"argument '{arg}' (position 1) must be tuple of ints, but found element of"
    elif (
        len(args) == 1 and not isinstance(args[0], (bool, np.bool_)) and (_as_int(args[0]) is None)
    ):
        x = args[0]
        raise TypeError(
            f"{fn}(): argument '{arg}' (position 1) must be tuple of ints, not "
            f"{_describe(x)}; pass whole numbers, e.g. {fn}(2, 3)"
        )
    else:
        where = f"argument '{arg}' must be tuple of ints, but found element of"
    out = []
    for i, a in enumerate(args):
        v = None if (i == 0 and isinstance(a, (bool, np.bool_))) else _as_int(a)
        if v is None:
            raise TypeError(
                f"{fn}(): {where} type {_describe(a)} at pos {i} ({a!r:.40}); sizes "
                f"are whole numbers: use int(...) to convert"
            )
        if not -_I64_MAX - 1 <= v <= _I64_MAX:
            raise TypeError(
                f"{fn}(): {arg} {v} at pos {i} does not fit in int64 (Overflow "
                "when unpacking long long)"
            )
        out.append(v)
    return tuple(out)


def int_arg(x, fn: str, arg: str, pos: int = 1) -> int:
    """A scalar int argument (linspace's steps, randperm's n, eye's n): TypeError for bools,
    floats, strings and None, as torch's parser gives."""
    v = None if isinstance(x, (bool, np.bool_)) else _as_int(x)
    if v is None:
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
            f"{_describe(x)}; pass a whole number"
        )
    return v


def number_arg(x, fn: str, arg: str):
    """A Python/numpy number (or a 0-d tensor's value); TypeError for str, None, lists."""
    if type(x) in (int, float, bool, complex):
        return x
    if isinstance(x, np.generic) and x.dtype.kind in "biufc":
        return x.item()
    if getattr(x, "ndim", None) == 0 and hasattr(x, "item") and not isinstance(x, np.ndarray):
        return x.item()
    if hasattr(x, "ndim") and hasattr(x, "item") and not isinstance(x, np.ndarray):
        raise RuntimeError(
            f"{fn}(): only supports 0-dimension value tensor but got tensor "
            f"with {x.ndim} dimensions; pass a number or a 0-d tensor"
        )
    try:
        return operator.index(x)
    except TypeError:
        pass
    raise TypeError(
        f"{fn}(): argument '{arg}' must be Number, not {_describe(x)}; pass a "
        "bool, int, float or complex"
    )


def tensor_arg(x, fn: str, arg: str = "input", pos: int = 1, cls=None):
    """TypeError unless x is a Tensor ("must be Tensor, not list"), with the way to make one."""
    if cls is not None and isinstance(x, cls):
        return x
    raise TypeError(
        f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
        f"{_describe(x)}; convert it first with gpu_tensor.tensor(...)"
    )


def check_fits(value, dt, fn: str = "fill"):
    """RuntimeError when the Python number `value` cannot be stored in dtype `dt` (torch:
    "value cannot be converted to type float without overflow"): NaN or inf into an integer
    type, an integer outside its range, a finite float beyond a float type's largest value
    (inf and NaN themselves are storable). Returns `value`, for chaining."""
    kind = dt.np.kind
    if isinstance(value, complex):
        if kind == "c":
            return value
        if value.imag != 0:
            raise RuntimeError(
                f"{fn}(): value cannot be converted to type {dt.name} without "
                f"overflow: {value} has an imaginary part; use a complex dtype"
            )
        value = value.real
    if type(value) is int and not -(2**63) <= value < 2**64:
        raise OverflowError(f"{fn}(): int too big to convert: {value} does not fit in 64 bits")
    if kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise RuntimeError(
                    f"{fn}(): value cannot be converted to type {dt.name} "
                    f"without overflow: {value} has no integer value"
                )
            value_i = math.trunc(value)
        else:
            value_i = int(value)
        lo, hi = _range(dt.np)
        low = -hi if kind == "u" else lo  # torch lets negatives wrap into unsigned types
        if not low <= value_i <= hi:
            raise RuntimeError(
                f"{fn}(): value cannot be converted to type {dt.name} without "
                f"overflow: {value} is outside [{lo}, {hi}]"
            )
        return wrap_int(value_i, dt.np)
    elif dt.category == 2 and not isinstance(value, bool) and math.isfinite(value):
        hi = _range(dt.np)[1]
        if abs(value) > hi:  # torch's `overflows` check: beyond max, inf itself is fine
            raise RuntimeError(
                f"{fn}(): value cannot be converted to type {dt.name} without overflow: "
                f"{value} is beyond its largest finite value {hi:g}; use a wider dtype "
                "(float64), or pass float('inf') explicitly"
            )
    return value


def wrap_int(v: int, npd):
    """A Python int reduced modulo 2**bits into numpy dtype `npd`'s range, the way torch's
    integer arithmetic wraps (`uint8 + 300`); numpy 2 would raise OverflowError instead.
    OverflowError (torch's class) beyond 64 bits."""
    info = np.iinfo(npd)
    if info.min <= v <= info.max:
        return v
    if not -(2**63) <= v < 2**64:
        raise OverflowError(
            f"Python int {v} is too big to convert to {npd.name}: it does not fit in 64 bits"
        )
    bits = 8 * npd.itemsize
    v %= 1 << bits
    return v - (1 << bits) if info.min < 0 and v > info.max else v


def _overflow(dt, v):
    return RuntimeError(
        f"value cannot be converted to type {dt.name} without overflow: {v} "
        f"(outside {dt.name}'s range)"
    )


def check_float_to_int(host: np.ndarray, dt):
    """`host` (floats) cast to dtype `dt`, truncating as torch does; RuntimeError (torch's
    c10::overflows) for NaN, inf and values beyond the integer dtype's range: below its
    lowest or above its max, before truncation (255.5 -> uint8 and -0.5 -> uint8 raise)."""
    if dt.np.kind in "iu" and host.size:
        info = np.iinfo(dt.np)
        # a 64-bit max rounds up to 2**63 (2**64) as a float: a float equal to it does not fit
        top = float(info.max)
        with np.errstate(invalid="ignore"):
            bad = (
                ~np.isfinite(host)
                | (host < float(info.min))
                | ((host >= top) if info.bits == 64 else (host > top))
            )
        if bad.any():
            raise _overflow(dt, host[bad].flat[0])
        return np.trunc(host).astype(dt.np)
    with np.errstate(invalid="ignore"):
        return host.astype(dt.np)


def check_int_to_int(host: np.ndarray, dt):
    """`host` (int64) cast to the integer dtype `dt` (not uint64: Python ints up to 2**64
    need their own path) as torch's tensor() does: RuntimeError
    beyond the range; an unsigned dtype also takes negatives down to -max, which wrap
    (two's complement: -1 -> uint8 is 255, as in torch)."""
    info = np.iinfo(dt.np)
    if host.size and info.bits < 64:
        lo, hi = int(host.min()), int(host.max())
        if hi > info.max:
            raise _overflow(dt, hi)
        if lo < (-info.max if info.min == 0 else info.min):
            raise _overflow(dt, lo)
    return host.astype(dt.np)
