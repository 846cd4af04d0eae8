"""The fast paths added for training steps give what apply(), the general path they skip,
gives: on cpu, unary ops that are not ufuncs (relu, gelu, ...); on cpu and emulated cuda,
a float times a bool mask and a Tensor subclass operand (nn.Parameter) that records
nothing. Same bits, dtype, strides, no numpy warnings; a Parameter that needs recording
is still recorded."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.ops import _dispatch

SPECIAL = [0.0, -0.0, 1.5, -2.5, 0.5, -0.5, 3.0, 1e30, -1e30, np.inf, -np.inf, np.nan]
COMPOSED = [
    k
    for k, s in _dispatch.SPECS.items()
    if s.op.arity == 1 and not s.ufunc and s.fast and k != "special_polygamma"
]  # (polygamma's order comes first)


def _operand(dtype, transpose, device="cpu"):
    rng = np.random.default_rng(2)
    if dtype.is_floating_point or dtype.is_complex:
        vals = np.concatenate([SPECIAL, rng.standard_normal(12) * 4])
        with np.errstate(all="ignore"):  # (inf * 1j)
            a = (
                vals.astype(dtype.np)
                if not dtype.is_complex
                else (vals + 1j * vals[::-1]).astype(dtype.np)
            )
    elif dtype is gt.bool:
        a = rng.integers(0, 2, 24).astype(bool)
    else:
        a = rng.integers(-100 if dtype.is_signed else 0, 100, 24).astype(dtype.np)
    t = gt.from_numpy(a.reshape(4, 6)).to(device)
    return t.t() if transpose else t


def _same(fast, ref):
    assert type(fast) is type(ref) and fast.dtype == ref.dtype and fast.shape == ref.shape
    assert fast.stride() == ref.stride()
    a, b = np.ascontiguousarray(fast.cpu().numpy()), np.ascontiguousarray(ref.cpu().numpy())
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _function(key):
    """The public function of a table row (torch.special's own rows live in gt.special)."""
    if key == "mvlgamma":  # (p is required; the row's default is 1)
        return lambda x: gt.mvlgamma(x, 1)
    if key.startswith("special_"):
        return getattr(gt.special, key.removeprefix("special_"))
    return getattr(gt, key)


def test_the_cases_exist():
    assert "relu" in COMPOSED and len(COMPOSED) >= 5


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("key", COMPOSED)
def test_composed_unary_fast_path_is_apply(key, transpose):
    for dtype in _dispatch.SPECS[key].fast:
        x = _operand(dtype, transpose)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fast = _function(key)(x)
        _same(fast, _dispatch.apply(key, x))


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
def test_float_times_bool_fast_path_is_apply(device, dtype):
    x = _operand(dtype, True, device)
    mask = x.isfinite() & (x > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf * False: NaN, quietly as apply()
        fast = x * mask
    _same(fast, _dispatch.apply("mul", x, mask))


@pytest.mark.parametrize("key", ["add", "sub", "mul", "div", "pow", "maximum"])
def test_parameter_operands_take_the_fast_path_unrecorded(device, key):
    x = _operand(gt.float32, False, device)
    p = gt.nn.Parameter(_operand(gt.float32, True, device).t().flip(0).contiguous())
    op = getattr(gt, key)
    with gt.no_grad():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fast, rfast = op(x, p), op(p, x)
        _same(fast, _dispatch.apply(key, x, p))
        _same(rfast, _dispatch.apply(key, p, x))
    assert op(x, p).grad_fn is not None and op(x, p).requires_grad  # still recorded
    frozen = gt.nn.Parameter(p.detach(), requires_grad=False)
    assert op(x, frozen).grad_fn is None
