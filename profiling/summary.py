"""The combined summary of a run_all run: status of each benchmark, its table, the gaps."""

from __future__ import annotations

import json
from pathlib import Path

from .report import gaps_table, load_results
from .tables import markdown_table, results_header, results_table

__all__ = ["write_summary"]


def _machine_line(results: list[dict]) -> str:
    for r in results:
        m = r.get("machine") or {}
        gpu = m.get("gpu") or {}
        parts = [f"date {m.get('date', '?')}"]
        if gpu:
            parts.append(
                f"GPU {gpu.get('name', '?')} (driver {gpu.get('driver') or '?'}, "
                f"CUDA runtime {gpu.get('cuda_runtime', '?')})"
            )
        parts.append(f"CPU {m.get('cpu', '?')} ×{m.get('cpu_count', '?')}")
        parts += [f"{k} {m[k]}" for k in ("python", "numpy", "cupy", "torch") if m.get(k)]
        return "; ".join(parts)
    return "no benchmark wrote results"


def write_summary(out_dir: Path, statuses: list[dict], quick: bool) -> str:
    """Write summary.md and summary.json into `out_dir`; return the markdown."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = load_results([out_dir])
    status_rows = [
        [
            s["benchmark"],
            s["status"],
            f"{s.get('seconds', 0):.1f}",
            ", ".join(s.get("results") or []) or "—",
        ]
        for s in statuses
    ]
    parts = [
        f"# Benchmark summary ({'quick' if quick else 'full'} run)",
        _machine_line(results),
        markdown_table(["benchmark", "status", "seconds", "results"], status_rows),
        "## Gaps to goals",
        gaps_table(results, benches={s["benchmark"] for s in statuses}),
        "## Results",
    ]
    for r in results:
        parts += [results_header(r), results_table(r["rows"])]
    text = "\n\n".join(parts) + "\n"
    (out_dir / "summary.md").write_text(text)
    summary = {
        "kind": "run_all",
        "quick": quick,
        "benchmarks": statuses,
        "results": [Path(r["_path"]).name for r in results],
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return text
