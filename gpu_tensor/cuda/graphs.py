"""CUDA graphs with torch.cuda's names: `CUDAGraph`, `graph`, `graph_pool_handle`,
`is_current_stream_capturing` (torch/cuda/graphs.py).

On a GPU (and over the simulated CuPy) capture is cupy's stream capture
(`Stream.begin_capture` / `end_capture` -> `cupy.cuda.Graph`, `launch`): work issued on the
capturing stream is recorded, not run, and `replay()` launches all of it with one call.
While a stream captures, the caching allocator serves its mallocs from the graph's private
pool (memory/graph_pool.py), so the addresses baked into the graph stay the graph's until
`reset()`; `pool=` shares one pool between graphs that replay in capture order.

The trap (as in torch): captured work runs only at replay, on the tensors it saw at
capture. Feed new inputs by `copy_` into the static input tensors, read outputs from the
tensors the capture produced, and warm the step up first (run it eagerly once: kernels are
compiled, cuBLAS is initialised, the allocator is filled); a kernel compile, `.item()`,
`.cpu()`, a pageable copy or a synchronize inside capture raises a RuntimeError that says so,
and the stream and the allocator stay usable.

Capture mode: torch captures in "global" mode and lets its allocator cudaMalloc in relaxed
mode for the moment (cudaThreadExchangeStreamCaptureMode); cupy does not expose that call, so
the default here is "relaxed" (cupy's own default, for the same reason). With "global" or
"thread_local", a capture whose pool must grow fails; share a warmed pool (`pool=`) then.

On the emulated device (no streams to capture) a graph records the step instead: see
graphs_emulated.py.
"""

from __future__ import annotations

import contextlib
import itertools
import threading

from gpu_tensor import device as _device
from gpu_tensor.backends import cuda_kind

from . import streams as _streams

__all__ = [
    "CUDAGraph",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "make_graphed_callables",
]

_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}  # cudaStreamCaptureMode
_ids = itertools.count(1)  # torch's uid: a graph's pool is (id, 0), a handle's (0, id)
_lock = threading.Lock()


def _new_id() -> int:
    with _lock:
        return next(_ids)


def graph_pool_handle() -> tuple[int, int]:
    """A memory pool id that graphs can share: pass it as `pool=` to each capture."""
    return (0, _new_id())


def is_current_stream_capturing() -> bool:
    """True while the current stream of the current cuda device is capturing a graph."""
    if not _device.cuda_available() or cuda_kind().synchronous:
        from . import graphs_emulated

        return graphs_emulated.capturing()
    backend = _streams._backend()
    index = _device.current_cuda_index()
    return backend.is_capturing(backend.current(index))


def _pool_guard():
    from gpu_tensor.memory import graph_pool

    return graph_pool


