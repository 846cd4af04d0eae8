"""`schedule(wait=, warmup=, active=, repeat=, skip_first=)`: which steps a profile records.

The same pure function as torch.profiler.schedule (tests compare the two step by step):
after `skip_first` steps, cycles of `wait` idle steps, `warmup` steps (the profiler is on but
keeps nothing) and `active` recorded steps, the last of which saves the trace
(RECORD_AND_SAVE, when `on_trace_ready` fires); `repeat` cycles (0: until the end).
"""

from __future__ import annotations

import enum
import warnings

__all__ = ["ProfilerAction", "schedule"]


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4  # torch's: device collection stopped early (never happens here)


def schedule(
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
    skip_first_wait: int = 0,
):
    """The action for each step number; `skip_first_wait`: the first cycle skips `wait`."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        m = step % cycle
        if m < wait:
            return ProfilerAction.NONE
        if m < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if m < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def record_every_step(step: int) -> ProfilerAction:
    """The schedule of a profile given none: record from start to stop."""
    return ProfilerAction.RECORD
