"""gt.nn.functional against numpy references and finite differences (no torch needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F
from gpu_tensor.testing import assert_close

RNG = np.random.default_rng(0)


def _t(a, device="cpu", grad=False):
    return gt.tensor(np.asarray(a), device=device, requires_grad=grad)


def _np(t):
    return t.detach().cpu().numpy()


def test_activations_match_numpy(device):
    x = RNG.standard_normal((5, 7)).astype(np.float32) * 4
    x[0, :3] = (30.0, -30.0, 0.0)  # softplus above its threshold; exp never overflows
    t = _t(x, device)
    erf = np.vectorize(math.erf)
    refs = {
        F.relu: np.maximum(x, 0),
        F.relu6: np.clip(x, 0, 6),
        F.leaky_relu: np.where(x > 0, x, 0.01 * x),
        F.elu: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        F.softplus: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))),
        F.hardtanh: np.clip(x, -1, 1),
        F.silu: x / (1 + np.exp(-x)),
        F.gelu: 0.5 * x * (1 + erf(x / math.sqrt(2))),
    }
    for fn, ref in refs.items():
        assert_close(fn(t), ref.astype(np.float32), atol=1e-5, rtol=1e-5)
    tanh_ref = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert_close(F.gelu(t, approximate="tanh"), tanh_ref.astype(np.float32), atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(t, approximate="erf")


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_is_stable_on_any_dim(device, dim):
    x = (RNG.standard_normal((3, 4, 5)) * 1000).astype(np.float32)  # exp(x) overflows naively
    shifted = x - x.max(axis=dim, keepdims=True)
    ref_log = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
    out = F.softmax(_t(x, device), dim)
    assert np.isfinite(_np(out)).all()
    assert_close(out, np.exp(ref_log), atol=1e-6, rtol=1e-5)
    assert_close(F.log_softmax(_t(x, device), dim), ref_log, atol=1e-4, rtol=1e-5)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        F.softmax(_t(x, device))


def test_gradcheck_composed_functions():
    x = _t(RNG.standard_normal((3, 5)), grad=True)
    w = _t(RNG.standard_normal(5), grad=True)
    b = _t(RNG.standard_normal(5), grad=True)
    target = gt.tensor([1, 4, -100])
    cw = _t(np.abs(RNG.standard_normal(5)) + 0.1)
    other = _t(RNG.standard_normal((3, 5)))  # not a view of x: gradcheck perturbs x in place
    checks = [
        (lambda a: F.log_softmax(a, 0), (x,)),
        (lambda a: F.softmax(a, 1), (x,)),
        (lambda a, w_, b_: F.layer_norm(a, (5,), w_, b_), (x, w, b)),
        (lambda a: F.cross_entropy(a, target, cw, label_smoothing=0.1), (x,)),
        (
            lambda a: F.binary_cross_entropy_with_logits(a, (other > 0).double(), pos_weight=cw),
            (x,),
        ),
        (lambda a: F.smooth_l1_loss(a, other, beta=0.7), (x,)),
        (lambda a: F.normalize(a, dim=1), (x,)),
        (lambda a: F.elu(a) + F.softplus(a, beta=2) + F.gelu(a, approximate="tanh"), (x,)),
    ]
    for fn, inputs in checks:
        assert gt.autograd.gradcheck(fn, inputs)


def test_gradcheck_conv_and_pool():
    x = _t(RNG.standard_normal((1, 4, 5, 6)), grad=True)
    w = _t(RNG.standard_normal((2, 2, 3, 2)), grad=True)
    b = _t(RNG.standard_normal(2), grad=True)
    assert gt.autograd.gradcheck(
        lambda a, w_, b_: F.conv2d(a, w_, b_, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
        (x, w, b),
    )
    assert gt.autograd.gradcheck(lambda a: F.max_pool2d(a, 2, 1, padding=1), (x,))
    assert gt.autograd.gradcheck(lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True), (x,))
    assert gt.autograd.gradcheck(lambda a: F.adaptive_avg_pool2d(a, (2, 4)), (x,))


def _conv_ref(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride : i * stride + dil * (kh - 1) + 1 : dil,
                    j * stride : j * stride + dil * (kw - 1) + 1 : dil,
                ]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return out


@pytest.mark.parametrize("stride,pad,dil,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1)])
def test_conv2d_matches_a_direct_loop(device, stride, pad, dil, groups):
    x = RNG.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = RNG.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    out = F.conv2d(_t(x, device), _t(w, device), _t(b, device), stride, pad, dil, groups)
    assert out.is_contiguous()
    assert_close(
        out, _conv_ref(x, w, b, stride, pad, dil, groups).astype(np.float32), atol=1e-4, rtol=1e-4
    )


def test_conv2d_keeps_channels_last(device):
    x = _t(RNG.standard_normal((2, 3, 6, 6)).astype(np.float32), device)
    x = x.contiguous(memory_format=gt.channels_last)
    w = _t(RNG.standard_normal((5, 3, 3, 3)).astype(np.float32), device)
    out = F.conv2d(x, w, padding="same")
    assert tuple(out.shape) == (2, 5, 6, 6)
    assert out.is_contiguous(memory_format=gt.channels_last)
    assert_close(out, F.conv2d(x.contiguous(), w, padding=1), atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="expected input.*to have 6 channels"):
        F.conv2d(x, w, groups=2)


def test_pooling_matches_numpy(device):
    x = RNG.standard_normal((2, 3, 6, 8)).astype(np.float32)
    blocks = x.reshape(2, 3, 3, 2, 4, 2)
    assert_close(F.max_pool2d(_t(x, device), 2), blocks.max(axis=(3, 5)))
    assert_close(F.avg_pool2d(_t(x, device), 2), blocks.mean(axis=(3, 5)), atol=1e-6, rtol=1e-6)
    assert_close(
        F.adaptive_avg_pool2d(_t(x, device), 1),
        x.mean(axis=(2, 3), keepdims=True),
        atol=1e-6,
        rtol=1e-6,
    )
    out, idx = F.max_pool2d(_t(x, device), 2, return_indices=True)
    flat = x.reshape(2, 3, -1)
    assert_close(out, np.take_along_axis(flat, _np(idx).reshape(2, 3, -1), 2).reshape(out.shape))
    # padding counts toward the average by default, not with count_include_pad=False
    one = gt.ones((1, 1, 2, 2), device=device)
    assert _np(F.avg_pool2d(one, 2, 1, 1))[0, 0, 0, 0] == 0.25
    assert _np(F.avg_pool2d(one, 2, 1, 1, count_include_pad=False))[0, 0, 0, 0] == 1.0


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_numpy(device, mode):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    np_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
    ref = np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 3)), mode=np_mode)
    assert_close(F.pad(_t(x, device), (1, 3, 2, 1), mode=mode), ref)
    cropped = F.pad(_t(x, device), (-1, 2), value=7.0)
    assert_close(cropped, np.pad(x[..., 1:], ((0, 0),) * 3 + ((0, 2),), constant_values=7))


def test_losses_match_numpy(device):
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 3, 1, -100, 2, 3])
    w = np.array([1.0, 2.0, 0.5, 1.5], dtype=np.float32)
    logp = x - x.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    keep = y != -100
    picked = logp[np.arange(6), np.where(keep, y, 0)]
    ww = w[np.where(keep, y, 0)] * keep
    ref_mean = -(picked * ww).sum() / ww.sum()
    out = F.cross_entropy(_t(x, device), _t(y, device), _t(w, device))
    assert_close(out, np.float32(ref_mean), atol=1e-6, rtol=1e-5)
    none = F.cross_entropy(_t(x, device), _t(y, device), reduction="none")
    assert_close(none, (-picked * keep).astype(np.float32), atol=1e-6, rtol=1e-5)
    probs = np.exp(logp)
    soft = F.cross_entropy(_t(x, device), _t(probs, device))
    assert_close(soft, np.float32(-(probs * logp).sum(1).mean()), atol=1e-6, rtol=1e-5)
    t = RNG.random((6, 4)).astype(np.float32)
    p = 1 / (1 + np.exp(-x))
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    assert_close(
        F.binary_cross_entropy(_t(p, device), _t(t, device)),
        np.float32(bce.mean()),
        atol=1e-6,
        rtol=1e-5,
    )
    assert_close(
        F.binary_cross_entropy_with_logits(_t(x, device), _t(t, device), reduction="sum"),
        np.float32(bce.sum()),
        atol=1e-5,
        rtol=1e-5,
    )
    assert_close(
        F.mse_loss(_t(x, device), _t(t, device), reduction="sum"),
        np.float32(((x - t) ** 2).sum()),
        atol=1e-5,
        rtol=1e-5,
    )
    d = np.abs(x - t)
    assert_close(
        F.smooth_l1_loss(_t(x, device), _t(t, device)),
        np.float32(np.where(d < 1, 0.5 * d * d, d - 0.5).mean()),
        atol=1e-6,
        rtol=1e-5,
    )


def test_loss_errors_name_the_problem():
    x, t = gt.zeros(3, 4), gt.zeros(3, 4)
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction|avg is not"):
        F.mse_loss(x, t, reduction="avg")
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, gt.tensor([0, 7, 1]))
    with pytest.raises(
        RuntimeError, match="expected target dtype to be Long or Byte, but got Float"
    ):
        F.nll_loss(x, gt.zeros(3))
    with pytest.raises(ValueError, match="Expected input batch_size \\(3\\) to match target"):
        F.cross_entropy(x, gt.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x + 2, t)
    with pytest.raises(ValueError, match="Target size .* must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, gt.zeros(3))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(x, t, beta=-1.0)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(x, gt.zeros(4))


def test_dropout_linear_embedding_one_hot(device):
    gt.manual_seed(0)
    x = gt.ones(2000, device=device)
    y = _np(F.dropout(x, 0.25))
    assert set(np.unique(y)) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.04
    assert F.dropout(x, 0.25, training=False) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(x, 1.5)
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    w = RNG.standard_normal((5, 4)).astype(np.float32)
    assert_close(
        F.linear(_t(a, device), _t(w, device), _t(np.ones(5, np.float32), device)),
        a @ w.T + 1,
        atol=1e-5,
        rtol=1e-5,
    )
    idx = np.array([[0, 2], [4, 2]])
    assert_close(F.embedding(_t(idx, device), _t(w, device)), w[idx])
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(_t([5], device), _t(w, device))
    assert _np(F.one_hot(_t([2, 0], device))).tolist() == [[0, 0, 1], [1, 0, 0]]
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(_t([1.0], device))


def test_embedding_padding_row_gets_no_gradient():
    w = _t(RNG.standard_normal((4, 3)), grad=True)
    F.embedding(gt.tensor([0, 1, 1, 3]), w, padding_idx=1).sum().backward()
    assert _np(w.grad).tolist() == [[1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1]]
