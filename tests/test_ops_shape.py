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


@pytest.mark.parametrize("source", ["transposed", "sliced", "expanded"])
def test_roll_and_repeat_are_c_contiguous_copies_of_any_source(device, source):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    make = {
        "transposed": lambda t: t.transpose(0, 2),
        "sliced": lambda t: t[:, 1:, ::2],
        "expanded": lambda t: t[:1].expand(3, 4, 5),
    }[source]
    view = {
        "transposed": base.transpose(2, 1, 0),
        "sliced": base[:, 1:, ::2],
        "expanded": np.broadcast_to(base[:1], (3, 4, 5)),
    }[source]
    x = make(cr.tensor(base, device=device))
    for got, want in [
        (x.roll(1, 0), np.roll(view, 1, 0)),
        (x.roll((2, -1), (0, 2)), np.roll(view, (2, -1), (0, 2))),
        (x.roll(-7), np.roll(view, -7)),
        (x.repeat(2, 1, 3), np.tile(view, (2, 1, 3))),
        (x.repeat(2, 1, 1, 1), np.tile(view, (2, 1, 1, 1))),
        (x.tile((2,)), np.tile(view, (1, 1, 2))),
    ]:
        assert_close(got, want)
        assert got.is_contiguous()
    with pytest.raises(IndexError, match="no dimensions"):
        cr.tensor(2.0, device=device).roll(1, 0)
    assert x.repeat(0, 1, 1).shape == (0, x.shape[1], x.shape[2])
