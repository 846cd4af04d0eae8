"""The simulated CuPy keeps views of empty arrays as cupy does: a view routine (transpose,
reshape, basic indexing) of an empty array is a view at that array's pointer with numpy's
strides (cupy/_core/_routines_indexing.pyx `_view_getitem`: `if a.size != 0: v.data =
a.data + offset`; the views copy `data`), not a fresh array at pointer 0."""

import gc

import numpy as np
import pytest

from gpu_tensor.testing import sim


@pytest.fixture
def cp():
    gc.collect()
    sim.reset(devices=1, seed=1)
    return sim.module()


def test_views_of_an_empty_slice_keep_its_pointer(cp):
    x = cp.arange(24, dtype=np.float32).reshape(2, 3, 4)
    e = x[1:1]  # empty, cut from a non-empty array: numpy's offset (1 row of 48 bytes)
    assert e.size == 0 and e.data.ptr == x.data.ptr + 48 and e.strides == (48, 16, 4)
    t = e.transpose(2, 0, 1)
    assert t.data.ptr == e.data.ptr and t.strides == (4, 48, 16) and not t.flags.owndata
    r = e.reshape(0, 12)
    assert r.data.ptr == e.data.ptr and r.strides == (48, 4)
    # a slice of the empty array: cupy adds no offset to an empty array's pointer
    s = e[:, 1:]
    assert s.data.ptr == e.data.ptr and s.strides == (48, 16, 4)
    end = x[2:]  # empty at the buffer's end
    assert end.data.ptr == x.data.ptr + 96 and end.swapaxes(0, 2).data.ptr == end.data.ptr


def test_an_empty_view_of_an_empty_allocation(cp):
    z = cp.empty((0, 3), dtype=np.float64)
    v = z.T
    assert v.shape == (3, 0) and v.strides == (8, 24) and v.data.ptr == z.data.ptr
    assert cp.asnumpy(v).shape == (3, 0)
    # a routine that computes still makes a new array
    assert cp.ascontiguousarray(v).flags.c_contiguous
