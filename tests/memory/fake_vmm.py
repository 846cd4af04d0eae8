"""A fake `cuda.bindings.driver` for the virtual-memory calls, checking CUDA's rules.

Same function names, argument order and `(CUresult, value...)` tuple returns as
cuda.bindings.driver. It keeps the state the driver would (reserved ranges, physical
handles, mappings, access) and turns every misuse the real driver would reject, or
that would leak, into a CUDA_ERROR_INVALID_VALUE return and a recorded `violations`
entry: mapping over a mapping, mapping outside a reservation, unmapping what is not
mapped, releasing a handle that is still mapped anywhere, freeing a reservation that
still has mappings, setting access on unmapped memory. `fail` injects errors by call
name.

As the real driver, one handle may be mapped at several addresses (cuda_vmm's
`alias`); `used` counts physical memory, i.e. handles, not mappings. The real driver
would accept a cuMemRelease of a mapped handle (and free it at its last unmap); the
fake calls that a violation, since cuda_vmm always unmaps first. `fill` and `read`
stand in for cudaMemset and cudaMemcpy: bytes live per handle, so an alias shows
them, and touching memory the device has no access to is a violation (a fault on a
GPU).
"""

from __future__ import annotations

import enum
import itertools

GRANULARITY = 2 << 20


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_SUPPORTED = 801


class CUdevice_attribute(enum.IntEnum):  # noqa: N801 - the driver's names
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110


class CUmemAllocationHandleType(enum.IntEnum):  # noqa: N801
    CU_MEM_HANDLE_TYPE_NONE = 0
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1


class CUmemAllocationGranularity_flags(enum.IntEnum):  # noqa: N801
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1


class CUmemLocationType(enum.IntEnum):
    CU_MEM_LOCATION_TYPE_DEVICE = 1


class CUmemAllocationType(enum.IntEnum):
    CU_MEM_ALLOCATION_TYPE_PINNED = 1


class CUmemAccess_flags(enum.IntEnum):  # noqa: N801
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class CUmemLocation:
    def __init__(self):
        self.type, self.id = 0, 0


class _AllocFlags:
    def __init__(self):
        self.gpuDirectRDMACapable = 0  # noqa: N815 - the driver's name


class CUmemAllocationProp:
    def __init__(self):
        self.type, self.location, self.requestedHandleTypes = 0, None, 0
        self.allocFlags = _AllocFlags()


class CUmemAccessDesc:
    def __init__(self):
        self.location, self.flags = None, 0


