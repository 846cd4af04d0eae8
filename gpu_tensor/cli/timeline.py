"""Memory over time, replayed from a snapshot's recorded history (device_traces).

torch's trace actions (research/pytorch-memory.md §3.2): alloc adds to allocated and
active bytes; free_requested takes from allocated (the program let go); free_completed
takes from active (the block really went back, possibly later because of
record_stream); segment_alloc/map and segment_free/unmap move reserved bytes; oom is a
marker. The ring buffer may have dropped the oldest events, so the series is anchored
at its END on the state the segments show, and the start is worked out backwards.
"""

from __future__ import annotations

from . import snapshot_figures as fig

__all__ = ["memory_timeline", "downsample", "MAX_POINTS"]

# action -> (allocated, active, reserved) sign of the event's size
_EFFECT = {
    "alloc": (1, 1, 0),
    "free_requested": (-1, 0, 0),
    "free_completed": (0, -1, 0),
    "free": (-1, -1, 0),  # older torch wrote one 'free' event
    "segment_alloc": (0, 0, 1),
    "segment_map": (0, 0, 1),
    "segment_free": (0, 0, -1),
    "segment_unmap": (0, 0, -1),
}


def memory_timeline(snap: dict, device: int = 0) -> dict:
    """{'t_us': [...], 'allocated': [...], 'active': [...], 'reserved': [...],
    'ooms': [{'t_us', 'size', 'device_free'}], 'events': n}; times start at 0."""
    traces = snap.get("device_traces") or []
    trace = [e for e in (traces[device] if device < len(traces) else []) if isinstance(e, dict)]
    segments = fig.segments_of(snap, device)
    frag = fig.fragmentation(segments)
    final = [
        frag["allocated_bytes"],
        frag["allocated_bytes"] + frag["pending_free_bytes"],
        frag["reserved_bytes"],
    ]
    # Two passes over the trace rather than a list of steps: the start level needs the
    # sum of every change first, and a 200k-event history's steps cost ~40 MB.
    totals, ooms, t0 = [0, 0, 0], [], None
    for t, size, effect, e in _steps(trace):
        if effect is None:
            if e.get("action") == "oom":
                ooms.append({"t_us": t, "size": size, "device_free": e.get("device_free")})
                t0 = t if t0 is None else min(t0, t)
            continue
        t0 = t if t0 is None else min(t0, t)
        for k in range(3):
            totals[k] += effect[k] * size
    t0 = 0 if t0 is None else t0
    level = [max(final[k] - totals[k], 0) for k in range(3)]
    series = {"t_us": [0], "allocated": [level[0]], "active": [level[1]], "reserved": [level[2]]}
    for t, size, effect, _ in _steps(trace):
        if effect is None:
            continue
        level = [max(level[k] + effect[k] * size, 0) for k in range(3)]
        series["t_us"].append(t - t0)
        series["allocated"].append(level[0])
        series["active"].append(level[1])
        series["reserved"].append(level[2])
    for o in ooms:
        o["t_us"] -= t0
    series["ooms"] = ooms
    series["events"] = len(trace)
    return series


def _steps(trace):
    """(time, size, effect or None, entry) per event; times default to the event number."""
    for i, e in enumerate(trace):
        t = e.get("time_us", i)
        t = t if isinstance(t, (int, float)) else i
        size = e.get("size") if isinstance(e.get("size"), int) else 0
        yield t, size, _EFFECT.get(e.get("action")), e


MAX_POINTS = 2000  # per series in the HTML plot: finer than a screen's pixels, small page


def downsample(series: dict, max_points: int = MAX_POINTS) -> dict:
    """At most `max_points` points per series: consecutive events are grouped and each
    group keeps its time of last event and its MAXIMUM level, so peaks (what runs out of
    memory) survive; the last point stays the final state."""
    n = len(series["t_us"])
    if n <= max_points:
        return series
    out = {k: [] for k in ("t_us", "allocated", "active", "reserved")}
    for g in range(max_points):
        lo, hi = n * g // max_points, n * (g + 1) // max_points
        out["t_us"].append(series["t_us"][hi - 1])
        for k in ("allocated", "active", "reserved"):
            out[k].append(max(series[k][lo:hi]))
    for k in ("allocated", "active", "reserved"):
        out[k][-1] = series[k][-1]
    return dict(series, **out, downsampled_from=n)
