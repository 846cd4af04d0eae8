"""The op table's two-operand math functions (hypot, logaddexp(2), xlogy, xlog1py, atan2,
copysign, nextafter, fmod, ldexp, heaviside, fmax, fmin, float_power) and its elementwise
flags (isnan, isinf, isfinite, isposinf, isneginf, signbit). Their module functions are in
ops/special.py; CUDA helpers and numpy references in the same-named blocks of preamble.py
and npmath.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _core_dt
from . import derivatives as dx
from . import npmath
from .opdef import INT_DIV, NO_BOOL, NO_INPLACE, UNSIGNED

__all__ = ["ROWS"]


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
_FLAG = {"inplace": False, **UNSIGNED}

ROWS = [
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
        {**NO_BOOL, **INT_DIV, "inplace": False, "grad": dx.fmod},
    ),
    (
        "ldexp",
        2,
        "float",
        "gt_ldexp({0}, {1})",
        npmath.ldexp,
        {**NO_INPLACE, "quiet": True, "complex_kernel": True, "grad": dx.ldexp},
    ),
    (
        "heaviside",
        2,
        "promote",
        "gt_heaviside({0}, {1})",
        npmath.heaviside,
        {**NO_INPLACE, "real_only": True, "operand_check": _check_heaviside},
    ),
    (
        "fmax",
        2,
        "promote",
        "gt_fmax({0}, {1})",
        np.fmax,
        {**NO_INPLACE, "real_only": True, "grad": dx.fmax},
    ),
    (
        "fmin",
        2,
        "promote",
        "gt_fmin({0}, {1})",
        np.fmin,
        {**NO_INPLACE, "real_only": True, "grad": dx.fmin},
    ),
    (
        "float_power",
        2,
        "double",
        "gt_pow({0}, {1})",
        np.float_power,
        {**NO_INPLACE, "quiet": True, "complex_kernel": True, "grad": dx.float_power},
    ),
    ("isnan", 1, "compare", "gt_isnan({0})", np.isnan, {**_FLAG, "complex_kernel": True}),
    ("isinf", 1, "compare", "gt_isinf({0})", np.isinf, {**_FLAG, "complex_kernel": True}),
    ("isfinite", 1, "compare", "gt_isfinite({0})", np.isfinite, {**_FLAG, "complex_kernel": True}),
    ("isposinf", 1, "compare", "gt_isposinf({0})", npmath.isposinf, {**_FLAG, "real_only": True}),
    ("isneginf", 1, "compare", "gt_isneginf({0})", npmath.isneginf, {**_FLAG, "real_only": True}),
    ("signbit", 1, "compare", "gt_signbit({0})", np.signbit, {**_FLAG, "real_only": True}),
]
