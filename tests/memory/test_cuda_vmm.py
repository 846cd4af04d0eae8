"""Expandable segments over CUDA virtual memory (backends/cuda_vmm.py), on a fake driver.

The fake (fake_vmm.py) has cuda.bindings.driver's contract and records every misuse.
After each step of a random allocator program: no violation (no double map, nothing
released while mapped), the driver maps exactly the allocator's runs plus the old
addresses of restitched pages, its physical memory is the allocator's reserved bytes,
and the allocator's own recount holds. At the end everything is unmapped and released.
The auto mode of cuda_memory.create_allocator (self-test first) runs here on the fake
driver too, with cudaMemset / cudaMemcpy stood in for by the fake's bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import random
import sys
import types
import warnings

import pytest

from gpu_tensor.backends.cuda_vmm import VmmSource, available, self_test
from gpu_tensor.memory import verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import AllocatorConfig, parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import RawOutOfMemory
from gpu_tensor.testing import requires_gpu_hardware

from .fake_vmm import GRANULARITY, FakeDriver

MiB = 1 << 20


class NoPlainSegments:
    """The cudaMalloc side; expandable segments must not use it."""

    def __init__(self, total):
        self.total = total

    def alloc(self, nbytes):
        raise AssertionError("expandable segments asked for a cudaMalloc segment")

    def free(self, ptr):
        raise AssertionError("expandable segments freed a cudaMalloc segment")

    def mem_get_info(self):
        return self.total, self.total


def make_source(capacity=256 * MiB, **driver_args):
    driver = FakeDriver(capacity, **driver_args)
    syncs = []
    source = VmmSource(NoPlainSegments(capacity), driver, 0, lambda: syncs.append(1))
    return driver, source, syncs


def test_map_and_unmap_in_handles_with_access_for_this_device_only():
    # peers get access only when asked (add_peer), as torch's expandable segments: the
    # driver's cuMemSetAccess gets this device alone, however many peers could access it
    driver, source, syncs = make_source(devices=3, peer_pairs={(1, 0), (2, 0)})
    assert available(driver, 0) and source.peers == []
    base = source.reserve(128 * MiB)
    source.map(base, 8 * MiB)
    assert len(driver.mappings) == 4 and driver.used == 8 * MiB
    assert all(devices == {0} for devices in driver.access.values())
    assert driver.log[1:] == [("cuMemSetAccess", base, 8 * MiB, (0,))]
    with pytest.raises(AssertionError, match="already mapped"):
        source.map(base + 6 * MiB, 4 * MiB)  # overlaps: refused before any driver call
    source.map(base + 40 * MiB, 40 * MiB, handle_size=20 * MiB)  # the large pool's handles
    assert driver.calls["cuMemCreate"] == 6 and driver.mappings[base + 60 * MiB][0] == 20 * MiB
    with pytest.raises(AssertionError, match="part of a handle"):
        source.unmap(base + 40 * MiB, 2 * MiB)  # a handle is unmapped whole
    with pytest.raises(ValueError, match="not whole handles"):
        source.map(base + 80 * MiB, 30 * MiB, handle_size=20 * MiB)
    source.unmap(base + 4 * MiB, 4 * MiB)
    assert syncs == [1] and driver.used == 44 * MiB  # synchronised before unmapping
    with pytest.raises(AssertionError, match="still mapped"):
        source.unreserve(base)
    source.unmap_many([(base, 4 * MiB), (base + 40 * MiB, 40 * MiB)])
    source.unreserve(base)
    assert driver.handles == {} and driver.reserved == {} and driver.violations == []
    assert source.mapped_bytes() == source.physical_bytes() == 0


def test_add_peer_grants_access_to_what_is_mapped_and_what_will_be():
    driver, source, _ = make_source(devices=3, peer_pairs={(1, 0)})
    base = source.reserve(64 * MiB)
    source.map(base, 4 * MiB)
    source.map(base + 8 * MiB, 2 * MiB)
    driver.log.clear()
    assert source.add_peer(1) and source.peers == [1]
    # one descriptor, one call per run of adjacent mappings
    assert driver.log == [
        ("cuMemSetAccess", base, 4 * MiB, (1,)),
        ("cuMemSetAccess", base + 8 * MiB, 2 * MiB, (1,)),
    ]
    assert all(devices == {0, 1} for devices in driver.access.values())
    assert source.add_peer(1) and source.add_peer(0) and len(driver.log) == 2  # nothing new
    assert not source.add_peer(2) and source.peers == [1]  # the driver says it cannot
    source.map(base + 16 * MiB, 2 * MiB)
    assert driver.access[base + 16 * MiB] == {0, 1}
    source.alias(base + 32 * MiB, base, 4 * MiB)
    assert driver.access[base + 32 * MiB] == {0, 1}
    assert driver.violations == []


@pytest.mark.parametrize("failing", ["cuMemCreate", "cuMemMap", "cuMemSetAccess"])
def test_a_failed_map_leaves_nothing_mapped(failing):
    driver, source, _ = make_source()
    base = source.reserve(64 * MiB)
    driver.fail[failing] = 3 if failing != "cuMemSetAccess" else 1
    error = RuntimeError if failing == "cuMemSetAccess" else RawOutOfMemory
    with pytest.raises(error):
        source.map(base, 16 * MiB)
    assert driver.mappings == {} and driver.handles == {} and driver.used == 0
    assert driver.violations == []
    source.map(base, 16 * MiB)  # and the range can be mapped afterwards
    assert driver.mapped_bytes() == 16 * MiB


def test_unaligned_ranges_are_refused():
    _, source, _ = make_source()
    base = source.reserve(10 * MiB)
    with pytest.raises(ValueError, match="chunks of a reserved range"):
        source.map(base + MiB, GRANULARITY)


def test_alias_maps_the_same_handles_at_a_second_address_with_access_for_peers():
    driver, source, syncs = make_source(devices=3, peer_pairs={(1, 0), (2, 0)})
    source.add_peer(1)
    source.add_peer(2)
    base = source.reserve(64 * MiB)
    source.map(base, 4 * MiB)
    source.alias(base + 32 * MiB, base, 4 * MiB)
    assert driver.calls["cuMemCreate"] == 2 and driver.calls["cuMemMap"] == 4
    for offset in (0, GRANULARITY):
        assert driver.handle_at(base + 32 * MiB + offset) == driver.handle_at(base + offset)
        assert driver.access[base + 32 * MiB + offset] == {0, 1, 2}
    assert driver.used == source.physical_bytes() == 4 * MiB
    assert source.mapped_bytes() == driver.mapped_bytes() == 8 * MiB
    source.unmap(base, 4 * MiB)  # the old address: the pages live on at the alias
    assert "cuMemRelease" not in driver.calls and driver.used == 4 * MiB
    source.unmap(base + 32 * MiB, 4 * MiB)  # the last mapping: released
    assert driver.calls["cuMemRelease"] == 2 and driver.handles == {} and len(syncs) == 2
    source.unreserve(base)
    assert driver.reserved == {} and driver.violations == []


@pytest.mark.parametrize(
    "failing, call, error",
    [
        ("cuMemMap", 3, RawOutOfMemory),
        ("cuMemMap", 4, RawOutOfMemory),
        ("cuMemSetAccess", 2, RuntimeError),
    ],
)
def test_a_failed_alias_leaves_only_the_source_mapped(failing, call, error):
    driver, source, _ = make_source()
    base = source.reserve(64 * MiB)
    source.map(base, 4 * MiB)  # cuMemMap calls 1-2, cuMemSetAccess call 1
    before = dict(driver.mappings)
    driver.fail[failing] = call
    with pytest.raises(error):
        source.alias(base + 32 * MiB, base, 4 * MiB)
    assert driver.mappings == before and source.mapped_bytes() == 4 * MiB
    assert "cuMemRelease" not in driver.calls and driver.used == 4 * MiB
    assert driver.violations == []
    source.alias(base + 32 * MiB, base, 4 * MiB)  # and it can be done afterwards
    assert driver.mapped_bytes() == 8 * MiB


def test_alias_refuses_an_unmapped_source_or_a_mapped_destination():
    driver, source, _ = make_source()
    base = source.reserve(64 * MiB)
    source.map(base, 4 * MiB)
    with pytest.raises(AssertionError, match="not mapped"):
        source.alias(base + 32 * MiB, base + 2 * MiB, 4 * MiB)
    source.map(base + 34 * MiB, 2 * MiB)
    with pytest.raises(AssertionError, match="already mapped"):
        source.alias(base + 32 * MiB, base, 4 * MiB)
    assert driver.mapped_bytes() == 6 * MiB and driver.calls["cuMemMap"] == 3
    assert driver.violations == []


def test_self_test_proves_the_alias_shares_memory_and_leaves_nothing_behind():
    driver, source, _ = make_source()
    self_test(source, driver.fill, driver.read)
    assert driver.calls["cuMemCreate"] == 1 and driver.calls["cuMemMap"] == 2
    assert driver.mappings == {} and driver.handles == {} and driver.reserved == {}
    # A device where the second address got memory of its own would read the pattern wrong.
    own: dict[int, int] = {}
    with pytest.raises(RuntimeError, match="alias of a mapped chunk read back"):
        self_test(
            source,
            lambda ptr, byte, n: own.__setitem__(ptr, byte),
            lambda ptr, n: bytes([own.get(ptr, 0)]) * n,
        )
    assert driver.mappings == {} and driver.handles == {} and driver.reserved == {}
    assert driver.violations == []


class FakeRuntime:
    """cupy.cuda.runtime's memset / memcpy / deviceSynchronize over a FakeDriver's bytes."""

    memcpyDeviceToHost = 2  # noqa: N815 - cupy's name

    def __init__(self, driver, shares=True):
        self.driver, self.shares = driver, shares

    def memset(self, ptr, value, nbytes):
        self.driver.fill(ptr, value, nbytes)

    def memcpy(self, dst, src, nbytes, kind):
        assert kind == self.memcpyDeviceToHost
        data = (
            self.driver.read(src, nbytes) if self.shares or src % (4 * MiB) == 0 else bytes(nbytes)
        )  # shares=False: the second address reads fresh memory
        ctypes.memmove(dst, data, nbytes)

    def deviceSynchronize(self):  # noqa: N802 - cupy's name
        pass

    def memGetInfo(self):  # noqa: N802 - cupy's name
        return self.driver.capacity - self.driver.used, self.driver.capacity

    def setDevice(self, device):  # noqa: N802 - cupy's name
        self.driver.log.append(("setDevice", device))

    def free(self, ptr):
        self.driver.log.append(("free", ptr))


@pytest.fixture
def cuda_on_fake(monkeypatch):
    """cuda_memory over a fake driver and a fake cupy; returns a function that installs
    FakeDriver(**args) (None: no cuda-bindings) and the runtime's `shares` flag."""
    from gpu_tensor.backends import cuda_memory, cuda_vmm

    monkeypatch.delenv("GPU_TENSOR_FALLBACK", raising=False)  # real CUDA, not the simulator
    monkeypatch.setattr(cuda_memory, "_self_test_passed", {})

    def install(driver, shares=True):
        fake = types.SimpleNamespace(
            cuda=types.SimpleNamespace(
                runtime=FakeRuntime(driver, shares), Device=lambda _: contextlib.nullcontext()
            )
        )
        monkeypatch.setattr(cuda_memory, "cupy", lambda: fake)
        monkeypatch.setattr(cuda_vmm, "load_driver", lambda: driver)
        return cuda_memory

    return install


