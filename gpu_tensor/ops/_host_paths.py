"""The short paths that skip apply()'s promotion work on a device with the device fast path:
`_device_fast` (same-dtype operands straight to the backend's `elementwise`), and on
emulated cuda `_host_fast` (numpy straight into allocator memory), relu's forward into one
block (`_host_relu`), relu's gradient (`host_relu_grad_fits`, `host_relu_grad`, called by
autograd's formula) and Linear's bias added in place (`host_bias_add`, cpu too).

Its own file because these paths hold the emulated backend's allocator rules, apart from
the operators that call them (_dispatch.py), which bind them by name at import.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._grad import STATE
from .._modes import watch
from .._tensor import Tensor
from ..backends.base import PIECE
from ..device import CPU
from ._quiet import _CV, _QUIET_EXTOBJ
from ._specs import _SCALAR_CATEGORY, SPECS

MODES_ON = watch(globals())  # the modes word, read by host_relu_grad_fits and host_bias_add


def _device_fast(backend, key, fn, fast, a, other, dev, dt, reflected):
    """A device backend's short path, skipping apply()'s promotion work: straight to the
    backend's `elementwise`. None: not eligible (apply() then runs the op or raises)."""
    if type(other) is Tensor:
        if other.device is not dev or other.dtype is not dt:
            return None
        y = other._data
    else:
        c = _SCALAR_CATEGORY.get(type(other))
        if c is None or c > dt.category or (c == _dt.BOOL and SPECS[key].op.no_bool):
            return None
        y = other
    out = fast.get(dt)
    if out is None:
        return None
    check = SPECS[key].op.operand_check  # refusals that depend on the operands (int ** -1)
    if check is not None:
        check((other, a) if reflected else (a, other), dt)
    x = a._data
    emulated = backend.host_arrays  # (of the device fast path: emulated cuda)
    if emulated and type(other) is not Tensor and type(fn) is not np.ufunc:
        with np.errstate(all="ignore"):  # a composite gets the scalar as apply() gives it
            y = np.asarray(y).astype(dt.np)[()]
    if reflected:
        x, y = y, x
    try:
        if emulated:
            return _host_fast(backend, key, fn, (x, y), dev, out)
        r = backend.elementwise(key, fn, (x, y), out.np)
    except (ValueError, OverflowError):
        return None  # shapes do not broadcast, an int out of range: apply() raises
    return Tensor._make(r, dev, out)


def _host_fast(backend, key, fn, args, dev, out):
    """Emulated cuda's short path: numpy straight into allocator memory, silenced as
    apply() silences it (its promotion work skipped, ~2x cheaper per tiny op), adopted."""
    if fn is _RELU_FN:  # not a ufunc: computed into its block here, not copied in
        r = _host_relu(backend, args[0], dev, out)
        if r is not None:
            return r
    if _CV is None:
        with np.errstate(all="ignore"):
            r = backend.elementwise(key, fn, args, out.np)
    else:
        tok = _CV.set(_QUIET_EXTOBJ)
        try:
            r = backend.elementwise(key, fn, args, out.np)
        finally:
            _CV.reset(tok)
    if type(r) is not np.ndarray:
        r = np.asarray(r)
    if r.dtype != out.np:
        r = backend.astype(r, out.np)
    r, st = backend.adopt(r)
    return Tensor._make(r, dev, out, st)


def host_relu_grad_fits(g, out) -> bool:
    """Whether relu's gradient `0 where out <= 0 else g` may take host_relu_grad: emulated
    cuda tensors of one float32/float64 dtype, shape and device, nothing recording (no
    create_graph) or watching (no mode)."""
    dev = g.device
    backend = dev._backend
    return (
        backend is not None
        and backend.device_fast_path  # ... and host arrays: _device_fast's emulated branch
        and backend.host_arrays
        and out.device is dev
        and type(g) is Tensor
        and g.dtype is out.dtype
        and g.dtype in _RELU_ZERO
        and g._data.shape == out._data.shape
        and not STATE.enabled
        and not MODES_ON
    )


