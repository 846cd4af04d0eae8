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

# CUDA graphs (graphs.py), built on the public API: loaded on first use (__getattr__)
_GRAPHS = (
    "CUDAGraph",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "make_graphed_callables",
)

__all__ = [
    "memory",
    "empty_host_cache",
    "host_memory_stats",
    *_device_all,
    *_memory_all,
    *_streams_all,
    *_GRAPHS,
]


def __getattr__(name):
    """The legacy gt.cuda.FloatTensor & co (gpu_tensor/legacy.py), looked up lazily:
    legacy imports creation, which this package must not import at load time."""
    if name in _GRAPHS:
        from . import graphs

        return getattr(graphs, name)
    from ..legacy import CUDA_TYPES

    if name in CUDA_TYPES:
        return CUDA_TYPES[name]
    raise AttributeError(f"module 'gpu_tensor.cuda' has no attribute '{name}'")


def manual_seed(seed) -> None:
    """Seed the numbers drawn for cuda tensors: one host generator serves every device
    (ops/random.py), so this is gt.manual_seed."""
    from ..ops.random import manual_seed as _seed

    _seed(seed)


manual_seed_all = manual_seed


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True when cuda is available: bfloat16 works on every cuda device here (stored as
    bits; products go to cuBLAS in bf16, elementwise math runs in fp32), which is what code
    checks before choosing `autocast("cuda", dtype=torch.bfloat16)`."""
    from .. import device as _device

    return _device.cuda_available()
