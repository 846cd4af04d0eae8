"""Functional view forms and the copying rearrangements (flip/roll/repeat/tile), new_*."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.ops import shape
from gpu_tensor.testing import assert_close

A = np.arange(12, dtype=np.float32).reshape(3, 4)


def test_functional_views(device):
    x = cr.tensor(A, device=device)
    assert_close(shape.reshape(x, (4, 3)), A.reshape(4, 3))
    assert_close(shape.transpose(x, 0, 1), A.T)
    assert_close(shape.permute(x, (1, 0)), A.T)
    assert shape.unsqueeze(x, 0).shape == (1, 3, 4)
    assert shape.flatten(x).untyped_storage() is x.untyped_storage()


def test_copying_rearrangements(device):
    x = cr.tensor(A, device=device)
    assert_close(x.flip(0), A[::-1])
    assert_close(shape.flip(x, (0, 1)), A[::-1, ::-1])
    assert x.flip(1).untyped_storage() is not x.untyped_storage()
    assert_close(x.flip(0, 1), A[::-1, ::-1])  # torch's Tensor.flip(*dims) form too
    assert_close(x.t().flip([0]), A.T[::-1])
    with pytest.raises(TypeError, match="dims"):
        x.flip()
    assert_close(x.roll(1, 1), np.roll(A, 1, 1))
    assert_close(shape.roll(x, 5), np.roll(A, 5))
    assert_close(x.repeat(2, 1, 3), np.tile(A, (2, 1, 3)))
    assert_close(x.tile((2,)), np.tile(A, (1, 2)))


def test_new_factories(device):
    x = cr.zeros(2, dtype=dt.int16, device=device)
    z = x.new_ones(3)
    assert z.dtype is dt.int16 and z.device == x.device and z.tolist() == [1, 1, 1]
    assert x.new_full((2,), 7).tolist() == [7, 7]
    assert x.new_tensor([1.7]).dtype is dt.int16
    assert x.new_zeros(2, dtype=dt.float32).dtype is dt.float32
    assert x.type_as(cr.zeros(1)).dtype is dt.float32
