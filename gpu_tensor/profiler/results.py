"""A finished recording as torch's events, plus what torch's profiler lacks: memory by
allocation site and the fusion report (fusion.py)."""

from __future__ import annotations

from ..backends import cuda_kind
from .events import DeviceType, EventList, FunctionEvent
from .recorder import aten_name
from .table import format_memory

__all__ = ["Results"]

EMULATED_NOTE = (
    "Note: cuda is the emulated device here (no GPU): its streams run each op "
    "before returning, so the CUDA times are host time."
)


class Results:
    """The events of one recording window (a Session that has ended)."""

    def __init__(self, session, use_device):
        self.session = session
        self.use_device = use_device
        self.events = self._build()

    def _build(self):
        s = self.session
        base = s.start_ns
        events = []
        of = {}
        timed = False
        for i, op in enumerate(s.ops):
            name = op.name if op.annotation else aten_name(op.name)
            if op.annotation and name.startswith("ProfilerStep#"):
                name = "ProfilerStep*"  # as torch's events (the trace keeps the number)
            e = FunctionEvent(
                i + 1,
                name,
                s.tid,
                (op.t0 - base) / 1e3,
                (op.t1 - base) / 1e3,
                input_shapes=op.shapes,
                stack=op.stack,
                use_device=self.use_device,
                is_user_annotation=op.annotation,
                device_index=(op.stream[0] if op.stream else -1),
            )
            e._child_device = 0.0
            of[id(op)] = e
            if op.parent is not None:
                parent = of[id(op.parent)]
                e.cpu_parent = parent
                parent.cpu_children.append(e)
            events.append(e)
        for op, e in zip(reversed(s.ops), reversed(events), strict=True):
            if op.ev0 is not None and self.use_device:
                timed = True
                span = max(0.0, op.ev1 - op.ev0)
                e.device_time_total = span
                e.self_device_time_total = max(0.0, span - e._child_device)
                e.device_start_us = op.ev0 - base / 1e3
            else:
                e.device_time_total = e._child_device
            e.self_device_memory_usage = op.dev_mem
            e.device_memory_usage += op.dev_mem
            e.self_cpu_memory_usage = op.cpu_mem
            e.cpu_memory_usage += op.cpu_mem
            e.device_peak_memory_usage = max(0, op.peak - op.start_mem)
            e.syncs = op.waits  # counted around the whole op: its children's included
            parent = e.cpu_parent
            if parent is not None:
                parent._child_device += e.device_time_total
                parent.device_memory_usage += e.device_memory_usage
                parent.cpu_memory_usage += e.cpu_memory_usage
        for op, e in zip(s.ops, events, strict=True):
            e.self_syncs = op.waits - sum(c.syncs for c in e.cpu_children)
        loose = [m for m in s.memory if m[6] is None]
        if loose:  # malloc/free outside every op: torch's top-level [memory] row
            e = FunctionEvent(
                len(events) + 1, "[memory]", s.tid, 0.0, 0.0, use_device=self.use_device
            )
            e.count = len(loose)
            e.self_device_memory_usage = e.device_memory_usage = sum(m[2] for m in loose)
            events.append(e)
        notes = []
        if timed and cuda_kind().synchronous:
            notes.append(EMULATED_NOTE)
        for e in events:
            if e.device_index >= 0:
                e.device_type = DeviceType.CPU  # ops are host events; kernels are in the trace
        return EventList(
            events, use_device=self.use_device, profile_memory=s.profile_memory, notes=notes
        )

    # ---------------------------------------------------------------- memory by site
    def memory_sites(self):
        """[(site, allocations, bytes allocated, bytes live at the profile's peak, bytes
        live at its end)], most bytes at the peak first."""
        s = self.session
        rows = [
            (site, v[0], v[1], s.sites_at_peak.get(site, 0), v[2]) for site, v in s.sites.items()
        ]
        rows.sort(key=lambda r: (r[3], r[2]), reverse=True)
        return rows

    def memory_site_table(self, row_limit=10):
        rows = self.memory_sites()
        if not rows:
            return ""
        width = min(max(len(r[0]) for r in rows) + 2, 100)
        head = (
            f"{'Allocation site':<{width}}  {'Allocs':>8}  {'Allocated':>12}  "
            f"{'At peak':>12}  {'Live at end':>12}"
        )
        lines = [
            f"Device memory by allocation site (peak {format_memory(self.session.peak_mem)}"
            " held by the caching allocators during the profile)",
            "-" * len(head),
            head,
            "-" * len(head),
        ]
        for site, n, nbytes, at_peak, alive in rows[:row_limit]:
            if len(site) > width:
                site = "..." + site[len(site) - width + 3 :]
            lines.append(
                f"{site:<{width}}  {n:>8}  {format_memory(nbytes):>12}  "
                f"{format_memory(at_peak):>12}  {format_memory(alive):>12}"
            )
        lines.append("-" * len(head))
        return "\n".join(lines) + "\n"
