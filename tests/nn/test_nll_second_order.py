"""nll_loss's gradient under create_graph is torch's NllLossBackwardBackward0 node over
(grad_output, input): gt's had no grad_fn (nothing it used required grad), so a second
backward raised. Its gradient for grad_output is nll_loss of the incoming gradient, for the
input zeros (torch's formula). And the targets torch takes: int64 and uint8 only; int32
and the rest raise torch's RuntimeError (messages recorded from torch 2.13)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F

_X = np.random.RandomState(0).randn(4, 5)
_T = [1, -100, 4, 2]
_V = np.random.RandomState(1).randn(4, 5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])  # the short path, the general one
def test_create_graph_records_torchs_node(device, reduction, weighted):
    kw = {"weight": gt.tensor([1.0, 2, 3, 4, 0.5], dtype=gt.float64, device=device)}
    kw = kw if weighted else {}
    x = gt.tensor(_X, device=device, requires_grad=True)
    t = gt.tensor(_T, device=device)
    loss = F.nll_loss(x, t, reduction=reduction, **kw)
    go = gt.full(tuple(loss.shape), 1.5, dtype=gt.float64, device=device).requires_grad_()
    (gx,) = gt.autograd.grad(loss, x, go, create_graph=True)
    assert gx.grad_fn.name() == "NllLossBackwardBackward0"
    assert [f is None for f, _ in gx.grad_fn.next_functions] == [False, False]
    v = gt.tensor(_V, device=device)
    ggo, ggx = gt.autograd.grad((gx * v).sum(), (go, x), allow_unused=True)
    # d/d(go) of <gx, v>: gx is linear in go, so this is the loss over v
    want = F.nll_loss(v, t, reduction=reduction, **kw)
    np.testing.assert_allclose(ggo.cpu().numpy(), want.cpu().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(ggx.cpu().numpy(), np.zeros((4, 5)))  # torch: zeros
    # the first-order values are those without create_graph
    plain = gt.autograd.grad(F.nll_loss(x, t, reduction=reduction, **kw), x, go.detach())[0]
    np.testing.assert_array_equal(gx.detach().cpu().numpy(), plain.cpu().numpy())


def test_second_backward_through_nll_gives_zeros(device):
    x = gt.tensor(_X, device=device, requires_grad=True)
    (g,) = gt.autograd.grad(F.nll_loss(x, gt.tensor(_T, device=device)), x, create_graph=True)
    (g * g).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.zeros((4, 5)))  # as torch


# recorded from torch 2.13: the ScalarType name in "expected target dtype ..."
_BAD = {"int32": "Int", "int16": "Short", "int8": "Char", "float32": "Float", "bool": "Bool"}


@pytest.mark.parametrize("dtype", sorted(_BAD))
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 5, 3)])
def test_targets_torch_refuses(device, dtype, fn, shape):
    x = gt.zeros(shape, device=device)
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    t = gt.zeros(tshape, dtype=getattr(gt, dtype), device=device)
    want = f"expected target dtype to be Long or Byte, but got {_BAD[dtype]}"
    with pytest.raises(RuntimeError, match=want):
        getattr(F, fn)(x, t)


def test_byte_targets_are_taken(device):
    x = gt.tensor(_X, device=device)
    t = [1, 0, 2, 2]
    a = F.nll_loss(x, gt.tensor(t, dtype=gt.uint8, device=device))
    b = F.nll_loss(x, gt.tensor(t, device=device))
    assert a.item() == b.item()


def test_cross_entropy_reads_class_probabilities_by_shape(device):
    x = gt.zeros(4, 5, device=device)
    with pytest.raises(RuntimeError, match="floating point type for target with class .*Long"):
        F.cross_entropy(x, gt.zeros(4, 5, dtype=gt.int64, device=device))
    p = gt.full((4, 5), 0.2, dtype=gt.float32, device=device)
    np.testing.assert_allclose(F.cross_entropy(x, p).item(), np.log(5), rtol=1e-6)
