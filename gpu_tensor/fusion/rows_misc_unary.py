"""The op table's remaining unary rows: trunc (fix) and frac, deg2rad and rad2deg, sgn and
angle, positive, nan_to_num, mvlgamma, conj and conj_physical. Their module functions are in ops/special.py
(trunc, conj, conj_physical: ops/elementwise.py); their in-place methods come from the breadth block of
_tensor_methods.py (ops/_inplace.py).
"""

from __future__ import annotations

import numpy as np

from . import derivatives as dx
from . import derivatives_special as dxs
from . import npmath, npspecial
from .opdef import NO_BOOL, QUIET, REAL, PerOrder, PerValue

__all__ = ["ROWS"]


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

ROWS = [
    (
        "trunc",
        1,
        "same",
        "gt_trunc({0})",
        npmath.keep_ints(np.trunc),
        {**NO_BOOL, **_LAST, "real_only": True, "aliases": ("fix",), "grad": dx.zero},
    ),
    (
        "frac",
        1,
        "same",
        "gt_frac({0})",
        npmath.frac,
        {**_LAST, **QUIET, "float_only": True, "real_only": True, "grad": dxs.identity},
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
        "gt_sign({0})",  # complex: z / |z| (fusion/preamble_complex.py)
        npmath.sign,
        {**_LAST, "complex_fn": npmath.sgn_complex, "complex_kernel": True, "grad": dxs.sgn},
    ),
    # complex input: atan2(imag, real), real. Eagerly ops/special.angle computes it with the
    # atan2 row over the .imag/.real views; a traced value (@gt.fuse) takes this row, whose
    # complex overload calls the same gt_atan2 (fusion/preamble_complex.py): the same bits
    (
        "angle",
        1,
        "float",
        "gt_angle({0})",
        npmath.angle,
        {
            **_LAST,
            **QUIET,
            "complex_fn": npmath.angle_complex,
            "complex_kernel": True,
            "complex_to_real": True,
            "grad": dxs.angle,
        },
    ),
    (
        "positive",
        1,
        "same",
        "{0}",
        np.copy,
        {**_LAST, "no_bool": _POS_BOOL, "complex_kernel": True, "grad": dxs.identity},
    ),
    (
        "nan_to_num",
        1,
        "same",
        PerValue(_nan_to_num_template),
        npmath.nan_to_num,
        {
            **_LAST,
            **QUIET,
            "param": "limits",
            "complex_fn": npmath.nan_to_num,
            "complex_kernel": True,
            "grad": dxs.nan_to_num,
        },
    ),
    (
        "mvlgamma",
        1,
        "float",
        PerOrder("gt_mvlgamma({{0}}, {n})"),
        npspecial.mvlgamma,
        {
            **_LAST,
            **REAL,
            "no_bool": _MVLGAMMA_BOOL,
            "param": "p",
            "param_default": 1,
            "grad": dxs.mvlgamma,
        },
    ),
    # conj and conj_physical: the imaginary part negated (gt_conj, fusion/preamble_complex.py).
    # Eagerly a real tensor is returned itself (torch's conj and conj_physical both do); a
    # traced real value records the row, whose real overload is the identity. (QUIET: the
    # cpu fast path's cheap silencing, which complex operands of a loud row lack: _specs.py)
    (
        "conj",
        1,
        "same",
        "gt_conj({0})",
        np.conjugate,
        {**_LAST, **QUIET, "complex_kernel": True, "grad": dxs.conj},
    ),
    (
        "conj_physical",
        1,
        "same",
        "gt_conj({0})",
        np.conjugate,
        {**_LAST, **QUIET, "complex_kernel": True, "grad": dxs.conj},
    ),
]
