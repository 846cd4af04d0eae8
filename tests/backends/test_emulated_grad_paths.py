"""Two backward steps of every Linear+ReLU layer take short paths on emulated cuda: relu's
gradient (`_dispatch.host_relu_grad`) and a bias's gradient sum (`sum_keepdims`, from
autograd's sum_to). Each must give the bits, dtype, layout and allocator accounting of
the general path it replaces (`where(out <= 0, 0.0, g)`, torch's threshold_backward;
`g.sum(dims, keepdim=True)` then reshape), on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd import engine
from gpu_tensor.cuda import memory as cmem
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.memory import registry, verify
from gpu_tensor.ops import _dispatch

pytestmark = pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")


def _values(shape, dtype, seed):
    """Random values with exact zeros, negatives, a NaN and -0.0 mixed in."""
    rng = np.random.default_rng(seed)
    a = np.asarray(rng.standard_normal(shape)).astype(dtype)
    flat = a.reshape(-1)
    if flat.size < 3:
        return a
    flat[::5] = 0.0
    flat[1::7] = -0.0
    flat[2] = np.nan
    return a


def _in_allocator(t):
    """t's bytes lie inside a live block of the emulated allocator."""
    ptr = t.data_ptr()
    return any(b.ptr <= ptr < b.ptr + b.size for b in registry.find(0).allocated_blocks())


def _allocated_after(fn):
    before = cmem.memory_stats(0)["allocation.all.allocated"]
    r = fn()
    return r, cmem.memory_stats(0)["allocation.all.allocated"] - before


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 32), (3, 5, 7), (), (0, 4)])
def test_relu_grad_short_path_equals_the_two_ops(dtype, shape):
    out = gt.from_numpy(np.asarray(np.maximum(_values(shape, dtype, 1), 0))).to("cuda")
    g = gt.from_numpy(_values(shape, dtype, 2)).to("cuda")
    with gt.no_grad():  # as in backward (without create_graph)
        assert _dispatch.host_relu_grad_fits(g, out)
        fast, n_fast = _allocated_after(lambda: _dispatch.host_relu_grad(g, out))
        slow, n_slow = _allocated_after(lambda: gt.where(out <= 0, 0.0, g))
    assert fast.dtype is slow.dtype is g.dtype and fast.device == slow.device
    assert fast.shape == slow.shape and fast.stride() == slow.stride()
    a, b = fast.cpu().numpy(), slow.cpu().numpy()
    assert a.tobytes() == b.tobytes()
    # the two ops make a mask and the result; the short path makes the result alone (its
    # mask is a host temporary), as torch's threshold_backward allocates no mask
    assert (n_fast, n_slow) == (1, 2)
    assert not fast.numel() or _in_allocator(fast)
    verify.check(registry.find(0))


@pytest.mark.parametrize(
    ("rows", "transposed"),
    [
        (1025, False),  # over PIECE elements: the two ops' piece-sized host temporaries
        (3, True),  # strided: the layout `where` gives, through the two ops
    ],
)
def test_relu_grad_keeps_the_two_ops_for_large_or_strided_operands(rows, transposed):
    def make(seed):
        a = _values((64, rows) if transposed else (rows, 64), np.float32, seed)
        t = gt.from_numpy(np.maximum(a, 0) if seed == 5 else a).to("cuda")
        return t.t() if transposed else t

    out, g = make(5), make(6)
    with gt.no_grad():
        assert _dispatch.host_relu_grad_fits(g, out)
        fast, n_fast = _allocated_after(lambda: _dispatch.host_relu_grad(g, out))
        slow, n_slow = _allocated_after(lambda: gt.where(out <= 0, 0.0, g))
    assert fast.stride() == slow.stride()
    assert fast.cpu().numpy().tobytes() == slow.cpu().numpy().tobytes()
    assert n_fast == n_slow == 2
    verify.check(registry.find(0))


def test_relu_grad_short_path_refuses_what_the_two_ops_must_handle():
    out = gt.ones(4, 3, device="cuda")
    g = gt.ones(4, 3, device="cuda")
    with gt.no_grad():
        assert _dispatch.host_relu_grad_fits(g, out)
        assert not _dispatch.host_relu_grad_fits(g.half(), out.half())  # no zero row for it
        assert not _dispatch.host_relu_grad_fits(g[:1], out)  # broadcasting
        assert not _dispatch.host_relu_grad_fits(g.double(), out)  # promotion
        assert not _dispatch.host_relu_grad_fits(g.cpu(), out.cpu())  # the cpu's own path
    with gt.enable_grad():  # create_graph: the ops must record
        assert not _dispatch.host_relu_grad_fits(g, out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("gshape", "shape", "transpose"),
    [
        ((8, 32), (32,), False),
        ((8, 32), (1, 32), False),
        ((6, 4, 5), (4, 1), True),
        ((7, 3), (7, 3), False),
        ((2, 9, 4), (9, 4), True),
        ((0, 4), (4,), False),
    ],
)
def test_sum_to_short_path_equals_sum_and_reshape(dtype, gshape, shape, transpose):
    a = _values(gshape, dtype, 3)
    g = gt.from_numpy(a).to("cuda")
    if transpose:  # a non-contiguous gradient: the result's layout is numpy's
        g = gt.from_numpy(np.ascontiguousarray(a.swapaxes(0, -1))).to("cuda").transpose(0, -1)
    with gt.no_grad():
        fast, n_fast = _allocated_after(lambda: engine.sum_to(g, shape))
        lead = len(gshape) - len(shape)
        dims = list(range(lead)) + [
            lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1
        ]
        slow, n_slow = _allocated_after(
            lambda: g.sum(dim=dims, keepdim=True).reshape(shape) if dims else g
        )
    assert tuple(fast.shape) == tuple(shape) and fast.dtype is slow.dtype
    assert fast.stride() == slow.stride()
    assert fast.cpu().numpy().tobytes() == slow.cpu().numpy().tobytes()
    assert n_fast == n_slow
    assert not fast.numel() or _in_allocator(fast)
    verify.check(registry.find(0))


def test_a_relu_layer_backward_takes_both_short_paths_with_the_cpu_bits(monkeypatch):
    calls = {"relu": 0, "sum": 0}
    relu_grad, backend = _dispatch.host_relu_grad, gt.empty(1, device="cuda")._backend
    sum_keepdims = type(backend).sum_keepdims

    def counted_relu(g, out):
        calls["relu"] += 1
        return relu_grad(g, out)

    def counted_sum(self, array, axes):
        calls["sum"] += 1
        return sum_keepdims(self, array, axes)

    monkeypatch.setattr(_dispatch, "host_relu_grad", counted_relu)
    monkeypatch.setattr(type(backend), "sum_keepdims", counted_sum)
    grads = {}
    for dev in ("cpu", "cuda"):
        gt.manual_seed(0)
        layer = gt.nn.Linear(16, 8).to(dev)
        x = gt.from_numpy(_values((4, 16), np.float32, 4)).to(dev)
        gt.nn.functional.relu(layer(x)).pow(2).sum().backward()
        grads[dev] = [p.grad.cpu().numpy().tobytes() for p in layer.parameters()]
    assert calls == {"relu": 1, "sum": 1}
    assert grads["cpu"] == grads["cuda"]
