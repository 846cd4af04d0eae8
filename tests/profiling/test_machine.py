"""profiling/machine.py: probes and the machine record, with a fake nvidia-smi."""

from __future__ import annotations

import os
import stat

from profiling import machine


def fake_smi(tmp_path, body: str):
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def test_slug():
    assert machine.slug("NVIDIA H200") == "nvidia-h200"
    assert machine.slug("  Tesla V100-SXM2 (32GB) ") == "tesla-v100-sxm2-32gb"
    assert machine.slug("***") == "unknown"


def test_nvidia_smi_fields(tmp_path, monkeypatch):
    values = ", ".join(f"v{i}" for i in range(len(machine.NVIDIA_SMI_FIELDS)))
    monkeypatch.setenv(
        "PATH", str(fake_smi(tmp_path, f'echo "{values}"\n')) + os.pathsep + os.environ["PATH"]
    )
    info = machine._nvidia_smi()
    assert info["name"] == "v0" and info["driver_version"] == "v1"
    assert len(info) == len(machine.NVIDIA_SMI_FIELDS)


def test_nvidia_smi_falls_back_to_name_and_driver(tmp_path, monkeypatch):
    # A driver that rejects one of the fields fails the whole query.
    body = (
        'case "$1" in *power*) echo "Field power.limit is not valid" >&2; exit 2;; esac\n'
        'echo "NVIDIA H200, 580.1"\n'
    )
    monkeypatch.setenv("PATH", str(fake_smi(tmp_path, body)) + os.pathsep + os.environ["PATH"])
    assert machine._nvidia_smi() == {"name": "NVIDIA H200", "driver_version": "580.1"}


def test_nvidia_smi_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert machine._nvidia_smi() == {"error": "nvidia-smi not found"}


def test_probes_always_answer_with_a_reason():
    peer, cp = machine.probe_cupy_gpu()
    assert peer.reason and (cp is not None) == peer.available
    cpu, cuda, torch = machine.probe_torch()
    assert cpu.reason and cuda.reason and (torch is not None) == cpu.available
    assert not cuda.available or cpu.available


def test_machine_info_without_gpu():
    info = machine.machine_info(None, None)
    assert info["gpu"] is None and info["numpy"] and info["cpu"] and info["date"].endswith("+00:00")
    assert machine._cuda_version(12040) == "12.4" and machine._cuda_version(13000) == "13.0"
