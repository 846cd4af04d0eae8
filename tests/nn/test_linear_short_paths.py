"""F.linear's two short paths on the cpu and emulated cuda. (1) With a bias it makes one
result: the bias is added into the product's own memory (`_dispatch.host_bias_add`), as
torch's addmm writes one output; each element is numpy's same add, so the bits are those of
`x.matmul(w.t()) + b` as two ops, on every device, and what users see (version, strides,
grad_fn, the profiler's ops, the launches on the cuda backend) does not change. (2) Its
products, forward and backward (`basic._mm`), call numpy's matmul as linalg does, without
matmul's dispatch: the same bits, layout and allocations as `a.matmul(b)`."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.nn.functional import basic
from gpu_tensor.ops import _dispatch
from gpu_tensor.testing import requires_real_cuda

F = gt.nn.functional
# the values include NaN and +-inf: numpy's warnings about them on the reference paths
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _values(shape, dtype, seed):
    """Random values with -0.0, +-inf and NaNs of two payloads mixed in."""
    rng = np.random.default_rng(seed)
    a = np.asarray(rng.standard_normal(shape)).astype(dtype)
    flat = a.reshape(-1)
    specials = [-0.0, np.inf, -np.inf, np.nan, -np.nan, 0.0]
    for i, v in enumerate(specials):
        flat[i * 7 % max(flat.size, 1) :: 11 + i] = v
    return a


def _allocated(device, fn):
    """fn()'s result and how many blocks the device's allocator gave out meanwhile."""
    if device == "cpu":
        return fn(), 0
    before = gt.cuda.memory_stats(0)["allocation.all.allocated"]
    r = fn()
    return r, gt.cuda.memory_stats(0)["allocation.all.allocated"] - before


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("batch", "fan_in", "fan_out", "bias_shape"),
    [
        (8, 32, 32, None),
        (1, 3, 1, None),
        (5, 1, 7, None),
        (0, 4, 3, None),
        (6, 5, 4, (6, 4)),  # a bias of the output's own shape
        (6, 5, 4, (1, 4)),  # broadcast over rows: the general add
        (3, 2, 4, ()),  # a 0-dim bias: the general add
    ],
)
@pytest.mark.parametrize("grad", [False, True])
def test_linear_has_the_bits_and_looks_of_matmul_then_add(
    device, dtype, batch, fan_in, fan_out, bias_shape, grad
):
    shape = (fan_out,) if bias_shape is None else bias_shape
    x = gt.tensor(_values((batch, fan_in), dtype, 1), device=device)
    w = gt.tensor(_values((fan_out, fan_in), dtype, 2), device=device, requires_grad=grad)
    b = gt.tensor(_values(shape, dtype, 3), device=device, requires_grad=grad)
    out = F.linear(x, w, b)
    with gt.no_grad():
        two_ops = x.matmul(w.t()) + b
    assert _bits(out).tobytes() == _bits(two_ops).tobytes()
    assert out.shape == two_ops.shape and out.stride() == two_ops.stride()
    assert out.dtype is two_ops.dtype and out._version == 0  # torch's addmm output: 0
    assert (out.grad_fn.name() if grad else out.grad_fn) == ("AddmmBackward0" if grad else None)


def test_a_3d_input_keeps_its_view_and_the_cpu_bits():
    x = _values((2, 3, 5), np.float32, 4)
    w, b = _values((4, 5), np.float32, 5), _values((4,), np.float32, 6)
    outs = {}
    for dev in gt.testing.devices():
        out = F.linear(*(gt.tensor(a, device=dev) for a in (x, w, b)))
        assert out.shape == (2, 3, 4) and out._version == 0
        outs[dev] = _bits(out).tobytes()
    assert outs["cpu"] == np.add(np.matmul(x.reshape(6, 5), w.T), b).reshape(2, 3, 4).tobytes()
    assert len(set(outs.values())) == 1


@pytest.mark.skipif(not dv.cuda_is_emulated(), reason="the emulated cuda device's allocator")
@pytest.mark.parametrize("grad", [False, True])
def test_linear_allocates_one_block_on_emulated_cuda(grad):
    layer = gt.nn.Linear(16, 8).to("cuda").requires_grad_(grad)
    x = gt.randn(4, 16, device="cuda")
    out, n = _allocated("cuda", lambda: layer(x))
    assert n == 1  # torch's addmm: one output too
    assert out.grad_fn is None or out.grad_fn.name() == "AddmmBackward0"


def test_the_in_place_add_refuses_what_the_general_add_must_handle():
    out = gt.ones(4, 3)
    assert not _dispatch.host_bias_add(gt.ones(4, 3).half(), gt.ones(3).half())  # no row
    assert not _dispatch.host_bias_add(out, gt.ones(3).double())  # promotion
    assert not _dispatch.host_bias_add(out, gt.ones(1, 3))  # broadcasting over rows
    assert not _dispatch.host_bias_add(out, gt.ones(4, 3, 1))  # a wider result
    with gt.enable_grad():  # something records: the add must be recorded
        assert not _dispatch.host_bias_add(out, gt.ones(3, requires_grad=True))
    assert out.eq(1).all()  # nothing was written
    assert _dispatch.host_bias_add(out, gt.ones(3)) and out.eq(2).all()


def test_the_profiler_still_sees_the_add():
    x, w, b = gt.randn(2, 3), gt.randn(4, 3), gt.randn(4)
    with gt.profiler.profile() as prof:
        F.linear(x, w, b)
    names = [e.name for e in prof.events()]
    assert "aten::matmul" in names and "aten::add" in names


@requires_real_cuda
def test_linear_launches_no_more_than_matmul_then_add():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy")
    from gpu_tensor.testing import sim

    x, w, b = (gt.randn(*s, device="cuda") for s in ((8, 16), (4, 16), (4,)))

    def launches(fn):
        fn()  # warm: compiles and allocator growth stay out of the count
        sim.reset_counters()
        fn()
        return sim.counters()["kernel_launches"]

    assert launches(lambda: F.linear(x, w, b)) <= launches(lambda: x.matmul(w.t()) + b)


def _operand(rows, cols, dtype, seed, transposed, device):
    a = _values((cols, rows) if transposed else (rows, cols), dtype, seed)
    t = gt.tensor(a, device=device)
    return t.t() if transposed else t


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "k", "n"), [(8, 32, 32), (1, 3, 1), (64, 784, 16), (5, 1, 7)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_the_short_product_is_matmuls(device, dtype, m, k, n, ta, tb):
    a = _operand(m, k, dtype, 7, ta, device)
    b = _operand(k, n, dtype, 8, tb, device)
    fast, n_fast = _allocated(device, lambda: basic._mm(a, b))
    slow, n_slow = _allocated(device, lambda: a.matmul(b))
    assert _bits(fast).tobytes() == _bits(slow).tobytes()
    assert fast.stride() == slow.stride() and fast.dtype is slow.dtype
    assert fast.device == slow.device and n_fast == n_slow
    assert fast.grad_fn is None and fast._version == 0


def test_the_short_product_leaves_the_rest_to_matmul():
    a, b = gt.randn(3, 4), gt.randn(4, 2)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):  # matmul's error
        basic._mm(a, a)
    assert basic._mm(a.half(), b.half()).dtype is gt.float16  # computed in float32
    assert basic._mm(gt.ones(3, 0), gt.ones(0, 2)).eq(0).all()
    leaf = gt.randn(4, 2, requires_grad=True)
    assert basic._mm(a, leaf).grad_fn.name() == "MmBackward0"  # it records
    with gt.profiler.profile() as prof:
        basic._mm(a, b)
    assert "aten::matmul" in [e.name for e in prof.events()]


def test_a_subclass_keeps_its_own_add_and_matmul():
    calls = []

    class Traced(gt.nn.Parameter):
        def __radd__(self, other):
            calls.append("radd")
            return gt.Tensor.__radd__(self, other)

        def matmul(self, other):
            calls.append("matmul")
            return gt.Tensor.matmul(self, other)

    def traced(t):
        return Traced(t, requires_grad=False)

    x, w = gt.randn(2, 3), gt.randn(4, 3)
    assert not _dispatch.host_bias_add(gt.zeros(2, 4), traced(gt.randn(4)))
    F.linear(x, w, traced(gt.randn(4)))
    assert calls == ["radd"]
    F.linear(traced(x), w, gt.randn(4))  # (as before: the subclass input's matmul, then add)
    assert calls == ["radd", "matmul"]
    assert _dispatch.host_bias_add(gt.zeros(2, 4), gt.nn.Parameter(gt.randn(4), False))
