"""create_graph=True: the backward's own ops are recorded, so gradients can be
differentiated again (hessians, hessian-vector products, gradient penalties)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import autograd


def test_second_derivative_of_a_cube():
    x = gt.tensor([1.0, 2.0, -3.0], dtype=gt.float64, requires_grad=True)
    (g,) = autograd.grad((x**3).sum(), [x], create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    (h,) = autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), 6 * x.detach().numpy())


def test_saved_outputs_keep_their_history_exp_and_tanh():
    """exp and tanh save their output: the second derivative goes through it."""
    x = gt.tensor([0.5, -1.0], dtype=gt.float64, requires_grad=True)
    (g,) = autograd.grad(x.exp().sum(), [x], create_graph=True)
    (h,) = autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), np.exp([0.5, -1.0]))
    (g,) = autograd.grad(x.tanh().sum(), [x], create_graph=True)
    (h,) = autograd.grad(g.sum(), [x])
    t = np.tanh([0.5, -1.0])
    np.testing.assert_allclose(h.numpy(), -2 * t * (1 - t * t))


def test_hessian_vector_product_of_a_quadratic():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    sym = a + a.T
    v = rng.standard_normal(4)
    x = gt.tensor(rng.standard_normal(4), requires_grad=True, dtype=gt.float64)
    A = gt.tensor(sym)
    f = 0.5 * (x @ (A @ x))  # hessian = A
    (g,) = autograd.grad(f, [x], create_graph=True)
    (hv,) = autograd.grad(g, [x], grad_outputs=[gt.tensor(v)])
    np.testing.assert_allclose(hv.numpy(), sym @ v, rtol=1e-10)


def test_gradient_penalty_trains_through_the_gradient_norm():
    """WGAN-GP style: loss = (||d out / d inp|| - 1)^2, differentiated w.r.t. a weight."""
    w = gt.tensor([[0.3, -0.2], [0.1, 0.4]], dtype=gt.float64, requires_grad=True)
    inp = gt.tensor([[1.0, 2.0]], dtype=gt.float64, requires_grad=True)
    out = (inp @ w).tanh().sum()
    (gi,) = autograd.grad(out, [inp], create_graph=True)
    penalty = ((gi * gi).sum().sqrt() - 1) ** 2
    penalty.backward()
    assert w.grad is not None and w.grad.grad_fn is None

    def penalty_of(wn):  # the same penalty in numpy, for a central difference
        z = np.array([[1.0, 2.0]]) @ wn
        gi = (1 - np.tanh(z) ** 2) @ wn.T
        return (np.sqrt((gi**2).sum()) - 1) ** 2

    wn = w.detach().numpy()
    num = np.zeros_like(wn)
    for i in np.ndindex(wn.shape):
        d = np.zeros_like(wn)
        d[i] = 1e-6
        num[i] = (penalty_of(wn + d) - penalty_of(wn - d)) / 2e-6
    np.testing.assert_allclose(w.grad.numpy(), num, rtol=1e-5, atol=1e-8)


def test_backward_with_create_graph_keeps_the_graph_in_grad():
    x = gt.tensor([2.0], dtype=gt.float64, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [12.0]
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [12.0]  # d(3x^2)/dx = 6x


def test_without_create_graph_gradients_have_no_history():
    x = gt.tensor([2.0], requires_grad=True)
    (g,) = autograd.grad((x * x).sum(), [x])
    assert not g.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(g.sum(), [x])


def test_functional_hessian_and_hessian_vector_products_have_torchs_shapes():
    from gpu_tensor.autograd import functional as F

    x = gt.tensor([1.0, 2.0], dtype=gt.float64)
    b = gt.tensor([3.0], dtype=gt.float64)
    h = F.hessian(lambda v: (v**3).sum(), x)  # one input: the matrix itself
    assert isinstance(h, gt.Tensor)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * x.numpy()))
    out, hv = F.hvp(lambda v: (v**3).sum(), x, gt.ones(2, dtype=gt.float64))
    assert out.item() == 9.0 and isinstance(hv, gt.Tensor)
    np.testing.assert_allclose(hv.numpy(), 6 * x.numpy())
    _, vh = F.vhp(lambda v: (v**3).sum(), x, gt.tensor([1.0, 0.0], dtype=gt.float64))
    np.testing.assert_allclose(vh.numpy(), [6.0, 0.0])
    (haa, hab), (hba, hbb) = F.hessian(lambda a, c: (a**2).sum() * c.sum(), (x, b))
    np.testing.assert_allclose(haa.numpy(), 2 * b.item() * np.eye(2))
    np.testing.assert_allclose(hab.numpy(), (2 * x.numpy())[:, None])
    np.testing.assert_allclose(hba.numpy(), (2 * x.numpy())[None, :])
    np.testing.assert_allclose(hbb.numpy(), [[0.0]])
