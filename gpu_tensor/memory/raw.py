"""Raw memory sources: the mechanism the caching allocator is given.

A raw source has three methods, the whole protocol:

- `alloc(nbytes) -> int`: a pointer to `nbytes` of fresh memory, or raise
  `RawOutOfMemory` (any other exception is a real error and propagates);
- `free(ptr)`: give back a pointer `alloc` returned;
- `mem_get_info() -> (free_bytes, total_bytes)`, like `cudaMemGetInfo`.

Sources that can map pages into reserved address space also have `reserve(nbytes)
-> ptr`, `map(ptr, nbytes)`, `unmap(ptr, nbytes)` and `unreserve(ptr)` (CUDA's
cuMemAddressReserve / cuMemCreate+cuMemMap / cuMemUnmap / cuMemAddressFree), and may
have `alias(dst, src, nbytes)` (cuMemMap of pages already mapped at `src`) and
`unmap_many(spans)`; the allocator's expandable segments use them (expandable.py).

`HostRawSource` backs the emulated cuda device and the tests with real host
memory: each allocation is a private anonymous mmap, so pointers are page aligned
(cudaMalloc promises 256 B), pages are committed only when touched, and
`numpy` can wrap them (`host_array`). `FaultInjectingRawSource` fails chosen
calls so tests can reach every OOM path.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading

import numpy as np

__all__ = [
    "RawOutOfMemory",
    "HostRawSource",
    "FaultInjectingRawSource",
    "HostMapping",
    "map_host_pages",
    "host_array",
]


# Private anonymous pages for every host source. mmap.mmap(-1, n) defaults to MAP_SHARED,
# i.e. shmem-backed pages: no transparent huge pages, and cgroups count them as shmem.
_PRIVATE_ANONYMOUS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
# Address space only, no swap reservation: a reservation commits nothing until touched.
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)


class RawOutOfMemory(MemoryError):
    """The raw source has no memory for this request (cudaErrorMemoryAllocation)."""


class HostMapping:
    """One anonymous mmap and the address it is handed out at: the record every source of
    host pages keeps per pointer (HostRawSource here, the pinned pool's RegisterSource in
    backends/cuda_pinned.py). A buffer export pins the address while the mapping is open."""

    __slots__ = ("region", "ptr", "_exporter")

    def __init__(self, nbytes: int, flags: int = _PRIVATE_ANONYMOUS):
        self.region = mmap.mmap(-1, nbytes, flags=flags)
        self._exporter = ctypes.c_char.from_buffer(self.region)
        self.ptr = ctypes.addressof(self._exporter)

    def __len__(self) -> int:
        return len(self.region)

    def close(self) -> None:
        self._exporter = None  # drop the buffer export first: mmap refuses to close while exported
        self.region.close()


def map_host_pages(nbytes: int, flags: int = _PRIVATE_ANONYMOUS) -> HostMapping:
    """A new `HostMapping` of `nbytes` (private anonymous pages unless `flags` say otherwise);
    RawOutOfMemory when the host refuses.

    The trap: private pages are copied, not shared, in a forked child (as device memory is
    not shared with one either)."""
    try:
        return HostMapping(nbytes, flags)
    except (OSError, ValueError) as exc:  # the host itself is out of memory
        raise RawOutOfMemory(f"host mmap of {nbytes} bytes failed: {exc}") from exc


def pop_mapping(maps: dict[int, HostMapping], ptr: int, what: str) -> HostMapping:
    """`maps.pop(ptr)` for a source's free(); ValueError naming the source (`what`: raw,
    pinned) when it never handed out `ptr`."""
    try:
        return maps.pop(ptr)
    except KeyError:
        raise ValueError(f"{what} free of {ptr:#x}, which this source did not allocate") from None


def _huge_pages(mapping: HostMapping) -> None:
    """Ask for transparent huge pages over a reservation (Linux's MADV_HUGEPAGE; a no-op
    where the host has none). Its pages are mapped, restitched and given back in whole 2 MiB
    pages (`granularity`), and a restitch (`alias`) moves a page to addresses never touched
    before: in 4 KiB pages, each one is a fault when first written (about 2,600 a step, some
    8 ms, on profiling/bench_train.py's CNN after another model ran in the process); in huge
    pages, one fault per 2 MiB. What the allocator sees is unchanged: the same addresses,
    calls and stats."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        try:
            mapping.region.madvise(advice)
        except OSError:  # a kernel without transparent huge pages: 4 KiB pages, as before
            pass


class HostRawSource:
    """Real host memory with a device-like capacity limit."""

    def __init__(self, capacity_bytes: int):
        if capacity_bytes <= 0:
            raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes}")
        self.capacity = int(capacity_bytes)
        self.used = 0
        self.num_allocs = 0
        self.num_frees = 0
        self._maps: dict[int, HostMapping] = {}
        # reserve(): base -> [HostMapping, mapped bytes]
        self._reservations: dict[int, list] = {}
        self._page_of: dict[int, int] = {}  # mapped page address -> physical page id
        self._refs: dict[int, int] = {}  # physical page id -> addresses it is mapped at
        self._next_page = 0
        self._lock = threading.Lock()  # the allocator locks too, but tests share sources

    def alloc(self, nbytes: int) -> int:
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ValueError(f"raw alloc of {nbytes} bytes; the allocator never asks for that")
        with self._lock:
            if self.used + nbytes > self.capacity:
                raise RawOutOfMemory(
                    f"emulated device full: {nbytes} requested, "
                    f"{self.capacity - self.used} of {self.capacity} free"
                )
            mapping = map_host_pages(nbytes)
            self._maps[mapping.ptr] = mapping
            self.used += nbytes
            self.num_allocs += 1
            return mapping.ptr

    def free(self, ptr: int) -> None:
        with self._lock:
            mapping = pop_mapping(self._maps, ptr, "raw")
            self.used -= len(mapping)
            self.num_frees += 1
        mapping.close()

    def mem_get_info(self) -> tuple[int, int]:
        return self.capacity - self.used, self.capacity

    def outstanding(self) -> dict[int, int]:
        """ptr -> bytes held, for every allocation and reservation not yet given back (a
        reservation counts its mapped bytes, aliases included). For tests and leak checks."""
        with self._lock:
            out = {ptr: len(mapping) for ptr, mapping in self._maps.items()}
            out.update({base: r[1] for base, r in self._reservations.items()})
            return out

    # -- address reservations (expandable segments) -----------------------------------------
    # As CUDA's virtual memory: physical pages (GRANULE bytes, the device's granularity)
    # mapped into reserved address ranges, a page possibly at several addresses at once
    # (`alias`); a page is given back when its last mapping goes. Host memory cannot be
    # shared between two addresses of one mmap, so an alias gives the source range's host
    # pages back and the destination's are touched fresh: the allocator only aliases free
    # memory, whose contents nobody reads.
    granularity = 2 << 20

    def reserve(self, nbytes: int) -> int:
        """Address space for `nbytes`; nothing counts against capacity until mapped."""
        mapping = map_host_pages(nbytes, _PRIVATE_ANONYMOUS | _MAP_NORESERVE)
        _huge_pages(mapping)
        with self._lock:
            self._reservations[mapping.ptr] = [mapping, 0]
        return mapping.ptr

    def _reservation(self, ptr: int, nbytes: int):
        if nbytes <= 0 or ptr % self.granularity or nbytes % self.granularity:
            raise ValueError(f"{ptr:#x}+{nbytes}: not whole {self.granularity}-byte pages")
        for base, r in self._reservations.items():
            if base <= ptr and ptr + nbytes <= base + len(r[0]):
                return base, r
        raise ValueError(f"{ptr:#x}+{nbytes} is not inside a reservation of this source")

    def _pages(self, ptr: int, nbytes: int, mapped: bool) -> range:
        pages = range(ptr, ptr + nbytes, self.granularity)
        wrong = [at for at in pages if (at in self._page_of) != mapped]
        if wrong:
            raise ValueError(f"page {wrong[0]:#x} is {'not ' if mapped else 'already '}mapped")
        return pages

    def map(self, ptr: int, nbytes: int, handle_size: int | None = None) -> None:
        """New physical pages at [ptr, ptr + nbytes) (`handle_size`: what a GPU would
        allocate as one handle; host pages are granularity-sized whatever it is)."""
        with self._lock:
            _, r = self._reservation(ptr, nbytes)
            pages = self._pages(ptr, nbytes, mapped=False)
            if self.used + nbytes > self.capacity:
                raise RawOutOfMemory(
                    f"emulated device full: {nbytes} to map, "
                    f"{self.capacity - self.used} of {self.capacity} free"
                )
            for at in pages:
                self._page_of[at] = physical = self._next_page
                self._next_page += 1
                self._refs[physical] = 1
            self.used += nbytes
            r[1] += nbytes
            self.num_allocs += 1

    def alias(self, dst: int, src: int, nbytes: int) -> None:
        """Map the pages already mapped at [src, src + nbytes) at `dst` too (no new memory)."""
        with self._lock:
            base_src, r_src = self._reservation(src, nbytes)
            _, r = self._reservation(dst, nbytes)
            pages = self._pages(dst, nbytes, mapped=False)
            sources = self._pages(src, nbytes, mapped=True)
            for at, from_at in zip(pages, sources, strict=True):
                physical = self._page_of[at] = self._page_of[from_at]
                self._refs[physical] += 1
            r[1] += nbytes
            r_src[0].region.madvise(mmap.MADV_DONTNEED, src - base_src, nbytes)

    def unmap(self, ptr: int, nbytes: int) -> None:
        """Drop the mappings of [ptr, ptr + nbytes); a page with no mapping left is freed."""
        with self._lock:
            base, r = self._reservation(ptr, nbytes)
            freed = 0
            for at in self._pages(ptr, nbytes, mapped=True):
                physical = self._page_of.pop(at)
                self._refs[physical] -= 1
                if not self._refs[physical]:
                    del self._refs[physical]
                    freed += self.granularity
            r[0].region.madvise(mmap.MADV_DONTNEED, ptr - base, nbytes)  # pages back to the OS
            self.used -= freed
            r[1] -= nbytes
            self.num_frees += 1

    def unreserve(self, base: int) -> None:
        with self._lock:
            mapping, mapped = self._reservations[base]
            if mapped:
                raise ValueError(f"unreserve of {base:#x}: {mapped} bytes still mapped")
            del self._reservations[base]
        mapping.close()


