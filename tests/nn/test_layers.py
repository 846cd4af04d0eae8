"""The issue-28 layers without torch: numpy references, gradcheck, shapes, argument checks
and reprs recorded from torch 2.13 (conv1d/transposed conv, per-sample norms, resampling,
padding, channel dropout, the extra losses, parameter containers, LazyLinear)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn as nn
import gpu_tensor.nn.functional as F
from gpu_tensor.autograd.gradcheck import gradcheck

RNG = np.random.default_rng(11)


def _t(a, **kw):
    return gt.tensor(np.asarray(a), **kw)


def _conv1d_ref(x, w, stride=1, pad=0, dil=1):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    k = w.shape[2]
    n_out = (x.shape[2] - dil * (k - 1) - 1) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], n_out))
    for i in range(n_out):
        win = x[:, :, i * stride : i * stride + dil * (k - 1) + 1 : dil]
        out[:, :, i] = np.einsum("nck,ock->no", win, w)
    return out


def _conv_transpose2d_ref(x, w, stride, pad):
    """Scatter form: every input pixel adds its weight-scaled kernel into the output."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    full = np.zeros((n, o, (h - 1) * stride + kh, (wd - 1) * stride + kw))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j], w
            )
    return full[:, :, pad : full.shape[2] - pad, pad : full.shape[3] - pad]


def test_conv1d_matches_numpy(device):
    x, w = RNG.standard_normal((2, 3, 11)), RNG.standard_normal((4, 3, 3))
    got = F.conv1d(_t(x, device=device), _t(w, device=device), stride=2, padding=1, dilation=2)
    np.testing.assert_allclose(got.cpu().numpy(), _conv1d_ref(x, w, 2, 1, 2), rtol=1e-10)


def test_conv_transpose2d_matches_numpy_and_gradcheck(device):
    x, w = RNG.standard_normal((2, 3, 4, 3)), RNG.standard_normal((3, 2, 3, 3))
    got = F.conv_transpose2d(_t(x, device=device), _t(w, device=device), stride=2, padding=1)
    np.testing.assert_allclose(got.cpu().numpy(), _conv_transpose2d_ref(x, w, 2, 1), rtol=1e-10)
    xs = _t(RNG.standard_normal((1, 2, 2, 2)), requires_grad=True)
    ws = _t(RNG.standard_normal((2, 2, 2, 2)), requires_grad=True)
    assert gradcheck(
        lambda a, b: F.conv_transpose2d(a, b, stride=2, groups=2, output_padding=1), (xs, ws)
    )


def test_conv_modules_shapes_init_and_reprs():
    gt.manual_seed(0)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert repr(m) == (
        "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), "
        "padding=(1, 1), output_padding=(1, 1), groups=2)"
    )
    assert tuple(m.weight.shape) == (4, 3, 3, 3)
    assert float(m.weight.abs().max()) <= 1 / np.sqrt(27)  # fan_in = 3 * 3 * 3
    assert tuple(m(gt.randn(1, 4, 5, 5)).shape) == (1, 6, 10, 10)
    assert tuple(m(gt.randn(1, 4, 5, 5), output_size=(9, 10)).shape) == (1, 6, 9, 10)
    c = nn.Conv1d(4, 6, 3, padding="same", padding_mode="reflect")
    assert repr(c) == (
        "Conv1d(4, 6, kernel_size=(3,), stride=(1,), padding=same, padding_mode=reflect)"
    )
    assert tuple(c(gt.randn(2, 4, 9)).shape) == (2, 6, 9)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride"):
        F.conv_transpose2d(gt.randn(1, 4, 3, 3), gt.randn(4, 2, 3, 3), output_padding=1)
    with pytest.raises(
        RuntimeError, match="Expected 2D \\(unbatched\\) or 3D \\(batched\\) input to conv1d"
    ):
        F.conv1d(gt.randn(1, 4, 3, 3), gt.randn(4, 2, 3))


