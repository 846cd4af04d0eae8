"""Every simulated call is bound against the installed real cupy's signature first, so a call
real cupy rejects (a keyword it lacks, a missing argument) fails here the same way.

Python-level cupy functions and classes are bound with `inspect.signature`. Cython functions
have no introspectable signature; their first docstring line is cupy's own signature
(`malloc(size_t size) -> intptr_t`), so `CYTHON` below copies those lines, and
tests/testing/test_sim.py checks each entry against the installed cupy. A call is bound by
a function compiled with the same parameters (`_binder`), which the same test file checks
against `Signature.bind`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import keyword
import re

__all__ = ["CYTHON", "bind", "checked", "signature_of", "parse_cython", "real_object"]

# path under the cupy package -> first line of its docstring in cupy 14.2
CYTHON = {
    "cuda.runtime.malloc": "malloc(size_t size) -> intptr_t",
    "cuda.runtime.free": "free(intptr_t ptr)",
    "cuda.runtime.memGetInfo": "memGetInfo()",
    "cuda.runtime.memcpy": "memcpy(intptr_t dst, intptr_t src, size_t size, int kind)",
    "cuda.runtime.memcpyAsync": "memcpyAsync(intptr_t dst, intptr_t src, size_t size, int kind, intptr_t stream)",
    "cuda.runtime.memcpyPeerAsync": "memcpyPeerAsync(intptr_t dst, int dstDevice, intptr_t "
    "src, int srcDevice, size_t size, intptr_t stream)",
    "cuda.runtime.hostRegister": "hostRegister(intptr_t ptr, size_t size, unsigned int flags)",
    "cuda.runtime.hostUnregister": "hostUnregister(intptr_t ptr)",
    "cuda.runtime.hostAlloc": "hostAlloc(size_t size, unsigned int flags) -> intptr_t",
    "cuda.runtime.freeHost": "freeHost(intptr_t ptr)",
    "cuda.runtime.pointerGetAttributes": "pointerGetAttributes(intptr_t ptr) -> PointerAttributes",
    "cuda.runtime.eventRecord": "eventRecord(intptr_t event, intptr_t stream)",
    "cuda.runtime.eventQuery": "eventQuery(intptr_t event)",
    "cuda.runtime.streamQuery": "streamQuery(intptr_t stream)",
    "cuda.runtime.streamBeginCapture": "streamBeginCapture(intptr_t stream, int mode=streamCaptureModeRelaxed)",
    "cuda.runtime.streamEndCapture": "streamEndCapture(intptr_t stream) -> intptr_t",
    "cuda.runtime.streamIsCapturing": "streamIsCapturing(intptr_t stream) -> bool",
    "cuda.runtime.graphLaunch": "graphLaunch(intptr_t graphExec, intptr_t stream)",
    "cuda.runtime.graphUpload": "graphUpload(intptr_t graphExec, intptr_t stream)",
    "cuda.runtime.streamCreateWithPriority": "streamCreateWithPriority(unsigned int flags, int priority) -> intptr_t",
    "cuda.runtime.streamGetPriority": "streamGetPriority(intptr_t stream) -> int",
    "cuda.runtime.streamDestroy": "streamDestroy(intptr_t stream)",
    "cuda.runtime.deviceSynchronize": "deviceSynchronize()",
    "cuda.runtime.getDevice": "getDevice() -> int",
    "cuda.runtime.setDevice": "setDevice(int device)",
    "cuda.runtime.getDeviceCount": "getDeviceCount() -> int",
    "cuda.runtime.getDeviceProperties": "getDeviceProperties(int device)",
    "cuda.set_allocator": "set_allocator(allocator=None)",
    "cuda.set_pinned_memory_allocator": "set_pinned_memory_allocator(allocator=None)",
    "cuda.get_current_stream": "get_current_stream(int device_id=-1)",
    "cuda.device.get_cublas_handle": "get_cublas_handle() -> intptr_t",
    "cuda.get_elapsed_time": "get_elapsed_time(start_event, end_event)",
    "cuda.Device": "Device(device=None)",
    "cuda.UnownedMemory": "UnownedMemory(intptr_t ptr, size_t size, owner, int device_id=-1)",
    "cuda.MemoryPointer": "MemoryPointer(BaseMemory mem, ptrdiff_t offset)",
    "cuda.MemoryPool.free_all_blocks": "MemoryPool.free_all_blocks(self, stream=None)",
    "cuda.function.Module.load": "Module.load(self, bytes cubin)",
    "cuda.function.Module.get_function": "Module.get_function(self, name)",
    "ndarray.get": "_ndarray_base.get(self, stream=None, order='C', out=None, blocking=True)",
    "ndarray.set": "_ndarray_base.set(self, arr, stream=None)",
    "ndarray.astype": "_ndarray_base.astype(self, dtype, order='K', casting=None, subok=None, "
    "copy=True) -> _ndarray_base",
    "ndarray.copy": "_ndarray_base.copy(self, order='C') -> _ndarray_base",
    "ndarray.reshape": "_ndarray_base.reshape(self, *shape, order='C', copy=None)",
    "ndarray.item": "_ndarray_base.item(self)",
    "ndarray.fill": "_ndarray_base.fill(self, value)",
    "ufunc.at": "ufunc.at(self, a, indices, b=None)",
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*$")


@functools.lru_cache(maxsize=1)
def _cupy():
    return importlib.import_module("cupy")


def real_object(path: str):
    """The object at `path` in the installed cupy ('cuda.runtime.malloc')."""
    obj = _cupy()
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _split_params(text: str) -> list[str]:
    out, depth, cur, quote = [], 0, "", None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_cython(line: str) -> inspect.Signature:
    """An inspect.Signature from a Cython docstring signature line (types dropped, `self`
    dropped, defaults kept as text: binding only needs to know that one exists)."""
    inner = line[line.index("(") + 1 : line.rindex(")")]
    params, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for raw in _split_params(inner):
        if raw == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        head, eq, default = raw.partition("=")
        name = head.split()[-1]
        if name.startswith("**"):
            params.append(inspect.Parameter(name[2:], inspect.Parameter.VAR_KEYWORD))
            continue
        if name.startswith("*"):
            params.append(inspect.Parameter(name[1:], inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        if name == "self" or not _NAME.match(name):
            continue
        params.append(
            inspect.Parameter(
                name, kind, default=default.strip() if eq else inspect.Parameter.empty
            )
        )
    return inspect.Signature(params)


@functools.cache
def signature_of(path: str) -> inspect.Signature | None:
    """The real cupy signature of `path` (None when cupy has no such object: the caller then
    raises AttributeError, as cupy would)."""
    if path in CYTHON:
        return parse_cython(CYTHON[path])
    try:
        obj = real_object(path)
    except AttributeError:
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        if not doc or "(" not in doc[0]:
            return inspect.Signature(
                [
                    inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                    inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
                ]
            )
        return parse_cython(doc[0])
    params = [p for p in sig.parameters.values() if p.name != "self"]
    return sig.replace(parameters=params)


# functions whose signature takes **kwargs but whose body refuses all but these keywords
# (cupy/linalg/_einsum.py: "Did not understand the following kwargs"; even out=None)
KEYWORDS = {"einsum": frozenset({"dtype", "optimize"})}


@functools.cache
def _binder(path: str):
    """A function with the parameters of cupy's `path` and an empty body, or None where they
    cannot be written as Python (or cupy has no `path`). Calling it binds the arguments as
    the interpreter does: 0.13 µs a call where `Signature.bind` takes 8-10 µs (measured
    2026-12-05), and the simulator binds every call it takes. `bind` still asks
    `Signature.bind` for the message when the binder refuses."""
    sig = signature_of(path)
    if sig is None:
        return None
    P = inspect.Parameter
    parts, star, positional_only = [], False, False
    for p in sig.parameters.values():
        if not p.name.isidentifier() or keyword.iskeyword(p.name):
            return None
        if p.kind is P.POSITIONAL_ONLY:
            positional_only = True
        elif positional_only:
            parts.append("/")
            positional_only = False
        if p.kind is P.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is P.VAR_POSITIONAL:
            parts.append("*" + p.name)
            star = True
        elif p.kind is P.VAR_KEYWORD:
            parts.append("**" + p.name)
        else:
            parts.append(p.name if p.default is P.empty else p.name + "=None")
    if positional_only:
        parts.append("/")
    namespace: dict = {}
    exec(f"def binder({', '.join(parts)}):\n    pass\n", namespace)  # (text we wrote)
    return namespace["binder"]


def bind(path: str, args, kwargs) -> None:
    """Raise TypeError (as real cupy would) when cupy's `path` does not take these arguments."""
    binder = _binder(path)
    if binder is not None and path not in KEYWORDS:
        try:
            binder(*args, **kwargs)
            return
        except TypeError:
            pass  # refused: Signature.bind below says why, in inspect's words
    sig = signature_of(path)
    if sig is None:
        raise AttributeError(f"cupy has no attribute {path!r} (cupy {_cupy().__version__})")
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(
            f"cupy.{path}(): {exc} (bound against the installed cupy {_cupy().__version__})"
        ) from None
    extra = sorted(set(kwargs) - KEYWORDS[path]) if path in KEYWORDS else None
    if extra:
        raise TypeError(
            f"cupy.{path}(): did not understand the following kwargs: {extra} "
            f"(cupy {_cupy().__version__} takes only "
            f"{sorted(KEYWORDS[path])})"
        )


def checked(path: str, method: bool = False):
    """Decorator: bind every call against real cupy's `path` before running the simulation
    (`method=True`: the first argument is self and is not part of the binding)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            bind(path, args[1:] if method else args, kwargs)
            return fn(*args, **kwargs)

        return inner

    return wrap
