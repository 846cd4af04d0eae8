"""Where the CUDA sources and the CUDA headers live.

The kernels sit in the repository's top-level ``kernels/``; the wheel ships them as the data
package ``gpu_tensor._kernels`` (pyproject maps one onto the other). NVRTC needs the CUDA
headers from NVIDIA's wheels or a toolkit; the g++ host emulation needs a *complete* CUDA
include tree (that wheel lacks ``crt/host_defines.h``, which cuda_fp16.h pulls in), so it also
looks for an installed toolkit.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import importlib.util
from pathlib import Path

from .. import _env

__all__ = [
    "kernel_dir",
    "read_kernel",
    "headers_digest",
    "header_candidates",
    "host_cuda_include_dir",
]

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


def headers_digest(*patterns: str) -> str:
    """sha256 of the names and bytes of the kernels/ files matching ``patterns`` (in that
    order, sorted within each): the headers a compile cache key must cover."""
    h = hashlib.sha256()
    kdir = kernel_dir()
    for pattern in patterns:
        for path in sorted(kdir.glob(pattern)):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _nvidia_wheel_dirs() -> list[Path]:
    """site-packages/nvidia directories (NVIDIA's header/library wheels install there)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or ())] if spec else []


def _toolkit_roots(extra_roots=()):
    """CUDA toolkit roots: $CUDA_PATH/$CUDA_HOME, the caller's guesses, the usual places."""
    root = _env.cuda_path()
    if root:
        yield Path(root)
    yield from (Path(r) for r in extra_roots if r)
    yield Path("/usr/local/cuda")
    yield from (Path(p) for p in sorted(glob.glob("/usr/local/cuda-*"), reverse=True))
    yield Path("/opt/cuda")


def header_candidates(major: int | None = None, extra_roots=()):
    """Directories that may hold the CUDA headers, cheapest and most specific first: NVIDIA's
    wheels (CUDA >= 13: nvidia/cu13/include; CUDA 12: nvidia/cuda_runtime/include), then
    toolkit trees. `major` None: every wheel version, newest first."""
    for base in _nvidia_wheel_dirs():
        if major is not None:
            yield base / f"cu{major}" / "include"
        else:
            yield from (
                Path(p) for p in sorted(glob.glob(str(base / "cu*" / "include")), reverse=True)
            )
        yield base / "cuda_runtime" / "include"
    for root in _toolkit_roots(extra_roots):
        yield root / "include"
        yield from (Path(p) for p in sorted(glob.glob(str(root / "targets" / "*" / "include"))))


def _complete(include: Path) -> bool:
    return (include / "cuda_fp16.h").is_file() and (include / "crt" / "host_defines.h").is_file()


@functools.lru_cache(maxsize=1)
def host_cuda_include_dir() -> Path | None:
    """A complete CUDA include tree g++ can compile cuda_fp16.h/cuda_bf16.h with, or None.

    Tried in `header_candidates` order (NVIDIA's wheels are complete in some releases). None
    means fp16/bf16 kernels cannot run under emulation.
    """
    return next((include for include in header_candidates() if _complete(include)), None)
