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
    if _device.real_cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (none here; cuda tests run with "
                            "`make test-cuda` on a GPU machine)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
