"""`gt.profiler`: torch.profiler's API (profile, schedule, record_function,
tensorboard_trace_handler, key_averages().table(), export_chrome_trace) with per-op device
time from CUDA events read once at stop(), exact memory per op and per allocation site, host
syncs per op, and a report of elementwise chains `@gt.fuse` would merge.

Ops reach the profiler through the modes word (gpu_tensor/_modes.py); names follow torch's
`aten::` names so tables compare with torch's."""

from .events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from .profile import (
    ProfilerActivity,
    profile,
    record_function,
    supported_activities,
    tensorboard_trace_handler,
)
from .schedule import ProfilerAction, schedule

__all__ = [
    "profile",
    "ProfilerActivity",
    "ProfilerAction",
    "schedule",
    "record_function",
    "tensorboard_trace_handler",
    "supported_activities",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "DeviceType",
    "kineto_available",
]


def kineto_available() -> bool:
    """torch's check for its trace backend: this profiler always traces."""
    return True
