"""`x.data = y`, torch's way of swapping a tensor's values under autograd (weight init,
weight tying, EMA copies in pasted torch code). Expected behaviour recorded from torch 2.13:
x takes y's memory, shape, strides and dtype; x keeps requires_grad, grad_fn, .grad, its
version and its view base; views of x made before keep the old memory."""

import numpy as np
import pytest

import gpu_tensor as gt


def test_a_leaf_takes_the_new_memory_shape_and_dtype(device):
    a = gt.ones(3, requires_grad=True, device=device)
    version = a._version
    new = gt.zeros(2, 2, dtype=gt.float64, device=device)
    a.data = new
    assert a.shape == (2, 2) and a.dtype is gt.float64
    assert a.requires_grad and a.is_leaf and a._version == version
    new[0, 0] = 7.0  # one memory: a write through either shows in both
    assert a[0, 0].item() == 7.0
    assert a.untyped_storage().data_ptr() == new.untyped_storage().data_ptr()
    (a * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), np.full((2, 2), 2.0))


def test_strides_come_with_the_data_and_old_views_keep_the_old_memory(device):
    x = gt.ones(2, 3, device=device)
    old_view = x.view(6)
    y = gt.arange(6.0, device=device).view(3, 2).t()
    x.data = y
    assert x.stride() == (1, 2) and not x.is_contiguous()
    y[0, 0] = 100.0
    assert x.tolist() == [[100.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    assert old_view.tolist() == [1.0] * 6


def test_grad_and_history_stay(device):
    c = gt.ones(3, requires_grad=True, device=device)
    c.grad = gt.ones(3, device=device)
    c.data = gt.zeros(4, device=device)
    assert c.grad.tolist() == [1.0, 1.0, 1.0]
    z = gt.ones(2, requires_grad=True, device=device) * 2
    z.data = gt.zeros(3, device=device)
    assert z.grad_fn is not None and z.tolist() == [0.0, 0.0, 0.0]


def test_a_parameter_stays_the_modules_parameter(device):
    lin = gt.nn.Linear(2, 2).to(device)
    w = lin.weight
    lin.weight.data = gt.zeros(2, 2, device=device)
    assert lin.weight is w and isinstance(w, gt.nn.Parameter) and w.requires_grad
    assert lin(gt.ones(1, 2, device=device)).tolist() == [lin.bias.tolist()]


def test_an_integer_tensor_does_not_require_grad_and_may_take_integers(device):
    e = gt.ones(3, device=device)
    e.data = gt.ones(3, dtype=gt.int64, device=device)
    assert e.dtype is gt.int64 and e.tolist() == [1, 1, 1]


def test_bad_data_is_torchs_error(device):
    a = gt.ones(3, requires_grad=True, device=device)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        a.data = 5
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        a.data = gt.ones(2, dtype=gt.int64, device=device)
    assert a.shape == (3,) and a.dtype is gt.float32  # a refused assignment changes nothing
    other = "cpu" if gt.device(device).type == "cuda" else None
    if other is not None:
        with pytest.raises(RuntimeError, match="incompatible tensor type"):
            a.data = gt.ones(3, device=other)
