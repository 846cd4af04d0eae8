"""One warm op on the simulated CuPy: exactly one launch, no sync, no host wait, no copy and
no cupy routine (issue 23's counts, exact on the sim)."""

from __future__ import annotations

import pytest

from gpu_tensor import device as dv


def one_warm_launch(fn, *args):
    """fn(*args) once to warm (compile, plan), then once counted; returns that result."""
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy (GPU_TENSOR_FALLBACK=sim)")
    from gpu_tensor.testing import sim

    fn(*args)
    sim.synchronize()
    sim.reset_counters()
    r = fn(*args)
    c = sim.counters()
    assert c["kernel_launches"] == 1, c
    assert c["device_syncs"] == c["host_waits"] == 0, c
    assert c["bytes_copied"] == c["memcpy_calls"] == c["cupy_routines"] == 0, c
    return r
