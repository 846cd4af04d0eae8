"""The active memory timeline: every allocation a band over time, stacked as torch's
memory viewer stacks them, coloured by the site that made it.

From a snapshot's recorded history (device_traces): an `alloc` entry opens a band, the
matching `free_requested` (or older torch's `free`) closes it; still-live blocks run to
the end. Bands are stacked in allocation order; when one ends, those above it drop by its
size (torch's MemoryViz "Active Memory Timeline"). The x axis is the event number, so
bursts of events are not squeezed into one pixel.

Large histories stay small: the MAX_BANDS largest allocations are drawn one by one, and
every other allocation is summed into one grey band on top ("smaller allocations"); the
outline of each band keeps one point per pixel column at most, and the band count is
halved until the page's point budget holds. A 100k-event snapshot stays near 1-2 MB.

Zoom needs no script: radio buttons widen the SVG through CSS (its viewBox stays, so
the picture stretches) inside a horizontally scrolling box.
"""

from __future__ import annotations

from html import escape

from . import snapshot_figures as fig
from ._format import fmt_bytes, fmt_frame, user_frames

__all__ = ["allocation_bands", "active_timeline_html", "MAX_BANDS", "POINT_BUDGET"]

MAX_BANDS = 1500  # bands drawn one by one; the rest are summed into one
POINT_BUDGET = 60_000  # polygon points in the whole picture (about 14 bytes each)
WIDTH, HEIGHT = 1200, 360  # viewBox of the plot
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#2f4b7c",
    "#a05195",
    "#665191",
)  # one per top site
OTHER_SITES = "#9aa5b1"  # every site past the palette
SMALL_BAND = "#d0d4da"  # the summed smaller allocations
ZOOMS = (1, 2, 4, 8, 16)


def _site(frames) -> str:
    kept = user_frames(frames or [])
    return fmt_frame(kept[0]) if kept else "unknown site (no stacks recorded)"


def _open_close(snap: dict, device: int) -> tuple[list[dict], int]:
    """Allocations as {start, end, size, addr, frames, shape, dtype, time_us} in order."""
    traces = snap.get("device_traces") or []
    trace = [e for e in (traces[device] if device < len(traces) else []) if isinstance(e, dict)]
    live_tags = {t.get("address"): t for t in fig.live_tensors(snap)}
    allocs, open_at = [], {}
    for i, e in enumerate(trace):
        action, addr = e.get("action"), e.get("addr")
        size = e.get("size") if isinstance(e.get("size"), int) else 0
        if action == "alloc":
            band = {
                "start": i,
                "end": None,
                "size": size,
                "addr": addr,
                "frames": e.get("frames") or [],
                "shape": e.get("shape"),
                "dtype": e.get("dtype"),
                "time_us": e.get("time_us"),
            }
            open_at[addr] = band
            allocs.append(band)
        elif action in ("free_requested", "free") and addr in open_at:
            open_at.pop(addr)["end"] = i
    n = len(trace)
    for band in open_at.values():  # still live when the snapshot was taken
        band["end"] = n
        tag = live_tags.get(band["addr"]) or {}
        band["shape"] = band["shape"] or tag.get("shape")
        band["dtype"] = band["dtype"] or tag.get("dtype")
    return allocs, n


def _x(i: int, n: int) -> float:
    return WIDTH * i / max(n, 1)


def _stack(bands: list[dict], n: int) -> None:
    """Give each band its bottom edge: [(event, base)] steps, in allocation order, one per
    pixel column (the last level in a column is the one drawn). Without that, a free
    under many bands, or the end of the history (every live band "ends" there), would
    make a step per band above: 2 M steps and 100 MB for 1500 bands."""
    events = sorted(
        [(b["start"], 1, k) for k, b in enumerate(bands)]
        + [(b["end"], 0, k) for k, b in enumerate(bands)]
    )
    stack: list[int] = []  # band numbers, bottom first
    for i, is_alloc, k in events:
        band = bands[k]
        if is_alloc:
            base = sum(bands[j]["size"] for j in stack)
            band["steps"] = [(i, base)]
            stack.append(k)
            continue
        at = stack.index(k)
        stack.pop(at)
        x = round(_x(i, n), 1)
        for j in stack[at:]:  # everything above drops by the freed size
            steps = bands[j]["steps"]
            step = (i, steps[-1][1] - band["size"])
            if round(_x(steps[-1][0], n), 1) == x:
                steps[-1] = step
            else:
                steps.append(step)


