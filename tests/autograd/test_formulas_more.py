"""Gradients of the ops in ops/special.py, sort.py, matrix.py, index_write.py,
statistics.py and pointwise.py (formulas in autograd/formulas_more.py, or composites of differentiable
ops): numerical gradcheck always, torch's gradients where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd import gradcheck

RNG = np.random.default_rng(0)
A = RNG.uniform(-0.8, 0.8, (3, 3))  # inside every domain below, away from ties
P = RNG.uniform(1.2, 3.0, (3, 3))
M = RNG.normal(size=(3, 3)) + 3 * np.eye(3)


def _idx(m, values, x):
    return m.tensor(values, device=x.device)


# name -> (call with m = gpu_tensor or torch, float64 input)
CASES = {
    "asin": (lambda m, x: x.asin(), A),
    "acos": (lambda m, x: x.acos(), A),
    "atan": (lambda m, x: x.atan(), A),
    "sinh": (lambda m, x: x.sinh(), A),
    "cosh": (lambda m, x: x.cosh(), A),
    "tan": (lambda m, x: x.tan(), A),
    "asinh": (lambda m, x: x.asinh(), A),
    "acosh": (lambda m, x: x.acosh(), P),
    "atanh": (lambda m, x: x.atanh(), A),
    "erf": (lambda m, x: x.erf(), A),
    "erfc": (lambda m, x: x.erfc(), A),
    "erfinv": (lambda m, x: x.erfinv(), A),
    "log2": (lambda m, x: x.log2(), P),
    "log10": (lambda m, x: x.log10(), P),
    "expm1": (lambda m, x: x.expm1(), A),
    "exp2": (lambda m, x: x.exp2(), A),
    "lgamma": (lambda m, x: x.lgamma(), P),
    "sinc": (lambda m, x: x.sinc(), A),
    "deg2rad": (lambda m, x: x.deg2rad(), A),
    "logit": (lambda m, x: (x.abs() * 0.5 + 0.1).logit(), A),
    "atan2": (lambda m, x: m.atan2(x, x.exp()), A),
    "xlogy": (lambda m, x: m.xlogy(x, x.exp()), A),
    "hypot": (lambda m, x: m.hypot(x, x * 2 + 3), A),
    "logaddexp": (lambda m, x: m.logaddexp(x, x * x), A),
    "copysign": (lambda m, x: m.copysign(x, -x.exp()), A),
    "float_power": (lambda m, x: m.float_power(x, 2), A),
    "det": (lambda m, x: x.det(), M),
    "inverse": (lambda m, x: x.inverse(), M),
    "solve": (lambda m, x: m.linalg.solve(x, x.sin()), M),
    "solve_vector": (lambda m, x: m.linalg.solve(x, x[0].cos()), M),
    "slogdet": (lambda m, x: x.slogdet()[1], M),
    "sort": (lambda m, x: x.sort(1).values, A),
    "topk": (lambda m, x: x.topk(2)[0], A),
    "median": (lambda m, x: x.median(0).values, A),
    "quantile": (lambda m, x: x.quantile(0.3, dim=1), A),
    "kthvalue": (lambda m, x: x.kthvalue(2, 1).values, A),
    "cummax": (lambda m, x: x.cummax(1).values, A),
    "addmm": (lambda m, x: m.addmm(x, x, x.t(), beta=0.5), A),
    "baddbmm": (lambda m, x: m.baddbmm(x, x[None], x[None]), A),
    "tril": (lambda m, x: x.tril(), A),
    "diag": (lambda m, x: m.diag(x[0], -1), A),
    "trace": (lambda m, x: x.trace(), A),
    "cross": (lambda m, x: m.cross(x, x.exp(), dim=0), A),
    "kron": (lambda m, x: m.kron(x, x[:2, :2]), A),
    "index_add": (lambda m, x: x.index_add(0, _idx(m, [0, 2, 0], x), x * 3), A),
    "index_copy": (lambda m, x: x.index_copy(1, _idx(m, [2, 0], x), x[:, :2] * 3), A),
    "masked_scatter": (lambda m, x: x.masked_scatter(x > 0, x.exp()), A),
    "repeat_interleave": (lambda m, x: x.repeat_interleave(_idx(m, [1, 0, 2], x), dim=1), A),
    "diff": (lambda m, x: x.diff(dim=0), A),
    "rot90": (lambda m, x: x.rot90(), A),
    "logcumsumexp": (lambda m, x: x.logcumsumexp(1), A),
    "cov": (lambda m, x: x.cov(), A),
    "matrix_power": (lambda m, x: x.matrix_power(3), A),
    "addcdiv": (lambda m, x: x.addcdiv(x, x.exp()), A),
    "renorm": (lambda m, x: x.renorm(2, 0, 0.5), A),
    "digamma": (lambda m, x: x.digamma(), P),
    "mvlgamma": (lambda m, x: x.mvlgamma(2), P),
    "diagonal_scatter": (lambda m, x: m.diagonal_scatter(x, x[0].exp(), 0), A),
    "prelu": (lambda m, x: m.prelu(x, x[0, :1].exp()), A),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, _idx(m, [[0], [2], [1]], x), 1), A),
    # in-place forms, recorded on a copy
    "asin_": (lambda m, x: (x * 1).asin_(), A),
    "cumsum_": (lambda m, x: (x * 1).cumsum_(0), A),
    "unsqueeze_": (lambda m, x: (x * 1).unsqueeze_(0) * 2, A),
    "index_add_": (lambda m, x: (x * 1).index_add_(0, _idx(m, [1, 1], x), x[:2] ** 2), A),
    "fill_diagonal_": (lambda m, x: (x * 1).fill_diagonal_(2.0), A),
}

# a fast subset for the numerical check on every device (each gradcheck is many forwards)
GRADCHECK = [
    "asin",
    "erfinv",
    "lgamma",
    "atan2",
    "det",
    "inverse",
    "solve_vector",
    "slogdet",
    "sort",
    "quantile",
    "cross",
    "index_add",
    "masked_scatter",
    "logcumsumexp",
    "asin_",
    "index_add_",
]


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradcheck(device, name):
    fn, x = CASES[name]
    t = gt.tensor(x, device=device, requires_grad=True)
    assert gradcheck(lambda a: fn(gt, a), (t,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_torch(device, name):
    torch = pytest.importorskip("torch")
    fn, x = CASES[name]
    w = RNG.normal(size=tuple(fn(torch, torch.tensor(x)).shape))
    g = gt.tensor(x, device=device, requires_grad=True)
    (fn(gt, g) * gt.tensor(w, device=device)).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    (fn(torch, t) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(
        g.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-8, err_msg=name
    )


def test_primitives_name_their_nodes_as_torch():
    x = gt.tensor(A, requires_grad=True)
    assert type(x.asin().grad_fn).__name__ == "AsinBackward0"
    assert type(x.erf().grad_fn).__name__ == "ErfBackward0"
    assert type(gt.atan2(x, x).grad_fn).__name__ == "Atan2Backward0"


def test_in_place_on_a_leaf_is_refused():
    x = gt.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.asin_()
    with pytest.raises(RuntimeError, match="leaf"):
        x.unsqueeze_(0)


def test_functional_jacobian_and_vjp(device):
    from gpu_tensor.autograd.functional import jacobian, jvp, vjp

    x = gt.tensor([0.1, 0.2, 0.3], dtype=gt.float64, device=device)
    jac = jacobian(lambda a: a.sin() * a[0], x)
    want = np.diag(np.cos(x.cpu().numpy())) * 0.1
    want[:, 0] += np.sin(x.cpu().numpy())
    np.testing.assert_allclose(jac.cpu().numpy(), want, rtol=1e-12)
    v = gt.tensor([1.0, -1.0, 2.0], dtype=gt.float64, device=device)
    out, g = vjp(lambda a: a.sin() * a[0], x, v)
    np.testing.assert_allclose(g.cpu().numpy(), v.cpu().numpy() @ want, rtol=1e-12)
    _, jv = jvp(lambda a: a.sin() * a[0], x, v)
    np.testing.assert_allclose(jv.cpu().numpy(), want @ v.cpu().numpy(), rtol=1e-12)
    j2 = jacobian(lambda a, b: a * b, (x, v))
    assert isinstance(j2, tuple) and len(j2) == 2
    np.testing.assert_allclose(j2[0].cpu().numpy(), np.diag(v.cpu().numpy()))


def test_sparse_mm_gradients_reach_values_and_the_dense_operand(device):
    i = gt.tensor([[0, 1, 1], [2, 0, 2]], device=device)
    v = gt.tensor([3.0, 4.0, 5.0], dtype=gt.float64, device=device)
    s = gt.sparse_coo_tensor(i, v, (2, 3), requires_grad=True)
    d = gt.tensor(RNG.normal(size=(3, 2)), device=device, requires_grad=True)
    assert gradcheck(
        lambda vals, dense: gt.sparse.mm(gt.sparse_coo_tensor(i, vals, (2, 3)), dense),
        (s._values(), d),
    )
    (s @ d).sum().backward()
    dense_rows = d.detach().cpu().numpy().sum(1)
    np.testing.assert_allclose(s.grad._values().cpu().numpy(), dense_rows[[2, 0, 2]])
    want = np.zeros((3, 2))
    for (_, c), val in zip([(0, 2), (1, 0), (1, 2)], [3, 4, 5], strict=True):
        want[c] += val
    np.testing.assert_allclose(d.grad.cpu().numpy(), want)
    assert s.grad.is_sparse
