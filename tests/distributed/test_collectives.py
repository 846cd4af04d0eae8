"""Every collective x dtype x device on 2 and 3 real MPI ranks (workers/collectives.py)."""

import pytest

from ._launch import ok_counts, run_ranks


@pytest.mark.parametrize("n", [2, 3])
def test_every_collective_dtype_and_device(n):
    _, out, _ = run_ranks(n, "collectives.py")
    counts = ok_counts(out, n)
    assert len(counts) == n, out
    assert min(counts) > 450  # every rank ran the whole matrix


def _has_sim() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("gpu_tensor.testing.sim") is not None
    except ModuleNotFoundError:  # gpu_tensor.testing is still a module, not a package
        return False


@pytest.mark.skipif(
    not _has_sim(), reason="the simulated CuPy (gpu_tensor.testing.sim) is not in this tree"
)
def test_every_collective_on_simulated_cuda():
    """cuda tensors through the real CUDA backend over the simulated CuPy: the pinned
    staging path with real streams and events."""
    _, out, _ = run_ranks(2, "collectives.py", "cuda", env={"GPU_TENSOR_FALLBACK": "sim"})
    assert min(ok_counts(out, 2)) > 200
