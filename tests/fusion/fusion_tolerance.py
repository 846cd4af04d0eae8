"""The per-dtype tolerance table for comparing fused results with numpy references."""

from __future__ import annotations

import numpy as np

from gpu_tensor.fusion.dtypes import BFLOAT16

# (rtol, atol) by result dtype. Half types: fused chains round once at the end while a
# reference may round per op or call a different libm; allow about two units in the last place.
TOLERANCE = {
    np.dtype(np.float16): (2e-3, 2e-3),
    BFLOAT16: (1.6e-2, 1.6e-2),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
}


def assert_close(actual, expected, dtype=None):
    dtype = np.dtype(dtype or np.asarray(actual).dtype)
    a = np.asarray(actual)
    e = np.asarray(expected)
    if dtype in TOLERANCE:
        rtol, atol = TOLERANCE[dtype]
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)  # fmt: skip
    else:
        np.testing.assert_array_equal(a, e.astype(a.dtype))
