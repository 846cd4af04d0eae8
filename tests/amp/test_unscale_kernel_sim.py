"""GradScaler's check-and-unscale on cuda is one launch of kernels/amp_unscale.cu per
(device, dtype) group, with no host sync: counted by the simulated CuPy (`pytest -m sim`).
Its results (grads, found_inf, the overflow report) equal the per-grad path that cpu runs
(the host path, torch's numbers)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.backends import cuda_amp

pytestmark = [pytest.mark.sim, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


@pytest.fixture
def sim():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy (pytest -m sim)")
    from gpu_tensor.testing import sim

    return sim


@pytest.fixture
def launches(monkeypatch):
    """Every call of the multi-tensor kernel's launcher: (dtype, number of tensors, mode)."""
    calls = []
    real = cuda_amp.launch

    def counted(device_table, n, chunks, dtype_name, found_inf, factor, mode, stamp):
        calls.append((dtype_name, n, mode))
        real(device_table, n, chunks, dtype_name, found_inf, factor, mode, stamp)

    monkeypatch.setattr(cuda_amp, "launch", counted)
    return calls


def _params(device, values):
    """Parameters whose grads hold `values` (a list of (dtype, numpy array))."""
    ps = []
    for dtype, v in values:
        p = gt.zeros(v.shape, dtype=dtype, device=device, requires_grad=True)
        p.grad = gt.tensor(v, device=device).to(dtype)
        ps.append(p)
    return ps


def _mixed(n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (
            gt.float32 if i % 2 else gt.bfloat16,
            (rng.standard_normal((3 + i, 5)) * 1000).astype(np.float32),
        )
        for i in range(n)
    ]


def _scaler(device, ps, scale=2.0**12):
    sc = gt.amp.GradScaler(device, init_scale=scale)
    sc.scale(gt.ones((), device=device))
    return sc, gt.optim.SGD(ps, lr=0.1)


def _captured_unscale(sim, launches, sc, opt):
    """A graph captured around sc.unscale_(opt), with the launch list and the simulator's
    counters covering the capture alone."""
    sim.synchronize()
    sim.reset_counters()
    launches.clear()
    g = gt.cuda.CUDAGraph()
    with gt.cuda.graph(g):
        sc.unscale_(opt)
    return g


