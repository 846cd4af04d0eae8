"""torch's `out=` contract, in one place: every op that takes `out=` hands its call here.

`call(name, fn, args, kwargs, out)` runs `fn(*args, **kwargs)` and writes the result into
`out`, returning `out` (a tuple of outs, as the op's own result type, for ops such as
`max(dim)` that return values and indices). The rules are torch's:

- `out` must be a Tensor (a tuple of Tensors for tuple results): TypeError otherwise.
- autograd: under grad mode, no input (nor `out`) may require grad: RuntimeError
  "<op>(): functions with out=... arguments don't support automatic differentiation".
- device: the result and `out` must be on one device: RuntimeError naming both.
- dtype: `can_cast(result, out)` by category (bool < int < float < complex); a float
  result does not go into an int64 out. `rule="same"` ops (matmul, amax) want out's dtype
  (matmul, amax, neg, clamp) to equal the result's, as torch's do; `rule="acc"` ops (sum, mean, cumsum) compute in
  out's dtype when no `dtype=` is given; `rule="cat"` raises TypeError, as torch.cat.
- shape: an `out` of another shape is resized to the result's; torch warns (UserWarning)
  when that `out` had elements.

Ops compute into a fresh result and copy it over, so `out` may alias an input.
`creation(...)` is the variant for factories (zeros, arange, rand, ...), whose dtype and
device default to out's.
"""

from __future__ import annotations

import inspect
import os
import sys
import warnings

from . import dtype as _dt
from ._grad import STATE, any_requires_grad, out_grad_error
from ._tensor import Tensor

__all__ = ["call", "creation", "keyword_out", "write"]

_NAMES = _dt.SCALAR_TYPE_NAMES


def _type_name(d):
    return _NAMES.get(d.name, d.name)


def _check_targets(name, out, tuple_result):
    outs = out if tuple_result else (out,)
    if tuple_result and not (isinstance(out, (tuple, list)) and len(out) == len(tuple_result)):
        raise TypeError(
            f"{name}(): argument 'out' must be a tuple of {len(tuple_result)} "
            f"Tensors, not {type(out).__name__}"
        )
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(o).__name__}")
    return outs


def _resize_warning(out, shape):
    warnings.warn(
        f"An output with one or more elements was resized since it had shape "
        f"{list(out.shape)}, which does not match the required output shape {list(shape)}. "
        f"This behavior is deprecated, and in a future PyTorch release outputs will not be "
        f"resized unless they have zero elements. You can explicitly reuse an out tensor t "
        f"by resizing it, inplace, to zero elements with t.resize_(0).",
        UserWarning,
        stacklevel=_caller_level(),
    )


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _caller_level():
    """warnings' stacklevel of the first frame outside gpu_tensor (the user's call)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def write(name, out, r, rule="cast"):
    """Copy the op's result `r` into `out` under torch's device, dtype and shape rules."""
    if out.device != r.device:
        raise RuntimeError(
            f"{name}(): Expected all tensors to be on the same device, but found at least two "
            f"devices, {r.device} (the result) and {out.device} (out=)! Pass an out tensor on "
            f"{r.device}, or move the inputs with .to(device)."
        )
    rd, od = r.dtype, out.dtype
    if rule == "same" and rd is not od:
        raise RuntimeError(
            f"{name}(): Found dtype {_type_name(od)} but expected "
            f"{_type_name(rd)}: this op's out= must have the result's dtype "
            f"({rd})"
        )
    if rd.category > od.category:
        cls = TypeError if rule == "cat" else RuntimeError
        raise cls(
            f"{name}(): result type {_type_name(rd)} can't be cast to the desired "
            f"output type {_type_name(od)}"
        )
    shape = tuple(r.shape)
    if tuple(out.shape) != shape:
        if out.numel():
            _resize_warning(out, shape)
        out.resize_(shape)
    with _no_grad():
        out.copy_(r)
    return out


class _no_grad:
    """Grad mode off for the copy (its autograd check was made before the op ran)."""

    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = STATE.enabled
        STATE.enabled = False

    def __exit__(self, *exc):
        STATE.enabled = self.prev


def keyword_out(fn):
    """Show `fn(input, other, out=None)` as torch's `fn(input, other, *, out=None)`.

    The hottest ops (gt.mul, gt.exp, gt.matmul) take `out` as a positional-or-keyword
    parameter: CPython 3.11 does not specialise calls to functions with keyword-only
    parameters, which costs ~90 ns a call, against ~20 ns for a trailing default
    (measured in the note f_out.md). Their signature says keyword-only, as torch's."""
    sig = inspect.signature(fn)
    params = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.name == "out" else p
        for p in sig.parameters.values()
    ]
    fn.__signature__ = sig.replace(parameters=params)
    return fn


def call(name, fn, args, kwargs, out, rule="cast"):
    """fn(*args, **kwargs) written into `out` (see the module docstring); returns `out`."""
    probe = isinstance(out, (tuple, list))
    if not probe and not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if STATE.enabled and (
        any_requires_grad(args, kwargs) or any_requires_grad(out if probe else (out,))
    ):
        raise out_grad_error(name)
    if rule == "acc" and kwargs.get("dtype") is None and not probe:
        kwargs["dtype"] = out.dtype  # sum/mean/cumsum accumulate in out's dtype, as torch
    r = fn(*args, **kwargs)
    if isinstance(r, tuple):
        outs = _check_targets(name, out, r)
        return type(r)(*(write(name, o, v, rule) for o, v in zip(outs, r, strict=True)))
    _check_targets(name, out, None)
    return write(name, out, r, rule)


def creation(name, fn, args, kwargs, out):
    """A factory's `out=`: dtype and device default to out's; an explicit dtype must match."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    dtype = kwargs.get("dtype")
    if dtype is None:
        kwargs["dtype"] = out.dtype
    elif _dt.to_dtype(dtype) is not out.dtype:
        raise RuntimeError(
            f"dtype {_type_name(_dt.to_dtype(dtype))} does not match dtype of "
            f"out parameter ({_type_name(out.dtype)})"
        )
    if kwargs.get("device") is None:
        kwargs["device"] = out.device
    r = fn(*args, **kwargs)
    write(name, out, r)
    if r.requires_grad:
        out.requires_grad_(True)
    return out
