"""Stream capture and CUDA graphs: cupy.cuda.Graph and the runtime calls behind
`Stream.begin_capture()` / `end_capture()` (cupy/cuda/stream.pyx, graph.pyx).

While a stream captures, the scheduler records every operation enqueued on it (a kernel,
a memcpyAsync, an event record, a cupy routine) as a node instead of running it
(`Capture.record`); the arrays a captured cupy routine returns are allocated at capture time,
as CUDA bakes their addresses into the graph, and filled at each replay. `Graph.launch`
enqueues the nodes, in order, on the launch stream: they run when something orders them,
and the race detector checks them like any other work. The counters see one
`graph_launches` per launch and nothing per node.

What CUDA forbids under capture fails here with its status, and invalidates the capture
(end_capture then raises cudaErrorStreamCaptureInvalidated): waiting for a capturing
stream from the host (synchronize, query, a blocking or pageable copy, a cupy routine's
result read back), a device synchronize (so cudaFree), work on the legacy stream while a
blocking stream captures (cudaErrorStreamCaptureImplicit), and, in global or thread-local
mode, cudaMalloc (cupy's default mode is relaxed, which allows it). Capture on the legacy
stream is refused as cupy refuses it. A captured event cannot be queried or waited for by
the host; another stream waiting for one (joining the capture) is not modelled and says so.
"""

from __future__ import annotations

from .machine import machine
from .scheduler import Task

__all__ = ["Capture", "Graph", "begin", "end", "is_capturing", "MODES"]

MODES = {0: "global", 1: "thread-local", 2: "relaxed"}  # cudaStreamCaptureMode
UNSUPPORTED, INVALIDATED, IMPLICIT = 900, 901, 906  # cudaErrorStreamCapture*


class Capture:
    """The nodes recorded on one capturing stream so far."""

    __slots__ = ("queue", "mode", "nodes", "invalid")

    def __init__(self, queue, mode: int):
        self.queue, self.mode = queue, mode
        self.nodes: list[tuple] = []  # (fn, label, accesses), in stream order
        self.invalid = None  # why the capture was invalidated

    def record(self, queue, fn, label: str, accesses) -> Task:
        self.nodes.append((fn, label, tuple(accesses)))
        return Task(queue, None, {}, fn, label)  # clock None: never runs by itself


_graphs: dict = {}  # graph handle -> Graph (graphInstantiate's exec handle is the same)


class Graph:
    """cupy.cuda.Graph: the work captured on a stream; `launch` replays it."""

    def __init__(self, nodes, handle: int):
        self._nodes = list(nodes)
        self.graph = self.graphExec = handle
        self.host_funcargs = []

    def launch(self, stream=None):
        from .runtime import graphLaunch
        from .streams import get_current_stream

        stream = get_current_stream() if stream is None else stream
        graphLaunch(self.graphExec, stream.ptr)

    def upload(self, stream=None):
        from .runtime import graphUpload
        from .streams import get_current_stream

        stream = get_current_stream() if stream is None else stream
        graphUpload(self.graphExec, stream.ptr)

    def debug_dot_str(self, flags=0):
        lines = [f'  n{i} [label="{label}"];' for i, (_, label, _) in enumerate(self._nodes)]
        edges = [f"  n{i} -> n{i + 1};" for i in range(len(self._nodes) - 1)]
        return "digraph G {\n" + "\n".join(lines + edges) + "\n}\n"

    def __len__(self) -> int:
        return len(self._nodes)


def begin(queue, mode: int) -> None:
    from .runtime import CUDARuntimeError

    if mode not in MODES:
        raise CUDARuntimeError(1, f"capture mode {mode} is not a cudaStreamCaptureMode")
    if queue.legacy:
        raise CUDARuntimeError(UNSUPPORTED, "capture on the legacy default stream")
    if queue.capture is not None:
        raise CUDARuntimeError(UNSUPPORTED, f"{queue!r} is already capturing")
    machine().count("driver_calls")
    queue.capture = Capture(queue, mode)


def end(queue) -> int:
    """The graph handle of `queue`'s capture; the stream captures no more either way."""
    from .runtime import CUDARuntimeError

    cap = queue.capture
    if cap is None:
        raise CUDARuntimeError(400, f"{queue!r} is not capturing")  # InvalidResourceHandle
    queue.capture = None
    machine().count("driver_calls")
    if cap.invalid is not None:
        raise CUDARuntimeError(INVALIDATED, f"the capture was invalidated by {cap.invalid}")
    handle = machine().handle()
    _graphs[handle] = Graph(cap.nodes, handle)
    return handle


def graph_of(handle: int) -> Graph:
    from .runtime import CUDARuntimeError

    g = _graphs.get(int(handle))
    if g is None:
        raise CUDARuntimeError(400, f"graph {int(handle):#x} does not exist")
    return g


def launch(handle: int, queue) -> None:
    """Enqueue the graph's nodes on `queue` (cudaGraphLaunch: one call, in order)."""
    g = graph_of(handle)
    m = machine()
    m.count("driver_calls")
    m.count("graph_launches")
    label = f"graph {int(handle):#x}"
    for fn, node, accesses in g._nodes:
        m.sched.enqueue(queue, fn, f"{node} ({label})", accesses)


def is_capturing(queue) -> bool:
    return queue.capture is not None


def check_malloc() -> None:
    """cudaMalloc while a stream captures in global or thread-local mode is forbidden."""
    machine().sched.check_no_capture(
        "cudaMalloc (an unsafe call outside relaxed capture mode)", modes=(0, 1)
    )
