"""Scripts run in a fresh interpreter on the simulated cuda, for the tests whose setting is
fixed per process (the simulated device count, CuPy's per-thread default stream)."""

import os
import subprocess
import sys


def run_sim_script(script: str, **env: str) -> None:
    """Run `script` under GPU_TENSOR_FALLBACK=sim plus `env` (none of the caller's own
    GPU_TENSOR_* settings leak in) and assert it printed "ok" and nothing else."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TENSOR")}
    environ.update(GPU_TENSOR_FALLBACK="sim", **env)
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environ, timeout=600
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
