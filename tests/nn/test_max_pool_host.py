"""max_pool2d on host-memory devices is one autograd node (`conv._MaxPool`): a running
maximum over the kernel taps forward, torch's gradient (the whole of it to each window's
first maximal element) backward. Without ties it gives bit for bit the values, layouts
and gradients of the composite it replaced (columns, amax); with ties it gives torch's
gradient where the composite shared it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends import get_backend
from gpu_tensor.nn.functional import conv

F = gt.nn.functional


def _old(x, **kw):
    """The composite path max_pool2d took before (and still takes off host devices)."""
    xx, unbatched, k, s, d, pads, out_hw = conv._pool_setup(
        x,
        kw["kernel_size"],
        kw.get("stride"),
        kw.get("padding", 0),
        kw.get("dilation", 1),
        kw.get("ceil_mode", False),
        "max_pool2d",
    )
    xp = conv._pad(xx, pads, value=-np.inf) if any(pads) else xx
    return conv._max_pool_composite(xp, k, s, d, out_hw, conv._is_channels_last(xx))


def _step(fn, a, g, device, channels_last, **kw):
    x = gt.from_numpy(a).to(device)
    if channels_last:
        x = x.contiguous(memory_format=gt.channels_last)
    x.requires_grad_(True)
    y = fn(x, **kw)
    y.backward(gt.from_numpy(g).to(device))
    return y, x.grad


def _bits(t):
    a = t.detach().cpu().numpy()
    return a.view(np.uint8 if a.dtype.itemsize == 1 else f"u{a.dtype.itemsize}")


POOLS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=1, dilation=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kw", POOLS, ids=[str(sorted(p.items())) for p in POOLS])
def test_the_node_matches_the_composite_bit_for_bit(device, kw, channels_last, dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 9, 11)).astype(dtype)  # no ties
    shape = tuple(_old(gt.from_numpy(a), **kw).shape)
    g = rng.standard_normal(shape).astype(dtype)
    y_new, g_new = _step(F.max_pool2d, a, g, device, channels_last, **kw)
    y_old, g_old = _step(_old, a, g, device, channels_last, **kw)
    host = get_backend(y_new.device).xp is np  # (real/simulated cuda: the composite)
    assert (type(y_new.grad_fn).__name__ == "MaxPool2DWithIndicesBackward0") == host
    assert y_new.stride() == y_old.stride() and g_new.stride() == g_old.stride()
    np.testing.assert_array_equal(_bits(y_new), _bits(y_old))
    np.testing.assert_array_equal(_bits(g_new), _bits(g_old))


def test_nan_windows_give_the_composites_values_quietly(device):
    a = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6)
    a[0, 1, 2, 3] = np.uint32(0x7FC00123).view(np.float32)  # a NaN with a payload
    a[1, 2, 0, 0] = np.nan
    x = gt.from_numpy(a).to(device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = F.max_pool2d(x, 2)
    np.testing.assert_array_equal(_bits(new), _bits(_old(x, kernel_size=2)))


def _host_only(device):
    if get_backend(gt.device(device)).xp is not np:
        pytest.skip("real and simulated cuda keep the composite (ties share the gradient)")


def test_ties_give_the_whole_gradient_to_the_first_maximum(device):
    _host_only(device)
    # recorded rule (torch's max_pool2d backward): one index per window, the first
    # maximum in row-major order over the window; the composite split it 4 ways
    a = np.zeros((1, 1, 2, 4), np.float32)
    a[0, 0, :, 2:] = [[1.0, 3.0], [3.0, 3.0]]
    x = gt.from_numpy(a).to(device).requires_grad_(True)
    F.max_pool2d(x, 2).backward(gt.tensor([[[[2.0, 5.0]]]], device=device))
    expect = np.array([[[[2.0, 0.0, 0.0, 5.0], [0.0, 0.0, 0.0, 0.0]]]], np.float32)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expect)


def test_overlapping_windows_sum_their_gradients_and_the_output_may_change(device):
    _host_only(device)
    a = np.random.default_rng(5).standard_normal((2, 2, 7, 7)).astype(np.float32)
    x = gt.from_numpy(a).to(device).requires_grad_(True)
    y = F.max_pool2d(x, 3, stride=1)
    y.add_(100.0)  # an in-place change of the output: the backward keeps its own maxima
    y.sum().backward()
    x2 = gt.from_numpy(a).to(device).requires_grad_(True)
    _old(x2, kernel_size=3, stride=1).sum().backward()
    np.testing.assert_array_equal(_bits(x.grad), _bits(x2.grad))
    assert x.grad.sum().item() == 2 * 2 * 5 * 5


def test_double_backward_goes_through_the_composite(device):
    a = np.random.default_rng(6).standard_normal((1, 2, 6, 6)).astype(np.float32)
    for fn in (F.max_pool2d, _old):
        x = gt.from_numpy(a).to(device).requires_grad_(True)
        y = fn(x, kernel_size=2)
        (gx,) = gt.autograd.grad((y * y).sum(), x, create_graph=True)
        (ggx,) = gt.autograd.grad(gx.sum(), x)
        if fn is F.max_pool2d:
            first = (gx.detach().cpu().numpy(), ggx.cpu().numpy())
    np.testing.assert_array_equal(first[0], gx.detach().cpu().numpy())
    np.testing.assert_array_equal(first[1], ggx.cpu().numpy())


def test_ties_after_relu_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = np.maximum(rng.standard_normal((2, 3, 8, 8)), 0).astype(np.float32)  # zero ties
    a[0, 0, :2, :2] = 1.5  # a window of equal maxima
    g = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    x = gt.from_numpy(a).requires_grad_(True)
    F.max_pool2d(x, 2).backward(gt.from_numpy(g))
    xt = torch.from_numpy(a).requires_grad_(True)
    torch.nn.functional.max_pool2d(xt, 2).backward(torch.from_numpy(g))
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_odd_gradients_give_the_composites_bits(device):
    # -0.0, inf and NaN in the incoming gradient: g * mask as the composite's g*mask/1
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    g = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    g[0, 0, 0, :3] = [-0.0, np.inf, np.nan]
    for kw in (dict(kernel_size=2, stride=2), dict(kernel_size=3, stride=2, padding=1)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _step(F.max_pool2d, a, g, device, False, **kw)
        _, g_new = _step(F.max_pool2d, a, g, device, False, **kw)
        _, g_old = _step(_old, a, g, device, False, **kw)
        np.testing.assert_array_equal(_bits(g_new), _bits(g_old))


@pytest.mark.parametrize("channels_last", [False, True])
def test_the_gradient_comes_in_the_inputs_layout_as_torchs(device, channels_last):
    """torch's max_pool2d backward lays the input's gradient out as the input (recorded:
    contiguous (192, 64, 8, 1) and channels_last (192, 1, 24, 3) for a 2x3x8x8 input);
    the values are the composite's, whose gradient was NHWC memory either way."""
    _host_only(device)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    g = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    grads = []
    for fn in (F.max_pool2d, _old):
        x = gt.from_numpy(a).to(device)
        if channels_last:
            x = x.contiguous(memory_format=gt.channels_last)
        x.requires_grad_(True)
        h = x * 1.0
        raw = []
        h.register_hook(raw.append)
        fn(h, kernel_size=2).backward(gt.from_numpy(g).to(device))
        grads.append(raw[0])
    new, old = grads
    assert new.stride() == ((192, 1, 24, 3) if channels_last else (192, 64, 8, 1))
    np.testing.assert_array_equal(_bits(new), _bits(old))


