"""Text rendering of a memory snapshot: stats table, segment map, largest allocations,
fragmentation figures and OOM events. `render_text(snap)` is what
`gpu-tensor memory-summary SNAPSHOT` prints; `snapshot_json(snap)` is its --json form.
"""

from __future__ import annotations

from gpu_tensor.memory.summary import format_summary

from . import snapshot_figures as fig
from ._format import fmt_bytes, fmt_frame, fmt_pct, user_frames

__all__ = [
    "allocation_contents",
    "allocation_origin",
    "render_text",
    "render_stats_table",
    "render_segment_map",
    "render_allocations",
    "render_fragmentation",
    "render_ooms",
    "snapshot_json",
    "segment_bar",
]

BAR_WIDTH = 48  # characters per segment bar: fits an 80-column terminal with the label
MAX_SEGMENTS = 32  # beyond this the text map stops; the HTML page draws every segment
MAX_FRAMES = 3  # creation frames shown per allocation; the innermost ones say the most

LEGEND = "# allocated   ~ freed, waiting on a stream event   : partly used   . free"


def segment_bar(segment: dict, width: int = BAR_WIDTH) -> str:
    """One character per 1/width of the segment: '#' or '~' when allocated or pending-free
    bytes cover at least half of the cell, ':' when some bytes are in use but fewer,
    '.' when the cell is entirely free."""
    total = segment["total_size"]
    if total <= 0:
        return ""
    base = segment["address"]
    cells = []
    for c in range(width):
        lo = base + total * c // width
        hi = base + total * (c + 1) // width
        span = max(hi - lo, 1)
        cover = {"active_allocated": 0, "active_pending_free": 0, "inactive": 0}
        for b in segment["blocks"]:
            overlap = min(hi, b["address"] + b["size"]) - max(lo, b["address"])
            if overlap > 0:
                cover[b["state"]] += overlap
        used = cover["active_allocated"] + cover["active_pending_free"]
        if not used:
            cells.append(".")
        elif cover["active_allocated"] * 2 >= span:
            cells.append("#")
        elif cover["active_pending_free"] * 2 >= span:
            cells.append("~")
        else:  # a small block must stay visible even when it fills little of its cell
            cells.append(":")
    return "".join(cells)


def render_stats_table(stats: dict, device: int = 0) -> str:
    """torch's memory_summary table (gpu_tensor.memory.summary renders it)."""
    return format_summary(stats, device=device).rstrip("\n")


def render_segment_map(segments: list[dict], limit: int = MAX_SEGMENTS) -> str:
    lines = [f"Segment map ({len(segments)} segments)   {LEGEND}"]
    if not segments:
        lines.append("  (no segments: the allocator holds no device memory)")
    for i, seg in enumerate(segments[:limit]):
        used = sum(b["size"] for b in seg["blocks"] if b["state"] != "inactive")
        lines.append(
            f"  {i:>3} {seg['address']:#014x} {fmt_bytes(seg['total_size']):>10} "
            f"{seg['segment_type']:<5} stream {seg.get('stream', 0)}  "
            f"{len(seg['blocks'])} block{'s' if len(seg['blocks']) != 1 else ''}, "
            f"{fmt_bytes(used)} in use"
        )
        lines.append(f"      |{segment_bar(seg)}|")
    if len(segments) > limit:
        lines.append(f"  ... and {len(segments) - limit} more segments (--html draws them all)")
    return "\n".join(lines)


def _describe_tensor(t: dict) -> str:
    if t.get("shape") is None and t.get("dtype") is None:
        return "untagged (a raw block or CuPy temporary)"
    shape = list(t["shape"]) if t.get("shape") is not None else ""
    return f"{t.get('dtype') or '?'}{shape}"


def allocation_origin(row: dict) -> list[str]:
    """Where an allocation was made, innermost first: its recorded frames (user code
    only), else the creation sites our live-tensor list keeps."""
    frames = user_frames(row["frames"])[:MAX_FRAMES]
    if frames:
        return [fmt_frame(f) for f in frames]
    return [t["site"] for t in row["tensors"] if t.get("site")][:MAX_FRAMES]


def allocation_contents(row: dict) -> str:
    """The tensors living in an allocation, as 'float32[2048, 1024]'."""
    return ", ".join(_describe_tensor(t) for t in row["tensors"])


