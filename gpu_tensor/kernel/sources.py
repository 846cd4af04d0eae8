"""Where the CUDA sources and the CUDA headers live.

The kernels sit in the repository's top-level ``kernels/``; the wheel ships them as the data
package ``gpu_tensor._kernels`` (pyproject maps one onto the other). NVRTC needs the CUDA
headers from the nvidia-cuda-runtime wheel; the g++ host emulation needs a *complete* CUDA
include tree (that wheel lacks ``crt/host_defines.h``, which cuda_fp16.h pulls in), so it also
looks for an installed toolkit.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
from pathlib import Path

__all__ = ["kernel_dir", "read_kernel", "nvrtc_include_dirs", "host_cuda_include_dir"]

_MARKER = "common.cuh"  # present in every kernels/ directory we ship


@functools.lru_cache(maxsize=1)
def kernel_dir() -> Path:
    """The directory holding kernels/*.cu: the installed package, else the source checkout."""
    try:
        spec = importlib.util.find_spec("gpu_tensor._kernels")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        for location in spec.submodule_search_locations or ():
            if (Path(location) / _MARKER).is_file():
                return Path(location)
    checkout = Path(__file__).resolve().parents[2] / "kernels"
    if (checkout / _MARKER).is_file():
        return checkout
    raise FileNotFoundError(
        "gpu_tensor's CUDA sources were not found: neither the installed package "
        "gpu_tensor._kernels nor a source checkout's kernels/ directory has " + _MARKER + ". "
        "Reinstall gpu-tensor (pip install --force-reinstall gpu-tensor)."
    )


@functools.cache
def read_kernel(filename: str) -> str:
    """Text of one kernel source file, e.g. read_kernel('copy_nd.cu')."""
    return (kernel_dir() / filename).read_text()


def _wheel_include() -> Path | None:
    try:
        spec = importlib.util.find_spec("nvidia.cuda_runtime")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or ()) if spec else ():
        include = Path(location) / "include"
        if (include / "cuda_fp16.h").is_file():
            return include
    return None


@functools.lru_cache(maxsize=1)
def nvrtc_include_dirs() -> tuple[str, ...]:
    """Include dirs for NVRTC: ours, plus the CUDA headers (cuda_fp16.h) from NVIDIA's wheel.

    NVRTC carries its own builtin crt headers, so the runtime wheel's partial tree is enough.
    """
    dirs = [str(kernel_dir())]
    wheel = _wheel_include()
    if wheel is not None:
        dirs.append(str(wheel))
    else:
        toolkit = host_cuda_include_dir()
        if toolkit is not None:
            dirs.append(str(toolkit))
    return tuple(dirs)


def _complete(include: Path) -> bool:
    return (include / "cuda_fp16.h").is_file() and (include / "crt" / "host_defines.h").is_file()


@functools.lru_cache(maxsize=1)
def host_cuda_include_dir() -> Path | None:
    """A complete CUDA include tree g++ can compile cuda_fp16.h/cuda_bf16.h with, or None.

    Tried in order: the nvidia-cuda-runtime wheel (complete in some releases), then the usual
    toolkit locations (newest first). None means fp16/bf16 kernels cannot run under emulation.
    """
    candidates = [_wheel_include()]
    candidates.append(Path("/usr/local/cuda/include"))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)]
    candidates.append(Path("/opt/cuda/include"))
    for include in candidates:
        if include is not None and _complete(include):
            return include
    return None
