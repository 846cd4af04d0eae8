"""batch_norm with batch statistics on a host-memory device is one autograd node
(`normalization._BatchNorm`): it must give the composite's values bit for bit (output,
layouts, the three gradients, the running statistics), name its node as torch does, and
still differentiate twice."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends import get_backend
from gpu_tensor.nn.functional import normalization

F = gt.nn.functional


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(f"u{a.dtype.itemsize}")


def _run(device, x_np, g_np, affine, channels_last, g_nhwc, dtype):
    c = x_np.shape[1]
    x = gt.from_numpy(x_np.astype(dtype)).to(device)
    if channels_last:
        x = x.contiguous(memory_format=gt.channels_last)
    x.requires_grad_(True)
    raw = []
    h = x * 1.0  # its gradient as the node below gets it (a leaf's .grad is laid out anew)
    h.register_hook(raw.append)
    rng = np.random.default_rng(7)
    w = b = None
    if affine:
        w = gt.from_numpy(rng.standard_normal(c).astype(dtype)).to(device).requires_grad_(True)
        b = gt.from_numpy(rng.standard_normal(c).astype(dtype)).to(device).requires_grad_(True)
    rm = gt.zeros(c, dtype=x.dtype, device=device)
    rv = gt.ones(c, dtype=x.dtype, device=device)
    y = F.batch_norm(h, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    g = gt.from_numpy(g_np.astype(dtype)).to(device)
    if g_nhwc:  # the gradient max_pool2d's backward hands back: NHWC memory
        g = g.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    y.backward(g)
    grads = [raw[0]] + ([w.grad, b.grad] if affine else [])
    return y, grads, (rm, rv)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "affine,channels_last,g_nhwc",
    [(True, False, False), (True, False, True), (True, True, False), (False, False, True)],
)
def test_the_node_gives_the_composite_bits(
    device, monkeypatch, dtype, affine, channels_last, g_nhwc
):
    if not get_backend(gt.device(device)).host_arrays:
        pytest.skip("the node serves host-memory devices; elsewhere the composite runs")
    rng = np.random.default_rng(0)
    x_np = (rng.standard_normal((6, 5, 24, 24)) * 3 + 1).astype(np.float64)
    g_np = rng.standard_normal((6, 5, 24, 24))
    new = _run(device, x_np, g_np, affine, channels_last, g_nhwc, dtype)
    assert type(new[0].grad_fn).__name__ == "NativeBatchNormBackward0"
    monkeypatch.setattr(normalization, "_one_node", lambda *a: False)
    old = _run(device, x_np, g_np, affine, channels_last, g_nhwc, dtype)
    assert type(old[0].grad_fn).__name__ == "NativeBatchNormBackward0"
    assert new[0].stride() == old[0].stride()
    assert np.array_equal(_bits(new[0]), _bits(old[0]))
    for a, b in zip(new[1], old[1], strict=True):
        assert a.stride() == b.stride()
        assert np.array_equal(_bits(a), _bits(b))
    for a, b in zip(new[2], old[2], strict=True):
        assert np.array_equal(_bits(a), _bits(b))


def test_bench_sized_input_gives_the_composite_bits(device, monkeypatch):
    """bench_train's first BatchNorm: 32 x 16 x 32 x 32 (emulated cuda cuts its work in
    pieces here)."""
    if not get_backend(gt.device(device)).host_arrays:
        pytest.skip("the node serves host-memory devices")
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((32, 16, 32, 32))
    g_np = rng.standard_normal((32, 16, 32, 32))
    new = _run(device, x_np, g_np, True, False, True, np.float32)
    monkeypatch.setattr(normalization, "_one_node", lambda *a: False)
    old = _run(device, x_np, g_np, True, False, True, np.float32)
    for a, b in zip([new[0], *new[1], *new[2]], [old[0], *old[1], *old[2]], strict=True):
        assert np.array_equal(_bits(a), _bits(b))


def test_double_backward_matches_the_composite(device, monkeypatch):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((4, 3, 5, 5))

    def second(one_node):
        if not one_node:
            monkeypatch.setattr(normalization, "_one_node", lambda *a: False)
        x = gt.from_numpy(x_np).to(device).requires_grad_(True)
        w = gt.ones(3, dtype=gt.float64, device=device).requires_grad_(True)
        b = gt.zeros(3, dtype=gt.float64, device=device).requires_grad_(True)
        y = F.batch_norm(x, None, None, w, b, training=True)
        (gx,) = gt.autograd.grad((y * y * y).sum(), x, create_graph=True)
        return gt.autograd.grad(gx.sum(), [x, w])

    new, old = second(True), second(False)
    for a, b in zip(new, old, strict=True):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-9, atol=1e-12)


def test_eval_mode_and_other_dtypes_keep_the_composite(device):
    x = gt.randn(4, 3, 5, 5, device=device, requires_grad=True)
    rm, rv = gt.zeros(3, device=device), gt.ones(3, device=device)
    y = F.batch_norm(x, rm, rv, training=False)
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    xh = x.detach().half().requires_grad_(True)
    y = F.batch_norm(xh, None, None, training=True)
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    y.sum().backward()
    assert xh.grad.shape == xh.shape


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (gt's own ops warn on inf - inf)
@pytest.mark.parametrize("g_nhwc", [False, True])
def test_zero_and_non_finite_channel_sums_keep_the_composite_bits(device, monkeypatch, g_nhwc):
    """The mean's gradient negates the sum of the centring's gradient unless that sum is
    zero (its sign) or not finite (a NaN's sign): channels of each kind."""
    if not get_backend(gt.device(device)).host_arrays:
        pytest.skip("the node serves host-memory devices")
    rng = np.random.default_rng(5)
    x_np = rng.standard_normal((4, 5, 6, 6))
    g_np = rng.standard_normal((4, 5, 6, 6))
    g_np[:, 0] = 0.0  # a zero sum
    g_np[:, 1] = -0.0
    g_np[0, 2, 0, 0] = np.inf  # inf, and inf - inf
    g_np[1, 3, 0, 0], g_np[2, 3, 1, 1] = np.inf, -np.inf
    new = _run(device, x_np, g_np, True, False, g_nhwc, np.float32)
    monkeypatch.setattr(normalization, "_one_node", lambda *a: False)
    old = _run(device, x_np, g_np, True, False, g_nhwc, np.float32)
    for a, b in zip([new[0], *new[1]], [old[0], *old[1]], strict=True):
        assert np.array_equal(_bits(a), _bits(b))
