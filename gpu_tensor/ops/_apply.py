"""apply(): the general elementwise path (promotion, device checks, operand conversion, the
backend's `elementwise`), and `result_tensor`, the Tensor of a backend's result.

Its own file because it is the one path every op can take (the operators of _dispatch.py
fall back to it for anything their short paths do not take; special.py and elementwise.py
call it directly), apart from the operators' hot paths.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .. import dtype as _dt
from .._args import wrap_int
from .._modes import PASS, intercept, watch
from .._tensor import Tensor
from ..backends import get_backend
from ..device import CPU
from ._kernel_out import refuse_zero_divisor
from ._specs import _HALF, _SCALAR_CATEGORY, SPECS, _dtypes

MODES_ON = watch(globals())  # the modes word, read first by apply() (_modes.py)


def _mismatch(a, b):
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{a.device} and {b.device}! Move one with .to(device) (or .cpu() / .cuda())."
    )


def _broadcast_error(shapes, exc):
    return RuntimeError(
        "shapes "
        + ", ".join(str(list(s)) for s in shapes)
        + " cannot be broadcast together (sizes must match or be 1 at each dimension, "
        "aligned from the right)"
    )


def _device_of(operands):
    """The device the op runs on; 0-dim cpu tensors may join any device (like scalars)."""
    dev = None
    first = None
    for x in operands:
        if type(x) is Tensor or isinstance(x, Tensor):
            if dev is None:
                dev, first = x.device, x
            elif x.device is not dev:
                if x.device is CPU and x._data.ndim == 0:
                    continue
                if dev is CPU and first._data.ndim == 0:
                    dev, first = x.device, x
                    continue
                raise _mismatch(first, x)
    for x in operands:  # re-check against the final device
        if (
            isinstance(x, Tensor)
            and x.device is not dev
            and not (x.device is CPU and x._data.ndim == 0)
        ):
            raise _mismatch(first, x)
    return dev


def _coerce(x):
    """numpy arrays and numpy scalars become operands torch would accept."""
    if isinstance(x, np.ndarray):
        from ..creation import from_numpy

        return from_numpy(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def apply(key, *operands, **params):
    """The general elementwise path: promotion, device checks, conversion, backend."""
    if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
        r = intercept(key, partial(apply, key), operands, params)
        if r is not PASS:
            return r
    spec = SPECS[key]
    operands = tuple(_coerce(x) for x in operands)
    dev = _device_of(operands)
    if dev is None:
        for x in operands:  # a value traced by @gt.fuse records the op instead of running it
            hook = getattr(type(x), "__gt_elementwise__", None)
            if hook is not None:
                return hook(x, key, *operands, **params)
        raise TypeError(f"{key}: expected at least one Tensor operand")
    op = spec.op
    if op.no_bool and any(
        (isinstance(x, Tensor) and x.dtype is _dt.bool) or type(x) is bool for x in operands
    ):
        raise RuntimeError(op.no_bool)
    typed = operands[1:] if spec.kind == "where" else operands
    common = _dt.result_type(*(x for x in typed if x is not None))
    compute, out = _dtypes(spec, common)
    if op.operand_check is not None:
        op.operand_check(operands, common)
    backend = get_backend(dev)
    cnp = compute.np
    # torch casts operands to the common dtype before its kernel widens half types to
    # float32: a float16 operand of a bfloat16 op is rounded to bfloat16 first
    via = common.np if compute is not common and common in _HALF else None
    # real cuda: tensors go in their own dtypes, the kernel casts as it loads (one launch)
    # (complex too where the row has complex overloads: op.complex_kernel)
    in_kernel = backend.casts_in_kernel and (compute.category != _dt.COMPLEX or op.complex_kernel)
    args = []
    for i, x in enumerate(operands):
        target = cnp
        if spec.kind == "where" and i == 0:
            target = np.dtype(np.bool_)
        if (
            via is not None
            and i == 1
            and op.opmath_scalar
            and isinstance(x, Tensor)
            and x._data.size == 1
        ):
            via = None  # ... except a one-element divisor/factor, read at full precision
        if isinstance(x, Tensor):
            if x.device is not dev:  # a 0-dim cpu tensor: joins as a scalar of its dtype
                v = x._data
                if via is not None and v.dtype != via and target is cnp:
                    v = v.astype(via)
                v = v.item()
                args.append(v if spec.ufunc else np.asarray(v).astype(target)[()])
                continue
            arr = x._data
            if via is not None and arr.dtype != via and target is cnp:
                arr = backend.astype(arr, via)  # (float32 operands too: round, widen back)
            if arr.dtype != target and not in_kernel:
                arr = backend.astype(arr, target)
            args.append(arr)
        elif x is None:
            args.append(None)
        elif spec.ufunc and _SCALAR_CATEGORY.get(type(x), 9) <= compute.category:
            # weak Python scalar: numpy keeps the array's dtype; ints wrap as in torch
            args.append(wrap_int(x, cnp) if type(x) is int and cnp.kind in "iu" else x)
        else:
            with np.errstate(all="ignore"):
                args.append(np.asarray(x).astype(target)[()])
    if op.int_division and compute.category <= _dt.INT:
        refuse_zero_divisor(key, args[1])
    kwargs = {}
    if op.param and op.param in params:
        kwargs[op.param] = params.pop(op.param)
    if params:
        raise TypeError(f"{key}() got unexpected keyword arguments {sorted(params)}")
    fn = op.complex_fn or spec.fn if compute.category == _dt.COMPLEX else spec.fn
    try:
        with np.errstate(all="ignore"):
            r = backend.elementwise(key, fn, args, out.np, kwargs)
    except ValueError as exc:
        if "broadcast" in str(exc):
            raise _broadcast_error(
                [x.shape for x in operands if isinstance(x, Tensor)], exc
            ) from None
        raise
    except MemoryError as exc:  # numpy's, for an impossible result: torch's error
        raise backend.host_memory_error(exc, key) from None
    return result_tensor(backend, r, dev, out)


def result_tensor(backend, r, dev, out):
    """The Tensor of dtype `out` on `dev` holding `backend.elementwise`'s result `r` (an
    array, or a numpy scalar for 0-dim operands), cast and adopted as the device needs."""
    own = backend.casts_in_kernel  # its elementwise results are its own already
    if not hasattr(r, "ndim") or isinstance(r, np.generic):
        r, own = backend.xp.asarray(r), False
    if r.dtype != out.np and not (out is _dt.bfloat16 and r.dtype == np.uint16):
        r = backend.astype(r, out.np)  # (uint16 results are real cuda's bfloat16 bits)
    r, st = (r, None) if own else backend.adopt(r)
    return Tensor._make(r, dev, out, st)
