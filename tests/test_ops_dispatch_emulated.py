"""Emulated cuda's short elementwise path (ops/_host_paths._host_fast) gives what apply(), the
general path it skips, gives: the same values bit for bit, dtype, layout, allocator-backed
storage, and no numpy warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.ops import _dispatch

pytestmark = pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")

RNG = np.random.default_rng(11)
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "remainder", "eq", "lt"]
UNARY = ["exp", "neg", "sqrt", "relu", "sigmoid", "tanh", "log"]


def _t(shape, dtype=np.float32, transpose=False):
    a = RNG.standard_normal(shape).astype(dtype)
    t = gt.from_numpy(a).to("cuda")
    return t.t() if transpose else t


def _same(fast, ref):
    assert fast.dtype == ref.dtype and fast.shape == ref.shape
    assert fast.stride() == ref.stride()
    a, b = fast.cpu().numpy(), ref.cpu().numpy()
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    assert fast.untyped_storage().nbytes() >= fast.numel() * fast.element_size()


@pytest.mark.parametrize("key", BINARY)
@pytest.mark.parametrize("case", ["tensors", "broadcast", "scalar", "reflected", "transposed"])
def test_binary_fast_path_is_apply(key, case):
    x = _t((5, 4)).abs() + 0.5 if key == "pow" else _t((5, 4))
    if case == "tensors":
        other = _t((5, 4))
    elif case == "broadcast":
        other = _t((4,))
    elif case == "transposed":
        x, other = _t((4, 5), transpose=True), _t((5, 4))
    else:
        other = 1.7
    f = _dispatch._RBINARY[key] if case == "reflected" else _dispatch._BINARY[key]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = f(x, other)
        ref = (
            _dispatch.apply(key, other, x)
            if case == "reflected"
            else _dispatch.apply(key, x, other)
        )
    _same(fast, ref)


@pytest.mark.parametrize("key", UNARY)
def test_unary_fast_path_is_apply(key):
    x = _t((6, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sqrt/log of negatives: NaN, silently
        fast = getattr(gt, key)(x) if hasattr(gt, key) else getattr(x, key)()
        ref = _dispatch.apply(key, x)
    _same(fast, ref)


def test_integer_scalar_out_of_range_still_gets_apply_error():
    x = gt.ones(3, dtype=gt.int32, device="cuda")
    ref = gt.ones(3, dtype=gt.int32) + 2**40  # cpu: torch's wrap-around
    np.testing.assert_array_equal((x + 2**40).cpu().numpy(), ref.numpy())
