"""gt.ao.quantization: observers (qparams recorded from torch 2.13), QConfig,
quantize_dynamic's module swap, repr, state_dict and deprecation warning."""

from __future__ import annotations

import warnings

import pytest

import gpu_tensor as gt
from gpu_tensor.ao import quantization as tq

pytestmark = [
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
    pytest.mark.filterwarnings("ignore:torch.ao.quantization:DeprecationWarning"),
]


def test_minmax_observer_affine():
    o = tq.MinMaxObserver()
    assert repr(o) == "MinMaxObserver(min_val=inf, max_val=-inf)"
    x = gt.tensor([-1.0, 0.5, 2.0])
    assert o(x) is x
    assert repr(o) == "MinMaxObserver(min_val=-1.0, max_val=2.0)"
    s, z = o.calculate_qparams()
    # torch 2.13: (tensor([0.0118]), tensor([85], dtype=torch.int32)), recorded
    assert s.dtype is gt.float32 and z.dtype is gt.int32 and z.tolist() == [85]
    assert s.tolist() == [pytest.approx(0.011764705882352941, rel=1e-7)]
    assert list(o.state_dict()) == ["eps", "min_val", "max_val"]


def test_minmax_observer_symmetric_and_per_channel():
    o = tq.MinMaxObserver(dtype=gt.qint8, qscheme=gt.per_tensor_symmetric)
    o(gt.tensor([-1.0, 0.5, 2.0]))
    s, z = o.calculate_qparams()
    assert float(s).hex() == "0x1.0101020000000p-6" and z.tolist() == [0]  # torch's
    assert (o.quant_min, o.quant_max) == (-128, 127)
    p = tq.PerChannelMinMaxObserver(ch_axis=0)
    p(gt.tensor([[-1.0, 0.5], [2.0, 3.0]]))
    s, z = p.calculate_qparams()
    assert [v.hex() for v in s.tolist()] == ["0x1.8181820000000p-8", "0x1.8181820000000p-7"]
    assert z.tolist() == [170, 0]
    with pytest.raises(NotImplementedError, match="MinMaxObserver's qscheme only support"):
        tq.MinMaxObserver(qscheme=gt.per_channel_affine)


def test_qconfig():
    qc = tq.default_dynamic_qconfig
    assert qc.activation().dtype is gt.quint8 and qc.activation().is_dynamic
    w = qc.weight()
    assert w.dtype is gt.qint8 and w.qscheme is gt.per_tensor_symmetric
    with pytest.raises(ValueError, match="QConfig received observer instance"):
        tq.QConfig(activation=tq.MinMaxObserver(), weight=tq.MinMaxObserver)
    assert gt.quantization.quantize_dynamic is tq.quantize_dynamic  # torch.quantization


def test_quantize_dynamic_swaps_linears():
    model = gt.nn.Sequential(gt.nn.Linear(64, 32), gt.nn.ReLU(), gt.nn.Linear(32, 8))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        q = tq.quantize_dynamic(model, {gt.nn.Linear}, dtype=gt.qint8)
    dep = [w for w in got if w.category is DeprecationWarning]
    assert dep and str(dep[0].message).startswith(
        "torch.ao.quantization is deprecated and will be removed in 2.10."
    )
    assert type(model[0]) is gt.nn.Linear  # a copy was quantized
    assert repr(q) == (
        "Sequential(\n"
        "  (0): DynamicQuantizedLinear(in_features=64, out_features=32, dtype=gpu_tensor.qint8,"
        " qscheme=gpu_tensor.per_tensor_affine)\n"
        "  (1): ReLU()\n"
        "  (2): DynamicQuantizedLinear(in_features=32, out_features=8, dtype=gpu_tensor.qint8,"
        " qscheme=gpu_tensor.per_tensor_affine)\n)"
    )
    w = q[0].weight()
    amax = model[0].weight.detach().abs().max().item()
    assert w.q_scale() == pytest.approx(amax / 127.5, rel=1e-7) and w.q_zero_point() == 0
    sd = q.state_dict()
    assert list(sd) == [
        "0.scale",
        "0.zero_point",
        "0._packed_params.dtype",
        "0._packed_params._packed_params",
        "2.scale",
        "2.zero_point",
        "2._packed_params.dtype",
        "2._packed_params._packed_params",
    ]
    assert sd["0._packed_params.dtype"] is gt.qint8
    qw, b = sd["0._packed_params._packed_params"]
    assert qw.is_quantized and b.shape == (32,)
    y = q(gt.randn(4, 64))
    assert y.shape == (4, 8)


def test_quantize_dynamic_by_name_and_inplace():
    model = gt.nn.Sequential(gt.nn.Linear(4, 4), gt.nn.Linear(4, 2))
    q = tq.quantize_dynamic(model, {"1": tq.default_dynamic_qconfig}, inplace=True)
    assert q is model
    assert type(q[0]) is gt.nn.Linear and type(q[1]).__name__ == "Linear"
    assert q[1]._get_name() == "DynamicQuantizedLinear"
    with pytest.raises(ValueError, match="qint8"):
        tq.quantize_dynamic(model, {gt.nn.Linear}, dtype=gt.float16)
