"""What ops do with quantized tensors (the QUANTIZED bit of the modes word): torch's refusals
naming the op, the ops torch has on quantized tensors, and the bit's lifetime."""

from __future__ import annotations

import gc

import pytest

import gpu_tensor as gt
from gpu_tensor import _modes

pytestmark = pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")


def _q(device="cpu"):
    x = gt.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 100.0, -100.0], device=device)
    return gt.quantize_per_tensor(x, 1.0, 3, gt.qint8)


@pytest.mark.parametrize(
    "op,name",
    [
        (lambda q: q + q, "add"),
        (lambda q: q * 2, "mul"),
        (lambda q: q.sum(), "sum"),
        (lambda q: q.abs(), "abs"),
        (lambda q: q @ q, "matmul"),
        (lambda q: q.exp(), "exp"),
        (lambda q: q.add_(1), "add_"),
        (lambda q: gt.zeros_like(q), "zeros_like"),
        (lambda q: q.mean(), "mean"),
    ],
)
def test_torch_refusals_name_the_op(device, op, name):
    q = _q(device)
    key = "QuantizedCPU" if device == "cpu" else "QuantizedCUDA"
    with pytest.raises(
        NotImplementedError,
        match=f"Could not run 'aten::{name}' with arguments "
        f"from the '{key}' backend.*dequantize\\(\\) first",
    ):
        op(q)


def test_ops_torch_has(device):
    q = _q(device)
    # torch 2.13: q.relu() dequantizes to these (recorded): max(q, zero_point)
    r = q.relu()
    assert r.is_quantized and r.dequantize().cpu().tolist() == [1, 1, 3, 0, 0, 0, 100, 0]
    assert (q == q.clone()).all().item() and not (q != q).any().item()
    c = gt.cat([q, q])
    assert c.is_quantized and c.shape == (16,) and c.q_zero_point() == 3
    assert gt.stack([q, q]).shape == (2, 8)
    m = q.max()
    assert m.is_quantized and m.dequantize().item() == 100.0
    picked = q[gt.tensor([0, 6], device=device)]
    assert picked.is_quantized and picked.dequantize().cpu().tolist() == [1.0, 100.0]
    assert q.flip(0).dequantize().cpu().tolist()[0] == -100.0
    values, indices = q.sort()
    assert values.is_quantized and values.dequantize().cpu().tolist()[0] == -100.0
    assert indices.cpu().tolist()[:2] == [7, 5]
    e = gt.empty_like(q)
    assert e.is_quantized and e.shape == q.shape
    f = q.clone().fill_(2.0)
    assert f.int_repr().cpu().tolist() == [5] * 8  # the value quantized: 2 / 1.0 + 3
    with pytest.raises(RuntimeError, match="different quantization parameters"):
        gt.cat([q, gt.quantize_per_tensor(gt.ones(2, device=device), 0.5, 0, gt.qint8)])


def test_per_channel_refuses_value_ops():
    qc = gt.quantize_per_channel(
        gt.ones(2, 3), gt.tensor([0.1, 0.2]), gt.tensor([0, 1]), 0, gt.qint8
    )
    with pytest.raises(NotImplementedError, match="aten::cat"):
        gt.cat([qc, qc])
    assert qc[:, 1:].is_quantized  # views still work


def test_the_bit_is_on_only_while_quantized_tensors_live():
    gc.collect()
    a = gt.ones(3)
    q = _q()
    view = q[2:]
    assert _modes.ACTIVE[0] and _modes.live() & _modes.QUANTIZED
    assert (a + 1).tolist() == [2.0, 2.0, 2.0]  # plain tensors go on as before
    del q
    assert _modes.ACTIVE[0]  # the view keeps the storage alive
    del view
    gc.collect()
    a + 1  # the handler clears the bit if the finaliser could not
    assert not _modes.live() & _modes.QUANTIZED
