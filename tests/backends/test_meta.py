"""device='meta' (backends/meta.py, backends/meta_array.py): shape, dtype and strides with
no storage; ops propagate shapes without computing values, at any size; reading values
is refused with torch's errors. Expected shapes and strides are torch's (checked by hand
against torch 2.13; test_meta_torch.py compares with torch where it is installed)."""

from __future__ import annotations

import io
import time
import tracemalloc

import pytest

import gpu_tensor as gt
import gpu_tensor.nn as nn
import gpu_tensor.nn.functional as F


def test_creation_gives_metadata_and_no_storage():
    t = gt.ones(2, 3, device="meta")
    assert t.device == gt.device("meta") and str(t.device) == "meta" and t.is_meta
    assert t.shape == (2, 3) and t.stride() == (3, 1) and t.dtype is gt.float32
    assert not gt.ones(2).is_meta
    assert gt.arange(10, device="meta").dtype is gt.int64
    assert gt.full((2,), 7, device="meta").dtype is gt.int64
    assert gt.empty_strided((2, 3), (1, 2), device="meta").stride() == (1, 2)
    assert gt.randn(4, 5, device="meta").shape == (4, 5)
    assert gt.zeros_like(t).is_meta and t.new_zeros(3).is_meta
    with gt.device("meta"):
        assert gt.rand(3).is_meta
    assert t.untyped_storage().nbytes() == 24


def test_repr_is_torchs():
    assert repr(gt.ones(2, 3, device="meta")) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(gt.ones(2, device="meta", dtype=gt.int64)) == (
        "tensor(..., device='meta', size=(2,), dtype=gpu_tensor.int64)"
    )
    assert repr(gt.tensor(1.0, device="meta")) == "tensor(..., device='meta', size=())"
    assert repr(gt.ones(2, device="meta").requires_grad_()) == (
        "tensor(..., device='meta', size=(2,), requires_grad=True)"
    )


def test_views_keep_numpys_exact_strides_and_offsets():
    x = gt.empty(4, 6, device="meta")
    assert x.t().stride() == (1, 6) and x[1:, 2:].storage_offset() == 8
    assert x[1:, 2:].stride() == (6, 1) and x[:, ::2].stride() == (6, 2)
    assert x.unsqueeze(1).stride() == (6, 6, 1) and x.expand(3, 4, 6).stride() == (0, 6, 1)
    assert x.view(24).shape == (24,) and x.t().reshape(24).stride() == (1,)
    assert x.as_strided((2, 2), (1, 2), 1).storage_offset() == 1
    assert x.permute(1, 0).contiguous().stride() == (4, 1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(24)


def test_elementwise_broadcasts_and_promotes():
    a, b = gt.empty(2, 1, 3, device="meta"), gt.empty(4, 1, device="meta")
    assert (a + b).shape == (2, 4, 3)
    assert (gt.empty(3, device="meta", dtype=gt.int64) + 2.5).dtype is gt.float32
    assert (a > 0).dtype is gt.bool and a.exp().log().shape == (2, 1, 3)
    assert gt.where(a > 0, a, 0.0).shape == (2, 1, 3) and a.clamp(0, 1).shape == (2, 1, 3)
    with pytest.raises(RuntimeError):
        gt.empty(2, 3, device="meta") + gt.empty(4, device="meta")


def test_matmul_reductions_joins_and_indexing():
    x = gt.empty(4, 8, device="meta")
    assert (x @ gt.empty(8, 3, device="meta")).shape == (4, 3)
    assert (gt.empty(5, 4, 8, device="meta") @ gt.empty(8, device="meta")).shape == (5, 4)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        x @ gt.empty(3, device="meta")
    assert x.sum().shape == () and x.sum(1, keepdim=True).shape == (4, 1)
    assert x.mean(0).shape == (8,) and x.var(0).shape == (8,)
    values, indices = x.max(1)
    assert values.shape == (4,) and indices.dtype is gt.int64
    assert x.argmax(0).shape == (8,) and x.cumsum(0).shape == (4, 8)
    assert gt.cat([x, x], 1).shape == (4, 16) and gt.stack([x, x]).shape == (2, 4, 8)
    assert x[[0, 2]].shape == (2, 8) and F.softmax(x, -1).shape == (4, 8)
    assert x.sort(0)[0].shape == (4, 8) and x.topk(2)[1].shape == (4, 2)


def test_layers_propagate_shapes():
    lin = nn.Linear(3, 5, device="meta")
    assert lin.weight.is_meta and lin.weight.shape == (5, 3) and lin.weight.requires_grad
    assert lin(gt.empty(2, 3, device="meta")).shape == (2, 5)
    with gt.device("meta"):
        net = nn.Sequential(
            nn.Conv2d(3, 6, 5),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 16, 5),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 10),
        )
        inp = gt.randn(1024, 3, 32, 32)
    shapes = []
    for m in net:
        m.register_forward_hook(lambda mod, i, o: shapes.append(tuple(o.shape)))
    assert net(inp).shape == (1024, 10)
    assert shapes[:3] == [(1024, 6, 28, 28), (1024, 6, 28, 28), (1024, 6, 14, 14)]


