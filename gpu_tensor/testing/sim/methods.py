"""ndarray methods and operators not written out in ndarray.py: each is bound against the
real cupy.ndarray method's signature, then computed by numpy inside one stream task (or made
a view, for the methods that are views)."""

from __future__ import annotations

import functools

import numpy as np

from .ndarray import ndarray
from .signatures import bind, signature_of
from .tasks import run, view_or_run

__all__ = ["method"]

VIEWS = {
    "reshape",
    "transpose",
    "swapaxes",
    "squeeze",
    "ravel",
    "view",
    "diagonal",
    "real",
    "imag",
    "T",
    "mT",
}
ATTRIBUTES = {"T", "mT", "real", "imag"}


def method(a: ndarray, name: str):
    if name.startswith("_") or signature_of(f"ndarray.{name}") is None:
        raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
    if name in ATTRIBUTES:
        return view_or_run(name, lambda h: getattr(h, name), (a,), {})

    def call(*args, **kwargs):
        bind(f"ndarray.{name}", args, kwargs)
        if name == "view" and args:
            from .ndarray import check_dtype

            check_dtype(args[0])
        fn = functools.partial(_call_method, name)
        if name in VIEWS:
            return view_or_run(name, fn, (a, *args), kwargs)
        return run(f"ndarray.{name}", fn, (a, *args), kwargs)

    return call


def _call_method(name, h, *args, **kwargs):
    return getattr(h, name)(*args, **kwargs)


def _reject_host_arrays(args) -> None:
    for x in args:
        if isinstance(x, np.ndarray) and x.ndim:
            raise TypeError(f"Unsupported type {type(x)}")


def _operator(name):
    def op(self, *args):
        _reject_host_arrays(args)
        return run(name, lambda h, *rest: getattr(h, name)(*rest), (self, *args), {})

    op.__name__ = name
    return op


def _inplace(name):
    def op(self, other):
        _reject_host_arrays((other,))
        run(name, lambda h, o: getattr(h, name)(o), (self, other), {}, writes=(self,))
        return self

    op.__name__ = name
    return op


for _n in (
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "matmul",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
    "divmod",
):
    setattr(ndarray, f"__{_n}__", _operator(f"__{_n}__"))
    setattr(ndarray, f"__r{_n}__", _operator(f"__r{_n}__"))
    if _n != "divmod":
        setattr(ndarray, f"__i{_n}__", _inplace(f"__i{_n}__"))
for _n in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_n}__", _operator(f"__{_n}__"))
ndarray.T = property(lambda self: view_or_run("T", lambda h: h.T, (self,), {}))
