"""Run every profiling/bench_*.py in turn, each in its own process under a time limit.

    python -m profiling.run_all [--quick] [--out DIR] [--only copy,fused] [--total-budget S]

A benchmark that raises, exits non-zero or outruns its slot is reported and the
rest still run; what it measured before a kill is kept (the harness rewrites its
JSON after every row). The slot of each benchmark is an equal share of what is
left of the total budget, so one fast benchmark leaves more time to the next. The
harness gets 75% of the slot as its soft --budget (repeats shrink past it); the
process is killed at the end of the slot. Ends with a combined markdown summary
(summary.md, summary.json in the results folder) and the gaps to the goals.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["discover", "main", "run_one"]

PROFILING_DIR = Path(__file__).resolve().parent
REPO_ROOT = PROFILING_DIR.parent
# make bench must end inside 5 minutes on a 2-core machine: 270 s of benchmarks leaves
# 30 s for interpreter starts, the summary and make itself.
QUICK_TOTAL_BUDGET_S = 270.0
FULL_TOTAL_BUDGET_S = 1800.0  # a full run on a workstation; gpu_check.sh passes its own
SOFT_BUDGET_FRACTION = 0.75  # the harness starts trimming repeats here, before the kill
MIN_SLOT_S = 10.0  # below this a benchmark cannot even import its peers; skip it instead
KILL_GRACE_S = 5.0  # SIGTERM, then this long, then SIGKILL


def discover(bench_dir: Path = PROFILING_DIR, only: list[str] | None = None) -> list[Path]:
    """bench_*.py files in name order; `only` filters by name with or without 'bench_'."""
    paths = sorted(Path(bench_dir).glob("bench_*.py"))
    if only:
        wanted = {n.strip().removeprefix("bench_") for n in only if n.strip()}
        unknown = wanted - {p.stem.removeprefix("bench_") for p in paths}
        if unknown:
            raise SystemExit(f"run_all: no benchmark named {sorted(unknown)} in {bench_dir}")
        paths = [p for p in paths if p.stem.removeprefix("bench_") in wanted]
    return paths


def _pump(stream, sinks) -> None:
    for line in stream:
        for sink in sinks:
            sink.write(line)
            sink.flush()


def run_one(path: Path, out_dir: Path, slot_s: float, args: list[str]) -> dict:
    """Run one benchmark module's main() in a child process; return its status record."""
    name = path.stem.removeprefix("bench_")
    out_dir.mkdir(parents=True, exist_ok=True)
    soft = max(1.0, slot_s * SOFT_BUDGET_FRACTION)
    child_args = [*args, "--out", str(out_dir), "--budget", f"{soft:.0f}"]
    cmd = [sys.executable, "-m", "profiling.run_all", "--child", str(path), "--", *child_args]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    before = {p: p.stat().st_mtime for p in out_dir.glob("*.json")}
    log_path = out_dir / f"{name}.log"
    start = time.perf_counter()
    status, rc = "ok", None
    print(f"\n== {name}: slot {slot_s:.0f} s ({' '.join(child_args)})", flush=True)
    with open(log_path, "w") as log:
        # A session of its own, so a kill takes the benchmark's own children with it.
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        pump = threading.Thread(target=_pump, args=(proc.stdout, [sys.stdout, log]), daemon=True)
        pump.start()
        try:
            rc = proc.wait(timeout=slot_s)
        except subprocess.TimeoutExpired:
            status = f"timed out after {slot_s:.0f} s (killed; partial results kept)"
            _kill(proc)
            rc = proc.returncode
        pump.join(timeout=KILL_GRACE_S)
    if status == "ok" and rc != 0:
        status = f"failed (exit {rc}; see {log_path.name})"
    files = sorted(
        p
        for p in out_dir.glob("*.json")
        if p.name != "summary.json" and before.get(p) != p.stat().st_mtime
    )
    return {
        "benchmark": name,
        "module": str(path),
        "status": status,
        "ok": status == "ok",
        "returncode": rc,
        "seconds": round(time.perf_counter() - start, 2),
        "slot_s": round(slot_s, 1),
        "log": log_path.name,
        "results": [p.name for p in files],
    }


