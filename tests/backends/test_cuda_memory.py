"""Our allocator under CuPy. The MemoryPointer/owner lifecycle runs on the CPU (cupy
builds memory objects without a driver); installing it needs a real GPU, or the fake cupy
(tests/backends/fake_cupy.py), which honours set_allocator."""

from __future__ import annotations

import gc
import sys
import types
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from gpu_tensor.backends import _cupy, cuda_memory
from gpu_tensor.device import real_cuda_available
from gpu_tensor.memory import registry
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource
from gpu_tensor.testing import cupy_module

from .fake_cupy import make

pytest.importorskip("cupy")
cupy = cupy_module()  # real cupy, or the simulated one in the sim tier

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
    gc.collect()  # what earlier tests left for the collector must not be freed mid-test
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


class _Event:
    def __init__(self, handle, log):
        self.handle = handle
        log.append(handle)

    def query(self):
        return True

    def synchronize(self):
        pass


def test_cupy_hook_keys_the_per_thread_default_stream_per_thread(monkeypatch):
    """Under CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 cupy's current stream is handle 2
    (cudaStreamPerThread) in every thread; the hook must not hand thread A's freed block
    to thread B, whose per-thread stream is not ordered after A's."""
    fake = make()
    ptds = types.SimpleNamespace(ptr=2)  # what cupy.cuda.get_current_stream() gives then
    fake.cuda.get_current_stream = lambda device=None: ptds
    monkeypatch.setattr(sys.modules[make.__module__], "_allocator", None)  # reset after
    monkeypatch.setattr(_cupy, "_module", fake)
    events: list[int] = []
    allocator = CachingAllocator(
        HostRawSource(64 * MiB),
        0,
        event_factory=lambda h: _Event(h, events),
        config=parse_alloc_conf("peak_guard:False"),  # keep A's cache
        kind="cuda",
    )
    monkeypatch.setitem(registry._allocators, ("cuda", 0), allocator)
    monkeypatch.setattr(cuda_memory, "_installed", False)
    assert cuda_memory.install(0) is allocator

    def alloc_free():
        x = fake.empty(3 * MiB, np.uint8)  # through set_allocator: our hook
        ptr = x.data.ptr
        assert allocator.lookup(ptr) is not None
        del x
        gc.collect()
        return ptr

    def hold():
        return fake.empty(3 * MiB, np.uint8)

    with ThreadPoolExecutor(1) as ta, ThreadPoolExecutor(1) as tb:
        ptr_a = ta.submit(alloc_free).result()
        y = tb.submit(hold).result()
        assert y.data.ptr != ptr_a  # B did not get A's block
        z = ta.submit(hold).result()
        assert z.data.ptr == ptr_a  # A reuses its own cache: ordered on its own stream
        block_z = allocator.lookup(z.data.ptr)
        tb.submit(allocator.record_stream, block_z, ptds).result()  # B's stream uses it too
        del z
        gc.collect()  # freed on this thread: B's per-thread stream cannot be named from here
    assert events == [1]  # so the event went on the legacy stream, which waits for B's
    del y
    gc.collect()
    assert allocator.stats()["allocated_bytes.all.current"] == 0


@pytest.mark.cuda
@pytest.mark.skipif(not real_cuda_available(), reason="needs a real CUDA GPU")
def test_per_thread_default_streams_keep_separate_caches_on_gpu():
    allocator = cuda_memory.install(0)
    ptds = cupy.cuda.Stream.ptds  # current stream handle 2, as under the env variable

    def alloc_fill_free():
        with ptds:
            x = cupy.empty(3 * MiB, dtype=cupy.uint8)
            x.fill(7)  # queued on this thread's per-thread stream
            ptr = x.data.ptr
            del x
            gc.collect()
            return ptr

    def hold():
        with ptds:
            return cupy.zeros(3 * MiB, dtype=cupy.uint8)

    with ThreadPoolExecutor(1) as ta, ThreadPoolExecutor(1) as tb:
        ptr_a = ta.submit(alloc_fill_free).result()
        y = tb.submit(hold).result()
        assert y.data.ptr != ptr_a and int(y.sum()) == 0
        z = ta.submit(hold).result()
        assert z.data.ptr == ptr_a
        # B's per-thread stream uses A's block; freed from the main thread, the event goes on
        # the legacy stream (handle 1): it must be accepted and complete.
        tb.submit(allocator.record_stream, allocator.lookup(z.data.ptr), ptds).result()
        del z, y
        gc.collect()
    allocator.empty_cache()  # waits for that event, then releases A's segment
    assert not any(s.ptr <= ptr_a < s.ptr + s.size for s in allocator.segments())
