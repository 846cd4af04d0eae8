"""CUDA virtual memory (cuMemCreate / cuMemMap) for expandable segments.

`VmmSource` wraps a device's plain raw source (cudaMalloc, backends/cuda_memory.py) and
adds the five calls memory/expandable.py needs, through NVIDIA's `cuda-bindings`
(`cuda.bindings.driver`, an optional dependency of the cuda12/cuda13 extras; cupy's
bindings have no virtual-memory calls):

- `reserve(n)`: cuMemAddressReserve of `n` bytes of address space (no memory);
- `map(ptr, n, handle_size)`: one cuMemCreate + cuMemMap per handle (the granularity by
  default; the policy asks 20 MiB for the large pool, as torch does: mapping cost grows
  with the number of handles), then one cuMemSetAccess for the device and the peers
  given access so far;
- `alias(dst, src, n)`: cuMemMap of the handles already mapped at `src` at `dst` too
  (no cuMemCreate, no new memory), then cuMemSetAccess on `dst`: the policy restitches
  free pages at the end of a reservation this way, without a device sync;
- `unmap(ptr, n)`: a device synchronize (cuMemUnmap does not wait for work in flight
  on the memory, unlike cudaFree), then cuMemUnmap per handle mapping, and cuMemRelease
  of a handle once its last mapping is gone (after `alias` a handle has two);
- `unreserve(ptr)`: cuMemAddressFree, once nothing in the range is mapped;
- `add_peer(device)`: access for another device, to what is mapped and will be (torch
  grants peers only when peer access is enabled, never by default: every peer in every
  cuMemSetAccess would update every GPU's page tables on every map).

A handle is mapped, aliased and unmapped whole (cuMemMap's offset must be 0, cuMemUnmap
takes whole mappings): the policy's pages are whole handles (`granularity` is read by
expandable.py). A failure part-way through `map` or `alias` undoes what that call
mapped, so the allocator's state never disagrees with the driver's (torch #188008).

The memory is allocated exportable (a POSIX file descriptor handle on Linux) and
GPUDirect-RDMA capable where the device supports that with virtual memory, as torch's.

`self_test` proves on a device that mapping and aliasing work (cuda_memory.py runs it
before turning expandable segments on by itself).

`driver` is injected: `cuda.bindings.driver` on a GPU, a fake with the same function
names, argument order and (err, value...) tuple returns in the tests.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from bisect import bisect_left, bisect_right, insort

from ..memory.raw import RawOutOfMemory

__all__ = ["VmmSource", "available", "load_driver", "self_test"]

_SUCCESS = 0  # CUDA_SUCCESS
_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY
_NOT_PERMITTED = 800  # CUDA_ERROR_NOT_PERMITTED
_NOT_SUPPORTED = 801  # CUDA_ERROR_NOT_SUPPORTED


def load_driver():
    """`cuda.bindings.driver`, or None when cuda-bindings is not installed."""
    if (
        importlib.util.find_spec("cuda") is None
        or importlib.util.find_spec("cuda.bindings") is None
    ):
        return None
    return importlib.import_module("cuda.bindings.driver")


def available(driver, device_index: int) -> bool:
    """Whether `device_index` supports virtual memory management through `driver`."""
    if driver is None:
        return False
    try:
        if int(driver.cuInit(0)[0]) != _SUCCESS:
            return False
        err, dev = driver.cuDeviceGet(device_index)
        if int(err) != _SUCCESS:
            return False
        attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        err, supported = driver.cuDeviceGetAttribute(attr, dev)
    except Exception:  # noqa: BLE001 - no driver library (no GPU): not available
        return False
    return int(err) == _SUCCESS and bool(supported)


class VmmSource:
    """A raw source with cudaMalloc segments (`base`) and virtual-memory pages (`driver`)."""

    # The large pool's page and handle (memory/expandable.py): torch's 20 MiB, because the
    # cost of mapping grows with the number of handles (a whole number of granules; the
    # policy rounds it up to the device's granularity)
    large_page = 20 << 20

    def __init__(
        self, base, driver, device_index: int, synchronize, activate=contextlib.nullcontext
    ):
        """`base`: alloc/free/mem_get_info for plain segments. `synchronize()`: waits for
        the device (before unmapping). `activate()`: a context that makes the device's
        context current around driver calls (frees arrive from finalisers while another
        device is current). Only this device has access until `add_peer`."""
        self.base = base
        self.driver = driver
        self.device_index = int(device_index)
        self._synchronize = synchronize
        self._activate = activate
        self._dev = self._check(driver.cuDeviceGet(self.device_index), "cuDeviceGet")
        self._prop = self._allocation_prop()
        self.granularity = int(
            self._check(
                driver.cuMemGetAllocationGranularity(
                    self._prop,
                    driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                ),
                "cuMemGetAllocationGranularity",
            )
        )
        self.peers: list[int] = []
        self._access = [self._access_desc(self.device_index)]
        self._reserved: dict[int, int] = {}  # base -> reserved bytes
        # mapping start -> (physical handle, bytes): one cuMemMap each; `_starts` sorted
        self._maps: dict[int, tuple[object, int]] = {}
        self._starts: list[int] = []
        # int(handle) -> [addresses mapping it, bytes] (cuda.bindings handles hash by identity)
        self._refs: dict[int, list] = {}
        self._mapped = self._physical = 0

    # ------------------------------------------------------------ plain segments
    def alloc(self, nbytes: int) -> int:
        return self.base.alloc(nbytes)

    def free(self, ptr: int) -> None:
        self.base.free(ptr)

    def mem_get_info(self) -> tuple[int, int]:
        return self.base.mem_get_info()

    # ------------------------------------------------------------ virtual memory
    def reserve(self, nbytes: int) -> int:
        nbytes = self._round(nbytes)
        with self._activate():
            ptr = int(
                self._check(
                    self.driver.cuMemAddressReserve(nbytes, self.granularity, 0, 0),
                    "cuMemAddressReserve",
                )
            )
        self._reserved[ptr] = nbytes
        return ptr

    def map(self, ptr: int, nbytes: int, handle_size: int | None = None) -> None:
        """Back [ptr, ptr + nbytes) with new physical memory, one cuMemCreate + cuMemMap
        per `handle_size` bytes (default: the granularity; a multiple of it). Each handle
        can only be unmapped or aliased whole. RawOutOfMemory when the device has none
        (nothing stays mapped from this call then)."""
        size = self.granularity if handle_size is None else int(handle_size)
        self._require_chunks(ptr, nbytes, "map")
        if size <= 0 or size % self.granularity or nbytes % size:
            raise ValueError(
                f"map of {nbytes} bytes in handles of {size}: not whole handles "
                f"of a multiple of {self.granularity} bytes"
            )
        if self._overlapping(ptr, nbytes):
            raise AssertionError(f"map: {ptr:#x}+{nbytes} is already mapped")
        with self._activate():
            self._map(ptr, nbytes, size)

    def _map(self, ptr: int, nbytes: int, size: int) -> None:
        driver = self.driver
        done: list[int] = []
        try:
            for at in range(ptr, ptr + nbytes, size):
                handle = self._create(size)
                try:
                    self._check(driver.cuMemMap(at, size, 0, handle, 0), "cuMemMap")
                except BaseException:
                    driver.cuMemRelease(handle)
                    raise
                self._refs[int(handle)] = [0, size]
                self._physical += size
                self._add(at, handle, size)
                done.append(at)
            self._set_access(ptr, nbytes)
        except BaseException:
            self._unmap_starts(done)
            raise

    def alias(self, dst: int, src: int, nbytes: int) -> None:
        """Map the physical handles mapped now at [src, src + nbytes) at [dst, dst + nbytes)
        too (no new memory; both addresses then read and write the same bytes). The range
        must hold whole handles. RawOutOfMemory when the driver has no room for the
        mapping (nothing stays mapped from this call then)."""
        self._require_chunks(dst, nbytes, "alias")
        self._require_chunks(src, nbytes, "alias")
        sources = self._spanned(src, nbytes, "alias: source")  # refused before any driver call
        if self._overlapping(dst, nbytes):
            raise AssertionError(f"alias: {dst:#x}+{nbytes} already mapped")
        with self._activate():
            done: list[int] = []
            try:
                for start in sources:
                    handle, size = self._maps[start]
                    at = dst + (start - src)
                    self._check(self.driver.cuMemMap(at, size, 0, handle, 0), "cuMemMap")
                    self._add(at, handle, size)
                    done.append(at)
                self._set_access(dst, nbytes)  # access belongs to the address, not the memory
            except BaseException:
                self._unmap_starts(done)  # releases nothing: the source still maps each one
                raise

    def unmap(self, ptr: int, nbytes: int) -> None:
        self.unmap_many([(ptr, nbytes)])

    def unmap_many(self, spans) -> None:
        """unmap of every (ptr, nbytes) in `spans` (each whole handle mappings), in order,
        after one device synchronize (the allocator's shrink gives back many at once)."""
        starts = []
        for ptr, nbytes in spans:
            self._require_chunks(ptr, nbytes, "unmap")
            starts += self._spanned(ptr, nbytes, "unmap")
        if not starts:
            return
        with self._activate():
            self._synchronize()  # cuMemUnmap does not wait for kernels still using the pages
            self._unmap_starts(starts)

    def unreserve(self, ptr: int) -> None:
        size = self._reserved[ptr]
        inside = self._overlapping(ptr, size)
        if inside:
            raise AssertionError(f"unreserve of {ptr:#x}: {len(inside)} mappings still mapped")
        with self._activate():
            self._check(self.driver.cuMemAddressFree(ptr, size), "cuMemAddressFree")
        del self._reserved[ptr]

    def add_peer(self, device: int) -> bool:
        """Give `device` read/write access to every page mapped now and later (torch's
        ExpandableSegment::addPeer, used when peer access between two devices is enabled):
        one cuMemSetAccess per run of adjacent mappings, with one descriptor. False when
        the driver says `device` cannot access this one (nothing changes then)."""
        device = int(device)
        if device == self.device_index or device in self.peers:
            return True
        driver = self.driver
        peer = self._check(driver.cuDeviceGet(device), "cuDeviceGet")
        if not self._check(driver.cuDeviceCanAccessPeer(peer, self._dev), "cuDeviceCanAccessPeer"):
            return False
        desc = self._access_desc(device)
        with self._activate():
            for ptr, nbytes in self._runs():
                self._check(driver.cuMemSetAccess(ptr, nbytes, [desc], 1), "cuMemSetAccess")
        self.peers.append(device)
        self._access.append(desc)
        return True

    def mapped_bytes(self) -> int:
        """Bytes of address space mapped: a handle aliased at two addresses counts twice."""
        return self._mapped

    def physical_bytes(self) -> int:
        """Bytes of physical memory held (cuMemCreate'd and not yet released)."""
        return self._physical

    # ------------------------------------------------------------ helpers
    def _create(self, size: int):
        """cuMemCreate of `size` bytes. A driver that refuses the exportable handle type
        (CUDA_ERROR_NOT_SUPPORTED / NOT_PERMITTED: some containers and virtualised GPUs)
        gets the plain allocation from then on, as before this handle type was asked."""
        driver = self.driver
        result = driver.cuMemCreate(size, self._prop, 0)
        if int(result[0]) in (_NOT_PERMITTED, _NOT_SUPPORTED) and self._exportable:
            self._exportable = False
            self._prop.requestedHandleTypes = (
                driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
            )
            result = driver.cuMemCreate(size, self._prop, 0)
        return self._check(result, "cuMemCreate")

    def _add(self, at: int, handle, size: int) -> None:
        insort(self._starts, at)
        self._maps[at] = (handle, size)
        self._refs[int(handle)][0] += 1
        self._mapped += size

    def _overlapping(self, ptr: int, nbytes: int) -> list[int]:
        """Starts of the mappings that share a byte with [ptr, ptr + nbytes)."""
        starts = self._starts
        i = bisect_right(starts, ptr) - 1
        if i < 0 or starts[i] + self._maps[starts[i]][1] <= ptr:
            i += 1
        out = []
        while i < len(starts) and starts[i] < ptr + nbytes:
            out.append(starts[i])
            i += 1
        return out

    def _spanned(self, ptr: int, nbytes: int, what: str) -> list[int]:
        """Starts of the mappings that tile [ptr, ptr + nbytes) exactly; AssertionError
        naming the first address that is not mapped, or that cuts a handle."""
        out, at = [], ptr
        for start in self._overlapping(ptr, nbytes):
            size = self._maps[start][1]
            if start != at or start + size > ptr + nbytes:
                where = at if start > at else start
                kind = "not mapped" if start > at else "part of a handle"
                raise AssertionError(f"{what} {where:#x}: {kind}")
            out.append(start)
            at = start + size
        if at != ptr + nbytes:
            raise AssertionError(f"{what} {at:#x}: not mapped")
        return out

    def _runs(self):
        """(ptr, bytes) of each run of adjacent mappings."""
        run = None
        for start in self._starts:
            size = self._maps[start][1]
            if run is not None and run[0] + run[1] == start:
                run[1] += size
                continue
            if run is not None:
                yield tuple(run)
            run = [start, size]
        if run is not None:
            yield tuple(run)

    def _set_access(self, ptr: int, nbytes: int) -> None:
        self._check(
            self.driver.cuMemSetAccess(ptr, nbytes, self._access, len(self._access)),
            "cuMemSetAccess",
        )

    def _unmap_starts(self, starts) -> None:
        """cuMemUnmap each mapping; cuMemRelease a handle when its last mapping goes."""
        driver = self.driver
        for at in reversed(starts):
            handle, size = self._maps[at]
            self._check(driver.cuMemUnmap(at, size), "cuMemUnmap")
            del self._maps[at]
            del self._starts[bisect_left(self._starts, at)]
            self._mapped -= size
            ref = self._refs[int(handle)]
            ref[0] -= 1
            if not ref[0]:
                del self._refs[int(handle)]
                self._physical -= size
                self._check(driver.cuMemRelease(handle), "cuMemRelease")

    def _require_chunks(self, ptr: int, nbytes: int, what: str) -> None:
        base = next(
            (b for b, n in self._reserved.items() if b <= ptr and ptr + nbytes <= b + n), None
        )
        if (
            base is None
            or nbytes <= 0
            or (ptr - base) % self.granularity
            or (nbytes % self.granularity)
        ):
            raise ValueError(
                f"{what} of {nbytes} bytes at {ptr:#x}: not whole "
                f"{self.granularity}-byte chunks of a reserved range"
            )

    def _round(self, nbytes: int) -> int:
        return -(-nbytes // self.granularity) * self.granularity

    def _location(self, device: int):
        loc = self.driver.CUmemLocation()
        loc.type = self.driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = device
        return loc

    def _allocation_prop(self):
        """Pinned device memory, exportable as a POSIX file descriptor on Linux (so another
        process can import it: cudaIpc* does not work on cuMem memory) and registrable for
        GPUDirect RDMA (NICs, GDS) where the device supports that with virtual memory; as
        torch's expandable segments ask."""
        driver = self.driver
        prop = driver.CUmemAllocationProp()
        prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location = self._location(self.device_index)
        self._exportable = sys.platform.startswith("linux")
        if self._exportable:
            prop.requestedHandleTypes = (
                driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            )
        attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
        if self._check(driver.cuDeviceGetAttribute(attr, self._dev), "cuDeviceGetAttribute"):
            prop.allocFlags.gpuDirectRDMACapable = 1
        return prop

    def _access_desc(self, device: int):
        desc = self.driver.CUmemAccessDesc()
        desc.location = self._location(device)
        desc.flags = self.driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        return desc

    def _check(self, result, what: str):
        """The value of a cuda.bindings call's (err, value...) tuple; raise on an error."""
        err, *values = result
        code = int(err)
        if code == _OUT_OF_MEMORY:
            raise RawOutOfMemory(f"{what}: CUDA_ERROR_OUT_OF_MEMORY on cuda:{self.device_index}")
        if code != _SUCCESS:
            name = getattr(err, "name", str(code))
            raise RuntimeError(f"{what} failed on cuda:{self.device_index}: {name} ({code})")
        return values[0] if len(values) == 1 else (tuple(values) or None)


def self_test(source: VmmSource, fill, read) -> None:
    """Prove that `source` maps and aliases pages on its device: map a chunk, write a
    byte pattern and read it back, alias the chunk at a second address and read the
    pattern there (the alias shares the physical memory), write through the alias and
    read through the original; then unmap both and give the range back.

    `fill(ptr, byte, n)` writes device memory and waits for it; `read(ptr, n)` returns
    the n bytes (bytes or a uint8 array). A wrong read raises RuntimeError naming the
    step; the driver's own errors propagate."""
    chunk = source.granularity
    base = source.reserve(2 * chunk)
    try:
        source.map(base, chunk)
        try:
            fill(base, 0x5A, chunk)
            _expect(read(base, chunk), 0x5A, "a mapped chunk")
            source.alias(base + chunk, base, chunk)
            try:
                _expect(read(base + chunk, chunk), 0x5A, "an alias of a mapped chunk")
                fill(base + chunk, 0xA5, chunk)
                _expect(read(base, chunk), 0xA5, "a chunk written through its alias")
            finally:
                source.unmap(base + chunk, chunk)
        finally:
            source.unmap(base, chunk)
    finally:
        source.unreserve(base)


def _expect(data, byte: int, what: str) -> None:
    data = bytes(data)
    wrong = len(data) - data.count(byte)
    if wrong:
        raise RuntimeError(
            f"{what} read back {wrong} of {len(data)} bytes wrong (expected {byte:#04x} everywhere)"
        )