def test_conv2d_shares_conv1d_checks_and_repr():
    # Conv2d is built by the same constructor as Conv1d: torch's repr and argument errors
    # (recorded from torch 2.13).
    c = nn.Conv2d(2, 3, 3, padding="same")
    assert repr(c) == "Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    assert repr(nn.Conv2d(2, 4, (3, 1), padding=1, groups=2, bias=False)) == (
        "Conv2d(2, 4, kernel_size=(3, 1), stride=(1, 1), padding=(1, 1), groups=2, bias=False)"
    )
    assert tuple(c(gt.randn(1, 2, 5, 4)).shape) == (1, 3, 5, 4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(2, 3, 3, groups=0)
    with pytest.raises(ValueError, match="Invalid padding string 'foo'"):
        nn.Conv2d(2, 3, 3, padding="foo")
    with pytest.raises(ValueError, match="not supported for strided convolutions"):
        nn.Conv2d(2, 3, 3, padding="same", stride=2)


def test_per_sample_norms_match_numpy(device):
    x = RNG.standard_normal((3, 6, 4, 2))
    g = x.reshape(3, 2, -1)
    want = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    got = F.group_norm(_t(x, device=device), 2)
    np.testing.assert_allclose(got.cpu().numpy(), want.reshape(x.shape), rtol=1e-8, atol=1e-10)
    inst = (x - x.mean((2, 3), keepdims=True)) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    got = nn.InstanceNorm2d(6)(_t(x, device=device))
    np.testing.assert_allclose(got.cpu().numpy(), inst, rtol=1e-8, atol=1e-10)
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.finfo(np.float64).eps)
    got = nn.RMSNorm(2, device=device, dtype=gt.float64)(_t(x, device=device))
    np.testing.assert_allclose(got.detach().cpu().numpy(), rms, rtol=1e-10)
    xs = _t(RNG.standard_normal((2, 4, 3)), requires_grad=True)
    assert gradcheck(lambda a: F.group_norm(a, 2), (xs,))