class CUDAGraph:
    """A captured CUDA graph (torch.cuda.CUDAGraph)."""

    def __new__(cls, *args, **kwargs):
        if cls is CUDAGraph and cuda_kind().synchronous:  # nothing to capture
            from .graphs_emulated import EmulatedCUDAGraph

            return object.__new__(EmulatedCUDAGraph)
        return object.__new__(cls)

    def __init__(self, keep_graph: bool = False):
        self._graph = None  # the cupy.cuda.Graph, once captured
        self._launch = None  # backend.graph_launcher(device): replay's one call
        self._pool_id = None
        self._stream = None  # the capturing stream (its handle) while capturing
        self._index = None
        self._allocator = None
        self._id = _new_id()

    def capture_begin(self, pool=None, capture_error_mode: str = "relaxed") -> None:
        """Begin capturing the current stream's work (use `graph` rather than this)."""
        from .memory import _allocator

        if self._graph is not None or self._stream is not None:
            raise RuntimeError("this CUDAGraph already holds a capture; call reset() first")
        if capture_error_mode not in _MODES:
            raise ValueError(
                f"capture_error_mode must be one of {sorted(_MODES)}, got {capture_error_mode!r}"
            )
        index = _device.current_cuda_index()
        stream = _streams.current_stream(index)
        if stream.cuda_stream in (0, 1):
            raise RuntimeError(
                "CUDA graphs must be captured on a non-default stream "
                "(use `with gt.cuda.graph(g):`, which makes a side stream, "
                "or `with gt.cuda.stream(gt.cuda.Stream()):`)"
            )
        allocator = _allocator(index, create=True)
        pool_id = (self._id, 0) if pool is None else (int(pool[0]), int(pool[1]))
        allocator.begin_allocate_to_pool(pool_id, stream.cuda_stream)
        try:
            _streams._backend().begin_capture(stream._handle, _MODES[capture_error_mode])
        except BaseException:
            allocator.end_allocate_to_pool(pool_id)
            allocator.release_pool(pool_id)
            raise
        self._pool_id, self._stream, self._index = pool_id, stream, index
        self._allocator = allocator
        _pool_guard().active_captures += 1

    def capture_end(self) -> None:
        """End the capture begun by `capture_begin`; the graph is ready to replay."""
        if self._stream is None:
            raise RuntimeError("capture_end without capture_begin")
        stream, self._stream = self._stream, None
        _pool_guard().active_captures -= 1
        try:
            self._graph = _streams._backend().end_capture(stream._handle)
        except Exception as exc:
            self._allocator.end_allocate_to_pool(self._pool_id)
            self._allocator.release_pool(self._pool_id)
            self._pool_id = None
            raise RuntimeError(
                f"CUDA graph capture failed: {exc}. Something inside the capture waited for "
                "the host, synchronized or allocated outside the graph; warm the step up "
                "first and keep host reads (.item(), .cpu(), printing) out of it"
            ) from exc
        self._allocator.end_allocate_to_pool(self._pool_id)
        self._launch = _streams._backend().graph_launcher(self._index)

    def replay(self) -> None:
        """Launch the captured work on the current stream (one call)."""
        graph = self._graph
        if graph is None:
            raise RuntimeError("replay() needs a captured graph: capture one first")
        self._launch(graph)

    def reset(self) -> None:
        """Drop the graph; its private memory returns to the cache once no graph shares it."""
        if self._stream is not None:
            raise RuntimeError("reset() during capture: call capture_end() first")
        self._graph = None
        if self._pool_id is not None:
            pool_id, self._pool_id = self._pool_id, None
            self._allocator.release_pool(pool_id)

    def pool(self) -> tuple[int, int]:
        """This graph's memory pool id, for `pool=` of a later capture that shares it."""
        if self._pool_id is None:
            raise RuntimeError("pool() needs a capture: this graph has none")
        return self._pool_id

    def enable_debug_mode(self) -> None:
        """Accepted for torch compatibility: `debug_dump` works without it."""

    def debug_dump(self, path: str) -> None:
        """Write the captured graph as Graphviz text (cupy's debug_dot_str)."""
        if self._graph is None:
            raise RuntimeError("debug_dump needs a captured graph")
        with open(path, "w") as f:
            f.write(self._graph.debug_dot_str())

    def __del__(self):
        try:
            if getattr(self, "_stream", None) is None:
                self.reset()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class graph:  # noqa: N801 - torch's name
    """`with gt.cuda.graph(g):` captures the block into CUDAGraph `g` (torch.cuda.graph).

    Like torch: synchronizes the device, collects garbage and empties the cache first, then
    captures on `stream` (default: a side stream, one per process) with the graph's pool
    (or `pool`, shared with other graphs)."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "relaxed"):
        if not cuda_kind().synchronous and stream is None:
            if graph.default_capture_stream is None:
                graph.default_capture_stream = _streams.Stream()
            stream = graph.default_capture_stream
        self.capture_stream = stream
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode
        self._ctx = None

    def __enter__(self):
        import gc

        from .memory import empty_cache

        _streams.synchronize()
        gc.collect()
        empty_cache()
        self._ctx = contextlib.ExitStack()
        if self.capture_stream is not None:
            self._ctx.enter_context(_streams.stream(self.capture_stream))
        self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        return None

    def __exit__(self, exc_type, exc, tb):
        try:
            self.cuda_graph.capture_end()
        except RuntimeError:
            if exc is None:
                raise  # the capture failed on its own: say so
        finally:
            self._ctx.close()
        if getattr(exc, "status", None) in _CAPTURE_STATUSES:  # CUDA refused a call
            raise RuntimeError(
                f"{exc} inside CUDA graph capture: captured work only runs at replay, so "
                "nothing in the block may wait for the host, synchronize or allocate outside "
                "the graph. Warm the step up first and keep host reads out of the block; "
                "the stream and the allocator are usable again"
            ) from exc
        return False


# cudaErrorStreamCaptureUnsupported, Invalidated, Merge, Unmatched, Unjoined, Isolation,
# Implicit, CapturedEvent, WrongThread (driver_types.h)
_CAPTURE_STATUSES = frozenset(range(900, 909))


def make_graphed_callables(
    callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False, pool=None
):
    """torch.cuda.make_graphed_callables: see graphed_callables.py."""
    from .graphed_callables import make_graphed_callables as make

    return make(callables, sample_args, num_warmup_iters, allow_unused_input, pool)
