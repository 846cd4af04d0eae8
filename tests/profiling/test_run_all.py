"""profiling/run_all.py on a folder of fake benchmarks: isolation, time slots, summary."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from profiling import run_all

REPO_ROOT = Path(__file__).resolve().parents[2]

FAKES = {
    "bench_good.py": """
        from profiling.harness import Suite

        def main(argv=None):
            s = Suite("good", argv)
            t = s.time(lambda: sum(range(100)), sync="cpu", repeat=5)
            s.record("sum", "gpu_tensor", seconds=t)
            s.record("sum", "numpy", seconds=t.median * 3)
            s.finish()
    """,
    "bench_boom.py": """
        def main(argv=None):
            raise RuntimeError("boom: a broken benchmark")
    """,
    "bench_slow.py": """
        import time
        from profiling.harness import Suite

        def main(argv=None):
            s = Suite("slow", argv)
            s.record("first", "gpu_tensor", seconds=1.0)
            time.sleep(120)
            s.finish()
    """,
    "bench_nomain.py": """
        VALUE = 1
    """,
    "bench_sysargv.py": """
        from profiling.harness import Suite

        def main(argv=None):  # ignores argv: the Suite reads sys.argv, as when run alone
            s = Suite("sysargv")
            s.record("quick?", "gpu_tensor", seconds=float(s.quick))
            s.finish()
    """,
}


@pytest.fixture
def bench_dir(tmp_path):
    d = tmp_path / "benches"
    d.mkdir()
    for name, src in FAKES.items():
        (d / name).write_text(textwrap.dedent(src))
    return d


def test_discover_orders_and_filters(bench_dir):
    names = [p.stem for p in run_all.discover(bench_dir)]
    assert names == ["bench_boom", "bench_good", "bench_nomain", "bench_slow", "bench_sysargv"]
    assert [p.stem for p in run_all.discover(bench_dir, ["good", "bench_slow"])] == [
        "bench_good",
        "bench_slow",
    ]
    with pytest.raises(SystemExit, match="missing"):
        run_all.discover(bench_dir, ["missing"])


def test_one_failure_does_not_stop_the_rest(bench_dir, tmp_path):
    out = tmp_path / "out"
    slot = 8  # bench_slow sleeps 120 s: it must be killed at its slot
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "profiling.run_all",
            "--quick",
            "--device",
            "cpu",
            "--bench-dir",
            str(bench_dir),
            "--out",
            str(out),
            "--max-slot",
            str(slot),
            "--total-budget",
            "60",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert elapsed < 4 * slot + 20  # the slow one was cut at its slot, not left to sleep
    summary = json.loads((out / "summary.json").read_text())
    status = {b["benchmark"]: b for b in summary["benchmarks"]}
    assert status["good"]["ok"] and status["good"]["results"]
    assert status["boom"]["status"].startswith("failed (exit 1")
    assert "boom: a broken benchmark" in (out / "boom.log").read_text()
    assert status["nomain"]["returncode"] == 3
    assert "no main" in (out / "nomain.log").read_text()
    assert status["slow"]["status"].startswith("timed out")
    assert status["sysargv"]["ok"]
    sysargv = json.loads((out / status["sysargv"]["results"][0]).read_text())
    assert sysargv["quick"] and sysargv["rows"][0]["seconds"] == 1.0
    good = json.loads((out / status["good"]["results"][0]).read_text())
    slow = json.loads((out / status["slow"]["results"][0]).read_text())
    assert good["complete"] and good["quick"] and len(good["rows"]) == 2
    assert not slow["complete"] and slow["rows"][0]["case"] == "first"  # partial data kept
    md = (out / "summary.md").read_text()
    assert "| good | ok |" in md and "timed out" in md and "| sum | gpu_tensor |" in md
    assert "# Benchmark summary (quick run)" in proc.stdout


def test_budget_spent_means_not_run(bench_dir, tmp_path):
    out = tmp_path / "out"
    rc = run_all.main(
        [
            "--quick",
            "--bench-dir",
            str(bench_dir),
            "--out",
            str(out),
            "--only",
            "good",
            "--total-budget",
            "1",
        ]
    )
    assert rc == 1
    status = json.loads((out / "summary.json").read_text())["benchmarks"][0]
    assert status["status"].startswith("not run") and not status["ok"]


def test_list(bench_dir, capsys):
    assert run_all.main(["--list", "--bench-dir", str(bench_dir)]) == 0
    assert capsys.readouterr().out.split() == [
        "bench_boom",
        "bench_good",
        "bench_nomain",
        "bench_slow",
        "bench_sysargv",
    ]


def test_quick_budget_fits_make_bench():
    # make bench must end inside five minutes: benchmarks plus start-up and summary
    assert run_all.QUICK_TOTAL_BUDGET_S + 30 <= 300


def test_every_real_benchmark_has_main_and_uses_the_harness():
    for path in run_all.discover():
        tree = ast.parse(path.read_text())
        mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        assert mains, f"{path.name} needs main(argv=None)"
        assert mains[0].args.args, f"{path.name}: main must take argv"
        assert "Suite" in path.read_text(), f"{path.name} should use profiling.harness.Suite"