def test_a_huge_forward_costs_no_memory():
    """The shapes recipe: a conv over 2**10 x 3 x 2**16 x 2**16 (13e12 elements)."""
    conv = nn.Conv2d(3, 5, 2, device="meta")
    big = gt.rand(2**10, 3, 2**16, 2**16, device="meta")
    tracemalloc.start()
    t0 = time.perf_counter()
    out = conv(big)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert out.shape == (1024, 5, 65535, 65535) and elapsed < 5
    assert peak < 4 << 20  # bytes: nothing of the tensors' size


def test_autograd_gives_meta_gradients():
    w = gt.randn(4, 8, device="meta", requires_grad=True)
    (w * 2).sum().backward()
    assert w.grad.is_meta and w.grad.shape == (4, 8)


def test_reading_values_raises_torchs_errors():
    t = gt.ones(2, 3, device="meta")
    for read in (t.cpu, t.tolist, lambda: t.to("cpu"), lambda: gt.ones(2, 3).copy_(t)):
        with pytest.raises(NotImplementedError, match=r"Cannot copy out of meta tensor; no data!"):
            read()
    for read in (lambda: t[0, 0].item(), lambda: float(t[0, 0]), lambda: bool(t[0, 0])):
        with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta"):
            read()
    with pytest.raises(TypeError, match="numpy"):
        t.numpy()
    with pytest.raises(NotImplementedError, match="depends on the data"):
        gt.nonzero(t)
    with pytest.raises(NotImplementedError, match="depends on the data"):
        t[t > 0]


def test_moving_onto_meta_and_copying_into_it():
    src = gt.arange(6.0).reshape(2, 3)
    assert src.t().to("meta").stride() == (1, 3)  # dense layouts keep their strides
    assert src[:, ::2].to("meta").stride() == (2, 1)
    dst = gt.empty(2, 3, device="meta")
    assert dst.copy_(src) is dst
    with pytest.raises(RuntimeError):
        dst.copy_(gt.ones(4))


def test_meta_tensors_save_and_load_as_shapes():
    buf = io.BytesIO()
    gt.save({"m": gt.ones(2, 3, device="meta").t(), "c": gt.arange(6.0).reshape(2, 3)[:, 1:]}, buf)
    buf.seek(0)
    back = gt.load(buf)
    assert back["m"].is_meta and back["m"].stride() == (1, 3)
    buf.seek(0)
    shapes = gt.load(buf, map_location="meta")
    assert shapes["c"].is_meta and shapes["c"].stride() == (3, 1)
    assert shapes["c"].storage_offset() == 1


def test_the_device_string_is_checked():
    with pytest.raises(RuntimeError, match="'meta'"):
        gt.device("meta:0")
