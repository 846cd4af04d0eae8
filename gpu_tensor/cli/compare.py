"""`memory-summary A --compare B`: what grew and what shrank between two snapshots, by
the allocation site that holds the memory (torch's `_memory_viz compare`, as a table and
an SVG bar chart instead of flame graphs).

A block's site is the first user frame of its recorded stack; without stacks, the
creation site our extension records for live tensors; else "unknown site".
"""

from __future__ import annotations

from html import escape

from . import snapshot_figures as fig
from ._format import fmt_bytes, fmt_frame, user_frames

__all__ = ["live_by_site", "compare_sites", "render_compare", "compare_svg", "compare_page"]

UNKNOWN = "unknown site (no stacks or creation sites recorded)"
BAR_W, ROW_H, LABEL_W = 420, 18, 520


def live_by_site(snap: dict, device: int | None = None) -> dict[str, list[int]]:
    """site -> [live bytes, live blocks] of the allocated blocks in `snap`."""
    device = fig.device_of(snap, device)
    sites = {t.get("address"): t.get("site") for t in fig.live_tensors(snap)}
    out: dict[str, list[int]] = {}
    for seg in fig.segments_of(snap, device):
        for block in seg["blocks"]:
            if block["state"] != "active_allocated":
                continue
            frames = user_frames(block.get("frames") or [])
            site = fmt_frame(frames[0]) if frames else sites.get(block["address"]) or UNKNOWN
            entry = out.setdefault(site, [0, 0])
            entry[0] += block["size"]
            entry[1] += 1
    return out


def compare_sites(a: dict, b: dict, device: int | None = None) -> list[dict]:
    """Per site: bytes and blocks in A and B and the change, biggest change first."""
    before, after = live_by_site(a, device), live_by_site(b, device)
    rows = []
    for site in set(before) | set(after):
        (ba, na), (bb, nb) = before.get(site, [0, 0]), after.get(site, [0, 0])
        if ba != bb or na != nb:
            rows.append(
                {
                    "site": site,
                    "before": ba,
                    "after": bb,
                    "change": bb - ba,
                    "blocks_before": na,
                    "blocks_after": nb,
                }
            )
    rows.sort(key=lambda r: (-abs(r["change"]), r["site"]))
    return rows


def render_compare(rows: list[dict], label_a: str, label_b: str, top: int = 20) -> str:
    total = sum(r["change"] for r in rows)
    lines = [
        f"Live memory by allocation site: {label_a} -> {label_b} "
        f"(net {'+' if total >= 0 else '-'}{fmt_bytes(abs(total))})",
        "",
    ]
    for title, keep in (("grew", lambda r: r["change"] > 0), ("shrank", lambda r: r["change"] < 0)):
        chosen = [r for r in rows if keep(r)][:top]
        lines.append(f"{title}:" if chosen else f"{title}: nothing")
        for r in chosen:
            lines.append(
                f"  {'+' if r['change'] > 0 else '-'}{fmt_bytes(abs(r['change'])):>10}"
                f"  {fmt_bytes(r['before']):>10} -> {fmt_bytes(r['after']):<10}"
                f"  blocks {r['blocks_before']} -> {r['blocks_after']}  {r['site']}"
            )
        lines.append("")
    return "\n".join(lines)


def compare_svg(rows: list[dict], top: int = 20) -> str:
    """Diverging bars: growth to the right (red), shrinkage to the left (green)."""
    rows = rows[:top]
    scale = max((abs(r["change"]) for r in rows), default=1) or 1
    mid = LABEL_W + BAR_W
    out = [
        f'<svg id="compare" width="{LABEL_W + 2 * BAR_W + 10}" '
        f'height="{ROW_H * max(len(rows), 1) + 4}" role="img" aria-label="compare">'
    ]
    for i, r in enumerate(rows):
        y = i * ROW_H + 2
        w = max(BAR_W * abs(r["change"]) / scale, 1.0)
        x = mid if r["change"] > 0 else mid - w
        colour = "#d94f4f" if r["change"] > 0 else "#4f9d69"
        sign = "+" if r["change"] > 0 else "-"
        tip = (
            f"{sign}{fmt_bytes(abs(r['change']))}: {fmt_bytes(r['before'])} -> "
            f"{fmt_bytes(r['after'])}\n{r['site']}"
        )
        out.append(
            f'<text x="0" y="{y + ROW_H - 6}">{escape(r["site"][-70:])}</text>'
            f'<rect class="change" x="{x:.1f}" y="{y}" width="{w:.1f}" '
            f'height="{ROW_H - 4}" fill="{colour}"><title>{escape(tip)}</title></rect>'
        )
    out.append(
        f'<line x1="{mid}" y1="0" x2="{mid}" y2="{ROW_H * max(len(rows), 1)}" stroke="#444"/></svg>'
    )
    return "\n".join(out)


def compare_page(rows: list[dict], label_a: str, label_b: str, top: int = 20) -> str:
    """A self-contained HTML page with the table and the bars."""
    text = render_compare(rows, label_a, label_b, top)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(label_a)} vs {escape(label_b)}</title>
<style>body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; }}
pre {{ font: 12px/1.25 ui-monospace, monospace; background: #f6f8fa; padding: 8px; }}
svg text {{ font: 11px ui-monospace, monospace; }}</style></head><body>
<h1>Live memory by allocation site: {escape(label_a)} &rarr; {escape(label_b)}</h1>
<p>Red: grew; green: shrank. Hover a bar for the sizes.</p>
{compare_svg(rows, top)}
<pre>{escape(text)}</pre>
</body></html>
"""


def compare_main(a: dict, b: dict, args) -> int:
    """memory-summary A --compare B: print (or --json) the change by site; --html draws it."""
    import json
    import sys

    from ._errors import write_text

    rows = compare_sites(a, b, args.device)
    if args.json:
        sys.stdout.write(json.dumps({"compare": rows}, indent=2) + "\n")
    else:
        sys.stdout.write(render_compare(rows, args.snapshot, args.compare, args.top) + "\n")
    if args.html:
        write_text(args.html, compare_page(rows, args.snapshot, args.compare, args.top))
        if not args.json:
            sys.stdout.write(f"wrote {args.html}\n")
    return 0
