"""nll_loss and cross_entropy skip an ignored row, as torch does: its term and its gradient
are +0.0 whatever its logits hold (+-inf or NaN gave NaN: 0 weight times inf), 'none' gives
+0.0 there (not -0.0), and a 'mean' over no kept row is NaN with a zero gradient (not NaN at
each row's index 0). Expected values recorded from torch 2.13 (cpu) on the same inputs
(the loss, then backward with ones); each case runs the short path (unweighted 'mean' or
'sum' over (N, C)) and the general one (a weight, 'none', 1-d input) on every device."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

X = np.random.RandomState(0).randn(4, 5).astype(np.float32)
XI = X.copy()
XI[1, :] = np.inf
XI[3, 2] = np.nan
XI[3, 0] = -np.inf
TARGET = [1, -100, 4, -100]  # rows 1 and 3 (the ones holding inf/NaN) ignored


def _run(device, fn, xv, tv, reduction, **kw):
    x = gt.tensor(xv, device=device, requires_grad=True)
    loss = fn(x, gt.tensor(tv, device=device), reduction=reduction, **kw)
    loss.backward(gt.ones_like(loss))
    return loss.detach().cpu().numpy(), x.grad.cpu().numpy()


def _grad(places, value):
    g = np.zeros((4, 5), np.float32)
    for (i, j), v in zip(places, value, strict=True):
        g[i, j] = v
    return g


def _same_bits(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


# recorded from torch 2.13: (reduction, weighted) -> loss, gradient
_TORCH = {
    ("mean", False): (-0.42201024293899536, _grad([(0, 1), (2, 4)], [-0.5, -0.5])),
    ("sum", False): (-0.8440204858779907, _grad([(0, 1), (2, 4)], [-1.0, -1.0])),
    ("none", False): (
        [-0.40015721321105957, 0.0, -0.44386324286460876, 0.0],
        _grad([(0, 1), (2, 4)], [-1.0, -1.0]),
    ),
    ("mean", True): (
        -0.40889841318130493,
        _grad([(0, 1), (2, 4)], [-0.800000011920929, -0.20000000298023224]),
    ),
}


@pytest.mark.parametrize(("reduction", "weighted"), sorted(_TORCH))
def test_inf_and_nan_in_an_ignored_row_are_skipped(device, reduction, weighted):
    kw = {"weight": gt.tensor([1.0, 2, 3, 4, 0.5], device=device)} if weighted else {}
    loss, grad = _run(device, F.nll_loss, XI, TARGET, reduction, **kw)
    want_loss, want_grad = _TORCH[reduction, weighted]
    _same_bits(loss, want_loss)  # 'none': +0.0 in the ignored rows
    _same_bits(grad, want_grad)


@pytest.mark.parametrize("fn", [F.nll_loss, F.cross_entropy])
@pytest.mark.parametrize("shape", [(4, 5), (5,)])
def test_mean_over_no_kept_row_is_nan_with_a_zero_gradient(device, fn, shape):
    xv = X if len(shape) == 2 else X[0]
    tv = [-100] * 4 if len(shape) == 2 else -100
    loss, grad = _run(device, fn, xv, tv, "mean")
    assert np.isnan(loss)  # 0 / 0, as torch
    _same_bits(grad, np.zeros(shape, np.float32))  # torch: +0.0 everywhere


@pytest.mark.parametrize("fn", [F.nll_loss, F.cross_entropy])
@pytest.mark.parametrize("weighted", [False, True])
def test_none_gives_plus_zero_in_ignored_rows(device, fn, weighted):
    kw = {"weight": gt.tensor([1.0, 2, 3, 4, 0.5], device=device)} if weighted else {}
    loss, grad = _run(device, fn, X, [1, -100, 4, -100], "none", **kw)
    _same_bits(loss[[1, 3]], [0.0, 0.0])
    _same_bits(grad[[1, 3]], np.zeros((2, 5), np.float32))
    loss, _ = _run(device, fn, X[0], -100, "none", **kw)
    _same_bits(loss, 0.0)


def test_cross_entropy_skips_an_ignored_infinite_row(device):
    loss, grad = _run(device, F.cross_entropy, XI, TARGET, "mean")
    np.testing.assert_allclose(loss, 2.368769407272339, rtol=1e-6)  # recorded from torch
    # torch's log_softmax backward gives NaN over a row of inf logits too; the kept rows:
    assert np.isnan(grad[[1, 3]]).all() and np.isfinite(grad[[0, 2]]).all()
    # label smoothing: torch's masked_fill gives the ignored rows +0.0
    loss, _ = _run(device, F.cross_entropy, XI, TARGET, "none", label_smoothing=0.1)
    np.testing.assert_allclose(loss[[0, 2]], [2.7476589679718018, 1.8707560300827026], rtol=1e-6)
    _same_bits(loss[[1, 3]], [0.0, 0.0])
