"""Compiled host kernels for the host-memory devices (cpu, emulated cuda): numpy's full sum
of a float array and the Adam step, with numpy's values bit for bit, 2-3x faster.

kernels/host_cpu.cc is built once per cache directory with g++ (-O3, -ffp-contract=off so
no multiply-add is fused, -fno-math-errno so sqrt vectorises, never -ffast-math) and
loaded with ctypes. Each kernel does exactly the IEEE operations of the numpy code it
replaces, in the same order and precision:
- `full_sum`: numpy's `add.reduce` of a contiguous float32/float64 array, which is the
  identity plus numpy's pairwise sum over the whole array (leaves of <= 128 elements, eight
  running sums each, halves cut at multiples of 8). numpy keeps a leaf's eight sums in
  scalar registers; the kernel keeps them in one vector (AVX2), the same eight sums.
  On first use the kernel is checked against this numpy on a few arrays: another numpy
  whose reduction cuts the array differently turns the kernel off for sums.
- `adam`: optim/host_step.py's `_eager` / `_fused` formulas, one pass per element instead
  of one numpy pass per operation.
Without g++, when the build fails, or (sums) on a CPU without AVX2, every caller keeps its
numpy path: the same values, slower. `reason()` says why the kernels are off.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from .. import _env

__all__ = ["full_sum", "adam", "reason", "SUM_MIN"]

_FLAGS = (
    "-std=c++17",
    "-O3",
    "-ffp-contract=off",  # a*b+c stays two roundings, as numpy's two ufuncs
    "-fno-math-errno",  # sqrt as one instruction (the same correctly rounded value)
    "-fPIC",
    "-shared",
    "-Wno-psabi",  # (a note on passing vector types, irrelevant inside one library)
)
_SOURCES = ("host_cpu.cc", "host_cpu_body.inc")
SUM_MIN = 1 << 15  # below this numpy's own sum is as fast as the call into the kernel
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_FLOATS = (_F32, _F64)  # native byte order only (a '>f4' dtype is not equal to these)

_lock = threading.Lock()
_state: dict = {}  # "lib", "sum" (bool), "why" (str): filled once by _load()


def _kernel_dir() -> Path:
    from ..kernel.sources import kernel_dir

    return kernel_dir()


def _build() -> ctypes.CDLL:
    """The loaded library, compiled into <cache>/host/<hash>.so when not there yet."""
    gxx = shutil.which("g++")
    if gxx is None:
        raise OSError("no g++ on PATH")
    src = _kernel_dir()
    text = "\0".join((src / name).read_text() for name in _SOURCES)
    key = hashlib.sha256("\0".join([text, " ".join(_FLAGS), gxx]).encode()).hexdigest()[:32]
    cache = Path(_env.cache_dir()) / "host"
    so_path = cache / f"host_cpu-{key}.so"
    if not so_path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".so.tmp")
        os.close(fd)
        try:
            proc = subprocess.run(
                [gxx, *_FLAGS, "-I", str(src), str(src / "host_cpu.cc"), "-o", tmp],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise OSError("g++ failed: " + proc.stderr[-2000:])
            os.replace(tmp, so_path)  # atomic: another process sees all of it or none
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    lib = ctypes.CDLL(str(so_path))
    ptr, n = ctypes.c_void_p, ctypes.c_long
    for name, res in (("gt_sum_f32", ctypes.c_float), ("gt_sum_f64", ctypes.c_double)):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, [ptr, n]
    for kind in ("eager", "fused"):
        for dt in ("f32", "f64"):
            fn = getattr(lib, f"gt_adam_{kind}_{dt}")
            fn.restype = None
            fn.argtypes = [ptr, ptr, ptr, ptr, ptr, n, ptr, ctypes.c_int]
    lib.gt_host_avx2.restype = ctypes.c_int
    return lib


def _sum_agrees(lib) -> bool:
    """The kernel's sum equals this numpy's on arrays that take every path of the tree."""
    rng = np.random.default_rng(30)
    for n in (SUM_MIN, 100_003, 3 * 2**17 + 5):
        for dt, fn in ((_F32, lib.gt_sum_f32), (_F64, lib.gt_sum_f64)):
            a = rng.standard_normal(n).astype(dt)
            if dt.type(fn(a.ctypes.data, n)).tobytes() != np.add.reduce(a).tobytes():
                return False
    return True


def _load():
    with _lock:
        if _state:
            return
        try:
            lib = _build()
        except (OSError, FileNotFoundError, AttributeError) as exc:
            _state.update(lib=None, sum=False, why=f"host kernels unavailable: {exc}")
            return
        fast = bool(lib.gt_host_avx2())
        ok = fast and _sum_agrees(lib)
        why = "" if ok else ("no AVX2" if not fast else "numpy's sum order differs")
        _state.update(lib=lib, sum=ok, why=why)


def reason() -> str:
    """Empty when every kernel is on; else why some or all are off."""
    _load()
    return _state["why"]


def full_sum(a: np.ndarray):
    """`np.add.reduce(a, axis=None)` (a numpy scalar) for a C- or F-contiguous float32 or
    float64 array of at least SUM_MIN elements; None (use numpy) otherwise, and for a NaN
    result."""
    dt = a.dtype
    if a.size < SUM_MIN or dt not in _FLOATS:
        return None
    flags = a.flags
    if not (flags.c_contiguous or flags.f_contiguous):
        return None  # (numpy walks a dense block in memory order: one pairwise sum)
    if not _state:
        _load()
    if not _state["sum"]:
        return None
    lib = _state["lib"]
    fn = lib.gt_sum_f32 if dt == _F32 else lib.gt_sum_f64
    r = dt.type(fn(a.ctypes.data, a.size))
    # A NaN's sign and payload, where two NaNs meet, depend on which operand numpy's
    # compiled loop puts first (it differs between its vector body and its tail): numpy
    # recomputes a NaN sum, so even those bits stay numpy's.
    return None if r != r else r


class AdamScalars(ctypes.Structure):
    """host_cpu.cc's AdamScalars: the Python floats of one step, cast by the kernel."""

    _fields_ = [
        (name, ctypes.c_double)
        for name in ("decay", "wd", "w1", "beta2", "w2", "bc2_sqrt", "eps", "step")
    ]


ADAM_WD, ADAM_DECOUPLED, ADAM_MAXIMIZE, ADAM_AMSGRAD, ADAM_LERP = 1, 2, 4, 8, 16


def adam(kind: str, p, g, m, v, vmax, scalars: AdamScalars, flags: int) -> bool:
    """One Adam step in place over 1-D contiguous arrays of one dtype (float32/float64):
    kind "eager" or "fused" (host_step.py's formulas). False: no kernel, nothing done."""
    if not _state:
        _load()
    lib = _state["lib"]
    if lib is None:
        return False
    fn = getattr(lib, f"gt_adam_{kind}_{'f32' if p.dtype == _F32 else 'f64'}")
    fn(
        p.ctypes.data,
        g.ctypes.data,
        m.ctypes.data,
        v.ctypes.data,
        None if vmax is None else vmax.ctypes.data,
        p.size,
        ctypes.byref(scalars),
        flags,
    )
    return True
