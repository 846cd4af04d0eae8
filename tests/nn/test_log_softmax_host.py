"""F.log_softmax's short path on the cpu and emulated cuda (`softmax_host.host_log_softmax`):
the output and its gradient have the general path's bits, dtype, layout and node
(gt.log_softmax, the ops' composition, on the same inputs), one result each; an output written
in place and create_graph re-run the composed forward as the general node does; what it does
not handle goes to the general path."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.nn.functional import softmax_host

# the logits include NaN and +-inf: numpy's warnings about them on the general path
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _case(device, dtype, n, c, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * 20).astype(dtype)
    flat = x.reshape(-1)
    for i, v in enumerate([-0.0, -np.inf, np.inf, np.nan, 0.0]):
        flat[i * 5 % flat.size :: 13 + i] = v
    if n > 2:
        x[2, :] = 1.5  # a row of ties
    g = (rng.standard_normal((n, c)) * 3).astype(dtype)
    g.reshape(-1)[::9] = -0.0
    return gt.from_numpy(x).to(device), gt.from_numpy(g).to(device)


def _run(fn, x, g, dim):
    leaf = x.clone().requires_grad_()
    y = fn(leaf, dim)
    name = y.grad_fn.name()
    y.backward(g)
    return y.detach(), leaf.grad, name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("n", "c"), [(8, 10), (1, 1), (64, 7), (3, 200)])
@pytest.mark.parametrize("dim", [1, -1])
def test_the_short_path_has_the_general_paths_bits(device, dtype, n, c, dim):
    x, g = _case(device, dtype, n, c, n * c)
    fast = _run(F.log_softmax, x, g, dim)
    slow = _run(gt.log_softmax, x, g, dim)
    assert fast[2] == slow[2] == "LogSoftmaxBackward0"
    for a, b in zip(fast[:2], slow[:2], strict=True):
        assert _bits(a).tobytes() == _bits(b).tobytes()
        assert a.dtype is b.dtype and a.stride() == b.stride() and a.device == b.device
    with gt.no_grad():  # nothing recording: the plain result
        assert _bits(F.log_softmax(x, dim)).tobytes() == _bits(slow[0]).tobytes()


def test_an_output_written_in_place_and_create_graph_are_the_general_nodes(device):
    x, g = _case(device, np.float64, 5, 7, 1)
    x = x.nan_to_num(posinf=50.0, neginf=-50.0)
    grads = []
    for fn in (F.log_softmax, gt.log_softmax):
        leaf = x.clone().requires_grad_()
        y = fn(leaf, 1)
        y.mul_(2.0)  # the saved output now holds 2y: the gradient is still that of y
        y.backward(g)
        leaf2 = x.clone().requires_grad_()
        (gx,) = gt.autograd.grad(fn(leaf2, 1), leaf2, g, create_graph=True)
        (ggx,) = gt.autograd.grad(gx.pow(2).sum(), leaf2)
        grads.append([leaf.grad, gx, ggx])
    for a, b in zip(*grads, strict=True):
        assert _bits(a).tobytes() == _bits(b).tobytes()


@pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device's allocator")
def test_the_output_and_its_gradient_are_one_block_each():
    x, g = _case("cuda", np.float32, 8, 10, 0)
    leaf = x.requires_grad_()
    stats = gt.cuda.memory_stats
    before = stats(0)["allocation.all.allocated"]
    y = F.log_softmax(leaf, 1)
    assert stats(0)["allocation.all.allocated"] - before == 1
    before = stats(0)["allocation.all.allocated"]
    y.backward(g)
    assert stats(0)["allocation.all.allocated"] - before == 1


def test_what_the_short_path_leaves_to_the_general_one(device):
    x, _ = _case(device, np.float32, 4, 3, 2)
    host = device == "cpu" or cuda_is_emulated()  # (the cuda backend: its kernels)
    assert (softmax_host.host_log_softmax(x, 1) is not None) == host
    assert softmax_host.host_log_softmax(x, 0) is None  # over the batch
    for dim in (
        True,
        1.0,
        -1.0,
    ):  # equal to 1 or -1, but refused by the general path (torch's TypeError)
        assert softmax_host.host_log_softmax(x, dim) is None
        with pytest.raises(TypeError):
            F.log_softmax(x, dim)
    assert softmax_host.host_log_softmax(x.t(), 1) is None  # strided
    assert softmax_host.host_log_softmax(x.half(), 1) is None
    assert softmax_host.host_log_softmax(x.unsqueeze(0), 1) is None
    assert F.log_softmax(x, 1, dtype=gt.float64).dtype is gt.float64  # the general path's cast
    with gt.profiler.profile() as prof:
        F.log_softmax(x, 1)
    assert "aten::exp" in [e.name for e in prof.events()]
