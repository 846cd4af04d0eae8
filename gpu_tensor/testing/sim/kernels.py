"""Kernels on the simulator: NVRTC, cupy.cuda.function.Module, RawModule, launches.

`nvrtc` stands in for cupy's NVRTC bindings. Its "CUBIN" is a small self-describing blob
(the source and name expressions) rather than machine code, so the loader's whole path
(cache keys, the disk cache, lowered names, Module.load, get_function) runs unchanged and a
launch can run the very source that was compiled. With `check_nvrtc(True)` every program is
also compiled by the real NVRTC (slower; catches what only NVRTC rejects).

A launch (`Function.__call__`) checks grid and block limits and the argument kinds cupy
accepts, then queues one task on the stream: the kernel's CUDA source compiled by g++ under
kernels/host_emulation.h (gpu_tensor.kernel.emulate, cached in memory and on disk) and run
over the arguments' real addresses. Its memory footprint for race checks: every pointer
argument, as the whole live allocation block it points into (read for `const T*`
parameters, written otherwise).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re

import numpy as np

from .machine import machine
from .ndarray import ndarray
from .signatures import checked

__all__ = ["nvrtc", "Module", "RawModule", "Function", "check_nvrtc"]

_MAGIC = b"GT-SIM-MODULE\n"
_check = {"on": False}


def check_nvrtc(on: bool) -> None:
    """Also compile every program with the real NVRTC (off by default: speed)."""
    _check["on"] = bool(on)


class _Program:
    def __init__(self, source, name):
        self.source, self.name, self.exprs, self.options = source, name, [], []


class _Nvrtc:
    """The subset of cupy_backends.cuda.libs.nvrtc that gpu_tensor.kernel.nvrtc calls."""

    __name__ = "gpu_tensor.testing.sim.nvrtc"

    def __init__(self):
        self._real = importlib.import_module("cupy_backends.cuda.libs.nvrtc")
        self.NVRTCError = self._real.NVRTCError

    def getVersion(self):  # noqa: N802 - cupy's names
        return self._real.getVersion()

    def getSupportedArchs(self):  # noqa: N802
        return self._real.getSupportedArchs()

    def createProgram(self, source, name, headers, include_names):  # noqa: N802
        return _Program(source, name)

    def addNameExpression(self, prog, expr):  # noqa: N802
        prog.exprs.append(expr)

    def compileProgram(self, prog, options):  # noqa: N802
        prog.options = list(options)
        if _check["on"]:
            real = self._real
            p = real.createProgram(prog.source, prog.name, [], [])
            try:
                for e in prog.exprs:
                    real.addNameExpression(p, e)
                try:
                    real.compileProgram(p, options)
                except real.NVRTCError:
                    prog.log = real.getProgramLog(p)
                    raise
            finally:
                real.destroyProgram(p)

    def getProgramLog(self, prog):  # noqa: N802
        return getattr(prog, "log", "")

    def getLoweredName(self, prog, expr):  # noqa: N802
        return expr  # the emulation exports kernels under their name expressions

    def getCUBIN(self, prog):  # noqa: N802
        body = {
            "source": prog.source,
            "exprs": prog.exprs,
            "options": [o for o in prog.options if not o.startswith("--include-path")],
        }
        return _MAGIC + json.dumps(body).encode()

    getPTX = getCUBIN  # noqa: N815

    def destroyProgram(self, prog):  # noqa: N802
        pass


nvrtc = _Nvrtc()


def _parse_blob(code: bytes) -> dict:
    if not code.startswith(_MAGIC):
        raise machine_error(
            218,
            "the image is not a simulator module (real CUBIN or PTX cannot "
            "run on the simulated GPU; compile through cupy.cuda.nvrtc)",
        )
    return json.loads(code[len(_MAGIC) :].rstrip(b"\0"))


def machine_error(status, detail):
    from .runtime import CUDARuntimeError

    return CUDARuntimeError(status, detail)


_PARAMS = re.compile(
    r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)", re.S
)


def _const_params(source: str, name: str) -> list[bool] | None:
    """For kernel `name` (a template's base name), which parameters are const pointers."""
    base = name.split("<")[0].strip()
    for m in _PARAMS.finditer(source):
        if m.group(1) == base:
            return ["const" in p and "*" in p for p in m.group(2).split(",")]
    return None


class Function:
    """cupy.cuda.function.Function: a loaded kernel."""

    def __init__(self, source: str, name: str):
        self.source, self.name = source, name
        self._serial = "__syncthreads" not in source  # no barrier: threads may run serially
        self._const = _const_params(source, name)
        self._lib = None

    def _library(self):
        if self._lib is None:
            from ...kernel import emulate

            self._lib = emulate.build(self.source, [self.name])
        return self._lib

    def __call__(
        self, grid, block, args, shared_mem=0, stream=None, enable_cooperative_groups=False
    ):
        from . import streams

        m = machine()
        grid, block = _dim3(grid, "grid"), _dim3(block, "block")
        if block[0] * block[1] * block[2] > 1024 or block[2] > 64:
            raise machine_error(9, f"block {block} exceeds 1024 threads")  # invalid config
        if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
            raise machine_error(9, f"grid {grid} exceeds CUDA's limits")
        # the null device counts a launch, not runs it: its arguments are checked, their
        # footprints not read
        accesses = None if m.null else []
        kargs = [self._arg(a, i, accesses) for i, a in enumerate(args)]
        if m.null:
            m.count("kernel_launches")
            return
        lib = self._library()
        queue = (streams.get_current_stream() if stream is None else stream)._queue()
        m.count("kernel_launches")
        name, serial = self.name, self._serial

        def launch():
            from ...kernel import emulate

            emulate.launch(lib, name, grid, block, kargs, shared_bytes=shared_mem, serial=serial)

        m.sched.enqueue(queue, launch, f"kernel {name.split('<')[0]}", accesses)

    def _arg(self, a, i, accesses):
        """The value the kernel gets for argument `i`; with `accesses` (None on the null
        device), the device memory it may touch is appended there."""
        const = self._const[i] if self._const and i < len(self._const) else False
        if isinstance(a, ndarray):
            if accesses is not None:
                self._footprint(a.data.ptr, const, accesses)
            return np.uint64(a.data.ptr)
        if isinstance(a, np.ndarray):  # cupy passes a size-1 numpy array by value
            if a.size != 1:
                raise TypeError(f"Unsupported type {type(a)}")
            return a.reshape(())[()]
        if isinstance(a, np.generic):
            if isinstance(a, np.uint64) and accesses is not None:
                self._footprint(int(a), const, accesses)
            return a
        if isinstance(a, bool):
            return np.bool_(a)
        if isinstance(a, int):
            return np.int64(a)
        if isinstance(a, float):
            return np.float64(a)
        raise TypeError(f"Unsupported type {type(a)}")

    def _footprint(self, ptr, const, accesses) -> None:
        hit = machine().space.find(ptr)
        if hit is not None:
            from .memory import live_block

            lo, hi = live_block(ptr, hit)
            accesses.append((lo, hi, not const, f"device buffer {hit[0]:#x}"))


def _dim3(v, what):
    t = (int(v),) if isinstance(v, (int, np.integer)) else tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise machine_error(9, f"{what} must be 1-3 positive ints, got {v!r}")
    return t + (1,) * (3 - len(t))


class Module:
    """cupy.cuda.function.Module."""

    def __init__(self):
        self._body = None

    @checked("cuda.function.Module.load", method=True)
    def load(self, cubin):
        self._body = _parse_blob(bytes(cubin))

    def load_file(self, filename):
        with open(filename, "rb") as f:
            self._body = _parse_blob(f.read())

    @checked("cuda.function.Module.get_function", method=True)
    def get_function(self, name):
        if self._body is None:
            raise machine_error(400, "module not loaded")
        return machine_kernel(self._body["source"], name)


def machine_kernel(source: str, name: str) -> Function:
    m = machine()
    key = (hashlib.sha1(source.encode()).hexdigest(), name)
    fn = m.modules.get(key)
    if fn is None:
        fn = m.modules[key] = Function(source, name)
    return fn


class RawModule:
    """cupy.RawModule(code=None, *, path=None, options=(), ..., name_expressions=None)."""

    def __init__(
        self,
        code=None,
        *,
        path=None,
        options=(),
        backend="nvrtc",
        translate_cucomplex=False,
        enable_cooperative_groups=False,
        name_expressions=None,
        jitify=False,
    ):
        if (code is None) == (path is None):
            raise TypeError("One of `code` and `path` must be specified")
        if path is not None:
            with open(path, "rb") as f:
                self._source = _parse_blob(f.read())["source"]
        else:
            self._source = code

    def get_function(self, name):
        return machine_kernel(self._source, name)


class RawKernel:
    """cupy.RawKernel(code, name, options=(), ...)."""

    def __init__(
        self,
        code,
        name,
        options=(),
        backend="nvrtc",
        *,
        translate_cucomplex=False,
        enable_cooperative_groups=False,
        jitify=False,
    ):
        self._fn = machine_kernel(code, name)

    def __call__(self, grid, block, args, **kwargs):
        self._fn(grid, block, args, **kwargs)