def _tap_by_tap(a, g, k, s):
    """The backward's general path in numpy: per tap, the first-maximum mask, then g * mask
    added into a zero gradient tap by tap (the last tap first)."""
    n, c, h, w = a.shape
    oh, ow = g.shape[2:]
    taps = [
        (slice(i, i + s * (oh - 1) + 1, s), slice(j, j + s * (ow - 1) + 1, s))
        for i in range(k)
        for j in range(k)
    ]
    best = np.maximum.reduce([a[:, :, r, q] for r, q in taps])
    grad = np.zeros_like(a)
    taken, masks = None, []
    for r, q in taps:
        hit = a[:, :, r, q] == best
        hit = hit if taken is None else hit & ~taken
        taken = hit if taken is None else taken | hit
        masks.append(hit)
    with np.errstate(all="ignore"):
        for t in range(len(taps) - 1, -1, -1):
            r, q = taps[t]
            grad[:, :, r, q] = grad[:, :, r, q] + g * masks[t]
    return grad


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize(
    "k,s,hw", [(2, 2, (8, 8)), (2, 2, (9, 7)), (2, 3, (11, 8)), (3, 3, (9, 9))]
)
def test_windows_apart_write_the_product_in_place_with_the_same_bits(
    device, k, s, hw, channels_last
):
    """Non-overlapping windows (the gradient written straight into place, then +0 in one
    pass) against the tap-by-tap sum, with ties (relu zeros), -0.0, inf and NaN in the
    incoming gradient, rows and columns no window covers, and both layouts."""
    _host_only(device)
    rng = np.random.default_rng(k * 100 + s * 10 + hw[0])
    a = np.maximum(rng.standard_normal((2, 3, *hw)), 0).astype(np.float32)
    oh, ow = (hw[0] - k) // s + 1, (hw[1] - k) // s + 1
    g = rng.standard_normal((2, 3, oh, ow)).astype(np.float32)
    g[0, 0, 0, :3] = [-0.0, np.inf, np.nan]
    g[1, 2] = -np.abs(g[1, 2])  # negative products of a zero mask: -0.0 before the +0
    _, got = _step(F.max_pool2d, a, g, device, channels_last, kernel_size=k, stride=s)
    np.testing.assert_array_equal(_bits(got), _tap_by_tap(a, g, k, s).view(np.uint32))
