"""profiling/host_cost_steps.py splits a warm cuda `x + y`'s own host time into steps, over
the simulated CuPy (in a fresh process: the simulator must be chosen before import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_steps_are_reported_and_the_clock_misses_nothing():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "profiling.host_cost_steps", "--calls", "60"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr  # it exits when a step reaches past the clock
    rows = {}
    for line in r.stdout.splitlines()[1:-1]:
        name, us = line.rsplit(None, 1)
        rows[name] = float(us)
    assert len(rows) == 5, r.stdout
    assert rows["the whole op, x + y"] > 0
    assert rows["caching allocator: malloc + free (gpu_tensor/memory)"] > 0