def _polygon(band: dict, n: int, scale) -> list[tuple[float, float]]:
    """Outline: the bottom edge forwards, the top edge back; one point per pixel column."""
    bottom: list[tuple[float, float]] = []
    steps = band["steps"] + [(band["end"], band["steps"][-1][1])]
    for i, base in steps:
        x = round(_x(i, n), 1)
        if bottom and bottom[-1][0] == x:  # same pixel column: its last level wins
            bottom[-1] = (x, scale(base))
            continue
        if bottom:
            bottom.append((x, bottom[-1][1]))  # hold the level until this step
        bottom.append((x, scale(base)))
    top = [(x, y - scale(0) + scale(band["size"])) for x, y in reversed(bottom)]
    return bottom + top


def allocation_bands(
    snap: dict, device: int = 0, max_bands: int = MAX_BANDS, budget: int = POINT_BUDGET
) -> dict:
    """{'bands': [...], 'small': {...} | None, 'events': n, 'peak': bytes, 'sites': [...]}:
    each band with 'points' (x, y in the viewBox), its site, size, shape, dtype, frames."""
    allocs, n = _open_close(snap, device)
    by_size = sorted(range(len(allocs)), key=lambda k: -allocs[k]["size"])
    while True:
        chosen = sorted(by_size[:max_bands])
        big = [dict(allocs[k]) for k in chosen]
        _stack(big, n)
        small = [allocs[k] for k in by_size[max_bands:]]
        level = _levels(big, small, n)
        peak = max(max(level["total"], default=0), 1)

        def scale(v, peak=peak):
            return HEIGHT - HEIGHT * v / peak

        for band in big:
            band["points"] = _polygon(band, n, scale)
        points = sum(len(b["points"]) for b in big)
        if points <= budget or max_bands <= 1:
            break
        max_bands //= 2
    sites = _rank_sites(allocs)
    for band in big:
        band["site"] = _site(band["frames"])
        band["colour"] = sites.get(band["site"], OTHER_SITES)
    small_band = _small_band(level, small, n, scale) if small else None
    return {
        "bands": big,
        "small": small_band,
        "events": n,
        "peak": peak,
        "sites": sorted(sites.items(), key=lambda kv: PALETTE.index(kv[1])),
    }


def _levels(big, small, n) -> dict:
    """Per pixel column: bytes of the drawn bands, and of everything (last event of it)."""
    delta_big, delta_small = [0] * (n + 1), [0] * (n + 1)
    for group, delta in ((big, delta_big), (small, delta_small)):
        for b in group:
            delta[b["start"]] += b["size"]
            delta[b["end"]] -= b["size"]
    cols = {"x": [], "big": [], "total": []}
    level_big = level_small = 0
    for i in range(n + 1):
        level_big += delta_big[i]
        level_small += delta_small[i]
        x = round(_x(i, n), 1)
        if cols["x"] and cols["x"][-1] == x:
            cols["big"][-1] = max(cols["big"][-1], level_big)
            cols["total"][-1] = max(cols["total"][-1], level_big + level_small)
            continue
        cols["x"].append(x)
        cols["big"].append(level_big)
        cols["total"].append(level_big + level_small)
    return cols


def _small_band(level, small, n, scale) -> dict:
    bottom = [(x, scale(v)) for x, v in zip(level["x"], level["big"], strict=True)]
    top = [(x, scale(v)) for x, v in zip(level["x"], level["total"], strict=True)]
    largest = max(b["size"] for b in small)
    return {
        "points": bottom + top[::-1],
        "count": len(small),
        "largest": largest,
        "peak": max(t - b for t, b in zip(level["total"], level["big"], strict=True)),
    }


