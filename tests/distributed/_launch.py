"""Run a worker script under `mpiexec -n N python -m mpi4py` with a timeout (CuPy's
`_run_test_with_mpi` pattern): the multi-rank tests are real MPI jobs, not mocks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKERS = Path(__file__).parent / "workers"
ROOT = Path(__file__).resolve().parents[2]


def mpiexec() -> str:
    """The venv's mpiexec (the mpich wheel puts it next to python), else PATH's."""
    pytest.importorskip(
        "mpi4py", reason="multi-rank tests need mpi4py: pip install 'gpu-tensor[distributed]'"
    )
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec: pip install mpich (the 'distributed' extra brings it)")
    return found


def run_ranks(n: int, worker: str, *args, timeout: float = 90, env=None, check=True, module=True):
    """(returncode, output, seconds) of `worker` on n ranks; cuda is the emulated device.
    `module`: run it as `python -m mpi4py worker` (else plain `python worker`)."""
    full_env = {**os.environ, "GPU_TENSOR_FALLBACK": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    cmd = [
        mpiexec(),
        "-n",
        str(n),
        sys.executable,
        *(["-m", "mpi4py"] if module else []),
        str(WORKERS / worker),
        *map(str, args),
    ]
    start = time.monotonic()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=ROOT
    )
    took = time.monotonic() - start
    out = proc.stdout + proc.stderr
    if check:
        assert proc.returncode == 0, f"{worker} on {n} ranks failed (rc {proc.returncode}):\n{out}"
    return proc.returncode, out, took


def ok_counts(out: str, n: int) -> list[int]:
    """Every rank's check count from the worker's one `OK n ranks: [...] checks` line."""
    m = re.search(r"OK (\d+) ranks: \[([\d, ]+)\] checks", out)
    assert m and int(m.group(1)) == n, out
    return [int(c) for c in m.group(2).split(",")]
