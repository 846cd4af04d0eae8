"""Device memory: the caching allocator (pure policy), its stats, snapshots and summary.

Raw memory and events are injected (raw.py, backends/cuda_memory.py); nothing
here imports cupy. The user API with torch.cuda's names is gpu_tensor.cuda.memory.
"""

from .allocator import CachingAllocator
from .oom import OutOfMemoryError
from .raw import FaultInjectingRawSource, HostRawSource, RawOutOfMemory
from .registry import existing_allocators, get_allocator

__all__ = [
    "CachingAllocator",
    "OutOfMemoryError",
    "HostRawSource",
    "FaultInjectingRawSource",
    "RawOutOfMemory",
    "get_allocator",
    "existing_allocators",
]
