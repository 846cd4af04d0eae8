"""The dynamic quantized Linear's arithmetic: bit-identical to torch 2.13 CPU (fbgemm) on a
small layer (recorded), and equal to the reference formula on every device."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.quantized.qparams import choose_qparams

pytestmark = [
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
    pytest.mark.filterwarnings("ignore:torch.ao.quantization:DeprecationWarning"),
]

# torch.ao.quantization.quantize_dynamic(Sequential(Linear(8, 4)), {Linear}, qint8) with
# these weights, bias and input, on torch 2.13.0+cpu (x86/fbgemm): the weight's integers,
# its scale, and the output (float32, as hex), recorded.
W_INT = [
    [118, 127, 120, 96, 59, 14, -33, -75],
    [-107, -125, -126, -109, -78, -36, 10, 55],
    [93, 118, 127, 119, 95, 58, 13, -34],
    [-76, -108, -125, -126, -109, -77, -36, 11],
]
W_SCALE = 0.0023528041783720255
Y = [
    [
        "0x1.38600a0000000p-1",
        "-0x1.acacde0000000p-2",
        "-0x1.4dd2c60000000p-5",
        "0x1.90439c0000000p-2",
    ],
    [
        "0x1.944c5e0000000p+0",
        "-0x1.5e47ee0000000p+0",
        "0x1.b823ec0000000p-1",
        "-0x1.bca5340000000p-2",
    ],
    [
        "0x1.03546a0000000p+1",
        "-0x1.e6da080000000p+0",
        "0x1.7793280000000p+0",
        "-0x1.187ce20000000p+0",
    ],
]


def _layer(device="cpu"):
    lin = gt.nn.Linear(8, 4)
    with gt.no_grad():
        lin.weight.copy_((gt.arange(32, dtype=gt.float32).reshape(4, 8) * 0.37 - 5.1).sin() * 0.3)
        lin.bias.copy_(gt.tensor([0.1, -0.2, 0.05, 0.0]))
    q = gt.ao.quantization.quantize_dynamic(gt.nn.Sequential(lin), {gt.nn.Linear}, dtype=gt.qint8)
    return q.to(device)


def _input(device="cpu"):
    return ((gt.arange(24, dtype=gt.float32).reshape(3, 8) * 0.71).cos() * 2.0).to(device)


def test_bit_identical_to_recorded_torch(device):
    q = _layer(device)
    w = q[0].weight()
    assert w.int_repr().cpu().tolist() == W_INT and w.q_scale() == W_SCALE
    assert w.q_zero_point() == 0 and w.qscheme() is gt.per_tensor_affine
    y = q(_input(device))
    assert [[float(v).hex() for v in row] for row in y.cpu().tolist()] == Y


def test_reference_formula_random(device):
    rng = np.random.default_rng(0)
    lin = gt.nn.Linear(48, 20)
    q = gt.ao.quantization.quantize_dynamic(
        gt.nn.Sequential(lin), {gt.nn.Linear}, dtype=gt.qint8
    ).to(device)
    x = (rng.standard_normal((2, 5, 48)) * 1.7).astype(np.float32)
    y = q(gt.tensor(x, device=device))
    assert y.shape == (2, 5, 20) and y.dtype is gt.float32
    # the formula of gpu_tensor/quantized/linear_dynamic.py, in numpy
    s, z = choose_qparams(float(x.min()), float(x.max()), 0, 255, reduce_range=True)
    s = np.float32(s)
    xq = np.clip(np.rint((x * (np.float32(1) / s)).astype(np.float32) + np.float32(z)), 0, 255)
    w = q[0].weight()
    acc = (xq.astype(np.int64) - z) @ w.int_repr().cpu().numpy().astype(np.int64).T
    scale = np.float32(s * np.float32(w.q_scale()))
    want = (
        acc.astype(np.float32).astype(np.float64) * np.float64(scale)
        + lin.bias.detach().cpu().numpy().astype(np.float64)
    ).astype(np.float32)
    np.testing.assert_array_equal(y.cpu().numpy(), want)
    # and close to the float layer it came from
    ref = lin(gt.tensor(x, device=lin.weight.device)).detach().cpu().numpy()
    assert np.abs(y.cpu().numpy() - ref).max() < 0.1


def test_full_quint8_range_fits_the_int8_product(device):
    """Without reduce_range the activation uses all of 0..255 (and with it a rounding tie
    can reach 128): the product takes x_q - 128, so every value is exact."""
    from gpu_tensor.quantized.affine import quantize_activation
    from gpu_tensor.quantized.linear_dynamic import linear_dynamic

    s = quantize_activation(gt.tensor([-1.0, 0.0, 2.54, 100.0], device=device), 100.0, 0)
    assert s.dtype is gt.int8 and s.cpu().tolist() == [-128, -128, 126, 127]  # 0, 0, 254, 255
    q = _layer(device)
    x = _input(device)
    y = linear_dynamic(x, q[0].packed_weight(), reduce_range=False).cpu().numpy()
    xn = x.cpu().numpy()
    sc, z = choose_qparams(float(xn.min()), float(xn.max()), 0, 255, reduce_range=False)
    sc = np.float32(sc)
    xq = np.clip(
        np.rint((xn.astype(np.float64) * np.float64(np.float32(1) / sc) + z).astype(np.float32)),
        0,
        255,
    )
    assert xq.max() > 200  # the upper half of quint8 is in use
    acc = (xq.astype(np.int64) - z) @ np.array(W_INT, np.int64).T
    want = acc.astype(np.float32).astype(np.float64) * np.float64(
        np.float32(sc * np.float32(W_SCALE))
    ) + np.array([0.1, -0.2, 0.05, 0.0], np.float32).astype(np.float64)
    np.testing.assert_array_equal(y, want.astype(np.float32))


def test_per_channel_weights(device):
    lin = gt.nn.Linear(16, 6)
    qc = gt.ao.quantization.per_channel_dynamic_qconfig
    q = gt.ao.quantization.quantize_dynamic(
        gt.nn.Sequential(lin), {gt.nn.Linear: qc}, dtype=gt.qint8
    ).to(device)
    w = q[0].weight()
    assert w.qscheme() is gt.per_channel_affine and w.q_per_channel_axis() == 0
    amax = lin.weight.detach().abs().amax(1).cpu().numpy()
    np.testing.assert_array_equal(
        w.q_per_channel_scales().cpu().numpy(), (amax / np.float32(127.5)).astype(np.float64)
    )
    x = gt.randn(3, 16, device=lin.weight.device)
    err = (q(x.to(device)).cpu() - lin(x).detach().cpu()).abs().max().item()
    assert err < 0.05


def test_bad_input():
    q = _layer()
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        q(gt.ones(2, 5))
    with pytest.raises(RuntimeError, match="expected a float32 input"):
        q(gt.ones(2, 8, dtype=gt.float64))
