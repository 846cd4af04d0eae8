"""Driverless NVRTC: CUDA C source -> PTX (or CUBIN) with no GPU and no driver.

CuPy's own compile helpers (``cupy.cuda.compiler``) ask the driver for the device's
architecture and fail on a machine without one, so this calls NVRTC directly through CuPy's
thin bindings. Used by the kernel loader (compile.py), the compile-every-variant test, and the
fusion code generator.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import re
from pathlib import Path

from . import sources

__all__ = [
    "NvrtcError",
    "NvrtcResult",
    "compile_program",
    "compile_ptx",
    "nvrtc_version",
    "supported_archs",
    "cuda_include_dir",
    "DEFAULT_OPTIONS",
]

# -std=c++17: `if constexpr` in common.cuh. No -ftz/fast-math: conversions and copies must be
# bit-exact against numpy (CuPy appends -ftz=true to its own kernels; we do not). NVRTC's
# default --fmad=true stays: fused kernels may contract a*x+b into one FMA (one rounding
# instead of two), so elementwise math agrees with the cpu path within the tolerance table
# (gpu_tensor.testing.TOLERANCES, a few ulps), not bit for bit; copies and casts are exact.
DEFAULT_OPTIONS = ("--std=c++17",)


class NvrtcError(RuntimeError):
    """NVRTC rejected a program; the message carries NVRTC's log."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message + ("\n--- NVRTC log ---\n" + log if log else ""))
        self.log = log


@dataclasses.dataclass(frozen=True)
class NvrtcResult:
    code: bytes  # PTX text (arch compute_XX) or CUBIN (arch sm_XX)
    lowered_names: dict  # name expression -> mangled symbol
    log: str
    arch: str


def _bindings():
    """CuPy's NVRTC bindings, through the one cupy door (so the simulated CuPy's stand-in is
    used under GPU_TENSOR_FALLBACK=sim); the module moved between CuPy releases."""
    from ..backends import _cupy

    if _cupy._module is not None and hasattr(_cupy._module.cuda, "nvrtc"):
        return _cupy._module.cuda.nvrtc
    for name in ("cupy_backends.cuda.libs.nvrtc", "cupy.cuda.nvrtc"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise RuntimeError(
        "NVRTC bindings not found: install CuPy and NVIDIA's NVRTC wheel "
        "(pip install 'gpu-tensor[cuda12]' nvidia-cuda-nvrtc-cu12)."
    )


def backend_name() -> str:
    """Which NVRTC compiles (part of every compiled-code cache key: the simulator's modules
    must never be loaded on a GPU, nor a GPU's on the simulator)."""
    return getattr(_bindings(), "__name__", "nvrtc")


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library in use."""
    return tuple(_bindings().getVersion())


def supported_archs() -> tuple[int, ...]:
    """SM versions this NVRTC can emit CUBIN for, e.g. (50, ..., 90, 100, 120) for NVRTC 12.9;
    NVRTC 13 starts at 75 (Maxwell, Pascal and Volta were dropped)."""
    return tuple(_bindings().getSupportedArchs())


def _header_major(include: Path) -> int | None:
    """CUDA major version of a header tree (CUDART_VERSION, e.g. 12090 -> 12), or None."""
    try:
        text = (include / "cuda_runtime_api.h").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    return int(m.group(1)) // 1000 if m else None


def _header_candidates(major: int):
    """Directories that may hold cuda_fp16.h: sources.header_candidates, with CuPy's own
    guess at the toolkit root (derived from where libnvrtc was loaded), then cuda-pathfinder."""
    try:
        from ..backends._cupy import cupy

        cupy_root = cupy()._environment.get_cuda_path()
    except Exception:  # noqa: BLE001 - a best-effort hint; the fixed paths follow
        cupy_root = None
    yield from sources.header_candidates(major, extra_roots=(cupy_root,))
    found = _pathfinder_include()
    if found:
        yield Path(found)


def _pathfinder_include() -> str | None:
    """cuda-pathfinder's answer (a CuPy 14 dependency; knows conda and other layouts)."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        return find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001 - optional
        return None


@functools.lru_cache(maxsize=1)
def cuda_include_dir() -> Path | None:
    """The CUDA header directory NVRTC gets (for cuda_fp16.h / cuda_bf16.h), or None.

    Headers of NVRTC's own major version are preferred (a CUDA 12 wheel pulled in by another
    package next to CUDA 13 NVRTC is passed over); any tree with cuda_fp16.h is the fallback.
    """
    major = nvrtc_version()[0]
    fallback = None
    for include in _header_candidates(major):
        if not (include / "cuda_fp16.h").is_file():
            continue
        if _header_major(include) == major:
            return include
        fallback = fallback or include
    return fallback


def _include_dirs() -> list[str]:
    dirs = [str(sources.kernel_dir())]
    cuda = cuda_include_dir()
    if cuda is not None:
        dirs.append(str(cuda))
    return dirs


def compile_program(
    source: str,
    arch: str = "compute_90",
    options=(),
    name_expressions=(),
    name: str = "gpu_tensor.cu",
) -> NvrtcResult:
    """Compile ``source`` for ``arch`` ('compute_XX' -> PTX, 'sm_XX' -> CUBIN).

    Include paths for our kernels/ and the CUDA headers are added. ``name_expressions`` (e.g.
    ``'gt_copy_nd<float, float, int>'``) instantiate templates; their mangled names come back
    in ``lowered_names``.
    """
    nvrtc = _bindings()
    opts = list(DEFAULT_OPTIONS) + [f"--gpu-architecture={arch}"]
    opts += [f"--include-path={d}" for d in _include_dirs()]
    opts += list(options)
    try:
        prog = nvrtc.createProgram(source, name, [], [])
    except nvrtc.NVRTCError as exc:  # pragma: no cover - only on a broken NVRTC install
        raise NvrtcError(f"nvrtcCreateProgram failed: {exc}") from exc
    try:
        for expr in name_expressions:
            nvrtc.addNameExpression(prog, expr)
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            hint = "Fix the source"
            if "cannot open source file" in log or "could not open source file" in log:
                major = nvrtc_version()[0]
                wheel = (
                    "nvidia-cuda-runtime-cu12"
                    if major == 12
                    else f"'cuda-toolkit[cudart]=={major}.*'"
                )
                hint = (
                    f"A header was not found (CUDA headers used: {cuda_include_dir()}): "
                    f"pip install {wheel}, or point CUDA_PATH at a CUDA {major} toolkit"
                )
            raise NvrtcError(
                f"NVRTC could not compile {name} for {arch} ({exc}). {hint}; options were {opts}",
                log,
            ) from None
        log = nvrtc.getProgramLog(prog)
        lowered = {expr: nvrtc.getLoweredName(prog, expr) for expr in name_expressions}
        code = nvrtc.getCUBIN(prog) if arch.startswith("sm_") else nvrtc.getPTX(prog)
        if isinstance(code, str):
            code = code.encode()
        return NvrtcResult(code=bytes(code), lowered_names=lowered, log=log, arch=arch)
    finally:
        nvrtc.destroyProgram(prog)


def compile_ptx(source: str, arch: str = "compute_90", options=(), name_expressions=()) -> str:
    """PTX text for ``source``; raises NvrtcError with NVRTC's log when it does not compile."""
    if not arch.startswith("compute_"):
        raise ValueError(f"compile_ptx needs a virtual arch like 'compute_90', got {arch!r}")
    result = compile_program(source, arch, options, name_expressions)
    return result.code.decode().rstrip("\x00")
