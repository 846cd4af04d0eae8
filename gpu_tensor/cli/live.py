"""Live view: every GPU through NVML (pynvml from nvidia-ml-py, imported lazily), and
this process's own allocator when it has one.

NVML sees what nvidia-smi sees (all processes, the CUDA context, other libraries) but
not inside a caching allocator; the allocator summary shows the inside for this
process only. Together they answer "who holds the memory". With no driver the view is
one line naming the fallback, and the exit code is 0: no GPU is a normal state here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ._format import fmt_bytes

__all__ = ["query_gpus", "render_live", "live_main", "NoNvml"]

FALLBACK_HINT = (
    "set GPU_TENSOR_FALLBACK=1 to run cuda code on the emulated host device, and "
    "`gpu-tensor memory-summary SNAPSHOT` renders a saved snapshot"
)
FALLBACK_ON = (
    "GPU_TENSOR_FALLBACK=1 is set, so cuda code runs on the emulated host device: "
    "`gpu-tensor memory-summary --run script.py` shows its memory"
)


def _hint() -> str:
    from gpu_tensor import _env

    return FALLBACK_ON if _env.fallback() else FALLBACK_HINT


class NoNvml(Exception):
    """NVML is unusable here: no driver, or no pynvml; str(exc) says which."""


def _load_nvml():
    try:
        import pynvml
    except ImportError:
        raise NoNvml(
            "NVML bindings are not installed (pip install 'gpu-tensor[nvml]'), so live GPU "
            "data is unavailable"
        ) from None
    return pynvml


def _try(fn, *args):
    # One unsupported field (no temperature sensor on a vGPU, no utilisation under MIG)
    # must not hide the rest of the device.
    try:
        return fn(*args)
    except Exception:
        return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ns_pids() -> list[int]:
    """This process's PID in each PID namespace it is in, outermost first (NSpid)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(v) for v in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return [os.getpid()]


def _in_container() -> bool:
    """In a PID namespace of its own (a container): NVML then reports *host* PIDs, which
    name nothing, or another process, in this /proc."""
    return len(_ns_pids()) > 1 or os.path.exists("/.dockerenv")


def _own_pids() -> set[int]:
    return set(_ns_pids()) | {os.getpid()}


def _process_name(nvml, pid: int) -> str:
    name = _try(nvml.nvmlSystemGetProcessName, pid)
    if name:
        return Path(_text(name)).name
    if pid in _own_pids():
        return Path(sys.argv[0] or "python").name
    if _in_container():  # a host PID: /proc/<pid> here is some other process, or none
        return "? (host pid)"
    try:  # NVML cannot always name processes; /proc sometimes can
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def query_gpus(nvml=None) -> dict:
    """{'driver': str, 'gpus': [...]} from NVML; raises NoNvml when it cannot start.

    `nvml` is the pynvml module (injected by tests)."""
    nvml = nvml or _load_nvml()
    try:
        nvml.nvmlInit()
    except Exception as exc:
        raise NoNvml(f"no NVIDIA driver found (NVML: {exc})") from None
    try:
        driver = _try(nvml.nvmlSystemGetDriverVersion)
        gpus = []
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception as exc:
            raise NoNvml(f"NVML could not list the GPUs ({exc})") from None
        for index in range(count):
            try:
                h = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:  # e.g. a GPU lost or not visible to this container
                gpus.append(
                    {
                        "index": index,
                        "name": f"unavailable (NVML: {exc})",
                        "memory_total": None,
                        "memory_used": None,
                        "memory_free": None,
                        "utilisation_gpu": None,
                        "utilisation_memory": None,
                        "temperature_c": None,
                        "processes": [],
                    }
                )
                continue
            mem = _try(nvml.nvmlDeviceGetMemoryInfo, h)
            util = _try(nvml.nvmlDeviceGetUtilizationRates, h)
            temp = _try(nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU)
            procs = {}
            for getter in (
                "nvmlDeviceGetComputeRunningProcesses",
                "nvmlDeviceGetGraphicsRunningProcesses",
            ):
                for p in _try(getattr(nvml, getter), h) or []:
                    used = getattr(p, "usedGpuMemory", None)
                    # NVML reports "not available" (e.g. under WDDM or in a container) as None
                    entry = procs.setdefault(p.pid, {"pid": p.pid, "used": None})
                    if isinstance(used, int):
                        entry["used"] = (entry["used"] or 0) + used
            for entry in procs.values():
                entry["name"] = _process_name(nvml, entry["pid"])
            gpus.append(
                {
                    "index": index,
                    "name": _text(_try(nvml.nvmlDeviceGetName, h) or "?"),
                    "memory_total": getattr(mem, "total", None),
                    "memory_used": getattr(mem, "used", None),
                    "memory_free": getattr(mem, "free", None),
                    "utilisation_gpu": getattr(util, "gpu", None),
                    "utilisation_memory": getattr(util, "memory", None),
                    "temperature_c": temp,
                    "processes": sorted(procs.values(), key=lambda e: -(e["used"] or 0)),
                }
            )
        return {"driver": _text(driver) if driver else None, "gpus": gpus}
    finally:
        _try(nvml.nvmlShutdown)


