"""Quantized tensors against torch 2.13 CPU itself: int_repr bit for bit on random and
adversarial inputs for every dtype and scheme, dequantize, repr, choose_qparams, fake
quantize, and the dynamic quantized Linear's outputs. Skips without torch (the torch-free
tests in tests/quantized carry recorded values); run it with a venv that has torch:
`GPU_TENSOR_FALLBACK=1 PYTHONPATH=. <venv>/bin/python -m pytest tests/test_quantized_parity.py`.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.quantized.qparams import choose_qparams
from gpu_tensor.quantized.repr import format_qtensor

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the quantized parity tests need it as the oracle"
)
tq = pytest.importorskip("torch.ao.quantization")

# torch 2.13 deprecates quantized dtypes and torch.ao.quantization: both warn
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SCALES = [0.1, 1.0, 1e-3, 0.00214854861, 0.0173, 3.3e-5]


def _inputs(scale, seed):
    rng = np.random.default_rng(seed)
    ties = ((rng.integers(-400, 400, 300) + 0.5) * np.float32(scale)).astype(np.float32)
    edge = np.array([np.inf, -np.inf, np.nan, 1e30, -1e30, 0.0, -0.0, 0.273939937], np.float32)
    return np.concatenate(
        [
            (rng.standard_normal(2000) * 300 * scale).astype(np.float32),
            ties,
            np.nextafter(ties, np.float32(np.inf)),
            np.nextafter(ties, np.float32(-np.inf)),
            edge,
        ]
    )


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint32"])
@pytest.mark.parametrize("scale", SCALES)
def test_per_tensor_int_repr_and_dequantize(device, dtype, scale):
    lo = {"qint8": -128, "quint8": 0, "qint32": -(2**31)}[dtype]
    for zp in sorted({0, 3, 7, 64, lo if dtype != "qint32" else -5, 127}):
        x = _inputs(scale, abs(zp) % 1000)
        t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, dtype))
        g = gt.quantize_per_tensor(gt.tensor(x, device=device), scale, zp, getattr(gt, dtype))
        np.testing.assert_array_equal(g.int_repr().cpu().numpy(), t.int_repr().numpy())
        np.testing.assert_array_equal(g.dequantize().cpu().numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel(device, dtype, axis):
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((3, 700) if axis == 0 else (700, 3)) * 5).astype(np.float32)
    s = np.array([0.1, 0.0173, 0.00214854861])
    z = np.array([1, 3, 4])
    t = torch.quantize_per_channel(
        torch.from_numpy(x), torch.from_numpy(s), torch.from_numpy(z), axis, getattr(torch, dtype)
    )
    g = gt.quantize_per_channel(
        gt.tensor(x, device=device), gt.tensor(s), gt.tensor(z), axis, getattr(gt, dtype)
    )
    np.testing.assert_array_equal(g.int_repr().cpu().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(g.dequantize().cpu().numpy(), t.dequantize().numpy())
    # a view that keeps the channel axis whole keeps the per-channel quantization
    assert format_qtensor(g.cpu()[:4] if axis == 1 else g.cpu()[:, :4], "torch") == repr(
        t[:4] if axis == 1 else t[:, :4]
    )


def test_reprs():
    for x, scale, zp, dt in [
        ([0.5, 1.5, -0.25], 0.1, 3, "quint8"),
        ([1e-3, 2.5e4], 1e-4, 0, "qint32"),
        ([], 0.1, 3, "qint8"),
        ([[1.0, -2.0]] * 4, 0.5, 1, "qint8"),
    ]:
        t = torch.quantize_per_tensor(torch.tensor(x), scale, zp, getattr(torch, dt))
        g = gt.quantize_per_tensor(gt.tensor(x, dtype=gt.float32), scale, zp, getattr(gt, dt))
        assert format_qtensor(g, "torch") == repr(t)


def test_choose_qparams_random():
    rng = np.random.default_rng(0)
    cases = [np.zeros(4), np.full(3, 2.0), np.array([1e-6, 2e-6]), np.array([-3e-6, -1e-7])]
    cases += [
        rng.standard_normal(rng.integers(1, 40)) * 10.0 ** rng.integers(-7, 3)
        + rng.standard_normal() * rng.integers(0, 2)
        for _ in range(200)
    ]
    for c in cases:
        x = torch.tensor(c, dtype=torch.float32)
        for rr in (False, True):
            assert choose_qparams(
                float(x.min()), float(x.max()), 0, 255, rr
            ) == torch._choose_qparams_per_tensor(x, rr)


def test_fake_quantize(device):
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            (rng.standard_normal(3000) * 3).astype(np.float32),
            ((rng.integers(-300, 300, 300) + 0.5) * np.float32(0.0173)),
        ]
    ).astype(np.float32)
    tx = torch.from_numpy(x).requires_grad_()
    ty = torch.fake_quantize_per_tensor_affine(tx, 0.0173, 5, -128, 127)
    ty.sum().backward()
    gx = gt.tensor(x, device=device, requires_grad=True)
    gy = gt.fake_quantize_per_tensor_affine(gx, 0.0173, 5, -128, 127)
    gy.sum().backward()
    np.testing.assert_array_equal(gy.detach().cpu().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(gx.grad.cpu().numpy(), tx.grad.numpy())


@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_linear_bit_identical(device, per_channel):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
    spec = {torch.nn.Linear: tq.per_channel_dynamic_qconfig} if per_channel else {torch.nn.Linear}
    qm = tq.quantize_dynamic(m, spec, dtype=torch.qint8)
    gm = gt.nn.Sequential(gt.nn.Linear(64, 32), gt.nn.ReLU(), gt.nn.Linear(32, 16))
    gm.load_state_dict({k: gt.tensor(v.detach().numpy()) for k, v in m.state_dict().items()})
    gspec = (
        {gt.nn.Linear: gt.ao.quantization.per_channel_dynamic_qconfig}
        if per_channel
        else {gt.nn.Linear}
    )
    gq = gt.ao.quantization.quantize_dynamic(gm, gspec, dtype=gt.qint8).to(device)
    assert repr(gq).replace("gpu_tensor.", "torch.") == repr(qm)
    for i in (0, 2):
        np.testing.assert_array_equal(
            gq[i].weight().int_repr().cpu().numpy(), qm[i].weight().int_repr().numpy()
        )
    for shape in [(1, 64), (7, 64), (2, 5, 64)]:
        x = torch.randn(*shape)
        np.testing.assert_array_equal(
            gq(gt.tensor(x.numpy(), device=device)).cpu().numpy(), qm(x).numpy()
        )


def test_errors_match_torch():
    x = [0.5, 1.5]
    for args in [
        (0.1, 256, "quint8"),
        (0.1, -1, "quint8"),
        (0.1, 128, "qint8"),
        (0.1, -129, "qint8"),
    ]:
        with pytest.raises(RuntimeError) as te:
            torch.quantize_per_tensor(torch.tensor(x), args[0], args[1], getattr(torch, args[2]))
        with pytest.raises(RuntimeError) as ge:
            gt.quantize_per_tensor(gt.tensor(x), args[0], args[1], getattr(gt, args[2]))
        assert str(ge.value) == str(te.value)
    for dt in ("float64", "float16", "bfloat16", "int32"):
        with pytest.raises(RuntimeError) as te:
            torch.quantize_per_tensor(torch.tensor(x).to(getattr(torch, dt)), 0.1, 0, torch.qint8)
        with pytest.raises(RuntimeError) as ge:
            gt.quantize_per_tensor(gt.tensor(x).to(getattr(gt, dt)), 0.1, 0, gt.qint8)
        assert str(ge.value) == str(te.value)