def host_relu_grad(g, out):
    """relu's gradient `where(out <= 0, 0.0, g)` (torch's threshold_backward: g where out
    is NaN) on emulated cuda, without the ops' dispatch. Up to PIECE elements of
    C-contiguous operands (the layout where gives then): one allocator block, given g and
    then +0.0 where out <= 0 (a NaN in g is copied as it is), the mask a host temporary;
    torch's threshold_backward is one kernel with no mask either. Otherwise the ops' numpy
    calls, each into allocator memory as _host_fast makes them (the mask, inverted in its
    own block, the result, then the mask's block back)."""
    dev = g.device
    backend = dev._backend
    d, gd = out._data, g._data
    if d.size <= PIECE and d.flags.c_contiguous and gd.flags.c_contiguous:
        r, st = backend.empty(gd.shape, gd.dtype)
        np.copyto(r, gd)
        np.copyto(r, _RELU_ZERO[g.dtype], where=d <= 0)  # (comparisons with NaN warn about nothing)
        return Tensor._make(r, dev, g.dtype, st)
    mask = _host_fast(backend, "le", _LE_FN, (d, 0), dev, _dt.bool)
    np.logical_not(mask._data, out=mask._data)  # a block only this call holds
    zero = _RELU_ZERO[g.dtype]  # (apply()'s value for where's scalar: np.asarray(0.0).astype)
    return _host_fast(backend, "where", _WHERE_FN, (mask._data, gd, zero), dev, g.dtype)


def _host_relu(backend, x, dev, out):
    """relu(x) on emulated cuda for up to PIECE elements of a C-contiguous x, computed
    straight into one allocator block (the layout numpy gives the result then) by the
    row's own function, fusion.npmath.relu, given the block as `out`. None: larger or
    strided, for _host_fast's general path (pieces)."""
    if x.size > PIECE or not x.flags.c_contiguous:
        return None
    r, st = backend.empty(x.shape, x.dtype)
    _RELU_FN(x, out=r)
    return Tensor._make(r, dev, out, st)


def host_bias_add(out, bias) -> bool:
    """Linear's bias added into its product `out` (a result nobody else holds yet) in
    place, on the cpu and emulated cuda: numpy's add of each element, as `out + bias`
    computes it (same bits, quiet as apply() is), with no second result and no dispatch.
    For one float32/float64 dtype and device, a bias of out's shape or of its last dim,
    nothing recording or watching (no mode: the profiler sees aten::add). False: not
    eligible, the caller adds as usual."""
    if MODES_ON or type(out) is not Tensor:
        return False
    cls = type(bias)
    if cls is not Tensor:  # nn.Parameter adds as a Tensor; a subclass's own __radd__ runs
        plain = _ADDS_AS_TENSOR.get(cls)
        if plain is None:
            plain = issubclass(cls, Tensor) and cls.__radd__ is Tensor.__radd__
            _ADDS_AS_TENSOR[cls] = plain
        if not plain:
            return False
    dev = out.device
    dt = out.dtype
    if bias.device is not dev or bias.dtype is not dt or dt not in _RELU_ZERO:
        return False
    if STATE.enabled and (out._requires_grad or bias._requires_grad):
        return False
    if dev is not CPU and (dev._backend is None or not dev._backend.host_arrays):
        return False
    o, b = out._data, bias._data
    if b.shape != o.shape and (b.ndim != 1 or o.ndim < 1 or b.shape[0] != o.shape[-1]):
        return False
    if _CV is None:
        with np.errstate(all="ignore"):
            np.add(o, b, out=o)
    else:
        tok = _CV.set(_QUIET_EXTOBJ)
        try:
            np.add(o, b, out=o)
        finally:
            _CV.reset(tok)
    return True


_RELU_ZERO = {d: d.np.type(0.0) for d in (_dt.float32, _dt.float64)}
_LE_FN, _WHERE_FN, _RELU_FN = SPECS["le"].fn, SPECS["where"].fn, SPECS["relu"].fn
_ADDS_AS_TENSOR: dict = {}  # operand class -> whether `out + it` is Tensor's own add
