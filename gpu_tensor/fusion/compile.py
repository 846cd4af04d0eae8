"""The compile step for generated kernels: source -> CUBIN/PTX (NVRTC) -> loaded function.

Separate from codegen (which only returns text), and no cache of its own: compiling, the
memory cache and the disk cache are the kernel loader's (gpu_tensor.kernel.compile), which
fused and copy kernels share. Its disk key covers the source, headers, arch, options and the
NVRTC (version, and real or the simulator's), so a new compiler or option never reuses stale
code and a simulator module never loads on a GPU. On a device the arch is the GPU's own
`sm_XX` (CUBIN: no driver JIT, and no "PTX too new for this driver" when the NVRTC wheel is
newer than the driver); `compute_XX` (PTX) serves the no-GPU compile checks and GPUs newer
than this NVRTC. Compile time is logged at debug level (logger "gpu_tensor.kernel"). cupy is
imported lazily, only to load the result.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "cache_key",
    "compile_cached",
    "compile_ptx_cached",
    "get_kernel",
    "device_arch",
    "sm_count",
]

_device_info: dict = {}  # device id -> (arch, sm count)


def _kcompile():
    from ..kernel import compile as kcompile

    return kcompile


def cache_key(source: str, arch: str, options=()) -> str:
    """Hash of everything the compiled code depends on (the kernel loader's key)."""
    return _kcompile().cache_key(source, arch, tuple(options))


def compile_cached(source: str, arch: str = "compute_90", options=()) -> tuple[str, Path]:
    """(key, path of the compiled file) for `source`: PTX for 'compute_XX', CUBIN for
    'sm_XX'; NVRTC runs only on a disk-cache miss. Needs no GPU. No -ftz / fast-math unless
    `options` ask; NVRTC's default FMA contraction applies, so results match numpy within
    the tolerance table, not bit for bit (see kernel/nvrtc.py DEFAULT_OPTIONS)."""
    key, path, _ = _kcompile().compiled_file(source, arch, tuple(options))
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
        arch = _kcompile().device_arch(dev.id)  # one rule (and one error) for both loaders
        sms = dev.attributes["MultiProcessorCount"]
        _device_info[dev.id] = (arch, sms)
    return _device_info[dev.id]


def get_kernel(name: str, source: str, options=()):
    """The loaded kernel `name` from `source` on the current device: through the one kernel
    loader (gpu_tensor.kernel.compile: compile, memory and disk cache, load), which every
    kernel shares, so fused and copy kernels are cached and keyed alike."""
    return _kcompile().get_function(source, name, tuple(options))
