"""What a profile records while it records: one `_Op` per op call or labelled range.

The modes word (gpu_tensor/_modes.py) hands every op of the profiling thread to `on_op`,
which times it with the host clock, links it under the op or range it runs in, and:
- on a cuda device, records a timing event on the op's stream before and after it. No event
  is waited for until `finish()`, which synchronizes the last event of each stream once and
  reads every pair (on the emulated device the events read the host clock);
- counts the host waits the stream layer did inside it (the sync column);
- with profile_memory, gets each malloc and free of the caching allocators through the
  memory tap (memory_tap.py) and charges it to the innermost open op, with the op's peak
  and the allocating user line; on the cpu device, where numpy allocates, an op is charged
  the bytes of the new tensor it returns;
- keeps the ids of an elementwise op's inputs and output, for the fusion report.
`finish()` turns the records into torch's FunctionEvents (events.py).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from .. import _modes
from .._tensor import Tensor
from ..backends import cuda_kind
from ..backends.cuda_streams import HOST_WAITS
from ..device import get_default_device, resolve
from ..fusion.optable import OPS
from ..memory import live

__all__ = ["Session", "active_session", "aten_name"]

_now = time.perf_counter_ns
_tls = threading.local()

# our op name -> torch's, where they differ (the rest are "aten::" + name)
_ATEN = {
    "__getitem__": "aten::slice",
    "__setitem__": "aten::copy_",
    "fused": "gt::fused",
    "tensor": "aten::lift_fresh",
    "cross_entropy": "aten::cross_entropy_loss",
    "adaptive_avg_pool2d": "aten::adaptive_avg_pool2d",
}
_ELEMENTWISE = frozenset(OPS) | {"rsub"}


def aten_name(name: str) -> str:
    return _ATEN.get(name) or "aten::" + name


def active_session():
    return getattr(_tls, "session", None)


class _Op:
    """One op call or range. Class attributes are the defaults: an op sets only what it
    has (cheaper than assigning twenty slots per op)."""

    t0 = t1 = 0
    children = 0
    annotation = False
    shapes = stack = device = ev0 = ev1 = stream = ins = out = out_desc = None
    dev_mem = cpu_mem = out_bytes = waits = peak = start_mem = 0

    def __init__(self, name, parent):
        self.name = name
        self.parent = parent


_HOST = "host"  # ev0 of an op on the emulated device: its host interval is its device span


def _shape_of(a):
    if isinstance(a, Tensor):
        return list(a.shape)
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
        return [list(t.shape) for t in a]
    return []


def _device_of(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return a.device
        if type(a) in (list, tuple) and a and isinstance(a[0], Tensor):
            return a[0].device
    if "device" in kwargs:  # factories
        d = kwargs["device"]
        try:
            return get_default_device() if d is None else resolve(d)
        except Exception:  # a bad device: the op itself raises the clear error
            return None
    return None


def _frames(limit=16):
    """The user's stack, innermost first, as torch prints it: 'file.py(12): fn'."""
    skip = live._prefixes()
    out = []
    frame = sys._getframe(3)
    while frame is not None and len(out) < limit:
        code = frame.f_code
        if not code.co_filename.startswith(skip):
            out.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return out


