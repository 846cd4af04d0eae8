"""N ranks with batch B/N train exactly as one process with batch B (workers/ddp.py)."""

import pytest

from ._launch import ok_counts, run_ranks


@pytest.mark.parametrize("n", [2, 3])
def test_data_parallel_training_matches_one_process(n):
    _, out, _ = run_ranks(n, "ddp.py")
    counts = ok_counts(out, n)
    assert len(counts) == n and min(counts) > 50, out


def test_ddp_rejects_a_non_module():
    from gpu_tensor.nn.parallel import DistributedDataParallel

    with pytest.raises(TypeError, match="parameters"):
        DistributedDataParallel(42)
