"""The NCCL engine builds gather and scatter from grouped sends and receives; the pairs it
enqueues are checked here without a GPU (the grouped call is replaced by a recorder)."""

import numpy as np
import pytest

from gpu_tensor.distributed import nccl_engine


def _engine(rank, size):
    eng = object.__new__(nccl_engine.NcclEngine)
    eng.rank, eng.size = rank, size
    eng._grouped = lambda op, arrays, pairs: (op, arrays, pairs)
    return eng


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_gather_and_scatter_pairs(rank):
    small, big = np.zeros(2, np.float32), np.zeros(6, np.float32)  # 8-byte blocks, 3 ranks
    eng = _engine(rank, 3)
    op, arrays, pairs = eng.gather(small, big, 1)
    assert op == "gather" and arrays[0] is small and arrays[1] is big
    expected = [("send", small, 0, 8, 1)]
    if rank == 1:  # the root receives block p from rank p, itself included
        expected += [("recv", big, 8 * p, 8, p) for p in range(3)]
    assert pairs == expected
    op, arrays, pairs = eng.scatter(big, small, 1)
    assert op == "scatter" and arrays[0] is big and arrays[1] is small
    expected = [("recv", small, 0, 8, 1)]
    if rank == 1:
        expected += [("send", big, 8 * p, 8, p) for p in range(3)]
    assert pairs == expected
