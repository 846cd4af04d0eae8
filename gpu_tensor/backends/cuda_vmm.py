"""CUDA virtual memory (cuMemCreate / cuMemMap) for expandable segments.

`VmmSource` wraps a device's plain raw source (cudaMalloc, backends/cuda_memory.py) and
adds the five calls memory/expandable.py needs, through NVIDIA's `cuda-bindings`
(`cuda.bindings.driver`, an optional dependency of the cuda12/cuda13 extras; cupy's
bindings have no virtual-memory calls):

- `reserve(n)`: cuMemAddressReserve of `n` bytes of address space (no memory);
- `map(ptr, n)`: one cuMemCreate + cuMemMap per `granularity` chunk, then one
  cuMemSetAccess for the device and every peer that can access it (cuda:N);
- `alias(dst, src, n)`: cuMemMap of the handles already mapped at `src` at `dst` too
  (no cuMemCreate, no new memory), then cuMemSetAccess on `dst`: the policy restitches
  free pages at the end of a reservation this way, without a device sync;
- `unmap(ptr, n)`: a device synchronize (cuMemUnmap does not wait for work in flight
  on the memory, unlike cudaFree), then cuMemUnmap per chunk, and cuMemRelease of a
  handle once its last mapping is gone (after `alias` a handle has two);
- `unreserve(ptr)`: cuMemAddressFree, once nothing in the range is mapped.

Chunks are the device's allocation granularity (2 MiB on current GPUs), so the policy
may unmap any page-aligned tail; the policy's pages are multiples of it (`granularity`
is read by expandable.py). A failure part-way through `map` or `alias` undoes what that
call mapped, so the allocator's state never disagrees with the driver's (torch #188008).

`self_test` proves on a device that mapping and aliasing work (cuda_memory.py runs it
before turning expandable segments on by itself).

`driver` is injected: `cuda.bindings.driver` on a GPU, a fake with the same function
names, argument order and (err, value...) tuple returns in the tests.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util

from ..memory.raw import RawOutOfMemory

__all__ = ["VmmSource", "available", "load_driver", "self_test"]

_SUCCESS = 0  # CUDA_SUCCESS
_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY


def load_driver():
    """`cuda.bindings.driver`, or None when cuda-bindings is not installed."""
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec(
            "cuda.bindings") is None:
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

    def __init__(self, base, driver, device_index: int, synchronize, peers=None,
                 activate=contextlib.nullcontext):
        """`base`: alloc/free/mem_get_info for plain segments. `synchronize()`: waits for
        the device (before unmapping). `peers`: device ordinals to give access too; None
        asks the driver which devices can access this one. `activate()`: a context that
        makes the device's context current around driver calls (frees arrive from
        finalisers while another device is current)."""
        self.base = base
        self.driver = driver
        self.device_index = int(device_index)
        self._synchronize = synchronize
        self._activate = activate
        self._dev = self._check(driver.cuDeviceGet(self.device_index), "cuDeviceGet")
        self._prop = self._allocation_prop()
        self.granularity = int(self._check(driver.cuMemGetAllocationGranularity(
            self._prop, driver.CUmemAllocationGranularity_flags
            .CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity"))
        self.peers = self._find_peers() if peers is None else [int(p) for p in peers]
        self._access = [self._access_desc(d) for d in [self.device_index, *self.peers]]
        self._reserved: dict[int, int] = {}  # base -> reserved bytes
        self._chunks: dict[int, object] = {}  # mapped chunk address -> physical handle
        # int(handle) -> how many addresses map it (cuda.bindings handles hash by identity)
        self._refs: dict[int, int] = {}

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
            ptr = int(self._check(self.driver.cuMemAddressReserve(
                nbytes, self.granularity, 0, 0), "cuMemAddressReserve"))
        self._reserved[ptr] = nbytes
        return ptr

    def map(self, ptr: int, nbytes: int) -> None:
        """Back [ptr, ptr + nbytes) with new physical memory; RawOutOfMemory when the
        device has none (nothing stays mapped from this call then)."""
        self._require_chunks(ptr, nbytes, "map")
        with self._activate():
            self._map(ptr, nbytes)

    def _map(self, ptr: int, nbytes: int) -> None:
        driver, chunk = self.driver, self.granularity
        done: list[int] = []
        try:
            for at in range(ptr, ptr + nbytes, chunk):
                if at in self._chunks:
                    raise AssertionError(f"map: {at:#x} is already mapped")
                handle = self._check(driver.cuMemCreate(chunk, self._prop, 0), "cuMemCreate")
                try:
                    self._check(driver.cuMemMap(at, chunk, 0, handle, 0), "cuMemMap")
                except BaseException:
                    driver.cuMemRelease(handle)
                    raise
                self._chunks[at] = handle
                self._refs[int(handle)] = 1
                done.append(at)
            self._set_access(ptr, nbytes)
        except BaseException:
            self._unmap_chunks(done)
            raise

    def alias(self, dst: int, src: int, nbytes: int) -> None:
        """Map the physical chunks mapped now at [src, src + nbytes) at [dst, dst + nbytes)
        too (no new memory; both addresses then read and write the same bytes).
        RawOutOfMemory when the driver has no room for the mapping (nothing stays mapped
        from this call then)."""
        self._require_chunks(dst, nbytes, "alias")
        self._require_chunks(src, nbytes, "alias")
        chunk = self.granularity
        missing = [hex(at) for at in range(src, src + nbytes, chunk) if at not in self._chunks]
        taken = [hex(at) for at in range(dst, dst + nbytes, chunk) if at in self._chunks]
        if missing or taken:  # refused before any driver call
            raise AssertionError(f"alias: source {', '.join(missing[:3])} not mapped" if missing
                                 else f"alias: {', '.join(taken[:3])} already mapped")
        with self._activate():
            done: list[int] = []
            try:
                for offset in range(0, nbytes, chunk):
                    at = dst + offset
                    handle = self._chunks[src + offset]
                    self._check(self.driver.cuMemMap(at, chunk, 0, handle, 0), "cuMemMap")
                    self._chunks[at] = handle
                    self._refs[int(handle)] += 1
                    done.append(at)
                self._set_access(dst, nbytes)  # access belongs to the address, not the memory
            except BaseException:
                self._unmap_chunks(done)  # releases nothing: the source still maps each one
                raise

    def unmap(self, ptr: int, nbytes: int) -> None:
        self.unmap_many([(ptr, nbytes)])

    def unmap_many(self, spans) -> None:
        """unmap of every (ptr, nbytes) in `spans`, in order, after one device synchronize
        (the allocator's shrink gives back many spans at once)."""
        chunks = []
        for ptr, nbytes in spans:
            self._require_chunks(ptr, nbytes, "unmap")
            chunks += range(ptr, ptr + nbytes, self.granularity)
        missing = [hex(at) for at in chunks if at not in self._chunks]
        if missing:
            raise AssertionError(f"unmap: {', '.join(missing[:3])} not mapped")
        if not chunks:
            return
        with self._activate():
            self._synchronize()  # cuMemUnmap does not wait for kernels still using the pages
            self._unmap_chunks(chunks)

    def unreserve(self, ptr: int) -> None:
        size = self._reserved[ptr]
        inside = [at for at in self._chunks if ptr <= at < ptr + size]
        if inside:
            raise AssertionError(f"unreserve of {ptr:#x}: {len(inside)} chunks still mapped")
        with self._activate():
            self._check(self.driver.cuMemAddressFree(ptr, size), "cuMemAddressFree")
        del self._reserved[ptr]

    def mapped_bytes(self) -> int:
        """Bytes of address space mapped: a chunk aliased at two addresses counts twice."""
        return len(self._chunks) * self.granularity

    def physical_bytes(self) -> int:
        """Bytes of physical memory held (cuMemCreate'd and not yet released)."""
        return len(self._refs) * self.granularity

    # ------------------------------------------------------------ helpers
    def _set_access(self, ptr: int, nbytes: int) -> None:
        self._check(self.driver.cuMemSetAccess(ptr, nbytes, self._access, len(self._access)),
                    "cuMemSetAccess")

    def _unmap_chunks(self, chunks) -> None:
        """cuMemUnmap each chunk; cuMemRelease a handle when its last mapping goes."""
        driver, chunk = self.driver, self.granularity
        for at in reversed(chunks):
            self._check(driver.cuMemUnmap(at, chunk), "cuMemUnmap")
            handle = self._chunks.pop(at)
            key = int(handle)
            self._refs[key] -= 1
            if not self._refs[key]:
                del self._refs[key]
                self._check(driver.cuMemRelease(handle), "cuMemRelease")

    def _require_chunks(self, ptr: int, nbytes: int, what: str) -> None:
        base = next((b for b, n in self._reserved.items() if b <= ptr and ptr + nbytes <= b + n),
                    None)
        if base is None or nbytes <= 0 or (ptr - base) % self.granularity or (
                nbytes % self.granularity):
            raise ValueError(f"{what} of {nbytes} bytes at {ptr:#x}: not whole "
                             f"{self.granularity}-byte chunks of a reserved range")

    def _round(self, nbytes: int) -> int:
        return -(-nbytes // self.granularity) * self.granularity

    def _location(self, device: int):
        loc = self.driver.CUmemLocation()
        loc.type = self.driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = device
        return loc

    def _allocation_prop(self):
        prop = self.driver.CUmemAllocationProp()
        prop.type = self.driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location = self._location(self.device_index)
        return prop

    def _access_desc(self, device: int):
        desc = self.driver.CUmemAccessDesc()
        desc.location = self._location(device)
        desc.flags = self.driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        return desc

    def _find_peers(self) -> list[int]:
        driver = self.driver
        count = int(self._check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
        peers = []
        for other in range(count):
            if other == self.device_index:
                continue
            peer = self._check(driver.cuDeviceGet(other), "cuDeviceGet")
            if self._check(driver.cuDeviceCanAccessPeer(peer, self._dev),
                           "cuDeviceCanAccessPeer"):
                peers.append(other)
        return peers

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
        raise RuntimeError(f"{what} read back {wrong} of {len(data)} bytes wrong "
                           f"(expected {byte:#04x} everywhere)")
