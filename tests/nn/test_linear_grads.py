"""F.linear's AddmmBackward0 computes the gradient of an operand that is a transposed view
(the weight, always; the input, when it is one) transposed, as torch's mm_mat2_backward and
MmBackward0 do: (g.t() @ x).t() rather than x.t() @ g. The bits are those of numpy's
product in torch's orientation, g.T @ x; the old orientation's product is the same sum over
the batch, but whether BLAS rounds it to the same bits depends on the BLAS build and the CPU
(equal until numpy 2.4.6 with OpenBLAS 0.3.31 came in; with it, on an AMD EPYC, 1 ulp apart
in 17% of the elements, 2026-12-05), so that is compared to within rounding.
The weight's .grad is dense, and the engine lets the weight and the bias keep their
gradients without a copy."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from tests.nn.steals import record_steals


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "batch,fan_in,fan_out",
    [(64, 784, 256), (8, 32, 32), (1, 3, 1), (5, 1, 7), (17, 33, 1), (3, 100, 10)],
)
def test_linear_grads_are_torchs_orientations_bits(device, batch, fan_in, fan_out, dtype):
    rng = np.random.default_rng(batch * 1000 + fan_in + fan_out)
    x = rng.standard_normal((batch, fan_in)).astype(dtype)
    w = rng.standard_normal((fan_out, fan_in)).astype(dtype)
    b = rng.standard_normal(fan_out).astype(dtype)
    g = rng.standard_normal((batch, fan_out)).astype(dtype)
    xt = gt.tensor(x, device=device, requires_grad=True)
    wt = gt.tensor(w, device=device, requires_grad=True)
    bt = gt.tensor(b, device=device, requires_grad=True)
    gt.nn.functional.linear(xt, wt, bt).backward(gt.tensor(g, device=device))
    # torch's formula: g.t() @ x for the weight, g @ w for the input (numpy's own products);
    # the old one, x.t() @ g, sums the same terms in the same order, so it agrees to rounding
    wgrad = wt.grad.cpu().numpy()
    np.testing.assert_array_equal(_bits(wgrad), _bits(np.matmul(g.T, x)))
    tol = 16 * np.finfo(dtype).eps * np.sqrt(batch)  # |g|, |x| ~ 1: sums of ~batch terms
    np.testing.assert_allclose(wgrad, np.matmul(x.T, g).T, rtol=tol, atol=tol)
    np.testing.assert_array_equal(_bits(xt.grad.cpu().numpy()), _bits(np.matmul(g, w)))
    np.testing.assert_array_equal(_bits(bt.grad.cpu().numpy()), _bits(np.add.reduce(g, 0)))
    assert wt.grad.is_contiguous() and wt.grad.stride() == (fan_in, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_transposed_input_gets_its_gradient_transposed(device, dtype):
    rng = np.random.default_rng(7)
    x_cols = rng.standard_normal((20, 6)).astype(dtype)  # the input is its transpose
    w = rng.standard_normal((4, 20)).astype(dtype)
    g = rng.standard_normal((6, 4)).astype(dtype)
    base = gt.tensor(x_cols, device=device, requires_grad=True)
    wt = gt.tensor(w, device=device, requires_grad=True)
    out = gt.nn.functional.linear(base.t(), wt, gt.zeros(4, dtype=wt.dtype, device=device))
    out.backward(gt.tensor(g, device=device))
    np.testing.assert_array_equal(_bits(base.grad.cpu().numpy()), _bits(np.matmul(w.T, g.T)))
    np.testing.assert_array_equal(_bits(wt.grad.cpu().numpy()), _bits(np.matmul(g.T, x_cols.T)))


def test_the_weight_and_bias_keep_their_gradients_without_a_copy(monkeypatch):
    steals = record_steals(monkeypatch)
    lin = gt.nn.Linear(5, 3)
    x = gt.randn(4, 5)
    gt.nn.functional.relu(lin(x)).sum().backward()
    assert steals == {id(lin.weight): True, id(lin.bias): True}
    assert lin.weight.grad.is_contiguous() and lin.weight.grad.shape == (3, 5)


def test_double_backward_through_linear_still_works():
    x = gt.randn(3, 4, dtype=gt.float64, requires_grad=True)
    w = gt.randn(2, 4, dtype=gt.float64, requires_grad=True)
    b = gt.randn(2, dtype=gt.float64, requires_grad=True)

    def weight_grad(x, w, b):  # a gradient with history: differentiated again below
        with gt.enable_grad():  # (gradcheck evaluates it under no_grad too)
            out = gt.nn.functional.linear(x, w, b)
            return gt.autograd.grad((out * out).sum(), w, create_graph=True)[0]

    assert gt.autograd.gradcheck(gt.nn.functional.linear, (x, w, b))
    assert gt.autograd.gradcheck(weight_grad, (x, w, b))
