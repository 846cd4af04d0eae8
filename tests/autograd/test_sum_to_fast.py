"""engine.sum_to reduces a broadcast gradient on cpu with numpy's call directly (no
dispatch) when nothing records it: the same bits and layout as the dispatched sum."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd.engine import sum_to


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "gshape,shape",
    [
        ((8, 32), (32,)),
        ((8, 32), (1, 32)),
        ((4, 5, 6), (5, 1)),
        ((3, 7), ()),
        ((2, 3, 4), (1, 3, 1)),
    ],
)
def test_fast_sum_to_is_the_dispatched_sum(gshape, shape, dtype):
    a = np.random.default_rng(1).standard_normal((gshape[-1], *gshape[:-1])).astype(dtype)
    g = gt.from_numpy(np.moveaxis(a, 0, -1))  # strided, as gradients often are
    with gt.no_grad():
        fast = sum_to(g, shape)
    with gt.enable_grad():
        ref = sum_to(g, shape)  # (grad mode on: the dispatched sum, which could record)
    assert fast.shape == ref.shape == shape and fast.dtype == ref.dtype
    assert fast.stride() == ref.stride()
    np.testing.assert_array_equal(
        fast.numpy().reshape(-1).view(np.uint8), ref.numpy().reshape(-1).view(np.uint8)
    )


def test_a_bias_gradient_is_the_batch_sum():
    x = gt.randn(8, 4, device="cpu")
    lin = gt.nn.Linear(4, 3, device="cpu")
    out = lin(x)
    g = gt.randn(8, 3, device="cpu")
    out.backward(g)
    np.testing.assert_array_equal(lin.bias.grad.numpy(), np.add.reduce(g.numpy(), axis=0))
