"""The kinds of cuda device, one object each: a GPU, the simulated GPU, the emulated one.

`device.cuda_kind()` decides which kind `cuda` is in this process (from the driver and
GPU_TENSOR_FALLBACK); `backends.cuda_kind()` hands out that kind's object. The object owns
what differs between kinds, so no other module tests the kind:

- `backend(index)`: the Backend made for each device of this kind (get_backend calls it);
- `streams()`: the stream mechanism (asynchronous cupy streams, or synchronous ones);
- `allocator(index)`: the device's caching allocator, created and registered on first use;
  `allocator_kind` is its key in memory/registry;
- `mem_get_info(index)`: (free, total) before an allocator exists;
- `pinned_source()`: the page source of the process-wide pinned pool;
- `nccl_usable()`: whether NCCL can serve this kind's tensors;
- `device_name(index)`: torch.cuda.get_device_name's answer;
- `virtual_memory`: whether expandable segments may map device memory (cuda_vmm);
- `synchronous`: every operation is done when it is enqueued (the emulated device): events
  read the host clock and there is nothing for a CUDA graph to capture.

Like tinygrad's `CUDADevice`, one constructor bundles the mechanisms; the per-op hooks are
the Backend's (`backends/base.py`).
"""

from __future__ import annotations

__all__ = ["CudaKind", "SimulatedKind", "EmulatedKind", "KINDS"]


class _Kind:
    """What every kind does alike: its Backend class (`_backend_class`, imported when first
    asked for) made per device, and the stream mechanism its `synchronous` flag picks."""

    _streams = None

    def backend(self, index: int):
        b = self._backend_class()(index)
        b.kind = self
        return b

    def streams(self):
        s = self._streams
        if s is None:  # (asked on every stream call: looked up once)
            from .cuda_streams import stream_backend

            s = self._streams = stream_backend(self.synchronous)
        return s


class CudaKind(_Kind):
    """A GPU through cupy. Also what a machine with no cuda at all gets: its hooks then find
    nothing (no NCCL, plain host pages), as they would on a GPU-less machine."""

    name = "cuda"
    synchronous = False
    allocator_kind = "cuda"
    virtual_memory = True

    def _backend_class(self):
        from .cuda import CudaBackend

        return CudaBackend

    def allocator(self, index: int):
        from . import cuda_memory

        return cuda_memory.install(index)  # registers the factory, routes cupy to us

    def mem_get_info(self, index: int) -> tuple[int, int]:
        from . import cuda_memory

        return cuda_memory.mem_get_info(index)

    def pinned_source(self):
        from gpu_tensor import _env
        from gpu_tensor.device import real_cuda_available

        from . import cuda_pinned

        if not real_cuda_available():  # no cuda here: plain host pages
            return cuda_pinned.RegisterSource()
        method = _env.pinned_alloc()
        if method == "hostalloc":
            return cuda_pinned.HostAllocSource()
        if method == "register":
            return cuda_pinned.RegisterSource(
                cuda_pinned.cuda_register, cuda_pinned.cuda_unregister
            )
        raise ValueError(
            f"GPU_TENSOR_PINNED_ALLOC={method!r} is not a page-locking method; use "
            "'register' (mmap + pre-fault + cudaHostRegister) or 'hostalloc' (cudaHostAlloc)"
        )

    def device_name(self, index: int) -> str:
        from ._cupy import cupy

        name = cupy().cuda.runtime.getDeviceProperties(index)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def nccl_usable(self) -> bool:
        from gpu_tensor.device import real_cuda_available

        from . import cuda_nccl

        return real_cuda_available() and cuda_nccl.available()


class SimulatedKind(CudaKind):
    """The real CUDA backend over gpu_tensor.testing.sim (GPU_TENSOR_FALLBACK=sim): the same
    code as on a GPU, except that the simulator has no virtual memory to map."""

    name = "simulated"
    virtual_memory = False


class EmulatedKind(_Kind):
    """cuda on host memory (no GPU, GPU_TENSOR_FALLBACK=1): numpy arrays over blocks of a
    caching allocator on host pages, and synchronous streams."""

    name = "emulated"
    synchronous = True
    allocator_kind = "emulated"
    virtual_memory = False

    def _backend_class(self):
        from .emulated import EmulatedCudaBackend

        return EmulatedCudaBackend

    def allocator(self, index: int):
        from gpu_tensor.memory import registry

        return registry.get_allocator(index, "emulated")

    def mem_get_info(self, index: int) -> tuple[int, int]:
        from gpu_tensor import _env

        total = _env.emulated_memory_bytes()  # nothing reserved yet
        return total, total

    def pinned_source(self):
        from . import cuda_pinned

        return cuda_pinned.RegisterSource()  # real host pages; nothing to page-lock

    def device_name(self, index: int) -> str:
        return "gpu_tensor emulated CUDA device (host memory)"

    def nccl_usable(self) -> bool:
        return False


_CUDA = CudaKind()
# device.cuda_kind()'s answer -> the kind's object (None, no cuda at all: see CudaKind)
KINDS = {"cuda": _CUDA, "simulated": SimulatedKind(), "emulated": EmulatedKind(), None: _CUDA}
