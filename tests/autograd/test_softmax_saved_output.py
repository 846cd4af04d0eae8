"""softmax's and log_softmax's nodes read their saved output (torch's SoftmaxBackward0 and
LogSoftmaxBackward0 save the result) instead of computing the forward again: the same bits
as the recomputing formula they replaced, on the same inputs; an output written in place
since the forward makes the formula compute it again, as before."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.ops import softmax as sm

CASES = [
    ("log_softmax", sm._log_softmax, lambda g, y, d: g - y.exp() * g.sum(d, keepdim=True)),
    ("softmax", sm._softmax, lambda g, y, d: y * (g - (g * y).sum(d, keepdim=True))),
]


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _inputs(device, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 7)) * 30).astype(dtype)
    x[1, 2], x[2, :] = -np.inf, 0.0  # a -inf logit, a row of ties
    g = rng.standard_normal((5, 7)).astype(dtype)
    return gt.from_numpy(x).to(device), gt.from_numpy(g).to(device)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize(("name", "plain", "formula"), CASES)
def test_the_saved_output_gives_the_recomputed_formulas_bits(
    device, dtype, dim, name, plain, formula
):
    x, g = _inputs(device, dtype)
    leaf = x.clone().requires_grad_()
    y = getattr(gt, name)(leaf, dim)
    y.backward(g)
    again = plain(x, dim)  # what the backward computed before it saved the output
    np.testing.assert_array_equal(_bits(again), _bits(y))
    np.testing.assert_array_equal(_bits(leaf.grad), _bits(formula(g, again, dim)))


@pytest.mark.parametrize(("name", "plain", "formula"), CASES)
def test_an_output_written_in_place_is_computed_again(device, name, plain, formula):
    x, g = _inputs(device, np.float32)
    leaf = x.clone().requires_grad_()
    y = getattr(gt, name)(leaf, 1)
    y.mul_(2.0)  # the saved output now holds 2y: the gradient is still that of y
    y.backward(g)
    expect = formula(g * 2.0, plain(x, 1), 1)
    np.testing.assert_array_equal(_bits(leaf.grad), _bits(expect))


@pytest.mark.parametrize("name", ["log_softmax", "softmax"])
def test_create_graph_still_differentiates_the_recomputed_output(name):
    x = gt.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]], dtype=gt.float64, requires_grad=True)
    fn = getattr(gt, name)

    def grad_of(t):  # the first gradient, with history: its own gradient is checked
        with gt.enable_grad():  # (gradcheck's numeric half calls this under no_grad)
            t = t if t.requires_grad else t.detach().requires_grad_()
            return gt.autograd.grad((fn(t, 1) ** 2).sum(), t, create_graph=True)[0]

    assert grad_of(x).grad_fn is not None
    assert gt.autograd.gradcheck(lambda t: fn(t, 1), (x,))
    assert gt.autograd.gradcheck(grad_of, (x,))
