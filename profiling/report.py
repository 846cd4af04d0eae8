"""Gaps to goals: each benchmark's goal (profiling/goals.py) beside what was measured.

    python -m profiling.report [RESULTS_DIR_OR_JSON ...]

With no argument it reads the newest results folder under profiling/results/.
Each goal is judged on its worst matching case; the table names that case.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .goals import GOALS, Goal
from .tables import markdown_table

__all__ = ["load_results", "evaluate", "gaps_table", "main"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
NOT_RESULTS = {"summary.json"}


def _is_result(data) -> bool:
    return isinstance(data, dict) and "benchmark" in data and isinstance(data.get("rows"), list)


def load_results(paths) -> list[dict]:
    """Benchmark results from JSON files and folders (not recursive); the newest per
    (benchmark, device) wins. Unreadable files are reported on stderr and skipped."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.glob("*.json") if f.name not in NOT_RESULTS)
        elif p.exists():
            files.append(p)
    newest: dict[tuple, dict] = {}
    for f in files:
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            print(f"report: skipping {f}: {exc}", file=sys.stderr)
            continue
        if not _is_result(data):
            continue
        data["_path"] = str(f)
        key = (data["benchmark"], data.get("device"))
        if key not in newest or data.get("started_at", "") >= newest[key].get("started_at", ""):
            newest[key] = data
    return sorted(newest.values(), key=lambda d: (d["benchmark"], d.get("device", "")))


def _match(pattern: str | None, text: str) -> bool:
    return pattern is None or re.search(pattern, text, re.IGNORECASE) is not None


def _rows(result: dict, goal: Goal, impl_pattern: str) -> list[dict]:
    out = []
    for r in result["rows"]:
        if r.get("skipped") or not _match(impl_pattern, r["impl"]):
            continue
        if not _match(goal.cases, r["case"]):
            continue
        if goal.exclude and _match(goal.exclude, r["case"]):
            continue
        if goal.min_bytes and (r.get("nbytes") or 0) < goal.min_bytes:
            continue
        out.append(r)
    return out


def _field(row: dict, goal: Goal) -> str | None:
    """The first of the goal's fields that this row holds as a number."""
    return next(
        (
            f
            for f in goal.fields
            if isinstance(row.get(f), (int, float)) and not isinstance(row.get(f), bool)
        ),
        None,
    )


def _ratios(result: dict, goal: Goal) -> list[tuple[float, str]]:
    """(ours / peer or peer / ours, where) for each case holding both, first peer that has any."""
    if goal.kind == "field_ratio_max":
        ours = [r for r in _rows(result, goal, goal.ours) if _field(r, goal)]
    else:
        ours = [r for r in _rows(result, goal, goal.ours) if r.get("seconds")]
    for peer_pattern in goal.peer:
        peers = {}
        for r in _rows(result, goal, peer_pattern):
            if not _match(goal.ours, r["impl"]):
                peers.setdefault(r["case"], r)
        pairs = [(o, peers[o["case"]]) for o in ours if o["case"] in peers]
        out = []
        for o, p in pairs:
            where = f"{o['case']} ({p['impl']})"
            if goal.kind == "field_ratio_max":
                f = _field(o, goal)
                if isinstance(p.get(f), (int, float)) and p[f]:
                    out.append((o[f] / p[f], where))
            elif p.get("seconds"):
                ratio = p["seconds"] / o["seconds"]
                out.append((ratio if goal.kind == "speedup" else 1 / ratio, where))
        if out:
            return out
    return []


def _values(result: dict, goal: Goal) -> list[tuple[float, str]]:
    if goal.kind == "pct_ceiling":
        return [
            (r["pct_of_ceiling"], r["case"])
            for r in _rows(result, goal, goal.ours)
            if r.get("pct_of_ceiling") is not None
        ]
    if goal.kind in ("speedup", "slowdown", "field_ratio_max"):
        return _ratios(result, goal)
    vals = []
    for r in _rows(result, goal, goal.ours):
        field = _field(r, goal)
        if field is not None:
            vals.append((float(r[field]), r["case"]))
    return vals