@pytest.mark.parametrize("n", [4, 16])
def test_one_launch_per_group_and_no_host_sync(sim, launches, n):
    ps = _params("cuda", _mixed(n))
    sc, opt = _scaler("cuda", ps)
    for it in range(2):
        sim.synchronize()
        sim.reset_counters()
        launches.clear()
        sc.unscale_(opt)
        c = sim.counters()
        assert sorted(launches) == [
            ("bfloat16", n // 2, "reciprocal"),
            ("float32", n // 2, "reciprocal"),
        ]
        assert c["kernel_launches"] == 2  # found_inf's zeros is a memset, not a launch
        assert c["host_waits"] + c["device_syncs"] == 0
        # the first call uploads one table per group; later calls reuse them
        assert c["memcpy_calls"] == (2 if it == 0 else 0)
        sc.update()


def test_the_table_comes_from_pinned_memory_asynchronously(sim, monkeypatch):
    from gpu_tensor.testing.sim import runtime

    copies = []
    real = runtime._copy_task

    def spy(dst, src, size, kind, queue, what):
        copies.append((kind, sim.machine().space.find_pinned(src) is not None, size))
        return real(dst, src, size, kind, queue, what)

    monkeypatch.setattr(runtime, "_copy_task", spy)
    ps = _params("cuda", _mixed(6))
    sc, opt = _scaler("cuda", ps)
    sim.synchronize()
    copies.clear()
    sc.unscale_(opt)
    table_bytes = 8 * (5 * 3 + 1)  # 3 grads per dtype
    assert copies == [(1, True, table_bytes)] * 2  # host-to-device, from pinned memory


CASES = {"finite": None, "inf": float("inf"), "nan": float("nan"), "-inf": -float("inf")}


@pytest.mark.parametrize("case", list(CASES))
def test_values_and_found_inf_equal_the_host_path(sim, launches, case):
    values = _mixed(5) + [(gt.float64, np.linspace(-7, 7, 12).reshape(3, 4))]
    if CASES[case] is not None:
        values[1][1][2, 3] = CASES[case]  # a float32 grad
        values[4][1][0, 0] = CASES[case]  # a bfloat16 grad
    out = {}
    for device in ("cuda", "cpu"):
        ps = _params(device, values)
        sc, opt = _scaler(device, ps, scale=3.0)  # 1/3: the inverse's rounding shows
        sc.unscale_(opt)
        found = sum(
            float(f.item())
            for f in sc._per_optimizer_states[id(opt)]["found_inf_per_device"].values()
        )
        sc.update()
        out[device] = (
            [p.grad.float().cpu().numpy() for p in ps],
            found,
            sc.found_inf_report(),
            sc.get_scale(),
        )
    assert len(launches) == 3  # float32, bfloat16 and float64: one each, cuda only
    (gc, fc, rc, sc_c), (gh, fh, rh, sc_h) = out["cuda"], out["cpu"]
    for a, b in zip(gc, gh, strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit, NaN where NaN
    assert fc == fh == (0.0 if case == "finite" else 1.0)
    assert rc == rh == ([] if case == "finite" else [(0, 1, (4, 5)), (0, 4, (7, 5))])
    assert sc_c == sc_h == (3.0 if case == "finite" else 1.5)


def test_grads_with_gaps_take_the_per_grad_path(sim, launches):
    """A grad whose elements do not fill one range (a strided view with gaps) is checked and
    unscaled per grad, as torch's slow path does; a transposed (dense) one takes the kernel."""
    base = np.arange(48, dtype=np.float32).reshape(4, 12) - 20
    p, q, r = (gt.zeros(s, device="cuda", requires_grad=True) for s in ((4, 6), (12, 4), (3,)))
    p.grad = gt.tensor(base, device="cuda")[:, ::2]
    q.grad = gt.tensor(base, device="cuda").t()
    r.grad = gt.tensor([1.0, float("inf"), 2.0], device="cuda")
    sc, opt = _scaler("cuda", [p, q, r], scale=4.0)
    sc.unscale_(opt)
    assert launches == [("float32", 2, "reciprocal")]  # q and r
    np.testing.assert_array_equal(p.grad.cpu().numpy(), base[:, ::2] / 4)
    np.testing.assert_array_equal(q.grad.cpu().numpy(), base.T / 4)
    sc.update()
    assert sc.found_inf_report() == [(0, 2, (3,))]
    assert sc.get_scale() == 2.0


def test_step_with_a_fused_optimizer_checks_in_one_launch_per_group(sim, launches):
    ps = _params("cuda", _mixed(6))
    sc, opt = _scaler("cuda", ps)
    sim.synchronize()
    sim.reset_counters()
    sc.step(opt)  # the fused step kernel unscales: GradScaler only checks
    assert sorted(launches) == [("bfloat16", 3, "check"), ("float32", 3, "check")]
    c = sim.counters()
    assert c["host_waits"] + c["device_syncs"] == 0


def test_update_is_one_launch_and_no_host_sync(sim):
    """torch's _amp_update_scale_ as one fused kernel: backoff on inf, growth after the
    interval, all on the device."""
    ps = _params("cuda", [(gt.float32, np.array([1.0, float("inf")], np.float32))])
    sc = gt.amp.GradScaler("cuda", init_scale=8.0, growth_interval=1)
    opt = gt.optim.SGD(ps, lr=0.1)
    scales = []
    for _ in range(2):
        sc.scale(gt.ones((), device="cuda"))
        sc.unscale_(opt)
        sim.synchronize()
        sim.reset_counters()
        sc.update()
        c = sim.counters()
        assert (c["kernel_launches"], c["cupy_routines"]) == (1, 0)
        assert c["host_waits"] + c["device_syncs"] == 0
        scales.append(sc.get_scale())
        ps[0].grad = gt.ones(2, device="cuda")
    assert scales == [4.0, 8.0]  # backed off on the inf, grew after one clean step


def test_graph_capture_reuses_the_warm_up_table_or_writes_one_on_the_device(sim, launches):
    """A captured unscale_ launches the kernel over the warm-up's table, kept for the graph's
    replays; a layout the scaler has no table for (as when the capture makes the grads:
    torch's recipe zeroes them with set_to_none first) gets a table written by kernels whose
    arguments carry it, with no host copy."""
    ps = _params("cuda", [(gt.float32, np.full((3, 4), 64.0, np.float32))] * 2)
    sc, opt = _scaler("cuda", ps, scale=2.0)
    sc.unscale_(opt)  # eager warm-up: uploads the table (grads 32)
    sc.update()
    g = _captured_unscale(sim, launches, sc, opt)
    assert launches == [("float32", 2, "reciprocal")]
    g.replay()
    g.replay()
    for p in ps:
        np.testing.assert_array_equal(p.grad.cpu().numpy(), np.full((3, 4), 8.0))
    sc.update()

    fresh = _params("cuda", [(gt.float32, np.full((5,), 6.0, np.float32))])
    sc2, opt2 = _scaler("cuda", fresh, scale=2.0)
    g2 = _captured_unscale(sim, launches, sc2, opt2)
    assert launches == [("float32", 1, "reciprocal")]
    assert sim.counters()["memcpy_calls"] == 0  # the table came from kernel arguments
    fresh[0].grad.fill_(6.0)  # the capture ran nothing: replays do the work
    g2.replay()
    g2.replay()
    np.testing.assert_array_equal(fresh[0].grad.cpu().numpy(), np.full((5,), 1.5))


def test_the_report_of_an_iteration_survives_the_next_unscale(sim):
    """Each table alternates its two flag banks, so the last updated iteration's report is
    still right after the next iteration's unscale_ (two dtype groups, one table each)."""
    values = [(gt.float32, np.ones(4, np.float32)), (gt.bfloat16, np.ones(4, np.float32))]
    ps = _params("cuda", values)
    sc, opt = _scaler("cuda", ps)
    reports = []
    for bad in ([0], [0, 1], []):  # grad 0 overflows twice running
        for i, p in enumerate(ps):
            p.grad.fill_(float("inf") if i in bad else 1.0)
        sc.scale(gt.ones((), device="cuda"))
        sc.unscale_(opt)
        if reports:  # the previous iteration's report, read after this unscale_
            reports[-1].append(sc.found_inf_report())
        sc.update()
        reports.append([sc.found_inf_report()])
    both = [(0, 0, (4,)), (0, 1, (4,))]
    assert [r[0] for r in reports] == [[(0, 0, (4,))], both, []]
    assert [r[1] for r in reports[:2]] == [[(0, 0, (4,))], both]
