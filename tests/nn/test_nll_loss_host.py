"""nll_loss's short path on the cpu and emulated cuda (`nll_host.host_nll_loss`): the loss
and its gradient have the general path's bits, dtype and layout on the same inputs (the
general path forced by switching the short one off), one result each, and it leaves what
it does not handle (a bad target, create_graph, the profiler) to the general path."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.nn.functional import loss as loss_mod
from gpu_tensor.nn.functional import nll_host

# the logits include NaN and +-inf: numpy's warnings about them on the general path
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _case(device, dtype, n, c, seed, ignored):
    rng = np.random.default_rng(seed)
    xv = (rng.standard_normal((n, c)) * 5).astype(dtype)
    flat = xv.reshape(-1)
    for i, v in enumerate([-0.0, np.inf, -np.inf, np.nan, 0.0]):
        flat[i * 3 % flat.size :: 7 + i] = v
    tv = rng.integers(0, c, n)
    tv[ignored] = -100
    return gt.from_numpy(xv).to(device), gt.from_numpy(tv).to(device)


def _loss_and_grad(x, t, reduction, g):
    leaf = x.detach().requires_grad_()
    loss = F.nll_loss(leaf, t, reduction=reduction)
    name = loss.grad_fn.name()
    loss.backward(g)
    return loss.detach(), leaf.grad, name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize(
    ("n", "c", "ignored"),
    [
        (8, 10, [1]),
        (1, 3, []),
        (64, 7, [0, 5, 63]),
        (300, 2, slice(0, 300, 3)),
        (4, 5, [0, 1, 2, 3]),
    ],
)
def test_the_short_path_has_the_general_paths_bits(
    device, monkeypatch, dtype, reduction, n, c, ignored
):
    x, t = _case(device, dtype, n, c, n + c, ignored)
    g = gt.tensor(np.asarray(-1.5, dtype), device=device)
    fast = _loss_and_grad(x, t, reduction, g)
    monkeypatch.setattr(loss_mod, "host_nll_loss", lambda *a: None)
    slow = _loss_and_grad(x, t, reduction, g)
    assert fast[2] == slow[2] == "NllLossBackward0"
    for a, b in zip(fast[:2], slow[:2], strict=True):
        assert _bits(a).tobytes() == _bits(b).tobytes()
        assert a.dtype is b.dtype and a.shape == b.shape and a.stride() == b.stride()
        assert a.device == b.device


@pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device's allocator")
def test_the_loss_and_its_gradient_are_one_block_each():
    x, t = _case("cuda", np.float32, 8, 10, 0, [])
    leaf = x.requires_grad_()
    stats = gt.cuda.memory_stats
    before = stats(0)["allocation.all.allocated"]
    loss = F.nll_loss(leaf, t)
    assert stats(0)["allocation.all.allocated"] - before == 1
    g = gt.ones((), device="cuda")
    before = stats(0)["allocation.all.allocated"]
    loss.backward(g)
    assert stats(0)["allocation.all.allocated"] - before == 1


def test_what_the_short_path_leaves_to_the_general_one(device):
    x, t = _case(device, np.float32, 4, 3, 1, [])
    host = device == "cpu" or cuda_is_emulated()  # (the cuda backend: its kernels)
    assert (nll_host.host_nll_loss(x, t, -100, "mean") is not None) == host
    assert nll_host.host_nll_loss(x.half(), t, -100, "mean") is None
    assert nll_host.host_nll_loss(x, t.int(), -100, "mean") is None
    assert nll_host.host_nll_loss(x.unsqueeze(2), t.unsqueeze(1), -100, "mean") is None
    bad = t.clone()
    bad[2] = 3
    assert nll_host.host_nll_loss(x, bad, -100, "mean") is None
    # an ignore_index that is not a Python int (a Tensor, None, a list) is the general path's
    for index in (gt.tensor(2), None, [2], True):
        assert nll_host.host_nll_loss(x, t, index, "mean") is None
    index = int(t[0].item())
    general = F.nll_loss(x, t, ignore_index=index)
    by_tensor = F.nll_loss(x, t, ignore_index=gt.tensor(index))
    assert np.array_equal(by_tensor.cpu().numpy(), general.cpu().numpy(), equal_nan=True)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.nll_loss(x, bad)
    with gt.profiler.profile() as prof:
        F.nll_loss(x, t)
    assert "aten::gather" in [e.name for e in prof.events()]


def test_create_graph_runs_the_general_formula_with_history():
    rng = np.random.default_rng(2)
    x = gt.from_numpy(rng.standard_normal((5, 4))).requires_grad_()
    t = gt.tensor([1, 0, 3, -100, 2])
    loss = F.nll_loss(x.relu() * x, t)  # a gradient that depends on x again
    (gx,) = gt.autograd.grad(loss, x, create_graph=True)
    assert gx.grad_fn is not None
    (ggx,) = gt.autograd.grad(gx.sum(), x)
    xv, tv = x.detach().numpy(), t.numpy()
    keep = tv != -100
    d = np.zeros_like(xv)  # d(loss)/d(relu(x) * x): -1/kept at each kept target
    d[np.arange(5)[keep], tv[keep]] = -1.0 / keep.sum()
    np.testing.assert_allclose(gx.detach().numpy(), d * 2 * np.maximum(xv, 0))
    np.testing.assert_allclose(ggx.numpy(), d * 2 * (xv > 0))
