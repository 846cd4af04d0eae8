"""Shared fixtures. Fallback is switched on before gpu_tensor is imported, so `cuda` is an
emulated device here when there is no GPU (and the real one when there is).

The sim tier: `pytest -m sim` (or GPU_TENSOR_FALLBACK=sim) runs in a process whose `cuda` is
the real CUDA backend over the simulated CuPy, with cuda as the default device as on a GPU
machine; the device-parametrized tests run on cuda there, and so do the `-m cuda` tests
except those that need real timing or hardware (marked `hardware`)."""

from __future__ import annotations

import os
import sys


def _asks_for_sim(argv) -> bool:
    for i, a in enumerate(argv):
        expr = (
            argv[i + 1]
            if a == "-m" and i + 1 < len(argv)
            else (a[2:] if a.startswith("-m") and len(a) > 2 else None)
        )
        if expr is not None and "sim" in expr.split() and "not sim" not in expr:
            return True
    return False


if _asks_for_sim(sys.argv):
    os.environ.setdefault("GPU_TENSOR_FALLBACK", "sim")
os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")

import pytest  # noqa: E402

from gpu_tensor import device as _device  # noqa: E402
from gpu_tensor.testing import devices  # noqa: E402

_SIM = _device.cuda_is_simulated()


@pytest.fixture(params=[pytest.param("cuda", marks=pytest.mark.sim)] if _SIM else devices())
def device(request):
    """Every available device: 'cpu', and 'cuda' (emulated here, real on a GPU machine);
    in the sim tier, 'cuda' over the simulated CuPy (cpu ran in the main tier)."""
    return request.param


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The order's seed, even under -q: tests run in a random order (pytest-randomly;
    nothing may depend on what ran before), and a failure must be replayable."""
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None:
        terminalreporter.write_line(
            f"test order: pytest-randomly seed {seed} (replay with --randomly-seed={seed})"
        )


def pytest_collection_modifyitems(config, items):
    if _SIM:
        hw = pytest.mark.skip(
            reason="needs real GPU timing or hardware, which the simulator "
            "does not have (runs in profiling/gpu_check.sh on a GPU)"
        )
        for item in items:
            if item.get_closest_marker("cuda") is not None:
                item.add_marker(pytest.mark.sim)
                if item.get_closest_marker("hardware") is not None:
                    item.add_marker(hw)
        return
    if _device.real_cuda_available():
        return
    skip = pytest.mark.skip(
        reason="needs a real CUDA GPU (none here; cuda tests run with "
        "`make test-cuda` on a GPU machine)"
    )
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_mode_left_on():
    """A test that leaves a per-thread mode on (autocast, a profiler) would put every later
    test in the random order under it: fail that test by name instead, and switch autocast
    back off so the rest of the run is clean. (Process-wide bits are the quantized tensors'
    and live as long as a quantized tensor does: not checked here.)"""
    yield
    from gpu_tensor import _modes, set_autocast_enabled

    if _modes._tls.on:
        left = _modes._tls.on
        for device_type in ("cpu", "cuda"):
            set_autocast_enabled(device_type, False)
        pytest.fail(
            f"this test left modes word bits {left:#x} on for its thread "
            "(autocast or a profiler still active)"
        )
