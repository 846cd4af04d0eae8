"""Autograd misuse from the hostile-input catalogue, and concurrent backward passes."""

from __future__ import annotations

import pytest

import gpu_tensor as gt
from tests.bad_input_cases import AUTOGRAD
from tests.threads import run_threads


@pytest.mark.parametrize("case", AUTOGRAD, ids=[c.name for c in AUTOGRAD])
def test_autograd_misuse(case):
    if case.expect is None:
        case.fn(gt, "cpu")
        return
    with pytest.raises(case.expect):
        case.fn(gt, "cpu")


def test_hook_changing_shape_names_the_problem():
    x = gt.ones(2, requires_grad=True)
    x.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="changed the size"):
        (x * 2).sum().backward()


def test_detach_view_in_place():
    x = gt.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        x[:2].detach_()
    assert gt.ones(4)[:2].detach_() is not None  # not a differentiable view: fine


def test_concurrent_backward_loses_no_update():
    x = gt.randn(256, 256, requires_grad=True)

    def work():
        for _ in range(100):
            (x * 2).sum().backward()

    run_threads(lambda _: work(), 8)
    assert x.grad.mean().item() == 1600.0


def _inplace_on_views(m):
    out = []
    x = m.ones(2, 3, requires_grad=True)
    y = x * 2
    y.t()[0].add_(x[:, 1])  # a view of a transpose, written with a gradient-carrying value
    (y**2).sum().backward()
    out.append(x.grad.tolist())
    x = m.ones(4, requires_grad=True)
    y = x * 1
    v = y[:2]
    v.mul_(3)
    v.add_(1)  # two in-place ops on one view: the view's own history is rebased too
    (y * y).sum().backward()
    out.append(x.grad.tolist())
    x = m.ones(3, requires_grad=True)
    z = m.zeros(5)
    z[1:4].copy_(x * 2)  # a base that did not require grad starts to
    (z * z).sum().backward()
    out.append(x.grad.tolist())
    return out


def test_inplace_on_views_matches_torch():
    want = [[[12.0, 14.0, 8.0], [12.0, 14.0, 8.0]], [24.0, 24.0, 2.0, 2.0], [8.0, 8.0, 8.0]]
    assert _inplace_on_views(gt) == want
    torch = pytest.importorskip("torch")
    assert _inplace_on_views(torch) == want


def test_view_of_leaf_in_place_is_refused():
    x = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[:1].mul_(2)
