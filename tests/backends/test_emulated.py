"""The emulated cuda device computes copies and casts straight into allocator memory: an
impossible result is the allocator's OutOfMemoryError (numpy's MemoryError never reaches
the user), and no host temporary hides outside the memory stats."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.cuda import memory as cmem
from gpu_tensor.device import cuda_is_emulated

pytestmark = pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")


def test_impossible_contiguous_is_the_allocators_oom_and_leaves_it_consistent():
    x = gt.ones(1, 3, device="cuda")
    before = cmem.memory_allocated(0)
    with pytest.raises(gt.OutOfMemoryError, match="Tried to allocate 24.00 GiB"):
        x.expand(2**31, 3).contiguous()
    with pytest.raises(gt.OutOfMemoryError):
        x.expand(2**31, 3).to(gt.float64)
    assert cmem.memory_allocated(0) == before
    assert (x.expand(4, 3).contiguous() + 1).sum().item() == 24.0  # still usable


def test_copies_and_casts_use_no_host_temporary():
    a = gt.ones(1, 1024, device="cuda")
    tracemalloc.start()
    try:
        y = a.expand(2048, 1024).contiguous()  # 8 MiB
        z = y.t().double()  # 16 MiB, keeps the transposed layout
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # numpy's buffers are traced: none of the results' size
    assert y.is_contiguous() and z.stride() == (1, 1024) and z.dtype is gt.float64
    np.testing.assert_array_equal(z.cpu().numpy(), np.ones((1024, 2048)))


def test_float_to_int_cast_saturates_into_allocator_memory():
    x = gt.tensor([1e10, -1e10, float("nan"), 2.7], device="cuda")
    assert x.to(gt.int32).tolist() == [2**31 - 1, -(2**31), 0, 2]


def test_a_block_goes_back_when_the_last_array_over_it_dies():
    # a tensor's bytes are a slice of its segment's memoryview, freed by a weak reference:
    # a view kept past the tensor keeps the block (and its values), its death frees it
    # the first op after some tests frees a block they left: warm it before the first reading
    gt.arange(64, dtype=gt.float32, device="cuda") * 2
    gc.collect()  # an earlier test's cycles, freed by the collector mid-test, would move the count
    before = cmem.memory_allocated(0)
    x = gt.arange(64, dtype=gt.float32, device="cuda") * 2
    nbytes = cmem.memory_allocated(0) - before
    assert nbytes == 512  # 256 bytes, rounded to the 512-byte block
    view = x._data[3:5]
    del x
    assert cmem.memory_allocated(0) == before + nbytes
    assert view.tolist() == [6.0, 8.0]
    del view
    assert cmem.memory_allocated(0) == before
    y = gt.ones(4, 4, device="cuda").t().contiguous()  # contiguous(): adopted, not copied
    assert y.untyped_storage().data_ptr() == y._data.ctypes.data
    del y
    assert cmem.memory_allocated(0) == before


def test_results_in_growing_expandable_segments_keep_their_bytes():
    # expandable segments (emulated cuda's default) grow page by page: every result is an
    # array over one memoryview of the whole reservation, at its block's address
    xs = [gt.full((150_000,), float(i), device="cuda") for i in range(8)]  # 600 KB each
    segments = {x.untyped_storage()._block.segment for x in xs}
    if not any(s.expandable for s in segments):
        pytest.skip("GPU_TENSOR_ALLOC_CONF turned expandable segments off")
    assert sum(s.size for s in segments) > 2 << 20  # the small pool's run grew past a page
    for i, x in enumerate(xs):
        assert x._data.ctypes.data == x.untyped_storage().data_ptr()
        assert x._data.min() == x._data.max() == i  # nothing later overwrote it
    reservations = {s.reservation for s in segments if s.expandable}
    assert all(r.host is not None for r in reservations)
