"""Markdown rendering of results records: one place, used by every script that prints."""

from __future__ import annotations

__all__ = [
    "fmt_seconds",
    "fmt_gbps",
    "fmt_pct",
    "markdown_table",
    "results_table",
    "results_header",
]

MAX_NOTE_CHARS = 60  # keep the notes column readable in a terminal


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    if s < 1:
        return f"{s * 1e3:.3f} ms"
    return f"{s:.3f} s"


def fmt_gbps(g: float | None) -> str:
    return "—" if g is None else f"{g:,.1f}"


def fmt_pct(p: float | None) -> str:
    return "—" if p is None else f"{100 * p:.1f}%"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(cell: str) -> str:
        return str(cell).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# the columns the harness computes for a row (Suite.record refuses them as extra columns)
COMPUTED = frozenset(
    {
        "seconds",
        "p10",
        "p90",
        "n",
        "noisy",
        "spread",
        "clock",
        "number",
        "wall_median",
        "nbytes",
        "gbps",
        "ceiling_gbps",
        "ceiling_kind",
        "pct_of_ceiling",
    }
)
_ROW_KEYS = COMPUTED | {"case", "impl", "skipped"}


def _notes(row: dict) -> str:
    if row.get("skipped"):
        return f"skipped: {row['skipped']}"
    parts = ["NOISY"] if row.get("noisy") else []
    parts += [f"{k}={v}" for k, v in row.items() if k not in _ROW_KEYS]
    text = ", ".join(parts)
    return text if len(text) <= MAX_NOTE_CHARS else text[: MAX_NOTE_CHARS - 1] + "…"


def results_table(rows: list[dict]) -> str:
    header = ["case", "impl", "median", "p10–p90", "GB/s", "% ceiling", "n", "notes"]
    body = []
    for r in rows:
        spread = "—"
        if r.get("p10") is not None and r.get("p90") is not None:
            spread = f"{fmt_seconds(r['p10'])} – {fmt_seconds(r['p90'])}"
        body.append(
            [
                r["case"],
                r["impl"],
                fmt_seconds(r.get("seconds")),
                spread,
                fmt_gbps(r.get("gbps")),
                fmt_pct(r.get("pct_of_ceiling")),
                str(r.get("n", "—")),
                _notes(r),
            ]
        )
    return markdown_table(header, body)


def results_header(result: dict) -> str:
    """Two lines: what ran where, and the same-run ceilings and skipped peers."""
    m = result.get("machine") or {}
    gpu = (m.get("gpu") or {}).get("name")
    where = f"{result['device']} ({gpu})" if gpu else f"{result['device']} ({m.get('cpu', '?')})"
    mode = "quick" if result.get("quick") else "full"
    lines = [f"### {result['benchmark']} — {where}, {result.get('started_at', '?')} UTC, {mode}"]
    ceil = [
        f"{k} {v['gbps']:,.1f} GB/s ({v['convention']})"
        for k, v in (result.get("ceilings") or {}).items()
        if v and v.get("gbps")
    ]
    skipped = [
        f"{k}: {p['reason']}" for k, p in (result.get("peers") or {}).items() if not p["available"]
    ]
    if ceil:
        lines.append("Ceilings (same run): " + "; ".join(ceil))
    if skipped:
        lines.append("Peers skipped: " + "; ".join(skipped))
    return "\n\n".join(lines)
