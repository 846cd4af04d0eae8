"""Kernel loader: compile (driverless NVRTC), cache (memory + disk), load (CuPy's Module), and
the one place launch shapes and argument packing are decided.

``get_function(source, name)`` returns a CuPy function (``cupy.cuda.function.Function``) for
a kernel name (or template name expression) on the current device; copy kernels and fused
kernels both load here. Loaded modules are cached per device in memory; compiled code on
disk under ``<GPU_TENSOR_CACHE_DIR>/kernels`` (``compiled_file``, which the no-GPU compile
checks use as well), keyed by ``cache_key``. Copy kernels' launch shapes are
kernel/copy_launch.py's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from .. import _env
from . import nvrtc, sources

__all__ = [
    "get_function",
    "get_kernel",
    "sm_count",
    "compiled_file",
    "cache_key",
    "device_arch",
    "clear_cache",
]

log = logging.getLogger("gpu_tensor.kernel")
_lock = threading.Lock()
_functions: dict = {}  # (device, source, options, exprs, name) -> cupy Function
_modules: dict = {}  # (device, key) -> (cupy Module, lowered names)


def _cupy():
    """The cupy module, imported on first use through the one lazy door."""
    from ..backends._cupy import cupy

    return cupy()


def device_arch(device=None) -> str:
    """NVRTC target for a device: 'sm_XX' when this NVRTC can emit it, else the newest PTX."""
    cp = _cupy()
    dev = cp.cuda.Device(device) if device is not None else cp.cuda.Device()
    cc = int(dev.compute_capability)
    archs = nvrtc.supported_archs()
    if cc in archs:
        return f"sm_{cc}"
    older = [a for a in archs if a <= cc]
    if not older:  # e.g. a Volta (sm_70) GPU with NVRTC 13, whose oldest target is sm_75
        raise RuntimeError(
            f"NVRTC {'.'.join(map(str, nvrtc.nvrtc_version()))} cannot compile for this "
            f"GPU (sm_{cc}); its oldest target is sm_{min(archs)}. Install the CUDA 12 "
            "build (pip install 'gpu-tensor[cuda12]' nvidia-cuda-nvrtc-cu12)."
        )
    return f"compute_{max(older)}"  # the driver JITs PTX forward


def cache_key(source: str, arch: str, options=(), name_expressions=()) -> str:
    """Hash of everything compiled code depends on: the source, our headers, the options, the
    name expressions, the target arch, the NVRTC version and which NVRTC (the real one or the
    simulator's stand-in: a simulator module must never load on a GPU, nor the reverse)."""
    h = hashlib.sha256()
    for part in (
        source,
        sources.headers_digest("*.cuh"),
        repr(tuple(options)),
        repr(tuple(name_expressions)),
        arch,
        repr(nvrtc.nvrtc_version()),
        nvrtc.backend_name(),
        repr(nvrtc.DEFAULT_OPTIONS),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def compiled_file(source: str, arch: str, options=(), name_expressions=()):
    """(key, path, lowered names) of ``source`` compiled for ``arch``: CUBIN for 'sm_XX', PTX
    for 'compute_XX'. NVRTC runs only on a disk-cache miss (its time is logged at debug level,
    logger "gpu_tensor.kernel"); needs no GPU. The one disk cache, under
    ``<GPU_TENSOR_CACHE_DIR>/kernels``, for loaded kernels and compile checks alike; writes
    are atomic, so concurrent processes never see a partial file."""
    key = cache_key(source, arch, options, name_expressions)
    cache = Path(_env.cache_dir()) / "kernels"
    code_path = cache / f"{key}.{'cubin' if arch.startswith('sm_') else 'ptx'}"
    names_path = cache / f"{key}.json"
    if code_path.is_file() and names_path.is_file():
        return key, code_path, json.loads(names_path.read_text())
    start = time.perf_counter()
    result = nvrtc.compile_program(source, arch, tuple(options), tuple(name_expressions))
    log.debug("compiled %s for %s in %.1f ms", key[:12], arch,
              1e3 * (time.perf_counter() - start))  # fmt: skip
    cache.mkdir(parents=True, exist_ok=True)
    for path, data in (
        (code_path, result.code),
        (names_path, json.dumps(result.lowered_names).encode()),
    ):
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return key, code_path, result.lowered_names


def get_function(source: str, name: str, options=(), name_expressions=()):
    """CuPy function ``name`` from ``source`` on the current device (compiled and cached).

    ``name`` may be a template name expression ('gt_copy_nd<float, float, int>'); it is added
    to ``name_expressions`` automatically. Compiling is the slow part (~0.1-1 s); pass every
    instantiation you will need in ``name_expressions`` to compile them in one program.
    """
    cp = _cupy()
    dev = cp.cuda.Device().id
    fast = (dev, source, tuple(options), tuple(name_expressions), name)
    fn = _functions.get(fast)  # hot path: one dict lookup (a str caches its hash)
    if fn is not None:
        return fn
    exprs = tuple(dict.fromkeys(tuple(name_expressions) + ((name,) if "<" in name else ())))
    arch = device_arch()
    key = cache_key(source, arch, options, exprs)
    with _lock:
        entry = _modules.get((dev, key))
        if entry is None:
            from ..memory import graph_pool

            graph_pool.guard(f"compiling kernel {name.split('<')[0]!r}")  # loads a module
            _, path, lowered = compiled_file(source, arch, options, exprs)
            # CuPy's low-level Module (what RawModule wraps): load our NVRTC output as is and
            # look functions up by the mangled names NVRTC reported, no name guessing.
            module = cp.cuda.function.Module()
            code = path.read_bytes()
            module.load(code if arch.startswith("sm_") else code.rstrip(b"\0") + b"\0")
            entry = (module, lowered)
            _modules[(dev, key)] = entry
        module, lowered = entry
        fn = module.get_function(lowered.get(name, name))
        _functions[fast] = fn
        return fn


def get_kernel(name: str, source: str, options=()):
    """`get_function` with the name first: how the generated (fused) kernels are loaded."""
    return get_function(source, name, tuple(options))


_sms: dict = {}  # device id -> multiprocessor count


def sm_count(device=None) -> int:
    """The current (or given) device's multiprocessor count, asked once per device: the
    generated kernels' grids are sized by it (fusion/layout.launch_config)."""
    cp = _cupy()
    dev = cp.cuda.Device(device) if device is not None else cp.cuda.Device()
    n = _sms.get(dev.id)
    if n is None:
        n = _sms[dev.id] = dev.attributes["MultiProcessorCount"]
    return n


def clear_cache() -> None:
    """Forget loaded modules (the disk cache stays)."""
    with _lock:
        _functions.clear()
        _modules.clear()
