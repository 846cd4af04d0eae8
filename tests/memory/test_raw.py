"""Raw sources: real host memory with a capacity, and fault injection."""

from __future__ import annotations

import mmap
import os
import sys

import pytest

from gpu_tensor.memory.raw import (
    FaultInjectingRawSource,
    HostRawSource,
    RawOutOfMemory,
    host_array,
    map_host_pages,
)

MiB = 1 << 20


def test_host_memory_is_real_aligned_and_capped():
    src = HostRawSource(8 * MiB)
    p = src.alloc(3 * MiB)
    q = src.alloc(4 * MiB)
    assert p % 4096 == 0 and q % 4096 == 0  # at least cudaMalloc's 256 B alignment
    a, b = host_array(p, 3 * MiB), host_array(q, 4 * MiB)
    a[:] = 1
    b[:] = 2
    assert int(a.sum()) == 3 * MiB and int(b[:10].sum()) == 20  # no overlap
    assert src.mem_get_info() == (1 * MiB, 8 * MiB)
    with pytest.raises(RawOutOfMemory, match="emulated device full"):
        src.alloc(2 * MiB)
    del a, b
    src.free(p)
    assert src.outstanding() == {q: 4 * MiB}
    with pytest.raises(ValueError, match="did not allocate"):
        src.free(p)
    src.free(q)
    assert src.mem_get_info() == (8 * MiB, 8 * MiB) and src.num_allocs == src.num_frees == 2


def test_fault_injection_fails_chosen_calls():
    src = FaultInjectingRawSource(HostRawSource(8 * MiB), fail_at={1})
    p = src.alloc(MiB)
    with pytest.raises(RawOutOfMemory, match="#1"):
        src.alloc(MiB)
    q = src.alloc(MiB)
    assert src.calls == 3 and src.failures == 1 and len(src.outstanding()) == 2
    src.free(p)
    src.free(q)
    odd = FaultInjectingRawSource(HostRawSource(8 * MiB), fail_at=lambda i: i % 2 == 1)
    odd.free(odd.alloc(MiB))
    with pytest.raises(RawOutOfMemory):
        odd.alloc(MiB)


def _mapping_perms(ptr: int) -> str | None:
    """The permission field ('rw-p': private, 'rw-s': shared) of the mapping holding ptr."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if lo <= ptr < hi:
                return perms
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_host_pages_are_private_anonymous():
    # Shared (shmem) pages get no transparent huge pages and count as shmem in cgroups.
    src = HostRawSource(8 * MiB)
    p = src.alloc(2 * MiB)
    mapping = map_host_pages(MiB)
    try:
        assert _mapping_perms(p) == "rw-p" and _mapping_perms(mapping.ptr) == "rw-p"
        shared = map_host_pages(MiB, mmap.MAP_SHARED)  # explicit flags still win
        assert _mapping_perms(shared.ptr) == "rw-s"
        shared.close()
    finally:
        mapping.close()
        src.free(p)


def _thp_eligible(addr: int) -> str | None:
    """The THPeligible field of the mapping that holds `addr` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and line.startswith("THPeligible:"):
                return line.split()[1]
    return None


def test_reservations_ask_for_huge_pages():
    """A reservation's pages are mapped and restitched in whole 2 MiB pages, so it asks for
    transparent huge pages: a restitched page then costs one first-touch fault, not 512."""
    path = "/sys/kernel/mm/transparent_hugepage/enabled"
    if not os.path.exists(path) or "[never]" in open(path).read():
        pytest.skip("the host has no transparent huge pages")
    src = HostRawSource(64 * MiB)
    base = src.reserve(16 * MiB)
    try:
        assert _thp_eligible(base) == "1"
    finally:
        src.unreserve(base)
