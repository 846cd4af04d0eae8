"""On the simulated CuPy (the real CUDA backend): the profiler times ops with CUDA events
and waits for none of them until stop(), which waits once (per stream used)."""

from __future__ import annotations

import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.profiler import ProfilerActivity, profile
from gpu_tensor.testing import requires_real_cuda


@requires_real_cuda
def test_no_host_waits_per_op_and_one_at_stop():
    if not dv.cuda_is_simulated():
        pytest.skip("counts host waits through the simulated CuPy")
    from gpu_tensor.testing import sim

    x = gt.ones(256, device="cuda")
    (x + 1).exp()  # warm: kernels compiled, allocator made
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True)
    prof.start()
    sim.reset_counters()
    for _ in range(50):
        x = x * 0.5 + 1.0
    during = sim.counters()
    prof.stop()
    after = sim.counters()
    assert during["host_waits"] == 0 and during["device_syncs"] == 0, during
    assert during["kernel_launches"] >= 100
    assert after["host_waits"] == 1 and after["device_syncs"] == 0, after
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["aten::mul"].count == 50 and rows["aten::add"].count == 50
    assert rows["aten::mul"].device_time_total > 0
    assert "emulated" not in prof.key_averages().table()