def own_allocators() -> list[tuple[int, str, dict]]:
    """(device index, kind, stats) for each allocator this process already created.
    Never creates one: reading stats must not initialise CUDA."""
    from gpu_tensor.memory import registry

    out = []
    for (kind, index), alloc in sorted(registry.existing_allocators().items()):
        out.append((index, kind, alloc.stats()))
    return out


def _pct(v) -> str:
    return "-" if v is None else f"{v}%"


def render_live(info: dict) -> str:
    lines = [f"NVIDIA driver {info.get('driver') or '?'}, {len(info['gpus'])} GPU(s)"]
    for g in info["gpus"]:
        temp = "-" if g["temperature_c"] is None else f"{g['temperature_c']} C"
        lines.append(
            f"GPU {g['index']}: {g['name']}  memory {fmt_bytes(g['memory_used'])} used / "
            f"{fmt_bytes(g['memory_free'])} free / {fmt_bytes(g['memory_total'])} total  "
            f"util {_pct(g['utilisation_gpu'])} (memory {_pct(g['utilisation_memory'])})  {temp}"
        )
        if not g["processes"]:
            lines.append("    no processes")
        for p in g["processes"]:
            used = "unknown" if p["used"] is None else fmt_bytes(p["used"])
            me = "  (this process)" if p["pid"] in _own_pids() else ""
            lines.append(f"    pid {p['pid']:>7}  {used:>10}  {p['name']}{me}")
    return "\n".join(lines)


def _render_own(allocs) -> str:
    from .snapshot_view import render_stats_table

    return "\n\n".join(
        f"This process's {kind + ' ' if kind else ''}allocator, device {index}:\n"
        + render_stats_table(stats, index)
        for index, kind, stats in allocs
    )


def live_main(as_json: bool = False, nvml=None, out=None) -> int:
    """`gpu-tensor memory-summary` with no snapshot. Returns the exit code (always 0)."""
    out = out or sys.stdout
    try:
        info = query_gpus(nvml)
        error = None
    except NoNvml as exc:
        info, error = {"driver": None, "gpus": []}, str(exc)
    allocs = own_allocators()
    if as_json:
        info = dict(
            info,
            error=error,
            fallback="GPU_TENSOR_FALLBACK=1" if error else None,
            allocators=[{"device": i, "kind": k, "stats": s} for i, k, s in allocs],
        )
        out.write(json.dumps(info, indent=2) + "\n")
        return 0
    if error:
        out.write(f"{error[:1].upper()}{error[1:]}; {_hint()}.\n")
    else:
        out.write(render_live(info) + "\n")
    if allocs:
        out.write("\n" + _render_own(allocs) + "\n")
    return 0