def host_array(ptr: int, nbytes: int) -> np.ndarray:
    """A writable uint8 numpy array over `nbytes` at host address `ptr`.

    The trap: the array does not keep the memory alive. Keep the allocator block
    (the storage) alive for as long as the array is used.
    """
    if nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    buf = (ctypes.c_char * nbytes).from_address(ptr)
    return np.frombuffer(buf, dtype=np.uint8)


class FaultInjectingRawSource:
    """Wraps a source; raw call number i (0-based, `alloc`, `map` and `alias` counted together)
    raises RawOutOfMemory when i is in `fail_at` (a container of ints, or i -> bool)."""

    def __init__(self, inner, fail_at=()):
        self.inner = inner
        self.fail_at = fail_at
        self.calls = 0
        self.failures = 0

    def _should_fail(self, i: int) -> bool:
        return self.fail_at(i) if callable(self.fail_at) else i in self.fail_at

    def alloc(self, nbytes: int) -> int:
        i = self.calls
        self.calls += 1
        if self._should_fail(i):
            self.failures += 1
            raise RawOutOfMemory(f"injected failure at raw alloc #{i} ({nbytes} bytes)")
        return self.inner.alloc(nbytes)

    def free(self, ptr: int) -> None:
        self.inner.free(ptr)

    def map(self, ptr: int, nbytes: int, *handle_size) -> None:
        i = self.calls
        self.calls += 1
        if self._should_fail(i):
            self.failures += 1
            raise RawOutOfMemory(f"injected failure at raw map #{i} ({nbytes} bytes)")
        self.inner.map(ptr, nbytes, *handle_size)

    def alias(self, dst: int, src: int, nbytes: int) -> None:
        i = self.calls
        self.calls += 1
        if self._should_fail(i):
            self.failures += 1
            raise RawOutOfMemory(f"injected failure at raw alias #{i} ({nbytes} bytes)")
        self.inner.alias(dst, src, nbytes)

    def mem_get_info(self) -> tuple[int, int]:
        return self.inner.mem_get_info()

    def __getattr__(self, name):  # outstanding(), capacity, ... of the wrapped source
        return getattr(self.inner, name)
