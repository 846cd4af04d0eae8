"""quantize / dequantize values: torch 2.13 CPU's, recorded (torch-free), on every device,
plus the formula checked against a numpy model on random and near-tie inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.quantized import affine
from gpu_tensor.quantized.quantizer import QRANGE

pytestmark = pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")

# Adversarial inputs: exact halves with odd and even zero points, fbgemm's tie case
# (0.273939937 at scale 0.00214854861 is 127.5 by the reciprocal, 127.4999 by division),
# clamps, infinities and NaN.
X = [
    0.5,
    1.5,
    2.5,
    -0.5,
    -1.5,
    -2.5,
    0.273939937,
    1e30,
    -1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
    127.5,
    -128.5,
    3.0000002,
    0.0,
    -0.0,
]
# int_repr() of quantize_per_tensor(tensor(X), scale, zero_point, dtype), printed by torch
# 2.13.0+cpu (x86, fbgemm)
# (a row a recorded case, each on one line)
# fmt: off
RECORDED = {
    ("qint8", 1.0, 3): [4, 4, 6, 2, 2, 0, 3, 127, -128, 127, -128, 127, 127, -126, 6, 3, 3],
    ("qint8", 1.0, 0): [0, 2, 2, 0, -2, -2, 0, 127, -128, 127, -128, 127, 127, -128, 3, 0, 0],
    ("qint8", 0.00214854861, 0): [127, 127, 127, -128, -128, -128, 127, 127, -128, 127, -128, 127, 127, -128, 127, 0, 0],
    ("qint8", 0.1, 7): [12, 22, 32, 2, -8, -18, 10, 127, -128, 127, -128, 127, 127, -128, 37, 7, 7],
    ("qint8", 0.001, 2): [127, 127, 127, -128, -128, -128, 127, 127, -128, 127, -128, 127, 127, -128, 127, 2, 2],
    ("quint8", 1.0, 3): [4, 4, 6, 2, 2, 0, 3, 255, 0, 255, 0, 255, 130, 0, 6, 3, 3],
    ("quint8", 1.0, 0): [0, 2, 2, 0, 0, 0, 0, 255, 0, 255, 0, 255, 128, 0, 3, 0, 0],
    ("quint8", 0.00214854861, 0): [233, 255, 255, 0, 0, 0, 128, 255, 0, 255, 0, 255, 255, 0, 255, 0, 0],
    ("quint8", 0.1, 7): [12, 22, 32, 2, 0, 0, 10, 255, 0, 255, 0, 255, 255, 0, 37, 7, 7],
    ("quint8", 0.001, 2): [255, 255, 255, 0, 0, 0, 255, 255, 0, 255, 0, 255, 255, 0, 255, 2, 2],
    ("qint32", 1.0, 3): [4, 4, 6, 2, 2, 0, 3, 2147483647, -2147483648, 2147483647, -2147483648, -2147483648, 130, -126, 6, 3, 3],
    ("qint32", 1.0, 0): [0, 2, 2, 0, -2, -2, 0, 2147483647, -2147483648, 2147483647, -2147483648, -2147483648, 128, -128, 3, 0, 0],
    ("qint32", 0.00214854861, 0): [233, 698, 1164, -233, -698, -1164, 128, 2147483647, -2147483648, 2147483647, -2147483648, -2147483648, 59342, -59808, 1396, 0, 0],
    ("qint32", 0.1, 7): [12, 22, 32, 2, -8, -18, 10, 2147483647, -2147483648, 2147483647, -2147483648, -2147483648, 1282, -1278, 37, 7, 7],
    ("qint32", 0.001, 2): [502, 1502, 2502, -498, -1498, -2498, 276, 2147483647, -2147483648, 2147483647, -2147483648, -2147483648, 127502, -128498, 3002, 2, 2],
}
# fmt: on


@pytest.mark.parametrize("case", sorted(RECORDED), ids=str)
def test_int_repr_matches_recorded_torch(device, case):
    dtype, scale, zp = case
    q = gt.quantize_per_tensor(gt.tensor(X, device=device), scale, zp, getattr(gt, dtype))
    assert q.int_repr().cpu().tolist() == RECORDED[case]


def test_fbgemm_tie_case_rounds_up(device):
    q = gt.quantize_per_tensor(gt.tensor([0.273939937], device=device), 0.00214854861, 0, gt.qint32)
    assert q.int_repr().item() == 128  # division would give 127


def _model(x, scale, zp, lo, hi, nan, fused):
    """torch CPU's formula in numpy: x * inv + zp with one rounding (fused: 8-bit per-tensor)
    or the product rounded to float32 first (qint32), then round half to even."""
    inv = np.float32(1.0) / np.float32(scale)
    if fused:  # the float32 product is exact in double: one rounding, as an FMA
        y = (x.astype(np.float64) * np.float64(inv) + zp).astype(np.float32)
    else:
        y = (x * inv).astype(np.float32) + np.float32(zp)
    y = np.rint(y).astype(np.float64)
    y = np.clip(y, lo, hi)
    y[np.isnan(y)] = nan
    return y


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint32"])
@pytest.mark.parametrize("scale,zp", [(0.0173, 7), (0.00214854861, 0), (1.0, 3)])
def test_formula_on_random_and_near_ties(device, dtype, scale, zp):
    rng = np.random.default_rng(0)
    ties = ((rng.integers(-300, 300, 500) + 0.5) * np.float32(scale)).astype(np.float32)
    x = np.concatenate(
        [
            (rng.standard_normal(3000) * 200 * scale).astype(np.float32),
            ties,
            np.nextafter(ties, np.float32(np.inf)),
            np.nextafter(ties, np.float32(-np.inf)),
        ]
    ).astype(np.float32)
    d = getattr(gt, dtype)
    q = gt.quantize_per_tensor(gt.tensor(x, device=device), scale, zp, d)
    lo, hi = QRANGE[d]
    want = _model(x, scale, zp, lo, hi, affine.NAN_VALUE[d], fused=d is not gt.qint32)
    np.testing.assert_array_equal(q.int_repr().cpu().numpy(), want)


def test_dequantize_per_tensor_is_float32_product(device):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(1000) * 3).astype(np.float32)
    q = gt.quantize_per_tensor(gt.tensor(x, device=device), 0.0173, 5, gt.qint8)
    ints = q.int_repr().cpu().numpy().astype(np.int32)
    d = q.dequantize()
    assert d.dtype is gt.float32
    np.testing.assert_array_equal(
        d.cpu().numpy(), (ints - 5).astype(np.float32) * np.float32(0.0173)
    )


def test_dequantize_qint32_wraps_like_torch(device):
    # torch 2.13: quantize_per_tensor(-1e30, 0.1, 7, qint32).dequantize() is +2**31 * 0.1
    # (int32 q - zp wraps), recorded
    q = gt.quantize_per_tensor(gt.tensor([-1e30, 1e30], device=device), 0.1, 7, gt.qint32)
    assert [float(v).hex() for v in q.dequantize().cpu().tolist()] == [
        "0x1.99999a0000000p+27",
        "0x1.99999a0000000p+27",
    ]


def test_per_channel_values(device):
    x = gt.tensor([[-1.0, 0.25, 3.5], [0.7, -0.3, 1.2]], device=device)
    q = gt.quantize_per_channel(
        x, gt.tensor([0.02, 0.1], dtype=gt.float64), gt.tensor([3, -4]), 0, gt.qint8
    )
    # torch 2.13 prints these dequantized values (recorded)
    np.testing.assert_allclose(
        q.dequantize().cpu().numpy(), [[-1.0, 0.26, 2.48], [0.7, -0.3, 1.2]], rtol=0, atol=1e-6
    )
    scales = np.array([0.02, 0.1])[:, None]
    ints = q.int_repr().cpu().numpy()
    want = (ints.astype(np.int64) - np.array([3, -4])[:, None]).astype(np.float64) * scales
    np.testing.assert_array_equal(q.dequantize().cpu().numpy(), want.astype(np.float32))


def test_warning_is_torchs_text_once():
    from gpu_tensor.quantized import functions

    functions._warned.clear()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        gt.quantize_per_tensor(gt.ones(2), 0.1, 0, gt.qint8)
        gt.quantize_per_tensor(gt.ones(2), 0.1, 0, gt.qint8)
    msgs = [str(w.message) for w in got if w.category is UserWarning]
    assert len(msgs) == 1
    assert msgs[0].startswith(
        "torch.quantize_per_tensor, torch.quantize_per_channel and other "
        "quantized tensor creation functions"
    )
    assert got[0].filename == __file__
