"""nll_loss's NllLossBackward0 computes its gradient with a written-out formula instead of
recording and running the composed graph (gather, squeeze, neg, mul, sum, div): the same
bits as that graph's backward, on the same inputs (the graph is rebuilt below from the same
ops, recorded by autograd), for every reduction, class weights, ignore_index and layout."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _composed(x, target, weight, ignore_index, reduction, g):
    """The graph nll_loss recorded before: its backward, run by the engine. An ignored
    row's term is +0.0, as torch skips it (the where)."""
    cdim = 0 if x.ndim == 1 else 1
    keep = target != ignore_index
    safe = gt.where(keep, target, 0)
    w = keep.to(x.dtype)
    if weight is not None:
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape) * w
    leaf = x.detach().requires_grad_()
    loss = (-leaf.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim) * w).where(keep, 0.0)
    if reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        loss = loss.sum() / w.sum()
    loss.backward(g)
    return loss.detach(), leaf.grad


SHAPES = [((6, 5), (6,)), ((5,), ()), ((3, 4, 2, 3), (3, 2, 3)), ((1, 3), (1,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("xshape", "tshape"), SHAPES)
def test_the_formula_gives_the_composed_graphs_bits(
    device, dtype, reduction, weighted, xshape, tshape
):
    rng = np.random.default_rng(11)
    c = xshape[0 if len(xshape) == 1 else 1]
    xv = (rng.standard_normal(xshape) * 7).astype(dtype)
    xv.reshape(-1)[:3] = [-0.0, np.inf, np.nan]
    target = rng.integers(0, c, tshape)
    if target.size > 1:
        target.reshape(-1)[1] = -100  # one ignored target
    x = gt.from_numpy(xv).to(device).requires_grad_()
    t = gt.from_numpy(target).to(device)
    weight = gt.from_numpy(rng.uniform(0.1, 3, c).astype(dtype)).to(device) if weighted else None
    gshape = tshape if reduction == "none" else ()
    gv = (rng.standard_normal(gshape) * 3).astype(dtype)
    if gv.size > 1:
        gv.reshape(-1)[0] = -0.0
    g = gt.from_numpy(np.asarray(gv)).to(device)
    loss = F.nll_loss(x, t, weight, reduction=reduction)
    assert type(loss.grad_fn).__name__ == "NllLossBackward0"
    loss.backward(g)
    ref_loss, ref_grad = _composed(x, t, weight, -100, reduction, g)
    np.testing.assert_array_equal(_bits(loss), _bits(ref_loss))
    np.testing.assert_array_equal(_bits(x.grad), _bits(ref_grad))
    assert x.grad.stride() == ref_grad.stride()


def test_create_graph_gives_a_gradient_with_history_and_a_checked_second_order():
    t = gt.tensor([2, 0, 1])
    x = gt.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5], [1.0, 1.0, -2.0]], dtype=gt.float64)
    x.requires_grad_()

    def grad_of(v):  # d(loss)/dx with history, as a function of the logits
        with gt.enable_grad():
            v = v if v.requires_grad else v.detach().requires_grad_()
            loss = F.cross_entropy(v, t)
            return gt.autograd.grad(loss * loss, v, create_graph=True)[0]

    assert grad_of(x).grad_fn is not None
    assert gt.autograd.gradcheck(lambda v: F.nll_loss(v, t), (x,))
    assert gt.autograd.gradcheck(grad_of, (x,))
