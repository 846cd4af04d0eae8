"""Run CUDA C kernel sources on the CPU: g++ -std=c++20 under kernels/host_emulation.h.

``build(source, exports)`` compiles a shared library exposing one entry per kernel name
expression; ``launch(lib, name, grid, block, args)`` runs it through the launcher of
kernels/host_emulation_runtime.cc, a library compiled once, so each kernel's compile reads
only the light kernel-side header (a median 0.44 s a kernel rather than 0.91 s, AMD EPYC,
2026-12-05). Arguments follow the cuLaunchKernel convention (each kernel parameter passed
as its bytes), so the same argument list drives the GPU (through CuPy) and the CPU:

* ``numpy.ndarray``  -> a pointer to its data (the host stands in for device memory)
* ``numpy.generic``  -> its bytes by value: ``np.uint64(addr)`` for a raw pointer,
                        ``np.int32(n)`` for an int, a structured ``np.void`` for a struct
* ``ctypes`` scalars -> their bytes by value

Libraries are cached by a hash of the source, the headers, the exports and the flags: in
memory for the process and on disk under ``<GPU_TENSOR_CACHE_DIR>/emulate``, so a test
session compiles each translation unit once (g++ is the slow part: batch many kernel
instantiations into one ``build``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from .. import _env
from . import sources

__all__ = ["EmulationError", "build", "launch", "symbol_for", "compiler", "have_fp16"]

# -O1: the emulated kernels run on small test arrays; -O2 roughly doubles compile time for
# little gain there. -w: CUDA headers compiled as host code are noisy.
_FLAGS = ("-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-w", "-x", "c++")

_lock = threading.Lock()
_libs: dict[str, ctypes.CDLL] = {}


class EmulationError(RuntimeError):
    """The host emulation could not build or run a kernel."""


def compiler() -> str | None:
    """Path of the g++ used for emulation, or None when there is none."""
    return shutil.which("g++")


def have_fp16() -> bool:
    """True when a complete CUDA include tree lets g++ compile cuda_fp16.h / cuda_bf16.h."""
    return sources.host_cuda_include_dir() is not None


def symbol_for(name_expression: str) -> str:
    """The exported C symbol for a kernel name expression (stable, collision-free)."""
    stem = re.sub(r"[^0-9A-Za-z_]+", "_", name_expression).strip("_")[:80]
    digest = hashlib.sha1(name_expression.encode()).hexdigest()[:10]
    return f"gt_emu_{stem}_{digest}"


def _translation_unit(source: str, exports, defines) -> str:
    lines = [f"#define {k} {v}" if v is not None else f"#define {k}" for k, v in defines.items()]
    lines.append(_PREFIX_END.rstrip("\n"))
    lines.append('#line 1 "kernel.cu"')
    lines.append(source)
    lines.append("")
    lines += [f"GT_EMU_EXPORT({symbol_for(e)}, {e})" for e in exports]
    return "\n".join(lines) + "\n"


def build(source: str, exports, defines=None) -> ctypes.CDLL:
    """Compile ``source`` (CUDA C) for the host and return the loaded library.

    ``exports`` are kernel name expressions (``'gt_copy_nd<float, float, int>'``; a plain name
    for a non-template kernel). ``defines`` maps macro -> value (None for a bare #define).
    fp16/bf16 are available when ``have_fp16()``; the macro GT_EMU_HAVE_FP16 is then defined.
    """
    gxx = compiler()
    if gxx is None:
        raise EmulationError("host emulation needs g++ (C++20); install it (apt install g++)")
    exports = list(dict.fromkeys(exports))
    defines = dict(defines or {})
    include = [f"-I{sources.kernel_dir()}"]
    cuda_inc = sources.host_cuda_include_dir()
    if cuda_inc is not None:
        defines.setdefault("GT_EMU_HAVE_FP16", "1")
        defines.setdefault("GT_FP16", "1")  # common.cuh: the 16-bit float types
        include.append(f"-I{cuda_inc}")
    tu = _translation_unit(source, exports, defines)
    headers = sources.headers_digest("*.h", "*.cuh")
    key = hashlib.sha256(
        "\0".join([tu, headers, " ".join(_FLAGS), " ".join(include), gxx]).encode()
    ).hexdigest()[:32]
    with _lock:
        lib = _libs.get(key)
        if lib is not None:
            return lib
        cache = Path(_env.cache_dir()) / "emulate"
        cache.mkdir(parents=True, exist_ok=True)
        so_path = cache / f"{key}.so"
        if not so_path.is_file():
            _compile(gxx, tu, include, so_path)
        lib = ctypes.CDLL(str(so_path))
        # each export's entry address, which the runtime's launcher calls (launch)
        lib.gt_emu_entries = {
            e: ctypes.cast(getattr(lib, symbol_for(e)), ctypes.c_void_p).value for e in exports
        }
        _libs[key] = lib
        return lib


_RUNTIME = "host_emulation_runtime.cc"
_ERR_SYNC_IN_SERIAL = 1  # host_emulation_abi.h's GT_EMU_ERR_SYNC_IN_SERIAL (test_emulate checks)
_runtime_lib: list = []  # [the loaded runtime's gt_emu_launch], once built


def _runtime():
    """host_emulation_runtime.cc's `gt_emu_launch`, compiled once (cached on disk beside the
    kernels, keyed by its text, the headers it shares with the kernels, the flags and the
    compiler) and loaded once per process."""
    if _runtime_lib:
        return _runtime_lib[0]
    gxx = compiler()
    if gxx is None:
        raise EmulationError("host emulation needs g++ (C++20); install it (apt install g++)")
    text = (sources.kernel_dir() / _RUNTIME).read_text()
    headers = sources.headers_digest("*.h")
    key = hashlib.sha256("\0".join([text, headers, " ".join(_FLAGS), gxx]).encode()).hexdigest()
    key = key[:32]
    with _lock:
        if not _runtime_lib:
            cache = Path(_env.cache_dir()) / "emulate"
            cache.mkdir(parents=True, exist_ok=True)
            so_path = cache / f"runtime-{key}.so"
            if not so_path.is_file():
                _compile(gxx, text, [f"-I{sources.kernel_dir()}"], so_path, precompiled=False)
            fn = ctypes.CDLL(str(so_path)).gt_emu_launch
            fn.restype = ctypes.c_int
            fn.argtypes = [
                ctypes.c_void_p,
                ctypes.POINTER(ctypes.c_uint),
                ctypes.POINTER(ctypes.c_uint),
                ctypes.c_ulonglong,
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_int,
            ]
            _runtime_lib.append(fn)
    return _runtime_lib[0]


_PREFIX_END = '#include "host_emulation.h"\n'


def _precompiled_prefix(gxx: str, tu: str, include, cache: Path):
    """(tu, include) using a precompiled header for the part before the kernel source (the
    defines and host_emulation.h, whose CUDA fp16/bf16 headers are most of what g++ reads).
    Built once per prefix/headers/flags; on any failure, plain g++."""
    head, sep, rest = tu.partition(_PREFIX_END)
    if not sep:
        return tu, include
    prefix = head + sep
    key = hashlib.sha256(
        "\0".join(
            [
                prefix,
                sources.headers_digest("*.h", "*.cuh"),
                " ".join(_FLAGS),
                " ".join(include),
                gxx,
            ]
        ).encode()
    )
    pch_dir = cache / f"pch-{key.hexdigest()[:24]}"
    gch = pch_dir / "gt_emu_prefix.h.gch"
    if not gch.is_file():
        pch_dir.mkdir(parents=True, exist_ok=True)
        # atomic, as the .gch below: another process (make test runs two tiers at once) may
        # be compiling this header while it is written again, with the same text
        fd, tmp = tempfile.mkstemp(dir=pch_dir, suffix=".h.tmp")
        with os.fdopen(fd, "w") as f:
            f.write(prefix)
        os.replace(tmp, pch_dir / "gt_emu_prefix.h")
        fd, tmp = tempfile.mkstemp(dir=pch_dir, suffix=".gch.tmp")
        os.close(fd)
        flags = [f for f in _FLAGS if f not in ("-shared", "c++", "-x")]
        proc = subprocess.run(
            [
                gxx,
                *flags,
                "-x",
                "c++-header",
                *include,
                str(pch_dir / "gt_emu_prefix.h"),
                "-o",
                tmp,
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            os.unlink(tmp)
            return tu, include
        os.replace(tmp, gch)
    return '#include "gt_emu_prefix.h"\n' + rest, [f"-I{pch_dir}", *include]


def _compile(gxx: str, tu: str, include, so_path: Path, precompiled: bool = True) -> None:
    if precompiled:
        tu, include = _precompiled_prefix(gxx, tu, include, so_path.parent)
    with tempfile.TemporaryDirectory(prefix="gt_emu_") as tmp:
        src = Path(tmp) / "tu.cpp"
        src.write_text(tu)
        out = Path(tmp) / "lib.so"
        proc = subprocess.run(
            [gxx, *_FLAGS, *include, str(src), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise EmulationError(
                "g++ could not compile the kernel for host emulation:\n" + proc.stderr[-8000:]
            )
        # Atomic publish: a concurrent process either sees the whole library or none.
        fd, tmp_target = tempfile.mkstemp(dir=so_path.parent, suffix=".so.tmp")
        os.close(fd)
        shutil.copyfile(out, tmp_target)
        os.replace(tmp_target, so_path)


def _arg_bytes(arg, keep: list) -> int:
    """Address of a buffer holding the parameter's bytes (kept alive through ``keep``)."""
    if isinstance(arg, np.ndarray):
        holder = ctypes.c_void_p(arg.ctypes.data)
    elif isinstance(arg, np.generic):
        holder = np.array(arg)  # 0-d copy: its data buffer holds exactly the scalar's bytes
        keep.append(holder)
        return holder.ctypes.data
    elif isinstance(arg, ctypes._SimpleCData) or isinstance(arg, ctypes.Structure):
        holder = arg
    else:
        raise TypeError(
            f"emulate.launch: cannot pass {type(arg).__name__} to a kernel; use a numpy array "
            "(pointer), a numpy scalar such as np.int32(n)/np.uint64(addr) (by value), or a "
            "structured np.void (struct)"
        )
    keep.append(holder)
    return ctypes.addressof(holder)


