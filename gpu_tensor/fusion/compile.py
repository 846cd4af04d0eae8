"""The compile step for generated kernels: source -> CUBIN/PTX (NVRTC) -> loaded function.

Separate from codegen (which only returns text) and cached twice: in memory per device, and
on disk under GPU_TENSOR_CACHE_DIR/fusion/<key>.cubin|.ptx where key = sha256(source, arch,
options, NVRTC version), so a new compiler or option never reuses stale code. On a device the
arch is the GPU's own `sm_XX` (CUBIN: no driver JIT, and no "PTX too new for this driver" when
the NVRTC wheel is newer than the driver); `compute_XX` (PTX) serves the no-GPU compile checks
and GPUs newer than this NVRTC. Compile time is logged at debug level (logger
"gpu_tensor.fusion"). cupy is imported lazily, only to load the result.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

from .. import _env

__all__ = [
    "cache_key",
    "compile_cached",
    "compile_ptx_cached",
    "get_kernel",
    "device_arch",
    "sm_count",
]

log = logging.getLogger("gpu_tensor.fusion")
_device_info: dict = {}  # device id -> (arch, sm count)


def _nvrtc():
    from ..kernel import nvrtc

    return nvrtc


def cache_key(source: str, arch: str, options=()) -> str:
    """Hash of everything the compiled code depends on."""
    version = ".".join(map(str, _nvrtc().nvrtc_version()))
    text = "\0".join([source, arch, " ".join(options), f"nvrtc {version}"])
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_dir() -> Path:
    return Path(_env.cache_dir()) / "fusion"


def compile_cached(source: str, arch: str = "compute_90", options=()) -> tuple[str, Path]:
    """(key, path of the compiled file) for `source`: PTX for 'compute_XX', CUBIN for
    'sm_XX'; NVRTC runs only on a disk-cache miss. Needs no GPU. No -ftz / fast-math unless
    `options` ask; NVRTC's default FMA contraction applies, so results match numpy within
    the tolerance table, not bit for bit (see kernel/nvrtc.py DEFAULT_OPTIONS)."""
    key = cache_key(source, arch, options)
    path = _cache_dir() / f"{key}.{'cubin' if arch.startswith('sm_') else 'ptx'}"
    if path.is_file():
        return key, path
    start = time.perf_counter()
    code = _nvrtc().compile_program(source, arch, tuple(options)).code
    log.debug("fusion: compiled %s for %s in %.1f ms", key[:12], arch,
              1e3 * (time.perf_counter() - start))  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:  # write then rename: readers never see a partial file
        f.write(code.rstrip(b"\x00") if path.suffix == ".ptx" else code)
    os.replace(tmp, path)
    return key, path


def compile_ptx_cached(source: str, arch: str = "compute_90", options=()) -> tuple[str, Path]:
    """`compile_cached` for a virtual arch (PTX)."""
    if not arch.startswith("compute_"):
        raise ValueError(f"compile_ptx_cached needs 'compute_XX', got {arch!r}")
    return compile_cached(source, arch, options)


def _cupy():
    from ..backends._cupy import cupy

    return cupy()


def device_arch(device_id: int | None = None) -> str:
    """'sm_XX' for the current (or given) device when this NVRTC emits it, else the newest
    'compute_XX' it has below the device (the driver JITs that PTX)."""
    return _info(device_id)[0]


def sm_count(device_id: int | None = None) -> int:
    return _info(device_id)[1]


def _info(device_id):
    cp = _cupy()
    dev = cp.cuda.Device(device_id)
    if dev.id not in _device_info:
        from ..kernel.compile import device_arch as kernel_device_arch

        arch = kernel_device_arch(dev.id)  # one rule (and one error) for both loaders
        sms = dev.attributes["MultiProcessorCount"]
        _device_info[dev.id] = (arch, sms)
    return _device_info[dev.id]


def get_kernel(name: str, source: str, options=()):
    """The loaded kernel `name` from `source` on the current device: through the one kernel
    loader (gpu_tensor.kernel.compile: compile, memory and disk cache, load), which every
    kernel shares, so fused and copy kernels are cached and keyed alike."""
    from ..kernel.compile import get_function

    return get_function(source, name, tuple(options))
