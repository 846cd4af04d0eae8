"""Profiled events in torch's vocabulary: `FunctionEvent` (one op call or labelled range),
`FunctionEventAvg` (a key_averages row) and `EventList` (a list with `key_averages` and
`table`). Times are microseconds (floats), memory bytes, as torch's attributes are, so code
that reads `evt.self_cpu_time_total` or sorts by `"cuda_time_total"` works unchanged.

Beyond torch's attributes every event carries `device_peak_memory_usage` (the most bytes
the allocator held above the op's start while it ran, children included) and `syncs` (host
waits on the device issued inside it, from the stream layer).
"""

from __future__ import annotations

import warnings
from collections import defaultdict

from .table import build_table, format_time

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "DeviceType"]


class DeviceType:
    """torch's DeviceType for the fields users read (`evt.device_type == DeviceType.CPU`)."""

    CPU = "DeviceType.CPU"
    CUDA = "DeviceType.CUDA"


class _Times:
    """The `*_str` formatters and torch's deprecated cuda_* aliases."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cpu_time_str = property(lambda self: format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: format_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: format_time(self.device_time))
    device_time_total_str = property(lambda self: format_time(self.device_time_total))
    self_device_time_total_str = property(lambda self: format_time(self.self_device_time_total))

    def _deprecated(new):
        def get(self):
            warnings.warn(
                f"`{new.replace('device', 'cuda')}` is deprecated, please use `{new}` instead.",
                FutureWarning,
                stacklevel=2,
            )
            return getattr(self, new)

        return property(get)

    cuda_time = _deprecated("device_time")
    cuda_time_total = _deprecated("device_time_total")
    self_cuda_time_total = _deprecated("self_device_time_total")
    cuda_memory_usage = _deprecated("device_memory_usage")
    self_cuda_memory_usage = _deprecated("self_device_memory_usage")
    del _deprecated


class FunctionEvent(_Times):
    """One call of an op (or a record_function range): its interval, its tree links, the
    times and memory of it and its children."""

    def __init__(
        self,
        id,
        name,
        thread,
        start_us,
        end_us,
        *,
        input_shapes=None,
        stack=None,
        use_device=None,
        is_user_annotation=False,
        device_index=-1,
    ):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.use_device = use_device
        self.is_user_annotation = is_user_annotation
        self.device_index = device_index
        self.count = 1
        self.node_id = -1
        self.overload_name = ""
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.scope = 0
        self.flops = 0
        self.device_type = DeviceType.CPU
        self.cpu_parent = None
        self.cpu_children = []
        self.device_time_total = 0.0  # this op's stream span (children's launches included)
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.device_peak_memory_usage = 0
        self.syncs = 0
        self.self_syncs = 0

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def time_range(self):
        return (self.start_us, self.end_us)

    def __repr__(self):
        return (
            f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
            f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
            f"cpu_children={[c.id for c in self.cpu_children]} "
            f"device_time={self.device_time_str} thread={self.thread} "
            f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
            f"device_memory_usage={self.device_memory_usage}>"
        )


class FunctionEventAvg(_Times):
    """The sum of the events with one key (a row of key_averages)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.is_user_annotation = False
        self.use_device = None
        self.device_type = DeviceType.CPU
        self.overload_name = ""
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.flops = 0
        self.cpu_parent = None
        self.cpu_children = None
        for name in _SUMMED:
            setattr(self, name, 0)
        self.device_peak_memory_usage = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            for name in (
                "node_id",
                "is_async",
                "is_remote",
                "cpu_parent",
                "cpu_children",
                "input_shapes",
                "stack",
                "scope",
                "device_type",
                "is_legacy",
                "use_device",
                "is_user_annotation",
                "overload_name",
            ):
                setattr(self, name, getattr(other, name))
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.count += other.count
        self.device_peak_memory_usage = max(
            self.device_peak_memory_usage, other.device_peak_memory_usage
        )
        return self

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str} self_device_time={self.self_device_time_total_str}"
            f" device_time={self.device_time_str} input_shapes={self.input_shapes} "
            f"cpu_memory_usage={self.cpu_memory_usage} "
            f"device_memory_usage={self.device_memory_usage}>"
        )


_SUMMED = (
    "cpu_time_total",
    "device_time_total",
    "self_cpu_time_total",
    "self_device_time_total",
    "cpu_memory_usage",
    "device_memory_usage",
    "self_cpu_memory_usage",
    "self_device_memory_usage",
    "syncs",
    "self_syncs",
)


class EventList(list):
    """A list of events with torch's `key_averages`, `table` and totals."""

    def __init__(self, events=(), *, use_device=None, profile_memory=False, notes=(), extra=None):
        super().__init__(events)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._notes = tuple(notes)  # lines the table prints under torch's footer
        self._extra = extra  # () -> the sections beyond torch's (fusion, sites)

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ):
        """One FunctionEventAvg per name (and input shapes / top stack frames when asked);
        (`ProfilerStep#N` ranges are `ProfilerStep*` events already, as in torch.)"""
        stats = defaultdict(FunctionEventAvg)
        for evt in self:
            name = evt.key
            key = [name, evt.is_user_annotation]
            if group_by_input_shape:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += list(evt.stack[:group_by_stack_n])
            stats[tuple(key)].add(evt).key = name
        rows = EventList(
            stats.values(),
            use_device=self._use_device,
            profile_memory=self._profile_memory,
            notes=self._notes,
            extra=self._extra,
        )
        for avg in rows:
            avg.cpu_parent = avg.cpu_children = None
            if not group_by_input_shape:
                avg.input_shapes = ""
            if not group_by_stack_n:
                avg.stack = ""
        return rows

    table = build_table  # table.py: torch's summary table, then the notes

    def total_average(self):
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
            total.key = None
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def __str__(self):
        return self.table()
