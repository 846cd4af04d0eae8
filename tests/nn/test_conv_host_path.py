"""conv2d and pooling on host-memory devices (conv2d: one `_Conv2d` node; the others one
`_Im2col` node: a sliding-window copy forward, one strided add per tap backward) give bit
for bit the values of the composite they replaced (a stack of strided slice views, still
the real-cuda path), forward and backward, on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.nn.functional import conv

F = gt.nn.functional


def _composite(xh, k, stride, dilation, out_hw):
    return gt.stack(conv._taps(xh, k, stride, dilation, out_hw), -1)


def _run(fn, arrays, device, channels_last=False):
    ts = []
    for a in arrays:
        t = gt.from_numpy(a).to(device)
        if channels_last and t.ndim == 4 and len(ts) == 0:
            t = t.contiguous(memory_format=gt.channels_last)
        ts.append(t.requires_grad_(True) if a.dtype.kind == "f" else t)
    out = fn(*ts)
    out = out[0] if isinstance(out, tuple) else out
    seed = np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(gt.from_numpy(seed).to(device))
    return [out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in ts if t.requires_grad]


CASES = [
    ("conv 3x3 pad 1", lambda x, w, b: F.conv2d(x, w, b, padding=1), (2, 3, 9, 8), (5, 3, 3, 3)),
    (
        "conv stride 2 dilation 2",
        lambda x, w, b: F.conv2d(x, w, b, stride=2, dilation=2, padding=(2, 1)),
        (2, 4, 11, 10),
        (6, 4, 3, 2),
    ),
    (
        "conv groups 2 same",
        lambda x, w, b: F.conv2d(x, w, b, padding="same", groups=2),
        (1, 4, 7, 7),
        (6, 2, 3, 3),
    ),
    ("conv 1x1", lambda x, w, b: F.conv2d(x, w, b), (2, 3, 5, 4), (4, 3, 1, 1)),
    (
        "max_pool 2",
        lambda x, w, b: F.max_pool2d(x * w.sum() + b.sum(), 2),
        (2, 3, 8, 8),
        (1, 1, 1, 1),
    ),
    (
        "max_pool 3 s2 p1 ceil, indices",
        lambda x, w, b: F.max_pool2d(
            x + w.sum() * b.sum(), 3, 2, 1, ceil_mode=True, return_indices=True
        ),
        (2, 3, 10, 9),
        (1, 1, 1, 1),
    ),
    (
        "avg_pool 3 s2 p1 no pad count",
        lambda x, w, b: F.avg_pool2d(x * w.sum() + b.sum(), 3, 2, 1, count_include_pad=False),
        (2, 3, 9, 10),
        (1, 1, 1, 1),
    ),
]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("name,fn,xs,ws", CASES, ids=[c[0] for c in CASES])
def test_host_columns_match_the_composite_bit_for_bit(
    device, monkeypatch, name, fn, xs, ws, channels_last
):
    rng = np.random.default_rng(4)
    arrays = [
        rng.standard_normal(xs).astype(np.float32),
        rng.standard_normal(ws).astype(np.float32),
        rng.standard_normal(ws[0]).astype(np.float32),
    ]
    new = _run(fn, arrays, device, channels_last)
    monkeypatch.setattr(conv, "_columns", _composite)
    monkeypatch.setattr(conv, "one_node", lambda *a: False)  # (conv2d's node: no columns)
    old = _run(fn, arrays, device, channels_last)
    for a, b in zip(new, old, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_columns_are_one_node_and_double_backward_still_works(device):
    x = gt.randn(1, 2, 5, 5, device=device, requires_grad=True)
    w = gt.randn(3, 2, 3, 3, device=device, requires_grad=True)
    out = F.conv2d(x, w, padding=1)
    (gx,) = gt.autograd.grad(out.sum(), x, create_graph=True)
    (gw,) = gt.autograd.grad((gx * gx).sum(), w)
    # d/dw sum((sum_o w_o * ones-window)^2) is not zero; checked against the composite
    x2, w2 = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conv, "_columns", _composite)
        mp.setattr(conv, "one_node", lambda *a: False)
        out2 = F.conv2d(x2, w2, padding=1)
        (gx2,) = gt.autograd.grad(out2.sum(), x2, create_graph=True)
        (gw2,) = gt.autograd.grad((gx2 * gx2).sum(), w2)
    np.testing.assert_allclose(gw.cpu().numpy(), gw2.cpu().numpy(), rtol=1e-5, atol=1e-5)
    assert float(gw.abs().sum()) > 0
