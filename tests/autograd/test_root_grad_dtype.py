"""A gradient handed to backward()/autograd.grad of another dtype than its output is cast
to the output's dtype first, as torch's engine does (validate_outputs): a float64 gradient
for a float32 Linear gave a matmul dtype error. A complex gradient for a real output (or
the reverse) raises torch's RuntimeError. torch 2.13 gives, for F.linear's x.grad with a
float64 gradient, the float32 result of the gradient cast to float32 (recorded)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F

_X = np.random.RandomState(0).randn(4, 5).astype(np.float32)
_W = np.random.RandomState(2).randn(3, 5).astype(np.float32)
_B = np.random.RandomState(3).randn(3).astype(np.float32)
_G = np.random.RandomState(4).randn(4, 3)


def _grads(device, g, bias=True, x_grad=True):
    x = gt.tensor(_X, device=device, requires_grad=x_grad)
    w = gt.tensor(_W, device=device, requires_grad=True)
    b = gt.tensor(_B, device=device, requires_grad=True) if bias else None
    F.linear(x, w, b).backward(g)
    return [t.grad for t in (x, w, b) if t is not None and t.grad is not None]


@pytest.mark.parametrize("gdtype", [gt.float64, gt.float16, gt.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
def test_linear_takes_a_gradient_of_another_float_dtype(device, gdtype, bias, x_grad):
    g = gt.tensor(_G, dtype=gdtype, device=device)
    got = _grads(device, g, bias, x_grad)
    want = _grads(device, g.to(gt.float32), bias, x_grad)  # torch: cast first, same bits
    assert len(got) == len(want) == 1 + bias + x_grad
    for a, b in zip(got, want, strict=True):
        assert a.dtype is gt.float32
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    if gdtype is gt.float64 and x_grad:  # recorded from torch 2.13 (cpu), matmul rounding
        np.testing.assert_allclose(
            got[0].cpu().numpy()[0, :3],
            [-0.9911026954650879, -2.0342588424682617, -0.7719626],
            rtol=1e-6,
        )


def test_leaf_and_autograd_grad_roots_are_cast(device):
    x = gt.ones(3, device=device, requires_grad=True)
    x.backward(gt.ones(3, dtype=gt.float64, device=device))
    assert x.grad.dtype is gt.float32
    y = x * 2
    (g,) = gt.autograd.grad(y, x, gt.ones(3, dtype=gt.int64, device=device))
    assert g.dtype is gt.float32 and g.tolist() == [2.0, 2.0, 2.0]


def test_complex_gradient_for_a_real_output_is_torchs_error(device):
    y = gt.ones(3, device=device, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has a dtype of .*complex64"):
        y.backward(gt.ones(3, dtype=gt.complex64, device=device))
