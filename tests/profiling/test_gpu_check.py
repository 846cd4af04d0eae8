"""profiling/gpu_check.sh as far as a machine without a GPU allows: it must fail fast and
clearly, touching nothing. With a GPU only the preflight runs here (the full check takes
minutes and runs the cuda tier itself)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profiling.machine import probe_cupy_gpu

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "profiling" / "gpu_check.sh"
FAIL_FAST_S = 30  # "seconds", with room for a loaded 2-core CI machine
PEER, _ = probe_cupy_gpu()

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(*args, env_python=sys.executable):
    start = time.perf_counter()
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHON": env_python},
    )
    return proc, time.perf_counter() - start


def test_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0


def test_unknown_option_is_refused():
    proc, _ = run("--frobnicate")
    assert proc.returncode == 2 and "unknown option --frobnicate" in proc.stderr


@pytest.mark.skipif(PEER.available, reason="a GPU is present: the no-GPU path cannot run")
def test_fails_fast_and_clearly_without_gpu(tmp_path):
    out = tmp_path / "results"
    proc, elapsed = run(str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert elapsed < FAIL_FAST_S
    assert "NO GPU" in proc.stderr and "nothing was run" in proc.stderr
    assert "== pytest" not in proc.stdout  # stopped before the tests
    assert not out.exists()  # no empty results folder left behind


@pytest.mark.skipif(PEER.available, reason="a GPU is present: the no-GPU path cannot run")
def test_preflight_without_gpu_fails_fast():
    proc, elapsed = run("--preflight")
    assert proc.returncode == 2 and elapsed < FAIL_FAST_S and "NO GPU" in proc.stderr


def test_missing_python_is_a_clear_failure():
    proc, elapsed = run("--preflight", env_python="/nonexistent/python3")
    assert proc.returncode == 2 and elapsed < FAIL_FAST_S


@pytest.mark.skipif(not PEER.available, reason=f"needs a real CUDA GPU: {PEER.reason}")
def test_preflight_with_gpu_prints_versions():
    proc, _ = run("--preflight")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CUDA driver" in proc.stderr and "preflight ok" in proc.stdout


def test_rest_of_the_chain_runs_on_cpu_when_allowed(tmp_path):
    """Everything after the preflight (pytest, run_all, report), exercised here so that a
    GPU run never meets a broken step first; fake benchmarks keep it to seconds."""
    benches = tmp_path / "benches"
    benches.mkdir()
    (benches / "bench_good.py").write_text(
        "from profiling.harness import Suite\n\n"
        "def main(argv=None):\n"
        "    s = Suite('good', argv)\n"
        "    s.record('x', 'gpu_tensor', seconds=s.time(lambda: None, sync='cuda', repeat=3))\n"
        "    s.finish()\n"
    )
    (benches / "bench_boom.py").write_text("def main(argv=None):\n    raise SystemExit(7)\n")
    out = tmp_path / "results"
    proc, _ = run(
        str(out),
        "--allow-no-gpu",
        "--quick",
        "--bench-budget",
        "40",
        "--tests",
        "tests/profiling/test_report.py",
        "--bench-dir",
        str(benches),
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1, log  # bench_boom failed, so the check says so
    assert "pytest: passed" in proc.stdout and "| tests | passed |" in proc.stdout
    assert "| good | ok |" in proc.stdout and "failed (exit 7" in proc.stdout
    assert "## Gaps to goals" in proc.stdout.split("== benchmarks")[1]
    for name in (
        "summary.md",
        "summary.json",
        "pytest.log",
        "pytest.xml",
        "tests.md",
        "run_all.log",
        "good.log",
        "boom.log",
    ):
        assert (out / name).exists(), name
    assert list(out.glob("good-*-cpu.json"))
