"""QTensor: metadata, getters, views that keep the quantization, copies, moves, pickling,
repr, and torch's errors (messages recorded from torch 2.13 CPU)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.quantized.repr import format_qtensor

pytestmark = pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")


def _q(device="cpu"):
    x = gt.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 100.0, -100.0], device=device)
    return gt.quantize_per_tensor(x, 1.0, 3, gt.qint8)


def _qc(device="cpu"):
    return gt.quantize_per_channel(
        gt.arange(6.0, device=device).reshape(2, 3),
        gt.tensor([0.01, 0.1]),
        gt.tensor([0, 2]),
        0,
        gt.quint8,
    )


def test_metadata(device):
    q = _q(device)
    assert q.is_quantized and not gt.ones(1).is_quantized
    assert q.dtype is gt.qint8 and repr(q.dtype) == "gpu_tensor.qint8"
    assert q.qscheme() is gt.per_tensor_affine
    assert type(q.q_scale()) is float and q.q_scale() == 1.0
    assert type(q.q_zero_point()) is int and q.q_zero_point() == 3
    assert q.element_size() == 1 and q.device.type == device
    assert not q.dtype.is_floating_point and not q.is_floating_point()
    ir = q.int_repr()
    assert ir.dtype is gt.int8 and ir.data_ptr() != q.data_ptr()  # a copy, as in torch
    assert gt.quantize_per_tensor(gt.ones(2), 0.1, 0, gt.quint8).int_repr().dtype is gt.uint8
    q32 = gt.quantize_per_tensor(gt.ones(2), 0.1, 0, gt.qint32)
    assert q32.int_repr().dtype is gt.int32 and q32.element_size() == 4


def test_per_channel_getters(device):
    qc = _qc(device)
    assert qc.qscheme() is gt.per_channel_affine and qc.q_per_channel_axis() == 0
    s, z = qc.q_per_channel_scales(), qc.q_per_channel_zero_points()
    assert s.dtype is gt.float64 and z.dtype is gt.int64
    # float32 scales widened to float64, as torch returns them (recorded)
    assert s.tolist() == [0.009999999776482582, 0.10000000149011612] and z.tolist() == [0, 2]
    with pytest.raises(RuntimeError, match="qscheme\\(\\) == kPerTensorAffine"):
        qc.q_scale()
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        _q(device).q_per_channel_scales()
    fq = gt.quantize_per_channel(
        gt.ones(2), gt.tensor([0.1, 0.2]), gt.tensor([0.0, 1.0]), 0, gt.quint8
    )
    assert fq.qscheme() is gt.per_channel_affine_float_qparams


def test_views_keep_quantization(device):
    q = _q(device)
    for v in (
        q[2:5],
        q.view(2, 4),
        q.reshape(4, 2).t(),
        q.view(2, 4).transpose(0, 1),
        q.unsqueeze(0),
        q.narrow(0, 1, 2),
        q[3],
        q.view(2, 4).permute(1, 0),
        q.detach(),
        q.flatten(),
        q.expand(2, 8),
    ):
        assert v.is_quantized and v.q_scale() == 1.0 and v.q_zero_point() == 3
        assert v.data_ptr() >= q.data_ptr()
    np.testing.assert_array_equal(
        q.view(2, 4).t().int_repr().cpu().numpy(), q.int_repr().cpu().numpy().reshape(2, 4).T
    )
    assert q[2:5].storage_offset() == 2


def test_per_channel_views(device):
    qc = _qc(device)
    kept = qc[:, 1:]
    assert kept.qscheme() is gt.per_channel_affine and kept.q_per_channel_axis() == 0
    # torch: selecting or slicing channels gives per-tensor with that channel's parameters
    # (the scale as float32 stores it), recorded from torch 2.13
    row = qc[0]
    assert row.qscheme() is gt.per_tensor_affine
    assert (row.q_scale(), row.q_zero_point()) == (0.009999999776482582, 0)
    assert (qc[1:].q_scale(), qc[1:].q_zero_point()) == (0.10000000149011612, 2)
    q3 = gt.quantize_per_channel(
        gt.ones(2, 3, 4, device=device),
        gt.tensor([0.1, 0.2, 0.3]),
        gt.tensor([0, 1, 2]),
        1,
        gt.qint8,
    )
    assert q3[1].q_per_channel_axis() == 0 and q3[1].q_per_channel_zero_points().tolist() == [
        0,
        1,
        2,
    ]  # selecting an earlier dim moves the axis down
    # torch 2.13 gives axis 0 here too (it decrements the axis for a select of any dim,
    # leaving 3 scales along a dim of 2); gpu_tensor keeps the channels where they are
    assert q3[:, :, 2].q_per_channel_axis() == 1
    with pytest.raises(
        RuntimeError, match="Setting strides is possible only on uniformly quantized tensor"
    ):
        qc.t()
    with pytest.raises(
        RuntimeError, match="length of scales must equal to channel, expected 6 got, 2"
    ):
        qc.view(6)


def test_clone_contiguous_to_and_pickle(device):
    q = _q(device)
    c = q.clone()
    assert c.is_quantized and c.data_ptr() != q.data_ptr()
    assert c.int_repr().tolist() == q.int_repr().tolist()
    t = q.view(2, 4).t().contiguous()
    assert t.is_contiguous() and t.is_quantized
    moved = q.to("cpu")
    assert moved.device.type == "cpu" and moved.q_zero_point() == 3
    assert moved.int_repr().tolist() == q.int_repr().cpu().tolist()
    back = pickle.loads(pickle.dumps(q))
    assert back.device == q.device and back.q_scale() == 1.0
    assert back.int_repr().cpu().tolist() == q.int_repr().cpu().tolist()
    qc = pickle.loads(pickle.dumps(_qc(device)))
    assert qc.q_per_channel_zero_points().tolist() == [0, 2]


def test_repr_is_torchs():
    # torch 2.13's strings (recorded), rendered with torch's names
    assert format_qtensor(_q(), "torch") == (
        "tensor([   1.,    1.,    3.,   -1.,   -1.,   -3.,  100., -100.], size=(8,),\n"
        "       dtype=torch.qint8, quantization_scheme=torch.per_tensor_affine, scale=1.0,\n"
        "       zero_point=3)"
    )
    assert format_qtensor(_qc(), "torch") == (
        "tensor([[0., 1., 2.],\n        [3., 4., 5.]], size=(2, 3), dtype=torch.quint8,\n"
        "       quantization_scheme=torch.per_channel_affine,\n"
        "       scale=tensor([0.0100, 0.1000], dtype=torch.float64),\n"
        "       zero_point=tensor([0, 2]), axis=0)"
    )
    assert repr(_q()).startswith("tensor([   1.,") and "dtype=gpu_tensor.qint8" in repr(_q())


def test_errors_are_torchs():
    x = gt.tensor([0.5, 1.5])
    for dt, zp, word in (
        (gt.quint8, 256, "above upper"),
        (gt.quint8, -1, "below lower"),
        (gt.qint8, 128, "above upper"),
        (gt.qint8, -129, "below lower"),
    ):
        with pytest.raises(
            RuntimeError,
            match=f"quantize_tensor_per_tensor_affine zero_point {zp} is {word} bound.",
        ):
            gt.quantize_per_tensor(x, 0.1, zp, dt)
    for dt, name in (
        (gt.float64, "Double"),
        (gt.float16, "Half"),
        (gt.bfloat16, "BFloat16"),
        (gt.int32, "Int"),
    ):
        with pytest.raises(RuntimeError, match=f"Quantize only works on Float Tensor, got {name}"):
            gt.quantize_per_tensor(x.to(dt), 0.1, 0, gt.qint8)
    with pytest.raises(RuntimeError, match="ScalarType Char is not supported in new_qtensor"):
        gt.quantize_per_tensor(x, 0.1, 0, gt.int8)
    with pytest.raises(TypeError, match="zero_point"):
        gt.quantize_per_tensor(x, 0.1, 3.5, gt.quint8)
    q = gt.quantize_per_tensor(x, 0.1, 0, gt.qint8)
    with pytest.raises(
        RuntimeError,
        match="Creation of quantized tensor requires quantized dtype like torch.quint8",
    ):
        q.float()
    with pytest.raises(RuntimeError, match="Creation of quantized tensor requires"):
        q.to(gt.float32)
    with pytest.raises(
        NotImplementedError,
        match="Could not run 'aten::int_repr' with arguments from the 'CPU' backend",
    ):
        x.int_repr()
    assert x.dequantize() is x
    with pytest.raises(
        RuntimeError,
        match="Channel axis out of range in per channel affine "
        "quantization. Got: 1Expected: \\[0, 1\\)",
    ):
        gt.quantize_per_channel(x, gt.tensor([0.1, 0.2]), gt.tensor([0, 1]), 1, gt.quint8)
    with pytest.raises(
        RuntimeError,
        match="quantize_tensor_per_channel_affine zero_point 300 is above upper bound.",
    ):
        gt.quantize_per_channel(x, gt.tensor([0.1, 0.2]), gt.tensor([0, 300]), 0, gt.quint8)
    with pytest.raises(
        RuntimeError, match="length of scales must equal to channel, expected 2 got, 3"
    ):
        gt.quantize_per_channel(x, gt.tensor([0.1, 0.2, 0.3]), gt.tensor([0, 1, 2]), 0, gt.quint8)


def test_tensor_scale_list_form_and_helpers():
    x = gt.tensor([0.5, 1.5, -0.25])
    q = gt.quantize_per_tensor(x, gt.tensor(0.1), gt.tensor(3), gt.quint8)
    assert q.q_scale() == 0.10000000149011612  # torch reads the float32 tensor's value
    a, b = gt.quantize_per_tensor([x, x], gt.tensor([0.1, 0.2]), gt.tensor([1, 2]), gt.quint8)
    assert (a.q_zero_point(), b.q_zero_point()) == (1, 2)
    assert [d.tolist() for d in gt.dequantize([a, b])] == [
        a.dequantize().tolist(),
        b.dequantize().tolist(),
    ]
    m = gt._make_per_tensor_quantized_tensor(gt.tensor([1, 2], dtype=gt.int8), 0.5, 1)
    assert m.dtype is gt.qint8 and m.dequantize().tolist() == [0.0, 0.5]
    d = gt.quantize_per_tensor_dynamic(gt.tensor([-1.0, 0.5, 2.0]), gt.quint8, False)
    assert (d.q_scale(), d.q_zero_point()) == (0.011764705882352941, 85)  # torch's, recorded
    e = gt.quantize_per_tensor(gt.zeros(0), 0.1, 3, gt.quint8)
    assert e.shape == (0,) and e.is_quantized
