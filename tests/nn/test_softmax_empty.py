"""softmax and log_softmax over a tensor with no elements give an empty result of its shape
and dtype (and an empty gradient), as torch 2.13 does for every dim (recorded): gt raised
IndexError (amax over a zero-size dim). A dim out of range still raises torch's IndexError."""

from __future__ import annotations

import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F

_NODE = {"softmax": "SoftmaxBackward0", "log_softmax": "LogSoftmaxBackward0"}


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize(
    ("shape", "dim"),
    [((3, 0), 1), ((3, 0), -1), ((3, 0), 0), ((0, 3), 0), ((0,), 0), ((2, 0, 4), 1)],
)
@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
def test_empty_input_gives_an_empty_result(device, fn, shape, dim, dtype):
    y = getattr(F, fn)(gt.zeros(shape, dtype=dtype, device=device), dim)
    assert tuple(y.shape) == shape and y.dtype is dtype and y.device.type == device
    x = gt.zeros(shape, dtype=dtype, device=device, requires_grad=True)
    y = getattr(F, fn)(x, dim)
    assert y.grad_fn.name() == _NODE[fn]
    y.backward(gt.ones_like(y))
    assert tuple(x.grad.shape) == shape and x.grad.dtype is dtype


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_empty_input_with_a_dtype_and_a_bad_dim(device, fn):
    y = getattr(F, fn)(gt.zeros((3, 0), device=device), 1, dtype=gt.float64)
    assert tuple(y.shape) == (3, 0) and y.dtype is gt.float64
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(F, fn)(gt.zeros((0,), device=device), 1)