class FakeDriver:
    """One process's view of `devices` GPUs; `capacity`: physical bytes per device."""

    CUresult = CUresult
    CUdevice_attribute = CUdevice_attribute
    CUmemAllocationGranularity_flags = CUmemAllocationGranularity_flags
    CUmemLocationType = CUmemLocationType
    CUmemAllocationType = CUmemAllocationType
    CUmemAllocationHandleType = CUmemAllocationHandleType
    CUmemAccess_flags = CUmemAccess_flags
    CUmemLocation = CUmemLocation
    CUmemAllocationProp = CUmemAllocationProp
    CUmemAccessDesc = CUmemAccessDesc

    def __init__(
        self, capacity=1 << 30, devices=1, peer_pairs=(), vmm=True, rdma=False, exportable=True
    ):
        self.capacity, self.devices, self.peer_pairs = capacity, devices, set(peer_pairs)
        self.vmm = vmm  # CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        self.rdma = rdma  # CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
        self.exportable = exportable  # False: cuMemCreate refuses a requested handle type
        self.created: list[tuple] = []  # (size, requested handle types, gpuDirectRDMACapable)
        # (call, args...) of cuMemAddressReserve and cuMemSetAccess, in order (the tests'
        # fake cupy runtime adds its setDevice and free calls)
        self.log: list[tuple] = []
        self.used = 0
        self.reserved: dict[int, int] = {}  # base -> size
        self.handles: dict[int, list] = {}  # handle -> [size, device, {addresses mapped at}]
        self.memory: dict[int, bytearray] = {}  # handle -> its bytes, once written
        self.mappings: dict[int, tuple[int, int]] = {}  # addr -> (size, handle)
        self.access: dict[int, set[int]] = {}  # mapped addr -> devices that may access it
        self.violations: list[str] = []
        self.calls: dict[str, int] = {}
        self.fail: dict[str, int] = {}  # call name -> fail on that call number (1-based)
        self._next_va, self._ids = 1 << 40, itertools.count(1)

    # ------------------------------------------------------------------ helpers
    def _enter(self, name):
        n = self.calls[name] = self.calls.get(name, 0) + 1
        return self.fail.get(name) == n

    def _bad(self, message):
        self.violations.append(message)
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)

    # ------------------------------------------------------------------ devices
    def cuInit(self, flags):  # noqa: N802 - the driver's names
        self._enter("cuInit")
        return (CUresult.CUDA_SUCCESS,)

    def cuDeviceGet(self, ordinal):  # noqa: N802
        self._enter("cuDeviceGet")
        if not 0 <= ordinal < self.devices:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        return (CUresult.CUDA_SUCCESS, ordinal)

    def cuDeviceGetCount(self):  # noqa: N802
        return (CUresult.CUDA_SUCCESS, self.devices)

    def cuDeviceGetAttribute(self, attrib, dev):  # noqa: N802
        value = {
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: self.vmm,
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: self.rdma,
        }[attrib]
        return (CUresult.CUDA_SUCCESS, int(value))

    def cuDeviceCanAccessPeer(self, dev, peer_dev):  # noqa: N802
        return (CUresult.CUDA_SUCCESS, int((dev, peer_dev) in self.peer_pairs))

    def cuMemGetAllocationGranularity(self, prop, option):  # noqa: N802
        return (CUresult.CUDA_SUCCESS, GRANULARITY)

    # ------------------------------------------------------------------ address space
    def cuMemAddressReserve(self, size, alignment, addr, flags):  # noqa: N802
        if self._enter("cuMemAddressReserve"):
            return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, 0)
        if size % GRANULARITY:
            return self._bad(f"reserve of {size}: not a multiple of the granularity") + (0,)
        base = self._next_va
        self._next_va += size + GRANULARITY
        self.reserved[base] = size
        self.log.append(("cuMemAddressReserve", base, size))
        return (CUresult.CUDA_SUCCESS, base)

    def cuMemAddressFree(self, ptr, size):  # noqa: N802
        self._enter("cuMemAddressFree")
        if self.reserved.get(ptr) != size:
            return self._bad(f"address free {ptr:#x}+{size}: no such reservation")
        if any(ptr <= a < ptr + size for a in self.mappings):
            return self._bad(f"address free {ptr:#x}: still has mappings")
        del self.reserved[ptr]
        return (CUresult.CUDA_SUCCESS,)

    # ------------------------------------------------------------------ physical memory
    def cuMemCreate(self, size, prop, flags):  # noqa: N802
        if self._enter("cuMemCreate") or self.used + size > self.capacity:
            return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
        if size % GRANULARITY:
            return self._bad(f"create of {size}: not a multiple of the granularity") + (None,)
        if prop.requestedHandleTypes and not self.exportable:
            return (CUresult.CUDA_ERROR_NOT_SUPPORTED, None)
        self.created.append(
            (size, int(prop.requestedHandleTypes), prop.allocFlags.gpuDirectRDMACapable)
        )
        handle = next(self._ids)
        self.handles[handle] = [size, prop.location.id, set()]
        self.used += size
        return (CUresult.CUDA_SUCCESS, handle)

    def cuMemRelease(self, handle):  # noqa: N802
        self._enter("cuMemRelease")
        entry = self.handles.get(handle)
        if entry is None:
            return self._bad(f"release of unknown handle {handle}")
        if entry[2]:
            return self._bad(f"release of handle {handle}, still mapped at {min(entry[2]):#x}")
        del self.handles[handle]
        self.memory.pop(handle, None)
        self.used -= entry[0]
        return (CUresult.CUDA_SUCCESS,)

    def cuMemMap(self, ptr, size, offset, handle, flags):  # noqa: N802
        if self._enter("cuMemMap"):
            return (CUresult.CUDA_ERROR_OUT_OF_MEMORY,)
        entry = self.handles.get(handle)
        if entry is None or entry[0] != size or offset:
            return self._bad(f"map {ptr:#x}+{size}: bad handle {handle} or size or offset")
        if not any(b <= ptr and ptr + size <= b + n for b, n in self.reserved.items()):
            return self._bad(f"map {ptr:#x}+{size}: outside every reservation")
        if any(a < ptr + size and ptr < a + n for a, (n, _) in self.mappings.items()):
            return self._bad(f"map {ptr:#x}+{size}: overlaps a mapping (double map)")
        self.mappings[ptr] = (size, handle)
        entry[2].add(ptr)
        return (CUresult.CUDA_SUCCESS,)

    def cuMemUnmap(self, ptr, size):  # noqa: N802
        self._enter("cuMemUnmap")
        mapping = self.mappings.get(ptr)
        if mapping is None or mapping[0] != size:
            return self._bad(f"unmap {ptr:#x}+{size}: not exactly one mapping")
        del self.mappings[ptr]
        self.access.pop(ptr, None)
        self.handles[mapping[1]][2].discard(ptr)
        return (CUresult.CUDA_SUCCESS,)

    def cuMemSetAccess(self, ptr, size, desc, count):  # noqa: N802
        if self._enter("cuMemSetAccess"):
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        if count != len(desc):
            return self._bad("set access: count differs from the descriptors given")
        covered = sorted(a for a in self.mappings if ptr <= a < ptr + size)
        if sum(self.mappings[a][0] for a in covered) != size:
            return self._bad(f"set access {ptr:#x}+{size}: not all mapped")
        self.log.append(("cuMemSetAccess", ptr, size, tuple(d.location.id for d in desc)))
        for a in covered:  # the devices named are added; the others keep theirs
            self.access.setdefault(a, set()).update(d.location.id for d in desc)
        return (CUresult.CUDA_SUCCESS,)

    # ------------------------------------------------------------------ for the tests
    def mapped_bytes(self) -> int:
        """Address space mapped (an aliased handle counts at each address)."""
        return sum(n for n, _ in self.mappings.values())

    def handle_at(self, addr: int):
        """The handle mapped at `addr` (a mapping's start), or None."""
        mapping = self.mappings.get(addr)
        return None if mapping is None else mapping[1]

    def fill(self, ptr: int, byte: int, nbytes: int, device: int = 0) -> None:
        """cudaMemset on `device` of whole mappings from `ptr`."""
        for memory, lo, hi in self._touch(ptr, nbytes, device):
            memory[lo:hi] = bytes([byte]) * (hi - lo)

    def read(self, ptr: int, nbytes: int, device: int = 0) -> bytes:
        """cudaMemcpy to the host, on `device`, of whole mappings from `ptr`."""
        return b"".join(bytes(memory[lo:hi]) for memory, lo, hi in self._touch(ptr, nbytes, device))

    def _touch(self, ptr, nbytes, device):
        parts, at = [], ptr
        while at < ptr + nbytes:
            mapping = self.mappings.get(at)
            if mapping is None or device not in self.access.get(at, ()):
                self._bad(f"device {device} touched {at:#x}: not mapped or no access")
                raise RuntimeError(f"illegal address {at:#x} (cudaErrorIllegalAddress)")
            size, handle = mapping
            memory = self.memory.setdefault(handle, bytearray(size))
            parts.append((memory, 0, min(size, ptr + nbytes - at)))
            at += size
        return parts