def evaluate(goal: Goal, results: list[dict]) -> dict:
    """{'goal', 'bench', 'target', 'measured', 'where', 'status'}; status is 'met', 'MISSED',
    'no data' or 'n/a' (e.g. a GPU goal judged on a CPU run)."""
    out = {
        "bench": goal.bench,
        "goal": goal.text,
        "target": _fmt_target(goal),
        "measured": None,
        "where": "",
        "status": "no data",
    }
    mine = [r for r in results if r["benchmark"] == goal.bench]
    if not mine:
        out["where"] = "benchmark not in these results"
        return out
    usable = [r for r in mine if goal.device in (None, r.get("device"))]
    if not usable:
        out.update(status="n/a", where=f"needs a {goal.device} run")
        return out
    vals = [v for r in usable for v in _values(r, goal)]
    if not vals:
        skipped = [
            row
            for r in usable
            for row in r["rows"]
            if row.get("skipped") and any(_match(p, row["impl"]) for p in (goal.ours, *goal.peer))
        ]
        out["where"] = (
            f"{skipped[0]['impl']} skipped: {skipped[0]['skipped']}"
            if skipped
            else "no rows match this goal"
        )
        return out
    higher_is_better = goal.kind in ("pct_ceiling", "speedup", "field_min")
    value, where = (min if higher_is_better else max)(vals, key=lambda v: v[0])
    met = value >= goal.target if higher_is_better else value <= goal.target
    out.update(measured=value, where=where, status="met" if met else "MISSED")
    return out


def _fmt_target(goal: Goal) -> str:
    if goal.kind == "pct_ceiling":
        return f"≥ {goal.target:.0%}"
    if goal.kind == "speedup":
        return f"≥ {goal.target:g}×"
    if goal.kind in ("slowdown", "field_ratio_max"):
        return f"≤ {goal.target:g}×"
    return ("≤ " if goal.kind == "field_max" else "≥ ") + f"{goal.target:g}"


def _fmt_value(goal_kind: str, value) -> str:
    if value is None:
        return "—"
    if goal_kind == "pct_ceiling":
        return f"{value:.1%}"
    if goal_kind in ("speedup", "slowdown", "field_ratio_max"):
        return f"{value:.2f}×"
    return f"{value:.4g}"


def gaps_table(results: list[dict], goals=GOALS, benches: set[str] | None = None) -> str:
    """Markdown table of every goal (only those of `benches` when given)."""
    goals = [g for g in goals if benches is None or g.bench in benches]
    if not goals:
        return "_No goals are defined for these benchmarks._"
    kinds = {g.text: g.kind for g in goals}
    rows = []
    for ev in (evaluate(g, results) for g in goals):
        rows.append(
            [
                ev["bench"],
                ev["goal"],
                ev["target"],
                _fmt_value(kinds[ev["goal"]], ev["measured"]),
                ev["status"],
                ev["where"],
            ]
        )
    return markdown_table(
        ["benchmark", "goal", "target", "measured (worst)", "status", "where"], rows
    )


def _newest_folder() -> Path:
    candidates = [p for p in RESULTS_DIR.iterdir() if p.is_dir() and p.name != "tmp"]
    if any(RESULTS_DIR.glob("*.json")):
        candidates.append(RESULTS_DIR)
    if not candidates:
        raise SystemExit(f"report: no results under {RESULTS_DIR}; run a benchmark first")
    return max(
        candidates, key=lambda p: max((f.stat().st_mtime for f in p.glob("*.json")), default=0.0)
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    paths = argv or [_newest_folder()]
    results = load_results(paths)
    if not results:
        print(f"report: no benchmark results in {', '.join(map(str, paths))}", file=sys.stderr)
        return 1
    print("## Gaps to goals\n")
    print(gaps_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
