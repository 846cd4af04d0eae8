"""The binary special-function rows and the elementwise flags of the op table (issue 23),
as the two special-rows test files (cpu and emulated cuda; the simulated CuPy) list them,
and the function a user calls for each."""

from __future__ import annotations

import gpu_tensor as gt
from gpu_tensor.ops import special as sp

BINARY = [
    "hypot",
    "logaddexp",
    "logaddexp2",
    "xlogy",
    "xlog1py",
    "atan2",
    "copysign",
    "nextafter",
    "fmod",
    "ldexp",
    "heaviside",
    "fmax",
    "fmin",
    "float_power",
]
FLAGS = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"]


def row_function(key):
    """gt.<key>, or torch.special's xlog1py (which has no top-level name)."""
    return sp.xlog1py if key == "xlog1py" else getattr(gt, key)
