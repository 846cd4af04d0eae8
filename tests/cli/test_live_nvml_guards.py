"""NVML failures listing devices become the one-line NoNvml message, and in a container
(NVML reports host PIDs) process names are not guessed from this /proc."""

import pytest

from gpu_tensor.cli import live

from .test_live import FakeNvml


def test_device_count_failure_is_reported_not_raised():
    class NoCount(FakeNvml):
        def nvmlDeviceGetCount(self):
            raise self.NVMLError("Insufficient Permissions")

    with pytest.raises(live.NoNvml, match="could not list the GPUs"):
        live.query_gpus(NoCount())


def test_a_lost_gpu_is_listed_as_unavailable():
    class Lost(FakeNvml):
        def nvmlDeviceGetHandleByIndex(self, i):
            if i == 1:
                raise self.NVMLError("GPU is lost")
            return super().nvmlDeviceGetHandleByIndex(i)

    info = live.query_gpus(Lost())
    assert info["gpus"][1]["name"].startswith("unavailable (NVML: GPU is lost")
    assert "GPU 1: unavailable" in live.render_live(info)


def test_in_a_container_host_pids_are_not_looked_up_in_proc(monkeypatch):
    monkeypatch.setattr(live, "_ns_pids", lambda: [4242, 7])  # host pid 4242, here pid 7
    info = live.query_gpus(FakeNvml())
    procs = {p["pid"]: p for p in info["gpus"][0]["processes"]}
    assert procs[77]["name"] == "? (host pid)"  # NVML cannot name it; /proc/77 is not it
    assert "(this process)" in live.render_live(info)  # 4242 is this process, on the host
