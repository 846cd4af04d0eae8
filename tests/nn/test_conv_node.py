"""conv2d (groups 1, float32/float64) on a host-memory device is one autograd node
(`conv_host._Conv2d`): it must give the composite's values bit for bit (output, its
layout, the input's gradient as the node above it receives it, with its layout, and the
weight's and bias's gradients) for every padding, stride, dilation and layout, and still
differentiate twice."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends import get_backend
from gpu_tensor.nn.functional import conv

F = gt.nn.functional


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(f"u{a.dtype.itemsize}")


def _run(device, x_np, w_np, b_np, g_nhwc, channels_last, need_x, **kw):
    x = gt.from_numpy(x_np).to(device)
    if channels_last:
        x = x.contiguous(memory_format=gt.channels_last)
    raw = []
    if need_x:
        x.requires_grad_(True)
        x.register_hook(lambda g: raw.append(g))  # the gradient as the node above gets it
    w = gt.from_numpy(w_np).to(device).requires_grad_(True)
    b = None if b_np is None else gt.from_numpy(b_np).to(device).requires_grad_(True)
    y = F.conv2d(x, w, b, **kw)
    rng = np.random.default_rng(9)
    g = rng.standard_normal(y.shape).astype(x_np.dtype)
    gt_g = gt.from_numpy(g).to(device)
    if g_nhwc:
        gt_g = gt_g.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    y.backward(gt_g)
    return [y, *raw, w.grad] + ([] if b is None else [b.grad])


CASES = [
    dict(padding=1),
    dict(padding=0),
    dict(padding=(1, 2), stride=2),
    dict(padding="same", dilation=2),
    dict(stride=(2, 1), dilation=(1, 2), padding=(0, 1)),
    dict(stride=3),  # windows that do not overlap
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize(
    "channels_last,g_nhwc,bias",
    [(False, False, True), (True, True, False), (False, True, False), (True, False, True)],
)
def test_the_node_gives_the_composite_bits(
    device, monkeypatch, dtype, kw, channels_last, g_nhwc, bias
):
    if not get_backend(gt.device(device)).host_arrays:
        pytest.skip("the node serves host-memory devices; elsewhere the composite runs")
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((3, 4, 9, 8)).astype(dtype)
    w_np = rng.standard_normal((5, 4, 3, 3)).astype(dtype)
    b_np = rng.standard_normal(5).astype(dtype) if bias else None
    new = _run(device, x_np, w_np, b_np, g_nhwc, channels_last, True, **kw)
    assert type(new[0].grad_fn).__name__ == "ConvolutionBackward0"
    monkeypatch.setattr(conv, "one_node", lambda *a: False)
    old = _run(device, x_np, w_np, b_np, g_nhwc, channels_last, True, **kw)
    assert len(new) == len(old)
    for a, b in zip(new, old, strict=True):
        assert a.shape == b.shape and a.stride() == b.stride()
        assert np.array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("kernel", [(1, 1), (2, 3)])
def test_bench_sized_layers_give_the_composite_bits(device, monkeypatch, kernel):
    """bench_train's layers (3 -> 16 channels over 32 x 32; the input needs no gradient),
    big enough that emulated cuda's products and sums run over several pieces."""
    if not get_backend(gt.device(device)).host_arrays:
        pytest.skip("the node serves host-memory devices")
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    w_np = rng.standard_normal((16, 3, *kernel)).astype(np.float32)
    b_np = rng.standard_normal(16).astype(np.float32)
    new = _run(device, x_np, w_np, b_np, True, False, False, padding=1)
    monkeypatch.setattr(conv, "one_node", lambda *a: False)
    old = _run(device, x_np, w_np, b_np, True, False, False, padding=1)
    for a, b in zip(new, old, strict=True):
        assert a.stride() == b.stride() and np.array_equal(_bits(a), _bits(b))


def test_double_backward_matches_the_composite(device, monkeypatch):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((2, 3, 6, 6))
    w_np = rng.standard_normal((4, 3, 3, 3))

    def second():
        x = gt.from_numpy(x_np).to(device).requires_grad_(True)
        w = gt.from_numpy(w_np).to(device).requires_grad_(True)
        b = gt.zeros(4, dtype=gt.float64, device=device).requires_grad_(True)
        y = F.conv2d(x, w, b, padding=1)
        (gx,) = gt.autograd.grad((y * y).sum(), x, create_graph=True)
        return gt.autograd.grad((gx * gx).sum(), [x, w])

    new = second()
    monkeypatch.setattr(conv, "one_node", lambda *a: False)
    old = second()
    for a, b in zip(new, old, strict=True):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-9, atol=1e-12)


def test_groups_and_half_keep_the_composite(device):
    x = gt.randn(2, 4, 6, 6, device=device, requires_grad=True)
    w = gt.randn(4, 2, 3, 3, device=device, requires_grad=True)
    y = F.conv2d(x, w, groups=2)
    assert type(y.grad_fn).__name__ != "ConvolutionBackward0"
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_conv_and_batch_norm_parameters_keep_their_gradients_without_a_copy(monkeypatch):
    """The conv and BatchNorm nodes return new tensors (_fresh_grads): the engine lets each
    parameter keep its gradient as is, laid out as the parameter."""
    from tests.nn.steals import record_steals

    steals = record_steals(monkeypatch)
    conv, bn = gt.nn.Conv2d(3, 4, 3, padding=1), gt.nn.BatchNorm2d(4)
    bn(conv(gt.randn(2, 3, 6, 6))).sum().backward()
    params = [conv.weight, conv.bias, bn.weight, bn.bias]
    assert [steals[id(p)] for p in params] == [True] * 4
    assert all(p.grad.stride() == p.stride() for p in params)