def test_auto_mode_uses_virtual_memory_once_the_self_test_passed(cuda_on_fake):
    driver = FakeDriver(devices=2)
    cuda_memory = cuda_on_fake(driver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=None))
        assert isinstance(a.raw, VmmSource) and driver.calls["cuMemCreate"] == 1
        cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=None))
        assert driver.calls["cuMemCreate"] == 1  # tested once per device
        forced = cuda_memory.create_allocator(1, AllocatorConfig(expandable_segments=True))
    assert isinstance(forced.raw, VmmSource) and driver.calls["cuMemCreate"] == 1  # no test
    off = cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=False))
    assert isinstance(off.raw, cuda_memory.CudaRawSource)
    assert driver.mappings == {} and driver.reserved == {} and driver.violations == []


def test_the_context_is_current_before_the_first_virtual_memory_call(cuda_on_fake):
    # cupy's Device(i) sets nothing when i is already the current device, so in a fresh
    # process no context exists yet: cudaSetDevice + cudaFree(0) create and bind it first
    driver = FakeDriver()
    cuda_memory = cuda_on_fake(driver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=None))
    assert isinstance(a.raw, VmmSource)
    first = next(i for i, call in enumerate(driver.log) if call[0] == "cuMemAddressReserve")
    assert driver.log[:2] == [("setDevice", 0), ("free", 0)] and first == 2


