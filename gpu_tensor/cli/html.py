"""`--html FILE`: one self-contained page: the active memory timeline (every allocation
a band, active_timeline.py), memory over time, the segment map.

Everything is inline (CSS, SVG, the data as an application/json block that no
script reads): the page works offline and loads nothing from the network. Hovering
a block or an OOM marker shows its <title> (size, state, creation frames).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from html import escape
from itertools import islice

from . import snapshot_figures as fig
from ._errors import write_chunks
from ._format import fmt_bytes, fmt_frame, user_frames
from .active_timeline import active_timeline_html, allocation_bands
from .snapshot_view import (
    allocation_contents,
    allocation_origin,
    render_fragmentation,
    render_ooms,
    render_stats_table,
)
from .timeline import downsample, memory_timeline

__all__ = ["html_parts", "render_html", "segment_map_svg", "timeline_svg", "write_html"]

MAP_WIDTH = 900  # px for the widest bar; each segment is scaled to its own row
ROW_HEIGHT = 18
LABEL_WIDTH = 260  # px of text left of each bar
PLOT_W, PLOT_H, PAD = 900, 280, 60
PIECE_PARTS = 1024  # segment-map rectangles per write (~300 KB)

_COLOURS = {"active_allocated": "#3b7dd8", "active_pending_free": "#e8a33d", "inactive": "#e4e7eb"}
_SERIES = (("reserved", "#888888"), ("active", "#e8a33d"), ("allocated", "#3b7dd8"))

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
pre { font: 12px/1.25 ui-monospace, monospace; background: #f6f8fa; padding: 8px; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 14px; }
svg text { font: 11px ui-monospace, monospace; }
"""


def _block_title(block: dict) -> str:
    lines = [f"{fmt_bytes(block['size'])} {block['state']} at {block['address']:#x}"]
    lines += [fmt_frame(f) for f in user_frames(block.get("frames") or [])[:6]]
    return "\n".join(lines)


def segment_map_svg(segments: list[dict]) -> str:
    """One row per segment: its blocks as rectangles coloured by state, scaled to the row."""
    return "".join(_segment_map_parts(segments))


def _segment_map_parts(segments: list[dict]) -> Iterator[str]:
    """The segment map a row and a rectangle at a time (the page's largest part: a
    rectangle with a <title> per block, about 300 bytes each)."""
    height = ROW_HEIGHT * max(len(segments), 1) + 4
    yield (
        f'<svg id="segment-map" width="{LABEL_WIDTH + MAP_WIDTH + 10}" height="{height}" '
        'role="img" aria-label="segment map">'
    )
    for i, seg in enumerate(segments):
        y = i * ROW_HEIGHT + 2
        label = (
            f"{seg['address']:#x} {fmt_bytes(seg['total_size'])} "
            f"{seg['segment_type']} s{seg.get('stream', 0)}"
        )
        pool = tuple(seg.get("segment_pool_id") or (0, 0))
        graph = pool != (0, 0)  # a CUDA graph's private pool (torch's MempoolId_t)
        mark = ' class="graph-pool" font-style="italic"' if graph else ""
        if graph:
            label += f" graph pool {pool}"
        yield f'\n<text x="0" y="{y + ROW_HEIGHT - 6}"{mark}>{escape(label)}</text>'
        for b in seg["blocks"] if seg["total_size"] > 0 else ():
            x = LABEL_WIDTH + MAP_WIDTH * (b["address"] - seg["address"]) / seg["total_size"]
            w = max(MAP_WIDTH * b["size"] / seg["total_size"], 1.0)  # tiny blocks stay visible
            yield (
                f'\n<rect class="block {b["state"]}" x="{x:.2f}" y="{y}" width="{w:.2f}" '
                f'height="{ROW_HEIGHT - 4}" fill="{_COLOURS[b["state"]]}" stroke="#fff" '
                f'stroke-width="0.5" data-size="{b["size"]}" data-state="{b["state"]}">'
                f"<title>{escape(_block_title(b))}</title></rect>"
            )
    yield "\n</svg>"


def _joined(parts: Iterable[str], n: int = PIECE_PARTS) -> Iterator[str]:
    """`parts` joined `n` at a time: a few hundred KB per write, not a call per rectangle."""
    it = iter(parts)
    while batch := list(islice(it, n)):
        yield "".join(batch)


