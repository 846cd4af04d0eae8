"""A formula node (with_formula) checks the versions of what torch's node saves: a change in
place between the forward and the backward raises torch's RuntimeError instead of a gradient
computed from the changed values. Which changes raise is torch 2.13's, recorded from it:
AddmmBackward0 saves mat1 when mat2 needs a gradient and mat2 when mat1 does (never the
bias); NllLossBackward0 saves the input and the target."""

import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F

MODIFIED = "modified by an inplace operation"


def _linear(device, changed, x_grad, ndim):
    shape = (2, 3) if ndim == 2 else (2, 2, 3)
    x = gt.ones(shape, device=device, requires_grad=x_grad)
    rows = x * 1 if x_grad else x.clone()
    w = gt.ones(4, 3, device=device, requires_grad=True)
    b = gt.zeros(4, device=device, requires_grad=True)
    out = F.linear(rows, w, b)
    with gt.no_grad():
        {"input": rows, "weight": w, "bias": b}[changed].add_(1)
    out.sum().backward()
    return w.grad


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("x_grad", [True, False])
@pytest.mark.parametrize("changed", ["input", "weight", "bias"])
def test_linear_raises_where_torch_does(device, changed, x_grad, ndim):
    raises = changed == "input" or (changed == "weight" and x_grad)
    if raises:
        with pytest.raises(RuntimeError, match=MODIFIED + r".* saved by AddmmBackward0"):
            _linear(device, changed, x_grad, ndim)
    else:  # the weight's gradient sums the unchanged input (ones) over its 2 or 4 rows
        assert (_linear(device, changed, x_grad, ndim).cpu().numpy() == 2.0 * (ndim - 1)).all()


@pytest.mark.parametrize("target_dtype", ["int64", "uint8"])  # (uint8: converted inside)
@pytest.mark.parametrize("changed", ["input", "target"])
def test_nll_loss_raises_where_torch_does(device, changed, target_dtype):
    x = gt.zeros(3, 4, device=device, requires_grad=True)
    logits = x * 1
    t = gt.tensor([0, 1, 2], dtype=getattr(gt, target_dtype), device=device)
    loss = F.nll_loss(logits, t)
    with gt.no_grad():
        {"input": logits, "target": t}[changed].add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED + r".* saved by NllLossBackward0"):
        loss.backward()
