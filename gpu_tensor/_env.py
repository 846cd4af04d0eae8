"""Every environment variable gpu_tensor reads, read here and nowhere else.

Each one is listed in the README's environment table. Values are read when
asked for (not cached at import) so tests can set them with monkeypatch.
"""

from __future__ import annotations

import os


def _flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def fallback() -> bool:
    """GPU_TENSOR_FALLBACK=1: with no GPU, `cuda` is an emulated device on host memory
    (GPU_TENSOR_FALLBACK=sim: the real CUDA backend over the simulated CuPy)."""
    return _flag("GPU_TENSOR_FALLBACK")


def simulated() -> bool:
    """GPU_TENSOR_FALLBACK=sim: `cuda` is the real CUDA backend over gpu_tensor.testing.sim."""
    return (os.environ.get("GPU_TENSOR_FALLBACK") or "").strip().lower() == "sim"


def sim_devices() -> int:
    """GPU_TENSOR_SIM_DEVICES: how many GPUs the simulator has (default 1)."""
    return int(os.environ.get("GPU_TENSOR_SIM_DEVICES") or "1")


def cupy_per_thread_default_stream() -> bool:
    """CUPY_CUDA_PER_THREAD_DEFAULT_STREAM (cupy's own variable; the simulator models it)."""
    return _flag("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM")


def default_device() -> str | None:
    """GPU_TENSOR_DEFAULT_DEVICE: overrides the default device ('cpu', 'cuda', 'cuda:1')."""
    return os.environ.get("GPU_TENSOR_DEFAULT_DEVICE") or None


def cache_dir() -> str:
    """GPU_TENSOR_CACHE_DIR: on-disk cache of compiled kernels."""
    return os.environ.get("GPU_TENSOR_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "gpu_tensor"
    )


def alloc_conf() -> str:
    """GPU_TENSOR_ALLOC_CONF: allocator options, torch's syntax
    ('max_split_size_mb:128,garbage_collection_threshold:0.8')."""
    return os.environ.get("GPU_TENSOR_ALLOC_CONF", "")


def emulated_memory_bytes() -> int:
    """GPU_TENSOR_EMULATED_MEMORY_MB: capacity of the emulated cuda device (default 4096 MiB)."""
    return int(os.environ.get("GPU_TENSOR_EMULATED_MEMORY_MB", "4096")) * (1 << 20)


def host_malloc_keep_bytes() -> int:
    """GPU_TENSOR_HOST_MALLOC_KEEP_MB: free heap memory glibc keeps for reuse (default 256
    MiB; 0 leaves malloc's defaults), so numpy temporaries are not page-faulted back."""
    return int(os.environ.get("GPU_TENSOR_HOST_MALLOC_KEEP_MB", "256")) * (1 << 20)


def record_creation_sites() -> bool:
    """GPU_TENSOR_RECORD_SITES=0 turns off capture of where each device tensor was created."""
    return _flag("GPU_TENSOR_RECORD_SITES", default=True)


def debug() -> bool:
    """GPU_TENSOR_DEBUG=1: debug logging (kernel compile times, allocator decisions)."""
    return _flag("GPU_TENSOR_DEBUG")


def pinned_alloc() -> str:
    """GPU_TENSOR_PINNED_ALLOC: how the pinned pool page-locks host memory on a GPU:
    'register' (default: mmap, pre-fault, cudaHostRegister) or 'hostalloc' (cudaHostAlloc)."""
    return (os.environ.get("GPU_TENSOR_PINNED_ALLOC") or "register").strip().lower()


def cuda_path() -> str | None:
    """CUDA_PATH (else CUDA_HOME): a CUDA toolkit root; NVRTC takes cuda_fp16.h/cuda_bf16.h
    from its include/ when no NVIDIA header wheel provides them."""
    return os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME") or None
