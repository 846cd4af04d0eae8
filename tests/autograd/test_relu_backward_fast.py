"""ReluBackward0 on cpu makes the dispatcher's numpy calls itself (out <= 0 inverted, then
the op table's where) when nothing records or watches the ops: the same bits and strides as the
dispatched ops, in every layout; under the profiler or create_graph the ops are dispatched
as before."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


def _bits(t):
    a = t.detach().cpu().numpy()
    return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _values(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan]
    return a


_LAYOUTS = {
    "contiguous": lambda a: gt.from_numpy(a),
    "transposed": lambda a: gt.from_numpy(np.ascontiguousarray(a.T)).t(),
    "strided": lambda a: gt.from_numpy(np.repeat(a, 2, axis=1))[:, ::2],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("g_layout", sorted(_LAYOUTS))
@pytest.mark.parametrize("x_layout", sorted(_LAYOUTS))
@pytest.mark.parametrize("shape", [(8, 32), (64, 96)])  # under and over where's select size
def test_the_gradient_is_the_dispatched_where(shape, x_layout, g_layout, dtype):
    x = _LAYOUTS[x_layout](_values(shape, dtype, 1)).requires_grad_()
    g = _LAYOUTS[g_layout](_values(shape, dtype, 2))
    h = x * 1.0  # a non-leaf: its hook sees the node's own result, before any .grad copy
    seen = []
    h.register_hook(seen.append)
    out = gt.nn.functional.relu(h)
    out.backward(g)
    with gt.no_grad():  # the ops the rule names, dispatched
        ref = gt.where(out <= 0, 0.0, g)  # threshold_backward: g where out is NaN
    assert seen[0].stride() == ref.stride() and seen[0].dtype == ref.dtype
    np.testing.assert_array_equal(_bits(seen[0]), _bits(ref))


def test_the_profiler_still_sees_the_backward_ops():
    x = gt.randn(4, 5, requires_grad=True)
    with gt.profiler.profile() as prof:
        gt.nn.functional.relu(x * 1.0).sum().backward()
    names = {e.name for e in prof.events()}
    assert {"aten::le", "aten::where"} <= names


def test_double_backward_through_relu_records_the_ops():
    x = gt.tensor([-1.0, 2.0, 3.0], dtype=gt.float64, requires_grad=True)
    (gx,) = gt.autograd.grad((gt.nn.functional.relu(x) ** 2).sum(), x, create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy(), [0.0, 4.0, 6.0])
    gx.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 2.0])


def test_emulated_cuda_takes_the_dispatched_ops(device):
    x = gt.tensor([[-1.0, 2.0], [0.5, -3.0]], device=device, requires_grad=True)
    gt.nn.functional.relu(x * 2.0).backward(gt.ones(2, 2, device=device))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0.0, 2.0], [2.0, 0.0]])
