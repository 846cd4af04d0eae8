"""`gt.autograd.profiler`: torch's legacy profiler names (tutorials still use them)
over gpu_tensor.profiler.

    with gt.autograd.profiler.profile(with_stack=True, profile_memory=True) as prof:
        model(x)
    print(prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total"))
"""

from __future__ import annotations

import contextlib
import functools
import warnings

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function
from ..profiler.profile import ProfilerActivity
from ..profiler.profile import profile as _profile

__all__ = [
    "profile",
    "record_function",
    "emit_nvtx",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
]


def _on_events(method):
    """EventList's `method`, signature and docstring included, called on the profile's
    events (torch's legacy profile answers `table()` itself)."""

    @functools.wraps(method)
    def on_events(self, *args, **kwargs):
        return method(self.events(), *args, **kwargs)

    return on_events


class profile(_profile):
    """torch.autograd.profiler.profile: records from `__enter__` to `__exit__` (no
    schedule); `enabled=False` records nothing."""

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        with_flops=False,
        profile_memory=False,
        with_stack=False,
        with_modules=False,
        use_kineto=False,
        use_cpu=True,
        experimental_config=None,
        acc_events=False,
        custom_trace_id_callback=None,
    ):
        if use_cuda:
            warnings.warn(
                "The attribute `use_cuda` will be deprecated soon, please use "
                "``use_device = 'cuda'`` instead.",
                FutureWarning,
                stacklevel=2,
            )
        activities = [ProfilerActivity.CPU]
        if use_cuda or use_device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        self.enabled = enabled
        super().__init__(
            activities=activities,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            acc_events=acc_events,
        )

    def __enter__(self):
        if self.enabled:
            self.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.stop()
        return False

    @property
    def function_events(self):
        return self.events()

    table = _on_events(EventList.table)

    @property
    def self_cpu_time_total(self):
        return self.events().self_cpu_time_total

    def total_average(self):
        return self.events().total_average()

    def __str__(self):
        return self.table()


@contextlib.contextmanager
def emit_nvtx(enabled=True, record_shapes=False):
    """torch's NVTX ranges for Nsight: accepted; gpu_tensor emits none yet."""
    yield