def render_allocations(rows: list[dict]) -> str:
    if not rows:
        return "Largest live allocations: none"
    lines = [f"Largest live allocations (top {len(rows)})"]
    for r in rows:
        what = allocation_contents(r)
        waste = r["size"] - r["requested_size"]
        extra = f" (+{fmt_bytes(waste)} rounding)" if waste > 0 else ""
        lines.append(
            f"  {fmt_bytes(r['size']):>10}{extra}  at {r['address']:#x}  segment {r['segment']}"
            + (f"  {what}" if what else "")
        )
        origin = allocation_origin(r)
        if not origin:
            lines.append("      (no creation frames recorded; turn on _record_memory_history)")
        lines.extend(f"      {line}" for line in origin)
    return "\n".join(lines)


def render_fragmentation(f: dict) -> str:
    r = f["reserved_bytes"]
    lines = [
        "Fragmentation",
        f"  reserved {fmt_bytes(r)} in {f['segments']} segments: "
        f"allocated {fmt_bytes(f['allocated_bytes'])} ({fmt_pct(f['allocated_bytes'], r)}), "
        f"pending free {fmt_bytes(f['pending_free_bytes'])}, "
        f"free {fmt_bytes(f['free_bytes'])} ({fmt_pct(f['free_bytes'], r)})",
        f"  free space: {f['free_blocks']} blocks, largest {fmt_bytes(f['largest_free_block'])}; "
        f"external fragmentation {100 * f['external_fragmentation']:.1f}% "
        "(1 - largest free block / free bytes)",
        f"  empty_cache() could release {fmt_bytes(f['releasable_bytes'])}; "
        f"{fmt_bytes(f['non_releasable_free_bytes'])} is free inside split segments",
        f"  rounding waste (allocated - requested): {fmt_bytes(f['rounding_waste_bytes'])}",
    ]
    return "\n".join(lines)


def render_ooms(ooms: list[dict]) -> str:
    lines = [f"Out-of-memory events: {len(ooms)}"]
    for e in ooms[-5:]:  # the last few are the ones that explain the crash
        lines.append(
            f"  tried to allocate {fmt_bytes(e.get('size'))} with "
            f"{fmt_bytes(e.get('device_free'))} free on the device"
        )
        for f in user_frames(e.get("frames") or [])[:MAX_FRAMES]:
            lines.append(f"      {fmt_frame(f)}")
    return "\n".join(lines)


def render_text(snap: dict, top: int = 10, device: int | None = None, label: str = "") -> str:
    """The whole text report for one snapshot."""
    dev = fig.device_of(snap, device)
    segments = fig.segments_of(snap, dev)
    stats, exact = fig.stats_of(snap, segments, dev)
    parts = []
    if label:
        parts.append(f"Memory snapshot {label} (device {dev})")
    table = render_stats_table(stats, dev)
    if not exact:
        table += (
            "\n(stats rebuilt from the segments: this snapshot has no allocator stats, "
            "so peaks and lifetime totals are unknown)"
        )
    parts.append(table)
    parts.append(render_segment_map(segments))
    parts.append(render_allocations(fig.largest_allocations(segments, snap, top)))
    parts.append(render_fragmentation(fig.fragmentation(segments)))
    ooms = fig.oom_events(snap, dev)
    if ooms:
        parts.append(render_ooms(ooms))
    return "\n\n".join(parts) + "\n"


def snapshot_json(snap: dict, top: int = 10, device: int | None = None) -> dict:
    """Machine-readable form of render_text."""
    dev = fig.device_of(snap, device)
    segments = fig.segments_of(snap, dev)
    stats, exact = fig.stats_of(snap, segments, dev)
    return {
        "device": dev,
        "stats": stats,
        "stats_exact": exact,
        "fragmentation": fig.fragmentation(segments),
        "segments": [
            {
                "address": s["address"],
                "total_size": s["total_size"],
                "segment_type": s["segment_type"],
                "stream": s.get("stream", 0),
                "blocks": [
                    {"address": b["address"], "size": b["size"], "state": b["state"]}
                    for b in s["blocks"]
                ],
                "bar": segment_bar(s),
            }
            for s in segments
        ],
        "largest_allocations": fig.largest_allocations(segments, snap, top),
        "ooms": fig.oom_events(snap, dev),
    }
