"""numpy's MemoryError (a host buffer it could not allocate) as torch's error, for the
factories and the ops that compute with numpy beyond the paths the backends plan: the host
allocator's RuntimeError on cpu, gt.OutOfMemoryError on emulated cuda (whose memory is host
memory). A numpy exception never reaches the user raw (issue 18)."""

from __future__ import annotations

import functools

from ._tensor import Tensor
from .backends import get_backend

__all__ = ["host_memory", "memory_error"]


def memory_error(exc: MemoryError, what: str, args) -> RuntimeError:
    """The error to raise for `exc`, on the device of the first tensor among `args`
    (or inside a first list/tuple argument: cat's, einsum's)."""
    for a in args:
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            a = a[0]
        if isinstance(a, Tensor):
            return get_backend(a.device).host_memory_error(exc, what)
    return get_backend("cpu").host_memory_error(exc, what)


def host_memory(fn):
    """`fn` with numpy's MemoryError raised as `memory_error` says."""
    what = f"{fn.__name__}()"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemoryError as exc:  # (gt.OutOfMemoryError is a RuntimeError: it passes)
            raise memory_error(exc, what, args) from None

    return wrapper
