"""What the benchmarks ran on: the GPU probe, the peers, and the machine record.

Profiling sits outside the gpu_tensor package and compares against cupy and torch
as peers, so it imports them itself, lazily, and never needs gpu_tensor to import.
Every probe answers (available, reason) so a missing peer is skipped with a reason
instead of failing the benchmark.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Peer", "probe_cupy_gpu", "probe_torch", "machine_info", "slug", "utc_now"]

REPO_ROOT = Path(__file__).resolve().parent.parent
NVIDIA_SMI_TIMEOUT_S = 10  # nvidia-smi can hang on a wedged driver; never let it stall a run
NVIDIA_SMI_FIELDS = (
    "name",
    "driver_version",
    "memory.total",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "clocks.max.sm",
    "clocks.max.mem",
    "ecc.mode.current",
    "power.limit",
)


@dataclass(frozen=True)
class Peer:
    """One comparison peer: whether it can run here, why not, and its version."""

    name: str
    available: bool
    reason: str
    version: str | None = None

    def as_dict(self) -> dict:
        return {"available": self.available, "reason": self.reason, "version": self.version}


def utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def slug(text: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': safe in file names on every OS."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def _import(name: str):
    """The module, or (None, reason) when it is not installed or fails to import."""
    if importlib.util.find_spec(name) is None:
        return None, f"{name} is not installed"
    try:
        return importlib.import_module(name), ""
    except Exception as exc:  # a broken install must not stop the benchmark
        return None, f"{name} failed to import ({type(exc).__name__}: {exc})"


def probe_cupy_gpu() -> tuple[Peer, object | None]:
    """(Peer, cupy module or None). Available only when cupy sees a real CUDA device."""
    cp, reason = _import("cupy")
    if cp is None:
        return Peer("cupy", False, reason), None
    version = getattr(cp, "__version__", None)
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver / no device: CUDARuntimeError, sometimes others
        msg = f"cupy {version} is installed but sees no CUDA device ({type(exc).__name__}: {exc})"
        return Peer("cupy", False, msg, version), None
    if count < 1:
        return Peer("cupy", False, f"cupy {version}: no CUDA device", version), None
    return Peer("cupy", True, f"{count} CUDA device(s)", version), cp


def probe_torch() -> tuple[Peer, Peer, object | None]:
    """(torch on cpu, torch on cuda, torch module or None)."""
    torch, reason = _import("torch")
    if torch is None:
        return Peer("torch", False, reason), Peer("torch_cuda", False, reason), None
    version = getattr(torch, "__version__", None)
    cpu = Peer("torch", True, "installed", version)
    try:
        has_cuda = bool(torch.cuda.is_available())
    except Exception as exc:
        has_cuda, reason = False, f"torch.cuda failed ({type(exc).__name__}: {exc})"
    else:
        reason = "CUDA available" if has_cuda else f"torch {version} sees no CUDA device"
    return cpu, Peer("torch_cuda", has_cuda, reason, version), torch


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_smi(fields=NVIDIA_SMI_FIELDS) -> dict:
    """GPU 0's fields from nvidia-smi. A driver that rejects one field rejects the whole
    query, so on failure ask again for the two that matter most."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"error": "nvidia-smi not found"}
    cmd = [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        if len(fields) > 2:
            return _nvidia_smi(("name", "driver_version"))
        return {"error": f"nvidia-smi failed: {exc}"}
    first = out.strip().splitlines()[0] if out.strip() else ""
    values = [v.strip() for v in first.split(",")]
    return dict(zip(fields, values, strict=False))


def _cuda_version(code: int) -> str:
    """CUDA encodes 12.4 as 12040."""
    return f"{code // 1000}.{(code % 1000) // 10}"


def _gpu_info(cp) -> dict:
    info: dict = {}
    rt = cp.cuda.runtime
    try:
        props = rt.getDeviceProperties(0)
        name = props.get("name", b"")
        info["name"] = name.decode() if isinstance(name, bytes) else str(name)
        info["memory_bytes"] = int(props.get("totalGlobalMem", 0))
        info["sm_count"] = int(props.get("multiProcessorCount", 0))
        info["compute_capability"] = f"{props.get('major', '?')}.{props.get('minor', '?')}"
        if "l2CacheSize" in props:
            info["l2_bytes"] = int(props["l2CacheSize"])
    except Exception as exc:
        info["error"] = f"getDeviceProperties failed: {exc}"
    for key, getter in (
        ("cuda_runtime", rt.runtimeGetVersion),
        ("cuda_driver", rt.driverGetVersion),
    ):
        try:
            info[key] = _cuda_version(int(getter()))
        except Exception as exc:
            info[key] = f"unknown ({exc})"
    info["nvidia_smi"] = _nvidia_smi()
    info["driver"] = info["nvidia_smi"].get("driver_version")
    return info


def _git_commit() -> str | None:
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "")


def _version(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    if module is None and importlib.util.find_spec(module_name) is not None:
        module, _ = _import(module_name)
    return getattr(module, "__version__", None) if module is not None else None


def machine_info(cupy_module=None, torch_module=None) -> dict:
    """The record every results file carries: date, host, GPU, driver, CUDA, versions."""
    import numpy

    info = {
        "date": utc_now().isoformat(timespec="seconds"),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "cupy": getattr(cupy_module, "__version__", None) or _version("cupy"),
        "torch": getattr(torch_module, "__version__", None) or _version("torch"),
        "git_commit": _git_commit(),
        "gpu": _gpu_info(cupy_module) if cupy_module is not None else None,
    }
    try:
        from importlib.metadata import version

        info["gpu_tensor"] = version("gpu-tensor")
    except Exception:
        info["gpu_tensor"] = None
    return info
