"""pin_memory=True implies a cpu tensor, whatever the default device (torch's rule): on a GPU
machine the default is cuda, and the simulator tier runs with cuda as the default."""

import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor import device as dv

pytestmark = pytest.mark.sim  # also in the sim tier, where cuda is the default device


def test_pin_memory_gives_a_pinned_cpu_tensor_under_any_default_device():
    before = dv.get_default_device()
    try:
        for default in ("cpu", "cuda") if dv.cuda_available() else ("cpu",):
            dv.set_default_device(default)
            t = cr.empty(4, 3, dtype=dt.float32, pin_memory=True)
            assert t.device.type == "cpu" and t.is_pinned() and t.shape == (4, 3)
    finally:
        dv.set_default_device(before)
