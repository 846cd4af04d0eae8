"""The op table's unary math and special functions: tan and the inverse and hyperbolic
trigonometric functions, expm1/exp2/log2/log10, sinc, the erf family, lgamma, digamma and
polygamma, logit, the normal distribution's ndtr/ndtri/log_ndtr, entr and the Bessel
functions. Rows keyed "special_<name>" are torch.special's own (no Tensor method); their CUDA
helpers are in preamble_special.py, their numpy references in npspecial.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _core_dt
from . import derivatives_special as dxs
from . import npmath, npspecial
from .opdef import QUIET, REAL, SPECIAL, PerOrder, PerValue, not_implemented

__all__ = ["ROWS"]

# complex operands run as one kernel: the complex overloads (fusion/preamble_complex_*.py)
_CK = {"complex_kernel": True}


def _logit_template(eps):
    if eps is None:
        return "gt_logit({0})"
    if type(eps) is not float or eps != eps or eps in (float("inf"), float("-inf")):
        raise KeyError(eps)
    return f"gt_logit_eps({{0}}, {eps!r})"


def _no_half(name):
    """The row fields of a torch.special function with no float16/bfloat16 kernel in torch
    (erfcx, ndtri, log_ndtr, the Bessel family): such operands are refused."""

    def check(operands, common):
        if common in (_core_dt.float16, _core_dt.bfloat16):
            raise not_implemented(name, common, "convert the input with .float() first")

    return {**SPECIAL, "operand_check": check}


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


def _arc_rows():
    """asin, acos, atan and their hyperbolic kin, with numpy's names (arcsin, ...) as the
    aliases torch has too."""
    rows = []
    for key in ("asin", "acos", "atan", "asinh", "acosh", "atanh"):
        alias = "arc" + key[1:]
        extra = {**QUIET, **_CK, "aliases": (alias,), "grad": getattr(dxs, key)}
        rows.append((key, 1, "float", f"gt_{key}({{0}})", getattr(np, alias), extra))
    return rows


ROWS = [
    # Names with a "special_" prefix are torch.special's functions that are no Tensor method
    # (gt.special.i0e is the row special_i0e).
    ("tan", 1, "float", "gt_tan({0})", np.tan, {**QUIET, **_CK, "grad": dxs.tan}),
    *_arc_rows(),
    ("sinh", 1, "float", "gt_sinh({0})", np.sinh, {**QUIET, **_CK, "grad": dxs.sinh}),
    ("cosh", 1, "float", "gt_cosh({0})", np.cosh, {**QUIET, **_CK, "grad": dxs.cosh}),
    ("expm1", 1, "float", "gt_expm1({0})", np.expm1, {**QUIET, **_CK, "grad": dxs.expm1}),
    ("exp2", 1, "float", "gt_exp2({0})", np.exp2, {**QUIET, **_CK, "grad": dxs.exp2}),
    ("log2", 1, "float", "gt_log2({0})", np.log2, {**QUIET, **_CK, "grad": dxs.log2}),
    ("log10", 1, "float", "gt_log10({0})", np.log10, {**QUIET, **_CK, "grad": dxs.log10}),
    ("sinc", 1, "float", "gt_sinc({0})", npspecial.sinc, {**QUIET, **_CK, "grad": dxs.sinc}),
    ("erf", 1, "float", "gt_erf({0})", npmath.erf, {**REAL, "grad": dxs.erf}),
    ("erfc", 1, "float", "gt_erfc({0})", npspecial.erfc, {**REAL, "grad": dxs.erfc}),
    ("erfinv", 1, "float", "gt_erfinv({0})", npspecial.erfinv, {**REAL, "grad": dxs.erfinv}),
    ("lgamma", 1, "float", "gt_lgamma({0})", npspecial.lgamma, {**REAL, "grad": dxs.lgamma}),
    ("digamma", 1, "float", "gt_digamma({0})", npspecial.digamma, {**REAL, "grad": dxs.digamma}),
    ("i0", 1, "float", "gt_i0({0})", npspecial.i0, {**REAL, "grad": dxs.i0}),
    ("special_i0e", 1, "float", "gt_i0e({0})", npspecial.i0e, {**SPECIAL, "grad": dxs.i0e}),
    ("special_i1", 1, "float", "gt_i1({0})", npspecial.i1, {**SPECIAL, "grad": dxs.i1}),
    ("special_i1e", 1, "float", "gt_i1e({0})", npspecial.i1e, {**SPECIAL, "grad": dxs.i1e}),
    (
        "logit",
        1,
        "float",
        PerValue(_logit_template),
        npspecial.logit,
        {**REAL, "param": "eps", "grad": dxs.logit},
    ),
    (
        "special_erfcx",
        1,
        "float",
        "gt_erfcx({0})",
        npspecial.erfcx,
        {**_no_half("erfcx"), "grad": dxs.erfcx},
    ),
    ("special_ndtr", 1, "float", "gt_ndtr({0})", npspecial.ndtr, {**SPECIAL, "grad": dxs.ndtr}),
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
    ("special_entr", 1, "float", "gt_entr({0})", npspecial.entr, {**SPECIAL, "grad": dxs.entr}),
    *_bessel_rows(),
    (
        "special_polygamma",
        1,
        "float",
        PerOrder("gt_polygamma({n}, {{0}})"),
        npspecial.polygamma,
        {**SPECIAL, "param": "n", "param_default": 1, "grad": dxs.polygamma},
    ),
]