def test_memory_is_exportable_and_rdma_capable_where_the_device_says_so(cuda_on_fake):
    # torch's expandable segments ask for a POSIX file descriptor handle (IPC: cudaIpc*
    # does not work on cuMem memory) and set gpuDirectRDMACapable when the device has
    # CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
    posix = 1 if sys.platform.startswith("linux") else 0
    for rdma in (True, False):
        driver = FakeDriver(rdma=rdma)
        source = VmmSource(NoPlainSegments(MiB), driver, 0, lambda: None)
        source.map(source.reserve(4 * MiB), 2 * MiB)
        assert driver.created == [(2 * MiB, posix, int(rdma))]
    driver = FakeDriver(exportable=False)  # a driver that refuses the handle type
    source = VmmSource(NoPlainSegments(MiB), driver, 0, lambda: None)
    source.map(source.reserve(8 * MiB), 4 * MiB)
    assert driver.created == [(2 * MiB, 0, 0)] * 2 and driver.violations == []


def test_auto_mode_warns_once_and_uses_cudamalloc_when_the_self_test_fails(cuda_on_fake):
    driver = FakeDriver()
    cuda_memory = cuda_on_fake(driver, shares=False)
    with pytest.warns(
        RuntimeWarning,
        match="expandable_segments.*self-test on cuda:0.*"
        "expandable_segments:False.*expandable_segments:True",
    ):
        a = cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=None))
    assert type(a.raw) is cuda_memory.CudaRawSource
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per device: no second warning, no second test
        again = cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=None))
    assert type(again.raw) is cuda_memory.CudaRawSource and driver.calls["cuMemCreate"] == 1
    assert driver.mappings == {} and driver.handles == {} and driver.reserved == {}


