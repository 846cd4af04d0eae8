"""relu's gradient where its input is NaN is the incoming gradient, as torch's
threshold_backward (`out <= 0 ? 0 : g`) gives it: NaN <= 0 is false. Values recorded from
torch 2.13 (cpu): relu over [nan, -1, 0, -0, 2, inf, -inf] with g = 3 gives
[3, 0, 0, 0, 3, 3, 0], and with g = [1, 2, 3, 4, nan] over [nan, -1, 0, -0, 2] gives
[1, 0, 0, 0, nan]. Checked on every path: cpu's short path, emulated cuda's in one block
and over PIECE elements, the op table's rule (create_graph), and a fused function."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt

_IN = [np.nan, -1.0, 0.0, -0.0, 2.0, np.inf, -np.inf]
_TORCH = [3.0, 0.0, 0.0, 0.0, 3.0, 3.0, 0.0]  # recorded from torch 2.13


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("n", [7, 5000, (1 << 16) + 5])  # small, where's fast select, > PIECE
@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
def test_nan_input_passes_the_gradient(device, n, dtype):
    v = np.resize(np.array(_IN), n)
    x = gt.tensor(v, dtype=dtype, device=device, requires_grad=True)
    x.relu().backward(gt.full((n,), 3.0, dtype=dtype, device=device))
    got = x.grad.cpu().numpy()
    want = np.resize(np.array(_TORCH), n).astype(got.dtype)
    np.testing.assert_array_equal(_bits(got), _bits(want))  # +0.0, never -0.0


def test_nan_gradient_is_kept_and_masked_rows_give_zero(device):
    x = gt.tensor([np.nan, -1.0, 0.0, -0.0, 2.0], device=device, requires_grad=True)
    x.relu().backward(gt.tensor([1.0, 2.0, 3.0, 4.0, np.nan], device=device))
    got = x.grad.cpu().numpy()
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, 0.0, np.nan])  # recorded from torch


def test_op_table_rule_under_create_graph(device):
    x = gt.tensor(_IN, device=device, requires_grad=True)
    (g,) = gt.autograd.grad(x.relu(), x, gt.full((7,), 3.0, device=device), create_graph=True)
    np.testing.assert_array_equal(g.detach().cpu().numpy(), _TORCH)


def test_fused_backward(device):
    @gt.fuse
    def f(x):
        return x.relu() * 3.0

    x = gt.tensor(_IN, device=device, requires_grad=True)
    f(x).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), _TORCH)


def test_create_graph_records_torchs_threshold_backward(device):
    """Recorded from torch 2.13: the gradient's node is ThresholdBackwardBackward0 over
    (g, the output), so it has history even when g has none; its gradient for g is the same
    rule, for the output zeros."""
    x = gt.tensor([-1.0, 2.0, np.nan, 0.0], device=device, requires_grad=True)
    (g,) = gt.autograd.grad((x * 2).relu().sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == "MulBackward0"
    assert [f and f.name() for f, _ in g.grad_fn.next_functions] == [
        "ThresholdBackwardBackward0",
        None,
    ]
    go = gt.ones(4, device=device, requires_grad=True)
    (g,) = gt.autograd.grad(x.relu(), x, go, create_graph=True)
    assert [f.name() for f, _ in g.grad_fn.next_functions][1] == "ReluBackward0"
    v = gt.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    ggo, ggx = gt.autograd.grad((g * v).sum(), (go, x))
    np.testing.assert_array_equal(ggo.cpu().numpy(), [0.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(ggx.cpu().numpy(), [0.0, 0.0, 0.0, 0.0])
