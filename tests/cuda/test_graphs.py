"""gt.cuda.CUDAGraph / graph / graph_pool_handle / is_current_stream_capturing: a captured
training step replays bit for bit like the eager one, in one launch (simulated CuPy) or as
recorded Python (emulated device); capture safety and the graph's private pool."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F
from gpu_tensor import device as _device
from gpu_tensor import nn
from gpu_tensor.testing import python_calls

pytestmark = pytest.mark.sim  # both tiers: emulated cuda here, simulated cuda under -m sim

SIM = _device.cuda_is_simulated()
needs_sim = pytest.mark.skipif(
    not SIM,
    reason="stream capture exists on real and simulated "
    "CUDA (the sim tier runs this); emulated cuda records Python",
)


def _mlp():
    gt.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(32, 64),
        nn.ReLU(),
        nn.Linear(64, 64),
        nn.ReLU(),
        nn.Linear(64, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    ).to("cuda")
    return model, gt.optim.Adam(model.parameters(), lr=1e-2, capturable=True)


def _step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    opt.step()


def test_graphed_training_step_matches_eager_bit_for_bit():
    gt.manual_seed(1)
    xs = [gt.randn(16, 32, device="cuda") for _ in range(11)]
    ys = [gt.randint(0, 10, (16,), device="cuda") for _ in range(11)]
    eager, eager_opt = _mlp()
    for x, y in zip(xs, ys, strict=True):
        _step(eager, eager_opt, x, y)

    model, opt = _mlp()
    _step(model, opt, xs[0], ys[0])  # warm-up: kernels compiled, optimizer state made
    static_x, static_y = xs[0].clone(), ys[0].clone()
    opt.zero_grad(set_to_none=True)  # the capture makes the .grad tensors (torch's recipe)
    g = gt.cuda.CUDAGraph()
    with gt.cuda.graph(g):
        assert gt.cuda.is_current_stream_capturing()
        static_loss = F.cross_entropy(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    assert not gt.cuda.is_current_stream_capturing()
    if SIM:
        from gpu_tensor.testing import sim
    losses = []
    for i in range(1, 11):
        static_x.copy_(xs[i])
        static_y.copy_(ys[i])
        if SIM:
            sim.reset_counters()
        calls = python_calls(g.replay)
        if SIM:
            c = sim.counters()
            assert c["graph_launches"] == 1 and c["kernel_launches"] == 0
            assert c["cupy_routines"] == 0 and c["device_syncs"] == 0
            assert calls <= 10, calls
        losses.append(float(static_loss))
    for a, b in zip(eager.parameters(), model.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    assert losses[0] != losses[-1]  # the static loss is refreshed by every replay


@needs_sim
@pytest.mark.parametrize("what", ["item", "cpu", "pageable", "synchronize", "compile"])
def test_capture_safety_errors_name_capture_and_leave_things_usable(what):
    x = gt.ones(8, device="cuda")
    (x * 2).sum()  # warm
    g = gt.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capture") as err:
        with gt.cuda.graph(g):
            y = x * 2
            if what == "item":
                y.sum().item()
            elif what == "cpu":
                y.cpu()
            elif what == "pageable":
                gt.tensor([1.0, 2.0], device="cuda")
            elif what == "synchronize":
                gt.cuda.synchronize()
            else:
                # a kernel never run before (a fresh fused function): it would compile now
                gt.fuse(lambda a: a * 3.0625 + 0.4375)(y)
    assert "warm" in str(err.value).lower()
    assert not gt.cuda.is_current_stream_capturing()
    z = x + 1  # eager work and a new capture both work afterwards
    assert z.cpu().tolist() == [2.0] * 8
    g2 = gt.cuda.CUDAGraph()
    with gt.cuda.graph(g2):
        w = x * 3
    g2.replay()
    assert w.cpu().tolist() == [3.0] * 8


@needs_sim
def test_private_pool_survives_empty_cache_and_is_shareable():
    x = gt.ones(1024, device="cuda")
    (x * 2).sum()
    ((x + 1) * 3).sum()  # warm every op the captures below run (a capture cannot compile)
    g = gt.cuda.CUDAGraph()
    with gt.cuda.graph(g):
        out = x * 2
    pools = {s["segment_pool_id"] for s in gt.cuda.memory_snapshot()}
    assert g.pool() in pools and g.pool()[1] == 0
    gt.cuda.empty_cache()
    assert g.pool() in {s["segment_pool_id"] for s in gt.cuda.memory_snapshot()}
    handle = gt.cuda.graph_pool_handle()
    assert handle[0] == 0
    g1, g2 = gt.cuda.CUDAGraph(), gt.cuda.CUDAGraph()
    with gt.cuda.graph(g1, pool=handle):
        a = x + 1
    with gt.cuda.graph(g2, pool=handle):
        b = a * 3
    assert g1.pool() == g2.pool() == handle
    g1.replay()
    g2.replay()
    assert b.cpu().tolist()[:2] == [6.0, 6.0]
    own = g.pool()
    del out  # the static output goes back to the graph's pool, still not to eager code
    g.reset()
    gt.cuda.empty_cache()  # no graph uses it now: its memory goes back
    assert own not in {s["segment_pool_id"] for s in gt.cuda.memory_snapshot()}
    with pytest.raises(RuntimeError, match="pool"):
        g.pool()


def test_graph_api_errors():
    g = gt.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capture one first"):
        g.replay()
    with pytest.raises(RuntimeError, match="pool"):
        g.pool()


def test_make_graphed_callables_module_and_function_with_autograd():
    def net():
        gt.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("cuda")

    graphed, ref = net(), net()
    graphed = gt.cuda.make_graphed_callables(
        graphed, (gt.randn(5, 8, device="cuda", requires_grad=True),)
    )
    square_sum = gt.cuda.make_graphed_callables(
        lambda a: (a * a).sum(1), (gt.randn(5, 8, device="cuda", requires_grad=True),)
    )
    for _ in range(3):
        x = gt.randn(5, 8, device="cuda", requires_grad=True)
        x_ref = x.detach().clone().requires_grad_(True)
        out, out_ref = graphed(x), ref(x_ref)
        (out.square().sum() + square_sum(x).sum()).backward()  # both backward graphs
        (out_ref.square().sum() + (x_ref * x_ref).sum(1).sum()).backward()
        np.testing.assert_array_equal(out.detach().cpu().numpy(), out_ref.detach().cpu().numpy())
        np.testing.assert_array_equal(x.grad.cpu().numpy(), x_ref.grad.cpu().numpy())
        for p, q in zip(graphed.parameters(), ref.parameters(), strict=True):
            np.testing.assert_array_equal(p.grad.cpu().numpy(), q.grad.cpu().numpy())
    graphed.eval()  # eval mode runs the eager forward, as torch's does
    x = gt.randn(5, 8, device="cuda")
    np.testing.assert_array_equal(graphed(x).detach().cpu().numpy(), ref(x).detach().cpu().numpy())
    with pytest.raises(TypeError, match="Tensors"):
        gt.cuda.make_graphed_callables(lambda a: a, (3.0,))
