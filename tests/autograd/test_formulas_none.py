"""Ops that had no node (issue 24, item 7): einsum and scatter_reduce/index_reduce get
torch's gradients; random draws and in-place comparisons get torch's zero-gradient
nodes; ops without a formula get a node whose backward raises; Python-level writes and
resizes of tensors that require grad are refused, as in torch."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd.gradcheck import gradcheck

_RNG = np.random.default_rng(5)


def _t(*shape):
    return gt.tensor(_RNG.standard_normal(shape), dtype=gt.float64, requires_grad=True)


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("ij,jk", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
        ("ij->", [(2, 3)]),
        ("ij,kl->il", [(2, 3), (4, 5)]),
        ("ij,j,jk->ik", [(2, 3), (3,), (3, 2)]),
    ],
)
def test_einsum_gradients(eq, shapes):
    assert gradcheck(lambda *a: gt.einsum(eq, *a), [_t(*s) for s in shapes])
    assert gradcheck(lambda *a: gt.einsum(eq, list(a)), [_t(*s) for s in shapes])


def test_einsum_diagonal_raises_not_implemented():
    y = gt.einsum("ii->i", _t(3, 3))
    with pytest.raises(NotImplementedError, match="the derivative for 'einsum'"):
        y.sum().backward()


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients(reduce, include_self):
    index = gt.tensor([[0, 1], [2, 0], [0, 3]])
    x = gt.tensor(_RNG.uniform(1, 2, (3, 4)), dtype=gt.float64, requires_grad=True)
    src = gt.tensor(_RNG.uniform(3, 4, (3, 2)), dtype=gt.float64, requires_grad=True)
    assert gradcheck(
        lambda a, s: gt.scatter_reduce(a, 1, index, s, reduce, include_self=include_self), [x, src]
    )


def test_index_reduce_differentiates_through_scatter_reduce():
    x = gt.tensor(_RNG.uniform(1, 2, (3, 2)), dtype=gt.float64, requires_grad=True)
    src = gt.tensor(_RNG.uniform(1, 2, (2, 2)), dtype=gt.float64, requires_grad=True)
    assert gradcheck(lambda a, s: gt.index_reduce(a, 0, gt.tensor([0, 2]), s, "prod"), [x, src])


def test_scatter_reduce_ties_and_zeros_match_torch():
    """Ties share an amax/amin gradient evenly; one zero factor of a product gets the
    product of the others (values recorded from torch 2.13, and re-checked with torch)."""
    x = gt.tensor([[1.0, 3.0, 0.0]], requires_grad=True)
    src = gt.tensor([[3.0, 2.0, 5.0]], requires_grad=True)
    index = gt.tensor([[1, 2, 2]])
    gt.scatter_reduce(x, 1, index, src, "amax").sum().backward()
    assert x.grad.tolist() == [[1.0, 0.5, 0.0]] and src.grad.tolist() == [[0.5, 0.0, 1.0]]
    x.grad = src.grad = None
    gt.scatter_reduce(x, 1, index, src, "prod").sum().backward()
    assert x.grad.tolist() == [[1.0, 3.0, 10.0]] and src.grad.tolist() == [[3.0, 0.0, 0.0]]
    torch = pytest.importorskip("torch")
    tx = torch.tensor([[1.0, 3.0, 0.0]], requires_grad=True)
    ts = torch.tensor([[3.0, 2.0, 5.0]], requires_grad=True)
    torch.scatter_reduce(tx, 1, torch.tensor([[1, 2, 2]]), ts, "prod").sum().backward()
    assert tx.grad.tolist() == x.grad.tolist() and ts.grad.tolist() == src.grad.tolist()


@pytest.mark.parametrize(
    "call, node",
    [
        (lambda y: y.eq_(1.0), "EqBackward0"),
        (lambda y: y.lt_(1.5), "LtBackward0"),
        (lambda y: y.normal_(), "NormalBackward0"),
        (lambda y: y.uniform_(), "UniformBackward0"),
        (lambda y: y.bernoulli_(0.5), "BernoulliBackward0"),
        (lambda y: y.random_(0, 5), "RandomBackward0"),
        (lambda y: y.exponential_(), "ExponentialBackward0"),
        (lambda y: y.cauchy_(), "CauchyBackward0"),
    ],
)
def test_in_place_draws_and_comparisons_record_zero_gradients(call, node):
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    call(y)
    assert type(y.grad_fn).__name__ == node
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]  # torch's: the new values do not depend on x
    with pytest.raises(RuntimeError, match="leaf Variable"):
        call(x)


def test_out_of_place_draws_record_zero_gradients():
    m = gt.tensor([1.0, 2.0], requires_grad=True)
    s = gt.tensor([0.5, 1.0], requires_grad=True)
    gt.normal(m, s).sum().backward()
    assert m.grad.tolist() == [0.0, 0.0] and s.grad.tolist() == [0.0, 0.0]
    lam = gt.tensor([1.0, 4.0], requires_grad=True)
    gt.poisson(lam).sum().backward()
    assert lam.grad.tolist() == [0.0, 0.0]


def test_ops_without_formula_raise_on_backward():
    x = gt.tensor([0.5, -1.0, 2.0], requires_grad=True)
    for out, op in (
        (gt.unique(x), "unique"),
        (gt.histogram(x, 3).hist, "histogram"),
        (gt.bernoulli(x.sigmoid()), "bernoulli"),
        (gt.bincount(gt.tensor([0, 1, 1]), x), "bincount"),
    ):
        assert out.grad_fn is not None, op
        with pytest.raises(RuntimeError, match=f"the derivative for '{op}' is not impl"):
            out.sum().backward()
    y = x * 1
    y.heaviside_(gt.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(NotImplementedError, match="heaviside_"):
        y.sum().backward()


def test_refusals_match_torch():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (x * 1).resize_(4)
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable"):
        (x * 1).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match=r"Can't call map_\(\) on Variable"):
        (x * 1).map_(x, lambda a, b: a)
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        gt.from_dlpack(x)
    with gt.no_grad():
        assert (x * 1).resize_(1).shape == (1,)  # no history to break: allowed


def test_pin_memory_passes_the_gradient():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).pin_memory()
    assert type(y.grad_fn).__name__ == "PinMemoryBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
