"""Live mode: NVML through pynvml; no driver is a normal state (one line, exit 0)."""

from __future__ import annotations

import io
import json
import os
from types import SimpleNamespace

import pytest

from gpu_tensor.cli import live


def _have_driver() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


@pytest.mark.skipif(_have_driver(), reason="an NVIDIA driver is present; this checks its absence")
def test_live_without_driver_is_one_line_and_exit_0(run_cli):
    proc = run_cli("memory-summary", fallback=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    assert "No NVIDIA driver found" in lines[0] and "set GPU_TENSOR_FALLBACK=1 to run" in lines[0]
    proc = run_cli("memory-summary", fallback=True)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1
    assert "GPU_TENSOR_FALLBACK=1 is set" in proc.stdout and "--run" in proc.stdout


@pytest.mark.skipif(_have_driver(), reason="an NVIDIA driver is present; this checks its absence")
def test_live_json_without_driver(run_cli):
    proc = run_cli("memory-summary", "--json", fallback=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["gpus"] == [] and out["fallback"] == "GPU_TENSOR_FALLBACK=1"
    assert "driver" in out["error"]


class FakeNvml:
    """Two GPUs; the second cannot report temperature or utilisation (as under MIG)."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self):
        self.shutdown = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shutdown = True

    def nvmlSystemGetDriverVersion(self):
        return b"550.54.15"

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return ["NVIDIA H100 80GB HBM3", b"NVIDIA A10"][h]

    def nvmlDeviceGetMemoryInfo(self, h):
        gib = 1 << 30
        return SimpleNamespace(total=80 * gib, used=(30 + h) * gib, free=(50 - h) * gib)

    def nvmlDeviceGetUtilizationRates(self, h):
        if h == 1:
            raise self.NVMLError("Not Supported")
        return SimpleNamespace(gpu=87, memory=41)

    def nvmlDeviceGetTemperature(self, h, sensor):
        if h == 1:
            raise self.NVMLError("Not Supported")
        return 64

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        if h == 1:
            return []
        return [
            SimpleNamespace(pid=4242, usedGpuMemory=20 << 30),
            SimpleNamespace(pid=77, usedGpuMemory=None),
        ]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return [SimpleNamespace(pid=4242, usedGpuMemory=1 << 30)] if h == 0 else []

    def nvmlSystemGetProcessName(self, pid):
        if pid == 77:
            raise self.NVMLError("Not Found")
        return b"/usr/bin/python3"


def test_query_and_render_with_fake_nvml():
    nvml = FakeNvml()
    info = live.query_gpus(nvml)
    assert nvml.shutdown
    assert info["driver"] == "550.54.15"
    g0, g1 = info["gpus"]
    assert g0["name"] == "NVIDIA H100 80GB HBM3" and g1["name"] == "NVIDIA A10"
    assert g0["memory_used"] == 30 << 30 and g0["utilisation_gpu"] == 87
    # compute + graphics use of one pid are one row; unknown usage stays unknown
    assert g0["processes"][0] == {"pid": 4242, "used": 21 << 30, "name": "python3"}
    assert g0["processes"][1]["used"] is None
    assert g1["temperature_c"] is None and g1["processes"] == []
    text = live.render_live(info)
    assert "GPU 0: NVIDIA H100 80GB HBM3" in text and "64 C" in text
    assert "21.0 GiB" in text and "unknown" in text
    assert "GPU 1: NVIDIA A10" in text and "util -" in text and "no processes" in text
    assert "(this process)" not in text
    info["gpus"][0]["processes"][0]["pid"] = os.getpid()
    assert "python3  (this process)" in live.render_live(info)


def test_live_main_json_with_fake_nvml(monkeypatch):
    monkeypatch.setattr(live, "own_allocators", lambda: [])  # other tests may have made some
    out = io.StringIO()
    assert live.live_main(as_json=True, nvml=FakeNvml(), out=out) == 0
    data = json.loads(out.getvalue())
    assert data["error"] is None and len(data["gpus"]) == 2


def test_nvml_init_failure_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(live, "own_allocators", lambda: [])

    class Broken(FakeNvml):
        def nvmlInit(self):
            raise self.NVMLError("Driver Not Loaded")

    out = io.StringIO()
    assert live.live_main(nvml=Broken(), out=out) == 0
    assert out.getvalue().count("\n") == 1
    assert "Driver Not Loaded" in out.getvalue()


@pytest.mark.cuda
@pytest.mark.skipif(not _have_driver(), reason="needs an NVIDIA driver (NVML); none here")
def test_live_with_a_driver_lists_every_gpu(run_cli):
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    proc = run_cli("memory-summary", "--json", fallback=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"] is None and len(out["gpus"]) == count
    for g in out["gpus"]:
        assert g["memory_total"] > 0 and 0 <= g["memory_used"] <= g["memory_total"]
    text = run_cli("memory-summary", fallback=False).stdout
    assert "GPU 0:" in text and "NVIDIA driver" in text


def test_missing_nvml_bindings_are_one_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    monkeypatch.setattr(live, "own_allocators", lambda: [])
    out = io.StringIO()
    assert live.live_main(out=out) == 0
    assert out.getvalue().count("\n") == 1
    assert "pip install 'gpu-tensor[nvml]'" in out.getvalue()


def test_this_process_allocator_is_summarised(monkeypatch):
    from gpu_tensor.memory import registry
    from gpu_tensor.memory.allocator import CachingAllocator
    from gpu_tensor.memory.raw import HostRawSource

    alloc = CachingAllocator(HostRawSource(64 << 20), 0, kind="emulated")
    block = alloc.malloc(3 << 20)
    monkeypatch.setattr(registry, "existing_allocators", lambda: {("emulated", 0): alloc})
    out = io.StringIO()
    try:
        assert live.live_main(nvml=FakeNvml(), out=out) == 0
    finally:
        alloc.free(block)
        alloc.empty_cache()
    text = out.getvalue()
    assert "GPU 0: NVIDIA H100" in text
    assert "This process's emulated allocator, device 0:" in text
    assert "CUDA memory summary" in text and "3072 KiB" in text