def timeline_svg(series: dict) -> str:
    """allocated / active / reserved bytes against time, with OOMs as red lines."""
    ts = series["t_us"]
    t_max = max(ts[-1] if ts else 0, max((o["t_us"] for o in series["ooms"]), default=0), 1)
    y_max = max(max(series["reserved"] + series["active"], default=0), 1)

    def x(t: float) -> float:
        return PAD + (PLOT_W - 2 * PAD) * t / t_max

    def y(v: float) -> float:
        return PLOT_H - PAD / 2 - (PLOT_H - PAD) * v / y_max

    out = [
        f'<svg id="timeline" width="{PLOT_W}" height="{PLOT_H}" role="img" aria-label="memory over time">'
    ]
    out.append(
        f'<line x1="{PAD}" y1="{y(0):.1f}" x2="{PLOT_W - PAD}" y2="{y(0):.1f}" stroke="#444"/>'
        f'<line x1="{PAD}" y1="{y(0):.1f}" x2="{PAD}" y2="{y(y_max):.1f}" stroke="#444"/>'
    )
    for frac in (0.0, 0.5, 1.0):
        v = y_max * frac
        out.append(f'<text x="2" y="{y(v) + 4:.1f}">{escape(fmt_bytes(v))}</text>')
    out.append(f'<text x="{PLOT_W - PAD - 80}" y="{PLOT_H - 4}">{t_max / 1000:.1f} ms</text>')
    out.append(f'<text x="{PAD}" y="{PLOT_H - 4}">0 ms</text>')
    for name, colour in _SERIES:
        # A step plot: each level holds until the next event.
        pts = []
        for i, (t, v) in enumerate(zip(ts, series[name], strict=True)):
            if i:
                pts.append(f"{x(t):.2f},{y(series[name][i - 1]):.2f}")
            pts.append(f"{x(t):.2f},{y(v):.2f}")
        pts.append(f"{x(t_max):.2f},{y(series[name][-1]):.2f}")
        out.append(
            f'<polyline class="series" data-series="{name}" fill="none" stroke="{colour}" '
            f'stroke-width="1.5" points="{" ".join(pts)}"/>'
        )
    for o in series["ooms"]:
        out.append(
            f'<line class="oom" x1="{x(o["t_us"]):.2f}" y1="{y(0):.1f}" x2="{x(o["t_us"]):.2f}" '
            f'y2="{y(y_max):.1f}" stroke="#d33" stroke-width="2"><title>'
            f"{escape('OOM: tried to allocate ' + fmt_bytes(o['size']))}</title></line>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _legend(items) -> str:
    return (
        '<p class="legend">'
        + "".join(f'<span style="background:{c}"></span>{escape(n)}' for n, c in items)
        + "</p>"
    )


def render_html(
    snap: dict, title: str = "gpu_tensor memory snapshot", device: int = 0, top: int = 10
) -> str:
    """The whole page as a string (write_html streams the same page to a file)."""
    return "".join(html_parts(snap, title, device, top))


def write_html(
    path: str,
    snap: dict,
    title: str = "gpu_tensor memory snapshot",
    device: int = 0,
    top: int = 10,
) -> None:
    """Write the page to `path` as it is rendered: the page (159 MB for a 246 MiB
    snapshot) is never one string, so memory stays near the snapshot's own size."""
    write_chunks(path, html_parts(snap, title, device, top))


def html_parts(
    snap: dict, title: str = "gpu_tensor memory snapshot", device: int = 0, top: int = 10
) -> Iterator[str]:
    """The page in order, in pieces; each figure is built when its turn comes, so the
    active timeline's working set is gone before the segment map is drawn."""
    segments = fig.segments_of(snap, device)
    frag = fig.fragmentation(segments)
    series = downsample(memory_timeline(snap, device))
    yield f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>{_CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p>device {device}: {frag["segments"]} segments, reserved {escape(fmt_bytes(frag["reserved_bytes"]))},
allocated {escape(fmt_bytes(frag["allocated_bytes"]))}, free {escape(fmt_bytes(frag["free_bytes"]))}
(largest free block {escape(fmt_bytes(frag["largest_free_block"]))}),
{len(series["ooms"])} out-of-memory events, {series["events"]} recorded events.</p>
<h2>Active memory timeline</h2>
"""
    yield active_timeline_html(allocation_bands(snap, device))
    yield f"""
<h2>Memory over time</h2>
{_legend([(n, c) for n, c in reversed(_SERIES)] + [("out of memory", "#d33")])}
{timeline_svg(series)}
<h2>Segment map</h2>
{_legend([("allocated", _COLOURS["active_allocated"]), ("freed, waiting on a stream event", _COLOURS["active_pending_free"]), ("free", _COLOURS["inactive"])])}
"""
    yield from _joined(_segment_map_parts(segments))
    rows = fig.largest_allocations(segments, snap, top)
    alloc_rows = "".join(
        f"<tr><td>{escape(fmt_bytes(r['size']))}</td><td>{r['address']:#x}</td>"
        f"<td>{escape(allocation_contents(r))}</td>"
        f"<td>{'<br>'.join(escape(line) for line in allocation_origin(r)) or '-'}</td></tr>"
        for r in rows
    )
    stats, _ = fig.stats_of(snap, segments, device)
    ooms = fig.oom_events(snap, device)
    # '</' inside the JSON would end the <script> element early.
    data = json.dumps({"timeline": series, "fragmentation": frag}).replace("</", "<\\/")
    yield f"""
<h2>Largest live allocations</h2>
<table><tr><th>size</th><th>address</th><th>tensors</th><th>created at</th></tr>{alloc_rows}</table>
<h2>Fragmentation</h2>
<pre>{escape(render_fragmentation(frag))}</pre>
{f"<h2>Out of memory</h2><pre>{escape(render_ooms(ooms))}</pre>" if ooms else ""}
<h2>Allocator stats</h2>
<pre>{escape(render_stats_table(stats, device))}</pre>
<script type="application/json" id="snapshot-data">{data}</script>
</body></html>
"""