def _rank_sites(allocs) -> dict:
    """The sites that allocated the most bytes get the palette's colours, in order."""
    total: dict[str, int] = {}
    for b in allocs:
        site = _site(b["frames"])
        total[site] = total.get(site, 0) + b["size"]
    ranked = sorted(total, key=lambda s: -total[s])[: len(PALETTE)]
    return {site: PALETTE[i] for i, site in enumerate(ranked)}


def _title(band: dict) -> str:
    what = f"{fmt_bytes(band['size'])}"
    if band.get("shape") is not None:
        shape = "x".join(str(d) for d in band["shape"]) or "scalar"
        what += f" {shape} {band.get('dtype') or ''}".rstrip()
    lines = [
        what,
        f"events {band['start']}-{band['end']} at {band['addr']:#x}"
        if isinstance(band.get("addr"), int)
        else f"events {band['start']}-{band['end']}",
    ]
    lines += [fmt_frame(f) for f in user_frames(band["frames"])[:8]]
    return "\n".join(lines)


def _points(points) -> str:
    return " ".join(f"{x:g},{y:.1f}" for x, y in points)


def active_timeline_html(layout: dict) -> str:
    """The zoomable SVG with its legend, as an HTML fragment."""
    if not layout["bands"] and not layout["small"]:
        return "<p>No allocations recorded (turn on _record_memory_history, or use --run).</p>"
    parts = []
    for band in layout["bands"]:
        parts.append(
            f'<polygon class="band" fill="{band["colour"]}" points="'
            f'{_points(band["points"])}"><title>{escape(_title(band))}</title></polygon>'
        )
    small = layout["small"]
    if small:
        parts.append(
            f'<polygon class="band small" fill="{SMALL_BAND}" points="'
            f'{_points(small["points"])}"><title>{small["count"]} smaller '
            f"allocations (each at most {escape(fmt_bytes(small['largest']))}), "
            f"at most {escape(fmt_bytes(small['peak']))} at once</title></polygon>"
        )
    radios = "".join(
        f'<input type="radio" name="zoom" id="zoom{z}"{" checked" if z == 1 else ""}>'
        f'<label for="zoom{z}">{z}x</label>'
        for z in ZOOMS
    )
    zoom_css = "".join(f"#zoom{z}:checked ~ .scroll svg {{ width: {100 * z}%; }}\n" for z in ZOOMS)
    legend = "".join(f'<span style="background:{c}"></span>{escape(s)}' for s, c in layout["sites"])
    legend += f'<span style="background:{SMALL_BAND}"></span>smaller allocations'
    # kept out of the template: `ruff format` would requote a nested f-string there into
    # Python 3.12-only syntax
    summed = f", {small['count']} smaller ones summed in grey" if small else ""
    return f"""<style>
.zoom label {{ margin: 0 8px 0 2px; }}
.scroll {{ overflow-x: auto; border: 1px solid #ddd; }}
#active-timeline {{ display: block; width: 100%; height: {HEIGHT}px; }}
#active-timeline polygon {{ stroke: #fff; stroke-width: 0.4; vector-effect: non-scaling-stroke; }}
#active-timeline polygon:hover {{ stroke: #000; stroke-width: 1.5; }}
{zoom_css}</style>
<p class="legend">{legend}</p>
<div class="zoom">zoom: {radios}
<div class="scroll"><svg id="active-timeline" viewBox="0 0 {WIDTH} {HEIGHT}"
preserveAspectRatio="none" role="img" aria-label="active memory timeline">
{chr(10).join(parts)}
</svg></div></div>
<p>Peak {escape(fmt_bytes(layout["peak"]))} active; {layout["events"]} events from left to
right; {len(layout["bands"])} allocations drawn one by one{summed}. Hover a band for its
size, shape, dtype and the Python frames that made it.</p>"""