def _kill(proc: subprocess.Popen) -> None:
    """End the benchmark's process group (it runs in a session of its own)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _child(path: str, argv: list[str]) -> int:
    """Inside the child process: import the benchmark module and call its main(argv)."""
    path_obj = Path(path).resolve()
    if path_obj.parent == PROFILING_DIR:
        module = importlib.import_module(f"profiling.{path_obj.stem}")
    else:  # a benchmark outside the package (tests use a temporary folder)
        spec = importlib.util.spec_from_file_location(path_obj.stem, path_obj)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path_obj.stem] = module
        spec.loader.exec_module(module)
    main = getattr(module, "main", None)
    if not callable(main):
        print(
            f"run_all: {path} defines no main(argv=None); every benchmark needs one",
            file=sys.stderr,
        )
        return 3
    sys.argv = [str(path_obj), *argv]  # as if run alone, for a main that reads sys.argv
    rc = main(argv)
    return rc if isinstance(rc, int) else 0


def _default_out(quick: bool, device: str) -> Path:
    from .machine import probe_cupy_gpu, slug, utc_now

    stamp = f"{utc_now():%Y%m%dT%H%M%SZ}"
    if quick:
        return PROFILING_DIR / "results" / "tmp" / f"run-{stamp}"
    peer, cp = probe_cupy_gpu() if device == "auto" else (None, None)
    dev = "cpu"
    if cp is not None:
        from .harness import _gpu_name

        dev = slug(_gpu_name(cp))
    return PROFILING_DIR / "results" / f"{stamp}-{dev}"


def _parse(argv):
    p = argparse.ArgumentParser(prog="profiling.run_all", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes; the make bench run")
    p.add_argument("--out", type=Path, default=None, help="results folder (default: dated)")
    p.add_argument("--only", default="", help="comma-separated benchmark names")
    p.add_argument(
        "--total-budget",
        type=float,
        default=None,
        help=f"seconds for all benchmarks (default {QUICK_TOTAL_BUDGET_S:.0f} quick, "
        f"{FULL_TOTAL_BUDGET_S:.0f} full)",
    )
    p.add_argument("--max-slot", type=float, default=None, help="cap on one benchmark's seconds")
    p.add_argument("--device", choices=("auto", "cpu"), default="auto")
    p.add_argument("--bench-dir", type=Path, default=PROFILING_DIR, help=argparse.SUPPRESS)
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    paths = discover(args.bench_dir, args.only.split(",") if args.only else None)
    if args.list:
        print("\n".join(p.stem for p in paths))
        return 0
    if not paths:
        print(f"run_all: no bench_*.py in {args.bench_dir}", file=sys.stderr)
        return 1
    out_dir = args.out or _default_out(args.quick, args.device)
    total = args.total_budget or (QUICK_TOTAL_BUDGET_S if args.quick else FULL_TOTAL_BUDGET_S)
    child_args = (["--quick"] if args.quick else []) + ["--device", args.device]
    deadline = time.perf_counter() + total
    statuses = []
    for i, path in enumerate(paths):
        left = deadline - time.perf_counter()
        share = left / (len(paths) - i)
        slot = min(share, args.max_slot) if args.max_slot else share
        if share < MIN_SLOT_S:
            name = path.stem.removeprefix("bench_")
            statuses.append(
                {
                    "benchmark": name,
                    "module": str(path),
                    "ok": False,
                    "status": f"not run: {left:.0f} s of the total budget left",
                    "seconds": 0.0,
                    "results": [],
                }
            )
            continue
        statuses.append(run_one(path, out_dir, slot, child_args))
    from .summary import write_summary

    summary_md = write_summary(out_dir, statuses, quick=args.quick)
    print("\n" + summary_md.split("\n## Results")[0])
    return 0 if all(s["ok"] for s in statuses) else 1


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        rest = sys.argv[3:]
        sys.exit(_child(sys.argv[2], rest[1:] if rest[:1] == ["--"] else rest))
    sys.exit(main())
