"""The entry points: `python -m gpu_tensor`, the console script, help and usage errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpu_tensor.cli import main as cli_main


def test_no_command_prints_help_and_exit_2(run_cli):
    proc = run_cli()
    assert proc.returncode == 2
    assert "memory-summary" in proc.stderr and "demo" in proc.stderr


def test_help_exit_0(run_cli):
    proc = run_cli("memory-summary", "--help")
    assert proc.returncode == 0
    assert "--run" in proc.stdout and "--html" in proc.stdout


def test_unknown_command_is_one_line(run_cli):
    proc = run_cli("frobnicate")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "invalid choice" in proc.stderr


def test_main_returns_codes_in_process(capsys, data_dir):
    assert cli_main([]) == 2
    assert cli_main(["memory-summary", str(data_dir / "small_snapshot.json")]) == 0
    assert "Segment map" in capsys.readouterr().out
    assert cli_main(["memory-summary", str(data_dir / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_console_script_when_installed(data_dir):
    script = Path(sys.executable).parent / "gpu-tensor"
    if not script.exists():
        import pytest

        pytest.skip("the package is not installed in this environment (no gpu-tensor script)")
    proc = subprocess.run(
        [str(script), "memory-summary", str(data_dir / "small_snapshot.json")],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Segment map (3 segments)" in proc.stdout


def test_cli_import_does_not_import_cupy():
    code = (
        "import sys, gpu_tensor.cli.main, gpu_tensor.cli.live, gpu_tensor.cli.html, "
        "gpu_tensor.cli.run, gpu_tensor.cli.demo; assert 'cupy' not in sys.modules, 'cupy imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