class Session:
    """One recording window (a profile's active steps)."""

    def __init__(
        self, *, record_shapes=False, profile_memory=False, with_stack=False, device_timing=True
    ):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.device_timing = device_timing
        self.ops: list[_Op] = []
        self.stack: list[_Op] = []
        self.memory = []  # (ns, addr, signed bytes, total allocated, reserved, device, op)
        self.sites: dict = {}  # "file:line (fn)" -> [allocs, bytes, live bytes]
        self.sites_at_peak: dict = {}
        self.block_site: dict = {}
        self.allocated = {}  # allocator -> bytes allocated now
        self.cur_mem = 0  # all allocators
        self.peak_mem = 0
        self.streams = {}  # (device index, stream pointer) -> its last event
        self.stream_backend = None
        self.emulated = cuda_kind().synchronous  # events read the host clock
        self.taps = []
        self.tid = threading.get_ident()
        self.pid = os.getpid()
        self.start_ns = self.end_ns = 0

    # ------------------------------------------------------------------ on / off
    def begin(self):
        if self.profile_memory:
            allocs = _allocators()
            for a in allocs:
                self.allocated[a] = a._stats.current("allocated_bytes")
            self.cur_mem = self.peak_mem = sum(self.allocated.values())
            from .memory_tap import install

            self.taps = install(allocs, self.on_memory)
        _tls.session = self
        _modes.enter(_modes.PROFILE)
        self.start_ns = _now()

    def end(self):
        self.end_ns = _now()
        _modes.exit(_modes.PROFILE)
        _tls.session = None
        if self.taps:
            from .memory_tap import remove

            remove(self.taps)
            self.taps = []
        while self.stack:  # ranges left open (a record_function never exited)
            self.pop(self.stack[-1])
        self._resolve_device_times()

    # ------------------------------------------------------------------ ops
    def push(self, name, annotation=False):
        stack = self.stack
        op = _Op(name, stack[-1] if stack else None)
        op.annotation = annotation
        op.start_mem = op.peak = self.cur_mem
        if op.parent is not None:
            op.parent.children += 1
        self.ops.append(op)
        stack.append(op)
        op.waits = HOST_WAITS[0]  # (until pop: the count at the start)
        op.t0 = _now()
        return op

    def pop(self, op):
        op.t1 = _now()
        op.waits = HOST_WAITS[0] - op.waits
        stack = self.stack
        if stack and stack[-1] is op:
            stack.pop()
        elif op in stack:  # ranges closed out of order: close what was opened inside
            while stack.pop() is not op:
                pass
        if stack and op.peak > stack[-1].peak:
            stack[-1].peak = op.peak

    def run(self, name, fn, args, kwargs):
        stack = self.stack
        op = _Op(name, stack[-1] if stack else None)
        parent = op.parent
        if parent is not None:
            parent.children += 1
        op.start_mem = op.peak = self.cur_mem
        if self.record_shapes:
            op.shapes = [_shape_of(a) for a in args]
        if self.with_stack:
            op.stack = _frames()
        dev = op.device = _device_of(args, kwargs)
        timed = dev is not None and dev.type == "cuda" and self.device_timing
        self.ops.append(op)
        stack.append(op)
        if timed:
            op.ev0 = self._event(dev, op)
        waits = HOST_WAITS[0]
        op.t0 = _now()
        try:
            out = fn(*args, **kwargs)
        finally:
            op.t1 = _now()
            op.waits = HOST_WAITS[0] - waits
            if timed:
                op.ev1 = self._event(dev, op)
            stack.pop()
            if parent is not None and op.peak > parent.peak:
                parent.peak = op.peak
        if isinstance(out, Tensor):
            op.out = id(out)
            fresh = out._base is None
            if fresh:
                for a in args:  # (identity: `in` would compare tensors elementwise)
                    if a is out:
                        fresh = False
                        break
            if fresh:
                data = out._data
                nbytes = data.nbytes
                if (
                    dev is not None
                    and dev.type == "cpu"
                    and getattr(data, "base", 0) is None
                    and (parent is None or parent.out != op.out)
                ):
                    op.cpu_mem = nbytes
                op.out_bytes = nbytes
                if name in _ELEMENTWISE:
                    op.out_desc = (tuple(out.shape), str(out.dtype).replace("gpu_tensor.", ""))
            if parent is not None and parent.out is None:
                parent.out = op.out  # so the parent does not count the same bytes again
        if name in _ELEMENTWISE:
            op.ins = [id(a) for a in args if isinstance(a, Tensor)]
        return out

    # ------------------------------------------------------------------ device time
    def _event(self, dev, op):
        index = dev.index if dev.index is not None else 0
        if self.emulated:  # synchronous streams: the host interval is the device's
            op.stream = (index, 0)
            return _HOST
        backend = self.stream_backend
        if backend is None:
            from ..cuda import streams

            backend = self.stream_backend = streams._backend()
        handle = backend.current(index)
        ev = backend.new_event(True, False, False)
        backend.record(ev, handle)
        op.stream = (index, backend.ptr(handle))
        self.streams[op.stream] = ev
        return ev

    def _resolve_device_times(self):
        """One wait per stream used (on its last event), then every pair is read; device
        times are placed on the host clock by each device's first event (no wait at the
        start: the first op's host start stands for its device start)."""
        backend = self.stream_backend
        for last in self.streams.values():
            backend.event_synchronize(last)
        anchors = {}
        for op in self.ops:
            if op.ev0 is None:
                continue
            if op.ev0 is _HOST:
                op.ev0, op.ev1 = op.t0 / 1e3, op.t1 / 1e3
                continue
            anchor = anchors.get(op.stream[0])
            if anchor is None:
                anchor = anchors[op.stream[0]] = (op.ev0, op.t0 / 1e3)
            op.ev0 = anchor[1] + backend.elapsed_ms(anchor[0], op.ev0) * 1e3
            op.ev1 = anchor[1] + backend.elapsed_ms(anchor[0], op.ev1) * 1e3
        self.streams = {}

    # ------------------------------------------------------------------ memory
    def on_memory(self, allocator, nbytes, addr):
        total = self.allocated.get(allocator, 0) + nbytes
        self.allocated[allocator] = total
        self.cur_mem += nbytes
        stack = self.stack
        top = stack[-1] if stack else None
        if top is not None:
            top.dev_mem += nbytes
            if self.cur_mem > top.peak:
                top.peak = self.cur_mem
        self.memory.append(
            (_now(), addr, nbytes, total, allocator._reserved, allocator.device_index, top)
        )
        key = (id(allocator), addr)
        if nbytes > 0:
            site = live.capture_site(1)
            name = live.format_site(site) if site is not None else "<unknown>"
            entry = self.sites.get(name)
            if entry is None:
                entry = self.sites[name] = [0, 0, 0]
            entry[0] += 1
            entry[1] += nbytes
            entry[2] += nbytes
            self.block_site[key] = (entry, nbytes)
            if self.cur_mem > self.peak_mem:
                self.peak_mem = self.cur_mem
                self.sites_at_peak = {k: v[2] for k, v in self.sites.items()}
        else:
            held = self.block_site.pop(key, None)
            if held is not None:
                held[0][2] -= held[1]


def _allocators():
    """The caching allocators to tap: those that exist, and the current cuda device's
    (made now, so that its first malloc is seen) when cuda is available."""
    from .. import cuda
    from ..cuda import memory as cuda_memory
    from ..memory import registry

    if cuda.is_available():
        try:
            cuda_memory._allocator(None, create=True)
        except Exception:  # noqa: BLE001 - a device that cannot start: nothing to tap there
            pass
    return list(registry.existing_allocators().values())


def on_op(name, fn, args, kwargs):
    """The PROFILE handler (registered with children=True: ops inside ops are seen)."""
    session = getattr(_tls, "session", None)
    if session is None:
        return fn(*args, **kwargs)
    return session.run(name, fn, args, kwargs)


_modes.register(_modes.PROFILE, on_op, children=True)
