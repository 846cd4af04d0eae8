"""With the default allocator settings, a workload of growing requests makes no cudaFree
(each one synchronises the whole device), counted by the simulated CuPy. This is what chose
release_on_miss's default (off): with it on, every other miss here freed a segment; and
peak_guard's (off): with it on, this made 8 device syncs run alone (6 after the rest of the
sim tier)."""

import pytest

from gpu_tensor import creation as cr
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda


@requires_real_cuda
def test_growing_requests_cause_no_device_syncs():
    if not dv.cuda_is_simulated():
        pytest.skip("counts driver calls through the simulated CuPy")
    from gpu_tensor.testing import sim

    cr.empty(16, device="cuda")  # warm: the allocator exists
    sim.reset_counters()
    for step in range(30):
        n = int((2 + step * 0.75) * (1 << 20)) // 4
        a = cr.empty(n, device="cuda")
        b = cr.empty(n // 2, device="cuda")
        del a, b
    c = sim.counters()
    assert c["frees"] == 0 and c["device_syncs"] == 0, c
    assert c["mallocs"] > 0  # it did grow