@pytest.mark.parametrize("driver", [None, FakeDriver(vmm=False)], ids=["no-bindings", "no-vmm"])
def test_auto_mode_is_silent_where_virtual_memory_is_simply_missing(cuda_on_fake, driver):
    cuda_memory = cuda_on_fake(driver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = cuda_memory.create_allocator(0, AllocatorConfig(expandable_segments=None))
    assert type(a.raw) is cuda_memory.CudaRawSource


def _chunks(spans):
    return [at for ptr, size in spans for at in range(ptr, ptr + size, GRANULARITY)]


def _check_step(a, driver):
    """The driver maps each chunk of the allocator's runs and of its restitched pages' old
    addresses once, nothing else; an old address shares its handle with a live run; the
    physical memory held is what the allocator counts as reserved."""
    assert driver.violations == []
    runs = _chunks((s.ptr, s.size) for s in a._segments.values() if s.expandable)
    old = _chunks(span for res in a._ranges for span in res.aliases.items())
    handle_at = {
        at: h
        for ptr, (size, h) in driver.mappings.items()
        for at in range(ptr, ptr + size, GRANULARITY)
    }  # every chunk's handle
    assert sorted(runs + old) == sorted(handle_at)
    assert {handle_at[at] for at in old} <= {handle_at[at] for at in runs}
    assert driver.used == a.stats()["reserved_bytes.all.current"] == a.raw.physical_bytes()
    assert a.raw.mapped_bytes() == driver.mapped_bytes()
    verify.check(a)


def _freed_everything(a, driver, live):
    for block in live:
        a.free(block)
    a.empty_cache()
    _check_step(a, driver)
    assert driver.mappings == {} and driver.handles == {} and driver.reserved == {}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_allocator_over_vmm_keeps_driver_and_stats_in_step(seed):
    rng = random.Random(seed)
    driver, source, syncs = make_source(capacity=160 * MiB)
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    live, ooms = [], 0
    for _ in range(400):
        r = rng.random()
        if r < 0.5:
            size = rng.choice([700, 64 * 1024, MiB, 3 * MiB, 9 * MiB, 30 * MiB])
            try:
                live.append(a.malloc(size + rng.randrange(4096), rng.choice([0, 0, 1])))
            except OutOfMemoryError:
                ooms += 1
        elif r < 0.95 and live:
            a.free(live.pop(rng.randrange(len(live))))
        else:
            a.empty_cache()
        _check_step(a, driver)
    assert all(s.expandable for s in a.segments())
    _freed_everything(a, driver, live)
    assert driver.calls["cuMemUnmap"] == driver.calls["cuMemMap"] and syncs
    assert ooms > 0  # the capacity was reached: map failures were handled


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_restitching_over_vmm_keeps_driver_and_stats_in_step(seed):
    """Large blocks on one stream, some freed in the middle, then a request no free block
    fits: its pages come from the holes (cuMemMap of their handles at the end, no
    cuMemCreate for them), checked after every step."""
    rng = random.Random(seed)
    driver, source, _ = make_source(capacity=1024 * MiB)
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    live = []
    for step in range(60):
        for _ in range(rng.randrange(2, 5)):
            size = rng.choice([3, 5, 9, 17, 30]) * MiB + rng.randrange(MiB)
            live.append(a.malloc(size))
            _check_step(a, driver)
        for block in rng.sample(live[:-1], len(live) // 2):  # holes, not the end
            live.remove(block)
            a.free(block)
            _check_step(a, driver)
        holes = [b.size for b in a._large if b.segment.expandable]
        big = a.malloc(min(max(holes, default=0) + 4 * MiB, 96 * MiB))  # fits no free block
        _check_step(a, driver)
        if rng.random() < 0.7:  # a hole at the end, or in the middle once more follow
            a.free(big)
            _check_step(a, driver)
        else:
            live.append(big)
        if step % 20 == 19:
            a.empty_cache()  # old addresses unmapped, then free pages
            _check_step(a, driver)
            assert not any(res.aliases for res in a._ranges)
        while len(live) > 12:
            a.free(live.pop(rng.randrange(len(live))))
    assert driver.calls["cuMemMap"] > driver.calls["cuMemCreate"]  # restitched pages
    _freed_everything(a, driver, live)
    assert driver.calls["cuMemRelease"] == driver.calls["cuMemCreate"]


def test_a_hole_serves_a_bigger_request_without_new_memory_for_its_pages():
    driver, source, syncs = make_source()
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    first, hole, last = (a.malloc(40 * MiB) for _ in range(3))  # two 20 MiB pages each
    assert driver.calls["cuMemCreate"] == 6  # one handle per large page, not per 2 MiB
    a.free(hole)
    big = a.malloc(60 * MiB)  # only one page of it is new memory
    assert driver.calls["cuMemCreate"] == 7
    assert driver.used == 140 * MiB and syncs == []  # no device sync to restitch
    assert {driver.handle_at(at) for at in (hole.ptr, hole.ptr + 20 * MiB)} <= {
        driver.handle_at(at) for at in range(big.ptr, big.ptr + 60 * MiB, 20 * MiB)
    }
    _check_step(a, driver)
    _freed_everything(a, driver, [first, last, big])
    # the hole's old address and three runs of free pages went back in one unmap_many
    assert len(syncs) == 1 and driver.calls["cuMemUnmap"] == driver.calls["cuMemMap"]


def test_pages_of_both_pools_restitch_whole_handles():
    # a large request takes whole 20 MiB pages of free small-pool memory (2 MiB handles,
    # aliased one by one, never a cut 20 MiB handle), and a small one never takes part of
    # a large page
    driver, source, _ = make_source(capacity=512 * MiB)
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    small = [a.malloc(MiB) for _ in range(48)]  # 24 small pages of 2 MiB
    big = a.malloc(40 * MiB)  # 2 large pages
    for block in [*small, big]:
        a.free(block)
    again = a.malloc(MiB)  # the small pool's first page: free pages from 2 MiB on
    created = driver.calls["cuMemCreate"]
    other = a.malloc(100 * MiB)  # 40 MiB large, [20, 40) MiB of the small range, 40 new
    assert driver.calls["cuMemCreate"] - created == 2
    inside = [
        size
        for at, (size, _) in driver.mappings.items()
        if other.ptr <= at < other.ptr + other.size
    ]
    assert sorted(inside) == [2 * MiB] * 10 + [20 * MiB] * 4
    _check_step(a, driver)
    _freed_everything(a, driver, [again, other])


def test_snapshot_reports_expandable_segments_like_torch():
    driver, source, _ = make_source()
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    block = a.malloc(5 * MiB)
    snap = a.snapshot()
    (segment,) = snap["segments"]
    assert segment["is_expandable"] is True and segment["segment_type"] == "large"
    assert segment["total_size"] == driver.mapped_bytes()
    assert snap["allocator_settings"]["expandable_segments"] is True
    a.free(block)
    a.empty_cache()
    assert a.snapshot()["segments"] == [] and driver.mappings == {}


def test_cuda_backend_maps_expandable_segments_through_the_driver(monkeypatch):
    pytest.importorskip("cupy")
    from gpu_tensor.backends import cuda_memory, cuda_vmm

    monkeypatch.delenv("GPU_TENSOR_FALLBACK", raising=False)  # real CUDA's kind, not emulated
    monkeypatch.setattr(cuda_vmm, "load_driver", lambda: FakeDriver(devices=2, peer_pairs={(1, 0)}))
    monkeypatch.setattr(cuda_memory, "_make_context_current", lambda index: None)  # no GPU
    source = cuda_memory._vmm_source(cuda_memory.CudaRawSource(0), 0)
    assert isinstance(source, VmmSource) and source.peers == []  # peers only when asked
    assert source.granularity == GRANULARITY and source.base.device_index == 0
    monkeypatch.setattr(cuda_vmm, "load_driver", lambda: None)  # no cuda-bindings
    assert cuda_memory._vmm_source(cuda_memory.CudaRawSource(0), 0) is None


def test_a_peer_copy_grants_both_devices_access_once(monkeypatch, cuda_on_fake):
    driver = FakeDriver(devices=3, peer_pairs={(0, 1), (1, 0)})
    cuda_memory = cuda_on_fake(driver)
    monkeypatch.setattr(cuda_memory, "_peers_of", {})
    config = AllocatorConfig(expandable_segments=True)
    allocators = {0: cuda_memory.create_allocator(0, config)}
    monkeypatch.setattr(cuda_memory.registry, "find", allocators.get)
    block = allocators[0].malloc(4 * MiB)
    assert driver.access[block.ptr] == {0}  # nobody else by default
    cuda_memory.grant_peer_access(1, 0)  # a copy between cuda:1 and cuda:0
    assert driver.access[block.ptr] == {0, 1} and allocators[0].raw.peers == [1]
    calls = driver.calls.copy()
    cuda_memory.grant_peer_access(0, 1)  # once per pair
    assert driver.calls == calls
    allocators[1] = cuda_memory.create_allocator(1, config)  # made later: granted too
    assert allocators[1].raw.peers == [0]
    cuda_memory.grant_peer_access(2, 0)  # the driver says cuda:2 cannot: nothing changes
    assert allocators[0].raw.peers == [1] and driver.violations == []


@requires_gpu_hardware
def test_restitching_on_a_real_gpu_shares_pages_and_keeps_live_data():
    """On a GPU, through cuda-bindings: the self-test passes, a restitched request reads
    and writes its own bytes, and the live blocks around the hole keep theirs."""
    from gpu_tensor.backends import cuda_memory, cuda_vmm

    if not cuda_vmm.available(cuda_vmm.load_driver(), 0):
        pytest.skip("needs NVIDIA's cuda-bindings and a device with virtual memory management")
    source = cuda_memory._vmm_source(cuda_memory.CudaRawSource(0), 0)
    self_test(source, cuda_memory._fill, cuda_memory._read)
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    first, hole, last = (a.malloc(16 * MiB) for _ in range(3))
    for block, byte in ((first, 1), (hole, 2), (last, 3)):
        cuda_memory._fill(block.ptr, byte, block.size)
    a.free(hole)
    big = a.malloc(24 * MiB)
    assert source.physical_bytes() < source.mapped_bytes()  # the hole's pages, restitched
    cuda_memory._fill(big.ptr, 7, 24 * MiB)
    for block, byte in ((first, 1), (last, 3), (big, 7)):
        assert bytes(cuda_memory._read(block.ptr, block.size)).count(byte) == block.size
    for block in (first, last, big):
        a.free(block)
    a.empty_cache()
    assert source.mapped_bytes() == source.physical_bytes() == 0
