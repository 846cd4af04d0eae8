"""`gpu_tensor.cuda`: devices, memory, streams; torch.cuda's names and meanings.

Each submodule defines `__all__`; this package re-exports them. Nothing here
imports cupy at import time, and reading memory stats never initialises CUDA.
"""

from ..memory.pinned import empty_host_cache, host_memory_stats
from . import memory
from ._device import *  # noqa: F403
from ._device import __all__ as _device_all
from .memory import *  # noqa: F403
from .memory import __all__ as _memory_all
from .streams import *  # noqa: F403
from .streams import __all__ as _streams_all

__all__ = [
    "memory",
    "empty_host_cache",
    "host_memory_stats",
    *_device_all,
    *_memory_all,
    *_streams_all,
]
