"""Fixtures for the CLI tests: run `python -m gpu_tensor` in a subprocess, find data files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]


def _run(*args: str, fallback: bool = True, env: dict | None = None, cwd=None, timeout=120):
    full_env = dict(os.environ)
    full_env.pop("GPU_TENSOR_FALLBACK", None)
    if fallback:
        full_env["GPU_TENSOR_FALLBACK"] = "1"
    # The checkout first on the path, so the subprocess imports this tree's gpu_tensor.
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gpu_tensor", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd or REPO,
        timeout=timeout,
    )


@pytest.fixture
def run_cli():
    """run_cli(*args, fallback=True, env=None, cwd=None) -> CompletedProcess."""
    return _run


@pytest.fixture
def data_dir() -> Path:
    return DATA
