"""Our allocator under CuPy. The MemoryPointer/owner lifecycle runs on the CPU (cupy
builds memory objects without a driver); installing it needs a real GPU."""

from __future__ import annotations

import gc

import pytest

from gpu_tensor.backends import cuda_memory
from gpu_tensor.device import real_cuda_available
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource

cupy = pytest.importorskip("cupy")

MiB = 1 << 20


def test_memory_pointer_returns_block_when_cupy_drops_it():
    a = CachingAllocator(HostRawSource(64 * MiB), 0, config=parse_alloc_conf(""))
    ptr = cuda_memory.memory_pointer(a, 3000, stream=0, device_id=0)
    assert ptr.ptr == a.allocated_blocks()[0].ptr and ptr.mem.size == 3000
    assert a.stats()["allocated_bytes.all.current"] == 3072
    view = cupy.cuda.MemoryPointer(ptr.mem, 1024)  # a second pointer into the same memory
    del ptr
    gc.collect()
    assert a.stats()["allocated_bytes.all.current"] == 3072  # still referenced by `view`
    del view
    gc.collect()
    assert a.stats()["allocated_bytes.all.current"] == 0
    empty = cuda_memory.memory_pointer(a, 0, stream=0, device_id=0)
    assert empty.ptr == 0 and a.stats()["allocation.all.allocated"] == 1


@pytest.mark.cuda
@pytest.mark.skipif(not real_cuda_available(), reason="needs a real CUDA GPU")
def test_install_counts_cupy_allocations():
    import gpu_tensor.cuda.memory as m

    allocator = cuda_memory.install(0)
    before = m.memory_allocated(0)
    x = cupy.empty(5 * MiB, dtype=cupy.uint8)
    assert m.memory_allocated(0) >= before + 5 * MiB
    block = allocator.lookup(x.data.ptr)
    assert block is not None and block.size >= 5 * MiB
    y = (x + 1).sum()  # cupy temporaries come from us too
    del x, y
    gc.collect()
    cupy.cuda.Device(0).synchronize()
    assert m.memory_allocated(0) == before
    s = cupy.cuda.Stream(non_blocking=True)
    z = cupy.empty(1 << 20, dtype=cupy.uint8)
    allocator.record_stream(allocator.lookup(z.data.ptr), s.ptr)
    del z
    gc.collect()
    m.empty_cache()
    assert m.memory_stats(0)["num_device_free"] >= 1
