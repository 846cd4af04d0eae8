"""Regenerate the README's Performance section from the newest GPU results.

    python -m profiling.update_readme [--results DIR] [--readme README.md] [--check]

Only the text between `<!-- perf:start -->` and `<!-- perf:end -->` is rewritten;
the rest of the README stays byte for byte. Until a GPU run has been recorded under
profiling/results/, the section says so instead of showing numbers. CPU results
never reach the README: its numbers are GPU numbers, dated, beside their peers
and the ceiling measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .goals import OURS
from .report import gaps_table, load_results
from .tables import fmt_gbps, fmt_pct, fmt_seconds, markdown_table

__all__ = ["START", "END", "NO_GPU_TEXT", "find_gpu_run", "render_section", "update", "main"]

REPO_ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- perf:start -->", "<!-- perf:end -->"
NO_GPU_TEXT = (
    "No GPU run has been recorded yet; the table appears here after `profiling/gpu_check.sh` runs\n"
    "on a GPU machine and `python -m profiling.update_readme` is run on its results."
)
MAX_CASES_PER_BENCH = 10  # the README shows the headline; the full table is in the results
METRIC_FIELDS = ("fragmentation", "host_overhead", "hidden_fraction")  # goals read these


def _gpu_results(root: Path) -> list[tuple[str, Path]]:
    """(started_at, file) of every GPU results file under root (quick-run tmp/ left out)."""
    found = []
    for f in root.rglob("*.json"):
        if "tmp" in f.relative_to(root).parts[:-1] or f.name == "summary.json":
            continue
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("device") == "cuda" and "rows" in data:
            found.append((data.get("started_at", ""), f))
    return sorted(found)


def find_gpu_run(root: Path) -> list[dict]:
    """The results of the newest GPU run: every GPU file in the folder of the newest one."""
    found = _gpu_results(root)
    if not found:
        return []
    folder = found[-1][1].parent
    return [r for r in load_results([folder]) if r.get("device") == "cuda"]


def _cell(row: dict) -> str:
    """impl, time, GB/s, and the non-time metrics a goal reads (fragmentation...)."""
    parts = [row["impl"]]
    if row.get("seconds") is not None:
        parts.append(fmt_seconds(row["seconds"]))
    text = " ".join(parts)
    if row.get("gbps"):
        text += f", {fmt_gbps(row['gbps'])} GB/s"
    for field in METRIC_FIELDS:
        if isinstance(row.get(field), (int, float)):
            text += f", {field} {row[field]:.4g}"
    return text


def _peer_cell(peer: dict, ours: dict) -> str:
    text = _cell(peer)
    if ours.get("seconds") and peer.get("seconds"):
        ratio = peer["seconds"] / ours["seconds"]
        text += (
            f" ({ours['impl']} {ratio:.2f}× faster)"
            if ratio >= 1
            else f" ({ours['impl']} {1 / ratio:.2f}× slower)"
        )
    return text


def _device_class(impl: str, ours: bool) -> str | None:
    """'cpu' / 'cuda' when the impl names its device, so that a case measured on both
    (dispatch) pairs numpy with our cpu row and cupy with our cuda row."""
    tag = re.search(r"\((cpu|cuda)\)", impl)
    if tag:
        return tag.group(1)
    if not ours:
        if re.match(r"numpy\b", impl):
            return "cpu"
        if re.match(r"cupy\b", impl):
            return "cuda"
    return None


def _groups(rs: list[dict]) -> list[tuple[dict | None, list[dict]]]:
    """(our row, the rows it is compared with): one group per device class of our rows; our
    other variants (unfused, pageable) and peers join the group of their class, else the
    first."""
    primaries: dict[str | None, dict] = {}
    for r in rs:
        if re.search(OURS, r["impl"], re.I):
            primaries.setdefault(_device_class(r["impl"], True), r)
    if not primaries:
        return [(None, rs)]
    groups = {id(p): (p, []) for p in primaries.values()}
    first = next(iter(primaries.values()))
    for r in rs:
        if id(r) in groups:
            continue
        is_ours = re.search(OURS, r["impl"], re.I) is not None
        owner = primaries.get(_device_class(r["impl"], is_ours), first)
        groups[id(owner)][1].append(r)
    return list(groups.values())


def _bench_rows(result: dict) -> list[list[str]]:
    by_case: dict[str, list[dict]] = {}
    for r in result["rows"]:
        if not r.get("skipped"):
            by_case.setdefault(r["case"], []).append(r)
    rows = []
    for case, rs in list(by_case.items())[:MAX_CASES_PER_BENCH]:
        for ours, peers in _groups(rs):
            ours_cell, ceiling = "—", "—"
            if ours:
                ours_cell = _cell(ours)
                if ours.get("ceiling_gbps"):
                    kind = ours.get("ceiling_kind") or "ceiling"
                    ceiling = (
                        f"{fmt_pct(ours.get('pct_of_ceiling'))} of {kind} "
                        f"{fmt_gbps(ours['ceiling_gbps'])} GB/s"
                    )
            cells = [_peer_cell(p, ours) if ours else _cell(p) for p in peers]
            rows.append([result["benchmark"], case, ours_cell, ceiling, "; ".join(cells) or "—"])
    return rows


def render_section(results: list[dict], source: str = "") -> str:
    """The markdown between the markers (no markers)."""
    if not results:
        return NO_GPU_TEXT
    m = results[0].get("machine") or {}
    gpu = m.get("gpu") or {}
    versions = ", ".join(f"{k} {m[k]}" for k in ("cupy", "numpy", "torch", "python") if m.get(k))
    dates = sorted({r.get("started_at", "?")[:10] for r in results})
    ceilings = []
    for kind, label in (
        ("d2d", "device-to-device copy"),
        ("h2d", "pinned H2D"),
        ("d2h", "pinned D2H"),
    ):
        rec = next(
            (r["ceilings"][kind] for r in results if (r.get("ceilings") or {}).get(kind)), None
        )
        if rec:
            ceilings.append(f"{label} {fmt_gbps(rec['gbps'])} GB/s ({rec['convention']})")
    lines = [
        f"Measured on {', '.join(dates)} (UTC) on one {gpu.get('name', 'GPU')} "
        f"(driver {gpu.get('driver') or '?'}, CUDA runtime {gpu.get('cuda_runtime', '?')}; "
        f"{versions}) by `profiling/gpu_check.sh`"
        + (f"; raw data in `{source}`." if source else "."),
        "",
        "Ceilings measured in the same run: " + ("; ".join(ceilings) or "none recorded") + ". "
        "Bandwidth counts bytes read + written (transfers: bytes moved); medians of repeated runs.",
        "",
    ]
    rows = [row for r in results for row in _bench_rows(r)]
    lines.append(markdown_table(["benchmark", "case", "gpu_tensor", "of ceiling", "peers"], rows))
    lines += [
        "",
        "Gaps to goals:",
        "",
        gaps_table(results, benches={r["benchmark"] for r in results}),
    ]
    return "\n".join(lines)


def update(readme_text: str, section: str) -> str:
    """The README with the text between the markers replaced; raises ValueError without them."""
    start, end = readme_text.find(START), readme_text.find(END)
    if start < 0 or end < 0 or end < start:
        raise ValueError(
            f"README has no {START} ... {END} pair (in that order); add them under the "
            "'## Performance' heading, then run this script again"
        )
    return readme_text[: start + len(START)] + "\n" + section.strip() + "\n" + readme_text[end:]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="profiling.update_readme", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--results",
        type=Path,
        default=REPO_ROOT / "profiling" / "results",
        help="folder searched (recursively) for GPU results",
    )
    p.add_argument("--readme", type=Path, default=REPO_ROOT / "README.md")
    p.add_argument("--check", action="store_true", help="exit 1 if the README is out of date")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    results = find_gpu_run(args.results) if args.results.exists() else []
    source = ""
    if results:
        folder = Path(results[0]["_path"]).parent
        try:
            source = str(folder.resolve().relative_to(REPO_ROOT)) + "/"
        except ValueError:
            source = str(folder) + "/"
    old = args.readme.read_text()
    try:
        new = update(old, render_section(results, source))
    except ValueError as exc:
        print(f"update_readme: {args.readme}: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print("README performance section is " + ("up to date" if new == old else "OUT OF DATE"))
        return 0 if new == old else 1
    if new != old:
        args.readme.write_text(new)
    print(
        f"update_readme: {args.readme} "
        + ("updated" if new != old else "already up to date")
        + (f" from {len(results)} GPU results" if results else " (no GPU run yet)")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