def _dim3(v) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or any(int(x) < 1 for x in t):
        raise ValueError(f"grid/block must be 1-3 positive ints, got {v!r}")
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))


def launch(lib, kernel_name, grid, block, args, shared_bytes=0, serial=False) -> None:
    """Run kernel ``kernel_name`` (a name expression given to ``build``) on the CPU.

    ``serial=True`` runs each block's threads one after another on this thread: much faster,
    and valid for kernels that never call __syncthreads (calling it raises EmulationError).
    Blocks always run one at a time (see host_emulation.h for why that is required).
    """
    g, b = _dim3(grid), _dim3(block)
    if b[0] * b[1] * b[2] > 1024:
        raise ValueError(f"block {b} has more than 1024 threads (CUDA's limit)")
    entry = lib.gt_emu_entries.get(kernel_name)
    if entry is None:
        raise EmulationError(f"{kernel_name!r} was not in the exports given to emulate.build")
    keep: list = []
    ptrs = (ctypes.c_void_p * max(1, len(args)))(*[_arg_bytes(a, keep) for a in args])
    code = _runtime()(
        entry,
        (ctypes.c_uint * 3)(*g),
        (ctypes.c_uint * 3)(*b),
        int(shared_bytes),
        ptrs,
        1 if serial else 0,
    )
    if code == _ERR_SYNC_IN_SERIAL:
        raise EmulationError(
            f"{kernel_name} called __syncthreads in a serial launch; launch it with serial=False"
        )
    if code != 0:
        raise EmulationError(f"{kernel_name} failed under host emulation (code {code})")
