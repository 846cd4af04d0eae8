"""autograd/composite.py: torch's single node names for composed functional ops, with
torch's next_functions (recorded from torch 2.13), and the node's gradients (first and
second order, retain_graph, release)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F
from gpu_tensor.autograd.composite import composite
from gpu_tensor.autograd.gradcheck import gradcheck


def _names(y):
    fn = y.grad_fn
    return fn.name(), [None if f is None else f.name() for f, _ in fn.next_functions]


ACC = "torch::autograd::AccumulateGrad"


def _cases():
    gt.manual_seed(0)
    a = gt.randn(4, 3, requires_grad=True)
    b, p, t = gt.randn(4, 3), gt.rand(4, 3), gt.tensor([0, 1, 2, 0])
    w, bias = gt.randn(5, 3, requires_grad=True), gt.randn(5, requires_grad=True)
    return [  # (graph, recorded from torch 2.13)
        (F.mse_loss(a, b), ("MseLossBackward0", [ACC, None])),
        (F.smooth_l1_loss(a, b), ("SmoothL1LossBackward0", [ACC, None])),
        (F.huber_loss(a, b), ("HuberLossBackward0", [ACC, None])),
        (F.nll_loss(a, t), ("NllLossBackward0", [ACC])),
        (F.cross_entropy(a, t), ("NllLossBackward0", ["LogSoftmaxBackward0"])),
        (F.cross_entropy(a, p), ("DivBackward1", ["NegBackward0"])),
        (
            F.binary_cross_entropy(a.sigmoid(), p),
            ("BinaryCrossEntropyBackward0", ["SigmoidBackward0", None]),
        ),
        (
            F.binary_cross_entropy_with_logits(a, p),
            ("BinaryCrossEntropyWithLogitsBackward0", [ACC, None]),
        ),
        (F.linear(a, w, bias), ("AddmmBackward0", [ACC, ACC, "TBackward0"])),
        (F.linear(a, w), ("MmBackward0", [ACC, "TBackward0"])),
        (F.linear(a.unsqueeze(0), w, bias), ("ViewBackward0", ["AddmmBackward0"])),
        (F.log_softmax(a, 1), ("LogSoftmaxBackward0", [ACC])),
        (F.softmax(a, 1), ("SoftmaxBackward0", [ACC])),
        (F.layer_norm(a, (3,)), ("NativeLayerNormBackward0", [ACC, None, None])),
        (F.dropout(a, 0.5), ("MulBackward0", [ACC, None])),
        (F.embedding(t, w), ("EmbeddingBackward0", [ACC])),
        (F.leaky_relu(a), ("LeakyReluBackward0", [ACC])),
        (F.elu(a), ("EluBackward0", [ACC])),
        (F.softplus(a), ("SoftplusBackward0", [ACC])),
        (F.hardtanh(a), ("HardtanhBackward0", [ACC])),
        (
            F.group_norm(a.reshape(2, 6, 1), 2),
            ("NativeGroupNormBackward0", ["ViewBackward0", None, None]),
        ),
        (
            F.margin_ranking_loss(a[:, 0], b[:, 0], b[:, 1]),
            ("MeanBackward0", ["ClampMinBackward0"]),
        ),
        (F.pad(a, (1, 1)), ("ConstantPadNdBackward0", [ACC])),
    ]


def test_node_names_and_edges_recorded_from_torch():
    for y, want in _cases():
        assert _names(y) == want


def test_linear_module_and_conv_nodes():
    out = gt.nn.Linear(3, 2)(gt.randn(4, 3))
    assert _names(out) == ("AddmmBackward0", [ACC, None, "TBackward0"])
    y = F.conv1d(
        gt.randn(1, 2, 5, requires_grad=True),
        gt.randn(3, 2, 2, requires_grad=True),
        gt.randn(3, requires_grad=True),
    )
    assert _names(y) == ("ConvolutionBackward0", [ACC, ACC, ACC])
    y = F.conv_transpose2d(
        gt.randn(1, 2, 5, 5, requires_grad=True), gt.randn(2, 3, 2, 2, requires_grad=True)
    )
    assert _names(y) == ("ConvolutionBackward0", [ACC, ACC, None])


def test_composite_gradients_match_the_composition():
    x = gt.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    t = gt.tensor(np.random.default_rng(1).standard_normal((3, 4)))
    assert gradcheck(lambda u: F.mse_loss(u, t), (x,))
    w = gt.tensor(np.random.default_rng(2).standard_normal((2, 4)), requires_grad=True)
    b = gt.tensor(np.random.default_rng(3).standard_normal(2), requires_grad=True)
    assert gradcheck(F.linear, (x, w, b))
    assert gradcheck(lambda u: F.layer_norm(u, (4,)), (x,))


def test_double_backward_through_a_composite_node():
    x = gt.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = F.softplus(x).sum()
    (g,) = gt.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(
        g.detach().cpu().numpy(), 1 / (1 + np.exp(-x.detach().cpu().numpy())), rtol=1e-6
    )
    (h,) = gt.autograd.grad(g.sum(), x)
    s = 1 / (1 + np.exp(-x.detach().cpu().numpy()))
    np.testing.assert_allclose(h.cpu().numpy(), s * (1 - s), rtol=1e-6)


def test_retain_graph_and_release():
    x = gt.randn(3, requires_grad=True)
    y = composite("MyOpBackward0", lambda u: (u * u).sum(), x)
    assert y.grad_fn.name() == "MyOpBackward0"
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 4 * x.detach().cpu().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_no_node_without_grad():
    x = gt.randn(3)
    assert F.mse_loss(x, x).grad_fn is None
    with gt.no_grad():
        assert F.mse_loss(x.requires_grad_(), x).grad_fn is None


def test_softmax_nodes_on_every_spelling():
    x = gt.randn(3, 4, requires_grad=True)
    for y, name in (
        (x.softmax(1), "SoftmaxBackward0"),
        (gt.softmax(x, 0), "SoftmaxBackward0"),
        (gt.log_softmax(x, 1), "LogSoftmaxBackward0"),
        (x.log_softmax(-1), "LogSoftmaxBackward0"),
    ):
        assert _names(y) == (name, [ACC])
    assert _names(gt.softmax(x, 1, dtype=gt.float64)) == ("SoftmaxBackward0", ["ToCopyBackward0"])
    xd = gt.tensor(np.random.default_rng(5).standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda a: a.softmax(1) * a.log_softmax(0), (xd,))
    # second order through the formula node: d/dx sum(softmax(x)^2) differentiated again
    (g,) = gt.autograd.grad((xd.softmax(1) ** 2).sum(), xd, create_graph=True)
    (h,) = gt.autograd.grad(g.sum(), xd)
    assert h.shape == xd.shape and bool(h.isfinite().all())
