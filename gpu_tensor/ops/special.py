"""Elementwise math beyond the core module (ops/elementwise.py): the trig and hyperbolic
family, erf/erfc/erfinv, log2/log10/expm1/exp2, lgamma/digamma/polygamma, sinc, i0, logit,
atan2 and the composites torch offers (xlogy, hypot, logaddexp, copysign, float_power,
nan_to_num, ...).

The unary primitives are rows of the op table (fusion/optable.py, `ROWS` here): on cuda each
is one generated kernel, with no host round trip, and each works inside `@gt.fuse`; cpu and
emulated cuda run the row's numpy function (fusion/npspecial.py). The other primitives run
the array module's function (numpy on cpu and emulated cuda, cupy on cuda). Composites are
written with differentiable ops, so autograd comes with them; the primitives' formulas are
in autograd/formulas_more.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._grad import differentiable
from .._out import call as out_call
from .._tensor import Tensor
from ..backends import get_backend
from ._dispatch import apply, make_unary, result_tensor
from .row_function import binary_function

__all__ = [
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tan",
    "asinh",
    "acosh",
    "atanh",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "erf",
    "erfc",
    "erfinv",
    "log2",
    "log10",
    "expm1",
    "exp2",
    "lgamma",
    "digamma",
    "sinc",
    "deg2rad",
    "rad2deg",
    "frac",
    "logit",
    "sgn",
    "signbit",
    "fix",
    "trunc",
    "absolute",
    "positive",
    "atan2",
    "arctan2",
    "xlogy",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "copysign",
    "float_power",
    "nan_to_num",
    "isposinf",
    "isneginf",
    "isreal",
    "isclose",
    "allclose",
    "equal",
    "fmax",
    "fmin",
    "heaviside",
    "gcd",
    "lcm",
    "ldexp",
    "nextafter",
    "i0",
    "angle",
    "polygamma",
    "mvlgamma",
]


def _elementwise(bk, fn, arrays):
    """`fn(xp, *arrays)`, an elementwise result, through the backend: emulated cuda computes
    a large one piece by piece into allocator memory (numpy's temporaries stay small)."""
    xp = bk.xp
    return bk.elementwise(None, lambda *a: fn(xp, *a), arrays, None)


# -- rows of the op table (fusion/optable.py): one generated kernel on cuda, fusable -------
_ROW_KEYS = (
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "expm1",
    "exp2",
    "log2",
    "log10",
    "sinc",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "i0",
)
ROWS = {key: make_unary(key) for key in _ROW_KEYS}  # formulas: autograd/formulas_more.py
(
    tan,
    asin,
    acos,
    atan,
    sinh,
    cosh,
    asinh,
    acosh,
    atanh,
    expm1,
    exp2,
    log2,
    log10,
    sinc,
    erf,
    erfc,
    erfinv,
    lgamma,
    digamma,
    i0,
) = (ROWS[k] for k in _ROW_KEYS)
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
# torch.special's own (no torch.<name>, no Tensor method): gpu_tensor/special.py names them
_SPECIAL_ONLY = ("erfcx", "ndtr", "ndtri", "log_ndtr", "entr")
ROWS.update({"special_" + name: make_unary("special_" + name) for name in _SPECIAL_ONLY})
erfcx, ndtr, ndtri, log_ndtr, entr = (ROWS["special_" + name] for name in _SPECIAL_ONLY)
for _name in _SPECIAL_ONLY:
    ROWS["special_" + _name].__name__ = ROWS["special_" + _name].__qualname__ = _name


@differentiable  # formula: LogitBackward0 in autograd/formulas_more.py
def logit(input, eps=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps is given: the table row
    logit, whose parameter is eps."""
    return apply("logit", input, eps=None if eps is None else float(eps))


ROWS["logit"] = logit


def absolute(input):
    return input.abs()


# -- the last rows (issue 23): deg2rad, rad2deg, frac, sgn, angle, positive, nan_to_num,
# mvlgamma (trunc and its alias fix: ops/elementwise.py) ------------------------------------
ROWS.update({key: make_unary(key) for key in ("trunc", "deg2rad", "rad2deg", "frac", "sgn")})
trunc, deg2rad, rad2deg, frac, sgn = (
    ROWS[k] for k in ("trunc", "deg2rad", "rad2deg", "frac", "sgn")
)
fix = trunc  # torch's other name (the row's alias)
_angle = make_unary("angle")  # formulas: autograd/formulas_more.py


def angle(input, *, out=None):
    """The argument of each element: the row angle for real tensors (pi below 0, nan for
    nan, 0 otherwise); atan2(imag, real) for complex ones, whose result is real."""
    if isinstance(input, Tensor) and input.dtype.category == _dt.COMPLEX:
        if out is not None:
            return out_call("angle", angle, (input,), {}, out)
        return atan2(input.imag, input.real)
    return _angle(input, out=out)


def positive(input):
    """The tensor itself (torch returns its input), refused for bool: the row positive,
    which a traced value records as an identity."""
    if type(input) is not Tensor:
        return apply("positive", input)
    if input.dtype is _dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _real_float(dt):
    real = dt.to_real() if dt.category == _dt.COMPLEX else dt
    return real if real.category == _dt.FLOAT else None


def _rounded_to(real, v) -> float:
    """v rounded to the dtype `real` (a limit it cannot hold becomes inf, as in torch)."""
    with np.errstate(over="ignore"):
        return float(np.asarray(float(v)).astype(real.np))


_BF16_MAX = 3.3895313892515355e38  # (np.finfo has no bfloat16)


@differentiable  # formula: NanToNumBackward0 in autograd/formulas_more.py
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """nan, +inf and -inf replaced by nan, posinf and neginf (defaults: 0 and the dtype's
    largest and smallest finite values): the row nan_to_num, whose parameter is the three
    limits, resolved here from the input's dtype."""
    if out is not None:
        return out_call("nan_to_num", nan_to_num, (input, nan, posinf, neginf), {}, out, "same")
    real = _real_float(input.dtype)
    if real is None:  # integer and bool tensors: a copy (the limits are not even checked)
        return apply("nan_to_num", input)
    big = _BF16_MAX if real is _dt.bfloat16 else float(np.finfo(real.np).max)
    hi = big if posinf is None else _rounded_to(real, posinf)
    lo = -big if neginf is None else _rounded_to(real, neginf)
    return apply("nan_to_num", input, limits=(_rounded_to(real, nan), hi, lo))


@differentiable  # formula: MvlgammaBackward0 in autograd/formulas_more.py
def mvlgamma(input, p):
    """log of the multivariate gamma function of dimension p: the row mvlgamma, whose
    parameter is p (like torch 2.13, no check that input > (p - 1) / 2)."""
    if type(p) is not int or p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return apply("mvlgamma", input, p=p)


ROWS.update(fix=fix, angle=angle, positive=positive, nan_to_num=nan_to_num, mvlgamma=mvlgamma)


def _bool_result(x, arr):
    bk = get_backend(x.device)
    arr, st = bk.adopt(arr)
    return Tensor._make(arr, x.device, _dt.bool, st)


def isreal(input):
    if input.dtype.category != _dt.COMPLEX:
        return _bool_result(input, get_backend(input.device).xp.ones(input.shape, bool))
    return input.imag == 0


# -- binary ---------------------------------------------------------------------------------
def _as_tensor(x, like):
    if isinstance(x, Tensor):
        return x
    from ..creation import tensor

    return tensor(x, device=like.device)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise; infinities are close only to
    themselves, nan to nothing (to nan with equal_nan)."""
    from .elementwise import where

    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if input.dtype.category < _dt.FLOAT:
        return input == other
    finite = input.isfinite() & other.isfinite()
    a, b = where(finite, input, 0), where(finite, other, 0)  # no inf - inf (a warning)
    close = (((a - b).abs() <= atol + rtol * b.abs()) & finite) | (input == other)
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other) -> bool:
    """True when both have the same shape and elements (torch.equal)."""
    if input.shape != other.shape:
        return False
    return bool((input == other).all())


# --- binary special functions (issue 23) ----------------------------------------------------
# Rows of the op table (fusion/optable.py): one generated kernel on cuda, fusable, the
# derivative in the row; with the elementwise flags (isnan, ..., signbit) they are unary rows.
_TENSORS_ONLY = (
    "hypot",
    "logaddexp",
    "logaddexp2",
    "atan2",
    "nextafter",
    "ldexp",
    "heaviside",
    "fmax",
    "fmin",
)  # torch has no overload taking a Python number
_TENSOR_FIRST = ("copysign", "fmod")  # a number only as the second operand
BINARY_ROWS = {
    **{k: binary_function(k, tensors_only=True) for k in _TENSORS_ONLY},
    **{k: binary_function(k, tensor_first=True) for k in _TENSOR_FIRST},
    **{k: binary_function(k) for k in ("xlogy", "xlog1py", "float_power")},
    **{k: make_unary(k) for k in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit")},
}  # formulas: autograd/formulas_more.py; ops/elementwise.py names them too (method table)
(
    hypot,
    logaddexp,
    logaddexp2,
    atan2,
    nextafter,
    ldexp,
    heaviside,
    fmax,
    fmin,
    copysign,
    fmod,
    xlogy,
    xlog1py,
    float_power,
) = (
    BINARY_ROWS[k]
    for k in (
        "hypot",
        "logaddexp",
        "logaddexp2",
        "atan2",
        "nextafter",
        "ldexp",
        "heaviside",
        "fmax",
        "fmin",
        "copysign",
        "fmod",
        "xlogy",
        "xlog1py",
        "float_power",
    )
)
isposinf, isneginf, signbit = (
    BINARY_ROWS["isposinf"],
    BINARY_ROWS["isneginf"],
    BINARY_ROWS["signbit"],
)
arctan2 = atan2


def _int_binary(name, fn):
    def op(input, other):
        b = _as_tensor(other, input)
        dt = _dt.result_type(input, other)
        if dt.category >= _dt.FLOAT:
            raise NotImplementedError(
                f"\"{name}_cpu\" not implemented for '{_dt.SCALAR_TYPE_NAMES[dt.name]}'"
            )
        bk = get_backend(input.device)
        r = _elementwise(bk, fn, (input._data, b._data))
        return result_tensor(bk, r, input.device, dt)

    op.__name__ = op.__qualname__ = name
    return op


gcd = _int_binary("gcd", lambda xp, a, b: xp.gcd(a, b))
lcm = _int_binary("lcm", lambda xp, a, b: xp.lcm(a, b))


@differentiable  # formula: polygamma(n + 1, x), in autograd/formulas_more.py
def polygamma(n, input):
    """The n-th derivative of digamma (n = 0: digamma itself): the table row
    special_polygamma, whose parameter is n."""
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n}")
    return apply("special_polygamma", input, n=n)


ROWS["special_polygamma"] = polygamma
