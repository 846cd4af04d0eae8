"""`x.div(y, rounding_mode=...)` inside @gt.fuse: the eager function's rules, traced.

torch's `rounding_mode` keyword was refused on a traced value (TypeError), and `gt.div(x, y,
rounding_mode="trunc")` named `Tensor.device` in its error. Fused and eager must agree on dtype
and bits: the half types truncate the float32 quotient and round once, and a 0-dim divisor of
another dtype keeps its precision, as eagerly."""

import itertools

import numpy as np
import pytest

import gpu_tensor as gt

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32")


def _method(x, y, mode):
    return x.div(y, rounding_mode=mode)


def _function(x, y, mode):
    return gt.div(x, y, rounding_mode=mode)


def _operands(device, da, db, divisor_ndim):
    rng = np.random.default_rng(7)
    a = gt.tensor(rng.normal(size=48) * 50, device=device).to(getattr(gt, da))
    if divisor_ndim == 0:
        return a, gt.tensor(2.7, device=device).to(getattr(gt, db))
    b = gt.tensor(rng.normal(size=48) * 3, device=device).to(getattr(gt, db))
    return a, gt.where(b == 0, gt.ones_like(b), b)


@pytest.mark.parametrize("call", [_method, _function], ids=["method", "function"])
@pytest.mark.parametrize("mode", ["trunc", "floor", None])
@pytest.mark.parametrize("divisor_ndim", [1, 0])
def test_fused_division_rounds_as_eager(call, mode, divisor_ndim, device):
    fused = gt.fuse(lambda x, y: call(x, y, mode))
    for da, db in itertools.product(DTYPES, repeat=2):
        if mode is None and da.startswith("int") and db.startswith("int"):
            continue  # true division of ints: a float result, covered by the every-row test
        a, b = _operands(device, da, db, divisor_ndim)
        want, got = call(a, b, mode), fused(a, b)
        assert got.dtype == want.dtype, (da, db)
        np.testing.assert_array_equal(
            got.cpu().double().numpy(), want.cpu().double().numpy(), err_msg=f"{da} / {db}"
        )


def test_a_bad_rounding_mode_is_torchs_error_inside_fuse():
    fused = gt.fuse(lambda x, y: x.div(y, rounding_mode="round"))
    with pytest.raises(ValueError, match="rounding_mode to be one of None, 'trunc', or 'floor'"):
        fused(gt.ones(3), gt.ones(3))
