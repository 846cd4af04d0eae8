"""cat/stack (copies, promotion) and split/chunk (views) vs numpy on every device."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.ops import join
from gpu_tensor.testing import assert_close

A = np.arange(12, dtype=np.float32).reshape(3, 4)


def test_cat_stack(device):
    x = cr.tensor(A, device=device)
    assert_close(join.cat([x, x], 0), np.concatenate([A, A], 0))
    assert_close(join.cat([x, x[:, :1]], dim=-1), np.concatenate([A, A[:, :1]], -1))
    assert_close(join.stack([x, x * 2], 1), np.stack([A, A * 2], 1))
    r = join.cat([x, cr.zeros(1, 4, dtype=dt.float64, device=device)])
    assert r.dtype is dt.float64 and r.shape == (4, 4)
    assert join.cat([x, cr.tensor([], device=device)]).shape == (3, 4)  # torch's legacy rule


def test_split_chunk_are_views(device):
    x = cr.tensor(A, device=device)
    parts = join.split(x, 2, dim=1)
    assert [p.shape for p in parts] == [(3, 2), (3, 2)]
    assert all(p.untyped_storage() is x.untyped_storage() for p in parts)
    parts = x.split([1, 2], 0)
    assert_close(parts[1], A[1:])
    ch = x.chunk(3, 1)
    assert [c.shape[1] for c in ch] == [2, 2]
    assert_close(ch[1], A[:, 2:])
    ts = join.tensor_split(x, 3, 1)
    assert [t.shape[1] for t in ts] == [2, 1, 1]


def test_join_errors(device):
    x = cr.tensor(A, device=device)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        join.cat([x, x[:, :2]])
    with pytest.raises(RuntimeError, match="equal size"):
        join.stack([x, x[:2]])
    with pytest.raises(RuntimeError, match="sum exactly to 3"):
        x.split([1, 1], 0)
    with pytest.raises(ValueError, match="non-empty"):  # torch: ValueError for cat([])
        join.cat([])
    with pytest.raises(TypeError, match="Tensors"):
        join.cat([x, A])
