"""`gpu-tensor memory-summary rank0.json rank1.json ...`: several ranks' snapshots side by
side (from `gt.distributed.save_rank_snapshot`, or any saved snapshots, one per rank).

Data-parallel ranks should look alike; one that does not (a bigger peak: an uneven batch,
a rank-0-only evaluation, a leak) is the one to open on its own. So the table gives each
rank's current and peak memory, and names the outlier: the rank whose peak allocated
bytes sit furthest above the median, when that is more than OUTLIER_FRACTION above it.
"""

from __future__ import annotations

import json
import statistics
import sys

from ._errors import CliError
from ._format import fmt_bytes
from .snapshot_figures import device_of, fragmentation, segments_of, stats_of
from .snapshot_load import load_snapshot

__all__ = ["rank_rows", "find_outlier", "render_ranks", "ranks_main"]

OUTLIER_FRACTION = 0.10  # a peak 10% above the ranks' median is worth a look
OUTLIER_MIN_BYTES = 1 << 20  # ... and at least 1 MiB above it (tiny runs are noise)


def rank_rows(paths: list[str], device: int | None = None) -> list[dict]:
    """One row per snapshot file: rank, device, current/peak allocated and reserved."""
    rows = []
    for i, path in enumerate(paths):
        snap = load_snapshot(path)
        dev = device_of(snap, device)
        segments = segments_of(snap, dev)
        stats, exact = stats_of(snap, segments, dev)
        rank = snap.get("rank")
        frag = fragmentation(segments)
        rows.append(
            {
                "file": str(path),
                "rank": rank if isinstance(rank, int) and not isinstance(rank, bool) else i,
                "device": dev,
                "allocated": int(stats.get("allocated_bytes.all.current", 0)),
                "allocated_peak": int(stats.get("allocated_bytes.all.peak", 0)),
                "reserved": int(stats.get("reserved_bytes.all.current", 0)),
                "reserved_peak": int(stats.get("reserved_bytes.all.peak", 0)),
                "segments": len(segments),
                "largest_free_block": int(frag["largest_free_block"]),
                "external_fragmentation": round(float(frag["external_fragmentation"]), 4),
                "num_ooms": int(stats.get("num_ooms", 0)),
                "peaks_exact": exact,
            }
        )
    ranks = [r["rank"] for r in rows]
    if len(set(ranks)) != len(ranks):
        raise CliError(
            f"two snapshots claim the same rank ({sorted(ranks)}); give one file per rank"
        )
    return sorted(rows, key=lambda r: r["rank"])


def find_outlier(rows: list[dict]) -> dict | None:
    """{rank, peak, median, excess} for the rank furthest above the median peak, or None."""
    if len(rows) < 2:
        return None
    peaks = [r["allocated_peak"] for r in rows]
    median = statistics.median(peaks)
    top = max(rows, key=lambda r: (r["allocated_peak"], -r["rank"]))
    excess = top["allocated_peak"] - median
    if excess < OUTLIER_MIN_BYTES or excess <= OUTLIER_FRACTION * median:
        return None
    return {"rank": top["rank"], "peak": top["allocated_peak"], "median": median, "excess": excess}


_COLUMNS = [
    ("allocated", "allocated"),
    ("allocated_peak", "peak allocated"),
    ("reserved", "reserved"),
    ("reserved_peak", "peak reserved"),
    ("segments", "segments"),
    ("num_ooms", "OOMs"),
]


def render_ranks(rows: list[dict], outlier: dict | None) -> str:
    """A table with one column per rank, one row per figure."""
    heads = [
        f"rank {r['rank']}" + (" *" if outlier and r["rank"] == outlier["rank"] else "")
        for r in rows
    ]
    body = []
    for key, label in _COLUMNS:
        cells = [
            str(r[key]) if key in ("segments", "num_ooms") else fmt_bytes(r[key]) for r in rows
        ]
        body.append((label, cells))
    width = [max(len(h), *(len(c[i]) for _, c in body)) for i, h in enumerate(heads)]
    lw = max(len(label) for label, _ in body)
    lines = [
        f"Memory across {len(rows)} ranks (device {rows[0]['device']})",
        "",
        " " * lw + "  " + "  ".join(h.rjust(w) for h, w in zip(heads, width, strict=True)),
    ]
    for label, cells in body:
        lines.append(
            label.ljust(lw)
            + "  "
            + "  ".join(c.rjust(w) for c, w in zip(cells, width, strict=True))
        )
    lines.append("")
    if not all(r["peaks_exact"] for r in rows):
        lines.append("(a snapshot without gpu_tensor's stats: its peaks are its current values)")
    if outlier is None:
        lines.append(
            f"No outlier: every rank's peak is within {OUTLIER_FRACTION:.0%} of the median."
        )
    else:
        lines.append(
            f"Outlier: rank {outlier['rank']} (*) peaks at {fmt_bytes(outlier['peak'])}, "
            f"{fmt_bytes(outlier['excess'])} above the median {fmt_bytes(outlier['median'])}; "
            f"open its snapshot alone: gpu-tensor memory-summary "
            f"{next(r['file'] for r in rows if r['rank'] == outlier['rank'])}"
        )
    return "\n".join(lines) + "\n"


def ranks_main(paths: list[str], *, as_json: bool = False, device: int | None = None) -> int:
    rows = rank_rows(paths, device)
    outlier = find_outlier(rows)
    if as_json:
        sys.stdout.write(json.dumps({"ranks": rows, "outlier": outlier}, indent=2) + "\n")
    else:
        sys.stdout.write(render_ranks(rows, outlier))
    return 0
