"""Shared fixtures. Fallback is switched on before gpu_tensor is imported, so `cuda` is an
emulated device here when there is no GPU (and the real one when there is)."""

from __future__ import annotations

import os

os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")

import pytest  # noqa: E402

from gpu_tensor import device as _device  # noqa: E402
from gpu_tensor.testing import devices  # noqa: E402


@pytest.fixture(params=devices())
def device(request):
    """Every available device: 'cpu', and 'cuda' (emulated here, real on a GPU machine)."""
    return request.param


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The order's seed, even under -q: tests run in a random order (pytest-randomly;
    nothing may depend on what ran before), and a failure must be replayable."""
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None:
        terminalreporter.write_line(f"test order: pytest-randomly seed {seed} (replay with "
                                    f"--randomly-seed={seed})")


def pytest_collection_modifyitems(config, items):
    if _device.real_cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (none here; cuda tests run with "
                            "`make test-cuda` on a GPU machine)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
