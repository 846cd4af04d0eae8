"""Every collective x dtype x device on 2 and 3 real MPI ranks (workers/collectives.py)."""

import pytest

from ._launch import ok_counts, run_ranks


@pytest.mark.parametrize("n", [2, 3])
def test_every_collective_dtype_and_device(n):
    _, out, _ = run_ranks(n, "collectives.py")
    counts = ok_counts(out, n)
    assert len(counts) == n, out
    assert min(counts) > 450  # every rank ran the whole matrix
