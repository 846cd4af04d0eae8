"""fake_quantize_per_tensor_affine / per_channel: forward values and the straight-through
gradient mask (torch 2.13's, recorded)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt

X = [-20, -12.7, 12.75, 20, 0.05, 0.15, -0.05, 12.7]
# torch.fake_quantize_per_tensor_affine(tensor(X), 0.1, 0, -128, 127) and its input grad
FORWARD = [
    "-0x1.99999a0000000p+3",
    "-0x1.9666660000000p+3",
    "0x1.9666660000000p+3",
    "0x1.9666660000000p+3",
    "0x0.0p+0",
    "0x1.99999a0000000p-3",
    "0x0.0p+0",
    "0x1.9666660000000p+3",
]
MASK = [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_per_tensor_forward_and_ste(device):
    x = gt.tensor(X, device=device, requires_grad=True)
    y = gt.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
    assert [float(v).hex() for v in y.detach().cpu().tolist()] == FORWARD
    y.sum().backward()
    assert x.grad.cpu().tolist() == MASK


def test_rounds_before_adding_zero_point(device):
    # fake quantize rounds x/scale first, then adds zp (unlike quantize): 0.5 with zp 3
    # gives round(0.5) + 3 = 3 -> 0.0, where quantize gives 4
    y = gt.fake_quantize_per_tensor_affine(gt.tensor([0.5, 1.5], device=device), 1.0, 3, -128, 127)
    assert y.cpu().tolist() == [0.0, 2.0]


def test_per_channel_matches_numpy_model(device):
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal((3, 400)) * 3).astype(np.float32)
    s = np.array([0.1, 0.0173, 0.3], np.float32)
    z = np.array([0, 3, -2], np.int32)
    x = gt.tensor(xn, device=device, requires_grad=True)
    y = gt.fake_quantize_per_channel_affine(
        x, gt.tensor(s, device=device), gt.tensor(z, device=device), 0, -128, 127
    )
    q = np.rint((xn * (np.float32(1) / s)[:, None]).astype(np.float32)) + z[:, None]
    want = (np.clip(q, -128, 127) - z[:, None]).astype(np.float32) * s[:, None]
    np.testing.assert_array_equal(y.detach().cpu().numpy(), want)
    y.sum().backward()
    np.testing.assert_array_equal(
        x.grad.cpu().numpy(), ((q >= -128) & (q <= 127)).astype(np.float32)
    )


def test_errors():
    x = gt.ones(3)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or"):
        gt.fake_quantize_per_tensor_affine(x, 0.1, 0, 0, -1)
    with pytest.raises(
        RuntimeError, match="`zero_point` must be between `quant_min` and `quant_max`."
    ):
        gt.fake_quantize_per_tensor_affine(x, 0.1, 300, -128, 127)
    with pytest.raises(RuntimeError, match="Zero-point must be Int32, Float or Half, found Long"):
        gt.fake_quantize_per_channel_affine(
            x, gt.ones(3), gt.zeros(3, dtype=gt.int64), 0, -128, 127
        )