def test_norm_reprs_recorded_from_torch():
    assert repr(nn.GroupNorm(2, 6)) == "GroupNorm(2, 6, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.InstanceNorm2d(3)) == (
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, "
        "affine=False, bias=False, track_running_stats=False)"
    )
    assert (
        repr(nn.RMSNorm([2, 3], eps=1e-6)) == "RMSNorm((2, 3), eps=1e-06, elementwise_affine=True)"
    )
    assert repr(nn.BatchNorm2d(3)) == (
        "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    )
    assert repr(nn.LayerNorm(8)) == "LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)"
    with pytest.raises(ValueError, match="num_channels \\(6\\) must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_interpolate_nearest_and_bilinear(device):
    x = np.arange(12, dtype=np.float64).reshape(1, 1, 3, 4)
    near = F.interpolate(_t(x, device=device), scale_factor=2).cpu().numpy()
    np.testing.assert_array_equal(near, x.repeat(2, 2).repeat(2, 3))
    # align_corners=True on a linear ramp stays a linear ramp between the corners
    bil = (
        F.interpolate(_t(x, device=device), size=(5, 7), mode="bilinear", align_corners=True)
        .cpu()
        .numpy()[0, 0]
    )
    want = np.linspace(0, 8, 5)[:, None] + np.linspace(0, 3, 7)[None, :]
    np.testing.assert_allclose(bil, want, rtol=1e-6, atol=1e-6)
    # recorded from torch 2.13: F.interpolate(torch.arange(4.).reshape(1, 1, 4), size=6,
    #   mode="linear")
    lin = F.interpolate(gt.arange(4.0).reshape(1, 1, 4), size=6, mode="linear")
    np.testing.assert_allclose(
        lin.cpu().numpy()[0, 0],
        [0.0, 0.5, 1.1666667461395264, 1.8333333730697632, 2.5, 3.0],
        rtol=1e-6,
    )
    xs = _t(RNG.standard_normal((1, 1, 3, 2)), requires_grad=True)
    assert gradcheck(lambda a: F.interpolate(a, scale_factor=1.5, mode="bilinear"), (xs,))
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(gt.randn(1, 1, 3, 3), scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(gt.randn(1, 1, 3, 3), size=3, scale_factor=2)
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.UpsamplingBilinear2d(size=3)) == "UpsamplingBilinear2d(size=3, mode='bilinear')"


def test_pixel_shuffle_round_trip():
    x = RNG.standard_normal((2, 8, 3, 4))
    y = F.pixel_shuffle(_t(x), 2)
    want = x.reshape(2, 2, 2, 2, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 8)
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(F.pixel_unshuffle(y, 2).numpy(), x)
    assert repr(nn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(gt.randn(1, 3, 2, 2), 2)


@pytest.mark.parametrize(
    "module,mode,pad",
    [
        (nn.ReflectionPad2d, "reflect", (1, 2, 2, 0)),
        (nn.ReplicationPad1d, "edge", (2, 1)),
        (nn.CircularPad2d, "wrap", (1, 1, 2, 1)),
        (nn.ZeroPad2d, "constant", (1, 2, 0, 3)),
    ],
)
def test_pad_modules_match_numpy(device, module, mode, pad):
    x = RNG.standard_normal((2, 3, 4, 5)[: 2 + len(pad) // 2])
    widths = [(0, 0)] * 2 + [(pad[2 * k], pad[2 * k + 1]) for k in reversed(range(len(pad) // 2))]
    got = module(pad)(_t(x, device=device)).cpu().numpy()
    np.testing.assert_array_equal(got, np.pad(x, widths, mode=mode))


def test_pad_reprs():
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert repr(nn.ReflectionPad3d(1)) == "ReflectionPad3d((1, 1, 1, 1, 1, 1))"


def test_channel_dropout_zeroes_whole_maps():
    gt.manual_seed(0)
    y = nn.Dropout2d(0.5)(gt.ones(4, 8, 3, 3))
    per_map = y.reshape(4, 8, 9)
    assert bool(((per_map == 0).all(-1) | (per_map == 2).all(-1)).all())
    assert 0 < int((per_map[..., 0] == 0).sum()) < 32
    assert bool((nn.Dropout2d(0.5).eval()(gt.ones(2, 3, 2, 2)) == 1).all())
    assert repr(nn.Dropout2d()) == "Dropout2d(p=0.5, inplace=False)"
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(gt.ones(2, 3, 4))


def test_losses_match_numpy():
    x, y = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    d = np.abs(x - y)
    huber = np.where(d < 0.7, 0.5 * d * d, 0.7 * (d - 0.35)).mean()
    np.testing.assert_allclose(float(F.huber_loss(_t(x), _t(y), delta=0.7)), huber, rtol=1e-10)
    p = RNG.dirichlet(np.ones(5), 4)
    q = RNG.dirichlet(np.ones(5), 4)
    kl = (q * (np.log(q) - np.log(p))).sum() / 4
    got = F.kl_div(_t(np.log(p)), _t(q), reduction="batchmean")
    np.testing.assert_allclose(float(got), kl, rtol=1e-10)
    s = np.where(RNG.random(4) > 0.5, 1.0, -1.0)
    cos = (x * y).sum(1) / np.sqrt(((x * x).sum(1) + 1e-12) * ((y * y).sum(1) + 1e-12))
    want = np.where(s == 1, 1 - cos, np.maximum(cos - 0.1, 0)).mean()
    np.testing.assert_allclose(
        float(F.cosine_embedding_loss(_t(x), _t(y), _t(s), 0.1)), want, rtol=1e-10
    )
    a, b = RNG.standard_normal(4), RNG.standard_normal(4)
    want = np.maximum(-s * (a - b) + 0.2, 0).sum()
    got = nn.MarginRankingLoss(0.2, reduction="sum")(_t(a), _t(b), _t(s))
    np.testing.assert_allclose(float(got), want, rtol=1e-10)
    n = RNG.standard_normal((4, 5))
    dist = np.linalg.norm(x - y + 1e-6, axis=1) - np.linalg.norm(x - n + 1e-6, axis=1)
    got = nn.TripletMarginLoss(margin=0.5)(_t(x), _t(y), _t(n))
    np.testing.assert_allclose(float(got), np.maximum(dist + 0.5, 0).mean(), rtol=1e-10)
    xs = [_t(RNG.standard_normal((3, 4)), requires_grad=True) for _ in range(3)]
    assert gradcheck(lambda u, v, w: F.triplet_margin_loss(u, v, w, swap=True), xs)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(_t(x), _t(y))
    assert repr(nn.KLDivLoss()) == "KLDivLoss()"


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(gt.zeros(2, 3)), gt.zeros(4)])
    assert isinstance(pl[1], nn.Parameter) and len(pl) == 2
    # recorded from torch 2.13 (torch. spelled gpu_tensor.)
    assert repr(pl) == (
        "ParameterList(\n    (0): Parameter containing: [gpu_tensor.float32 of "
        "size 2x3]\n    (1): Parameter containing: [gpu_tensor.float32 of size "
        "4]\n)"
    )
    holder = nn.Module()
    holder.ps = pl
    assert [n for n, _ in holder.named_parameters()] == ["ps.0", "ps.1"]
    pd = nn.ParameterDict({"a": gt.zeros(2)})
    pd["b"] = gt.ones(3)
    assert list(pd.keys()) == ["a", "b"] and "b" in pd and list(pd.state_dict()) == ["a", "b"]
    assert repr(pd).splitlines()[1] == (
        "    (a): Parameter containing: [gpu_tensor.FloatTensor of size 2]"
    )


def test_lazy_linear_materialises_on_first_call():
    m = nn.LazyLinear(4)
    assert repr(m) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert repr(m.weight) == "<UninitializedParameter>"
    out = m(gt.randn(2, 3))
    assert tuple(out.shape) == (2, 4) and type(m) is nn.Linear
    assert repr(m) == "Linear(in_features=3, out_features=4, bias=True)"
    assert float(m.weight.abs().max()) <= 1 / np.sqrt(3)


def test_unflatten():
    m = nn.Unflatten(1, (2, 3))
    assert repr(m) == "Unflatten(dim=1, unflattened_size=(2, 3))"
    assert tuple(m(gt.randn(4, 6, 5)).shape) == (4, 2, 3, 5)


def test_ctc_loss_matches_brute_force_alignments():
    import itertools

    rng = np.random.default_rng(4)
    logits = rng.standard_normal((4, 3))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    target = [1, 1]
    total = 0.0
    for path in itertools.product(range(3), repeat=4):
        collapsed = [k for i, k in enumerate(path) if k != 0 and (i == 0 or path[i - 1] != k)]
        if collapsed == target:
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    x = gt.tensor(lp[:, None, :], requires_grad=True)
    loss = F.ctc_loss(x, gt.tensor([target]), [4], [2], reduction="sum")
    np.testing.assert_allclose(float(loss), -np.log(total), rtol=1e-10)
    assert loss.grad_fn.name() == "SumBackward0"
    xs = gt.tensor(logits[:, None, :], requires_grad=True)
    assert gradcheck(lambda z: F.ctc_loss(z.log_softmax(-1), gt.tensor([target]), [4], [2]), (xs,))
    impossible = F.ctc_loss(x, gt.tensor([[1, 1, 1]]), [4], [3], reduction="none")
    assert float(impossible) == float("inf")
    assert float(F.ctc_loss(x, gt.tensor([[1, 1, 1]]), [4], [3], zero_infinity=True)) == 0.0


def test_more_activations_match_numpy():
    x = np.linspace(-4, 4, 17)
    t = _t(x)
    sig = 1 / (1 + np.exp(-x))
    cases = {
        "hardswish": x * np.clip(x + 3, 0, 6) / 6,
        "hardsigmoid": np.clip(x / 6 + 0.5, 0, 1),
        "mish": x * np.tanh(np.log1p(np.exp(x))),
        "logsigmoid": np.log(sig),
        "softsign": x / (1 + np.abs(x)),
        "tanhshrink": x - np.tanh(x),
        "selu": 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
    }
    for name, want in cases.items():
        np.testing.assert_allclose(
            getattr(F, name)(t).numpy(), want, rtol=1e-10, atol=1e-12, err_msg=name
        )
    np.testing.assert_allclose(
        F.softshrink(t, 1.0).numpy(), np.where(np.abs(x) > 1, x - np.sign(x), 0), atol=1e-12
    )
    np.testing.assert_allclose(
        F.glu(_t(np.arange(4.0))).numpy(), np.arange(2.0) / (1 + np.exp(-np.arange(2.0, 4.0)))
    )
    xs = _t(RNG.standard_normal(5), requires_grad=True)
    assert gradcheck(lambda a: F.mish(a) + F.logsigmoid(a) + F.hardswish(a * 3), (xs,))


def test_more_layer_reprs_recorded_from_torch():
    assert repr(nn.PReLU(3)) == "PReLU(num_parameters=3)"
    assert repr(nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(nn.Hardshrink()) == "Hardshrink(0.5)"
    assert repr(nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
    assert repr(nn.MaxPool1d(2)) == (
        "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    )
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveMaxPool2d(3)) == "AdaptiveMaxPool2d(output_size=3)"
    assert float(nn.PReLU().weight) == 0.25


def test_pool1d_matches_numpy():
    x = RNG.standard_normal((2, 3, 8))
    np.testing.assert_array_equal(F.max_pool1d(_t(x), 2).numpy(), x.reshape(2, 3, 4, 2).max(-1))
    np.testing.assert_allclose(F.avg_pool1d(_t(x), 4).numpy(), x.reshape(2, 3, 2, 4).mean(-1))
    np.testing.assert_allclose(F.adaptive_avg_pool1d(_t(x), 1).numpy(), x.mean(-1, keepdims=True))
    np.testing.assert_array_equal(
        F.adaptive_max_pool1d(_t(x), 2).numpy(), x.reshape(2, 3, 2, 4).max(-1)
    )
