"""Driverless NVRTC: CUDA C source -> PTX (or CUBIN) with no GPU and no driver.

CuPy's own compile helpers (``cupy.cuda.compiler``) ask the driver for the device's
architecture and fail on a machine without one, so this calls NVRTC directly through CuPy's
thin bindings. Used by the kernel loader (compile.py), the compile-every-variant test, and the
fusion code generator.
"""

from __future__ import annotations

import dataclasses
import importlib

from . import sources

__all__ = [
    "NvrtcError",
    "NvrtcResult",
    "compile_program",
    "compile_ptx",
    "nvrtc_version",
    "supported_archs",
    "DEFAULT_OPTIONS",
]

# -std=c++17: `if constexpr` in common.cuh. No -ftz/fast-math: conversions and copies must be
# bit-exact against numpy (CuPy appends -ftz=true to its own kernels; we do not).
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
    """CuPy's NVRTC bindings; the module moved between CuPy releases."""
    for name in ("cupy_backends.cuda.libs.nvrtc", "cupy.cuda.nvrtc"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise RuntimeError(
        "NVRTC bindings not found: install CuPy and NVIDIA's NVRTC wheel "
        "(pip install 'gpu-tensor[cuda12]' nvidia-cuda-nvrtc-cu12)."
    )


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library in use."""
    return tuple(_bindings().getVersion())


def supported_archs() -> tuple[int, ...]:
    """SM versions this NVRTC can emit CUBIN for, e.g. (50, ..., 90, 100, 120)."""
    return tuple(_bindings().getSupportedArchs())


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
    opts += [f"--include-path={d}" for d in sources.nvrtc_include_dirs()]
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
            raise NvrtcError(
                f"NVRTC could not compile {name} for {arch} ({exc}). Fix the source; "
                f"options were {opts}",
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
