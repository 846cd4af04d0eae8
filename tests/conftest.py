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
        expr = argv[i + 1] if a == "-m" and i + 1 < len(argv) else (
            a[2:] if a.startswith("-m") and len(a) > 2 else None)
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


# Autograd installs its op wrappers (process-wide) when the first tensor requiring grad
# appears; running its tests last keeps every other test on the plain, wrapper-free path
# that code which never asks for gradients takes.
_AUTOGRAD_DIRS = ("autograd", "nn")


_AUTOGRAD_FILES = ("test_torch_parity_autograd.py", "test_pytorch_programs.py", "test_legacy.py")


def _runs_autograd(item) -> bool:
    parts = item.path.parts
    return item.path.name in _AUTOGRAD_FILES or (
        "tests" in parts and parts[parts.index("tests") + 1] in _AUTOGRAD_DIRS)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_runs_autograd)  # stable: the order within each group is kept
    if _SIM:
        hw = pytest.mark.skip(reason="needs real GPU timing or hardware, which the simulator "
                              "does not have (runs in profiling/gpu_check.sh on a GPU)")
        for item in items:
            if item.get_closest_marker("cuda") is not None:
                item.add_marker(pytest.mark.sim)
                if item.get_closest_marker("hardware") is not None:
                    item.add_marker(hw)
        return
    if _device.real_cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (none here; cuda tests run with "
                            "`make test-cuda` on a GPU machine)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
