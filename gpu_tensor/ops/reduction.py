"""Reductions with `dim`/`keepdim`: sum, mean, prod, max/min, amax/amin, argmax/argmin,
var/std (with `correction`), all/any, norm, cumsum/cumprod. PyTorch's dtype rules: integer
and bool sums/products give int64; half types accumulate in float32."""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .. import return_types
from .._dims import wrap_dim as _wrap_dim
from .._grad import differentiable
from .._host_memory import host_memory
from .._out import call as out_call
from .._tensor import Tensor
from ..backends import PIECE, get_backend
from ..backends.host_kernels import SUM_MIN, full_sum
from ..device import CPU
from ._result import array_result

__all__ = [
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "all",
    "any",
    "norm",
    "cumsum",
    "cumprod",
    "logsumexp",
    "count_nonzero",
]

_py_max, _py_min, _py_sum, _py_any, _py_all = max, min, sum, any, all
_HALF = (_dt.float16, _dt.bfloat16)

MaxResult, MinResult = return_types.max, return_types.min  # torch.return_types.max/min


def _axes(t, dim):
    """None (all dims) or a tuple of normalised dims."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return None  # torch: dim=() / [] reduces over everything
    nd = t._data.ndim
    axes = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"dim {list(dims)} appears multiple times in the list of dims")
    return axes if nd else None


def _values(t, np_dtype=None):
    """t's data in `np_dtype` (float32 for half types by default; bf16 bits decoded)."""
    b = get_backend(t.device)
    want = np_dtype
    if want is None:
        want = np.float32 if t.dtype in _HALF else t.dtype.np
    arr = t._data
    if arr.dtype != want:
        arr = b.astype(arr, want)
    return arr


def _out(t, arr, dt):
    return array_result(get_backend(t.device), arr, t.device, dt)


def _reduce(t, fn, v, axes, keepdim):
    """`fn(v, axis=axes, keepdims=keepdim)` (numpy's or cupy's reduction), computed where
    t's backend puts results (emulated cuda: straight into allocator memory)."""
    return get_backend(t.device).compute_into(
        lambda a, out=None: fn(a, axis=axes, keepdims=keepdim, out=out),
        (v,),
        lambda: (_reduced_shape(v.shape, axes, keepdim), _result_dtype(fn, v.dtype), False),
    )


def _reduced_shape(shape, axes, keepdim):
    if axes is None:
        return (1,) * len(shape) if keepdim else ()
    if len(axes) == len(shape):
        return (1,) * len(shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


_INDEX = np.dtype(np.int64)
_RESULT_DTYPES: dict = {}  # (numpy reduction, operand dtype) -> its result's dtype


def _result_dtype(fn, np_dtype):
    """The dtype numpy's `fn` gives over an array of `np_dtype` (a sum of int8 is int64),
    found once on a one-element array; bounded by the reductions here times the dtypes."""
    key = (fn, np_dtype)
    r = _RESULT_DTYPES.get(key)
    if r is None:
        with np.errstate(all="ignore"):
            r = _RESULT_DTYPES[key] = np.asarray(fn(np.ones(1, np_dtype))).dtype
    return r


def _acc_dtype(t, dtype):
    if dtype is not None:
        return _dt.to_dtype(dtype)
    return _dt.int64 if t.dtype.category < _dt.FLOAT else t.dtype


def _fast(input, r, dt):
    """Wrap a cpu reduction result (numpy returns scalars for full reductions)."""
    if type(r) is not np.ndarray:
        r = np.asarray(r)
    return Tensor._make(r, CPU, dt)


@differentiable(first=True)
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001
    if out is not None:
        return out_call("sum", sum, (input, dim, keepdim), {"dtype": dtype}, out, "acc")
    if input.device is CPU and dim is None and dtype is None and not keepdim:
        d = input.dtype
        if d.category >= _dt.FLOAT and d not in _HALF:  # the hot path: no promotion work
            a = input._data
            r = full_sum(a) if a.size >= SUM_MIN else None  # numpy's bits, faster
            return _fast(input, a.sum() if r is None else r, d)
        if d.category < _dt.FLOAT:
            return _fast(input, input._data.sum(dtype=np.int64), _dt.int64)
    return _accumulate("sum", input, dim, keepdim, dtype)


@differentiable(first=True)
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if out is not None:
        return out_call("prod", prod, (input, dim, keepdim), {"dtype": dtype}, out, "acc")
    return _accumulate("prod", input, dim, keepdim, dtype)


def _accumulate(name, input, dim, keepdim, dtype):
    """sum/prod in the accumulation dtype (int64 for integer and bool inputs, as torch);
    half types accumulate in float32 and round back."""
    dt = _acc_dtype(input, dtype)
    b = get_backend(input.device)
    comp = np.float32 if dt in _HALF else dt.np
    fn = _host_sum if b.host_arrays and name == "sum" else getattr(b.xp, name)
    r = _reduce(input, fn, _values(input, comp), _axes(input, dim), keepdim)
    return _out(input, r, dt)


def _host_sum(a, axis=None, keepdims=False, out=None):
    """`np.sum`; a whole float array's sum by the host kernel, numpy's bits (cpu with a
    dtype or keepdim, emulated cuda, half types summed in float32)."""
    if axis is None and a.size >= SUM_MIN:
        r = full_sum(a)
        if r is not None:
            if keepdims:
                r = np.full((1,) * a.ndim, r)
            if out is None:
                return r
            out[...] = r
            return out
    return np.sum(a, axis=axis, keepdims=keepdims, out=out)


@differentiable(first=True)
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if out is not None:
        return out_call("mean", mean, (input, dim, keepdim), {"dtype": dtype}, out, "acc")
    d = input.dtype
    if (
        input.device is CPU
        and dim is None
        and dtype is None
        and not keepdim
        and (d.category >= _dt.FLOAT and d not in _HALF and input._data.size)
    ):
        return _fast(input, input._data.mean(), d)
    dt = input.dtype if dtype is None else _dt.to_dtype(dtype)
    if dt.category < _dt.FLOAT:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {input.dtype.name}; use t.float().mean()"
        )
    xp = get_backend(input.device).xp
    comp = np.float32 if dt in _HALF else dt.np
    with np.errstate(all="ignore"):
        r = _reduce(input, xp.mean, _values(input, comp), _axes(input, dim), keepdim)
    return _out(input, r, dt)


def _empty_check(t, axes, name, whole_cls=IndexError):
    """torch: reducing an empty tensor with no dim raises `whole_cls` (RuntimeError for
    max/min/amax/amin, IndexError for argmax/argmin); a zero-size dim IndexError."""
    if t._data.size == 0:
        shp = t._data.shape
        if axes is None or _py_any(shp[a] == 0 for a in axes):
            raise (whole_cls if axes is None else IndexError)(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0"
                if axes is None
                else f"{name}(): cannot reduce over a zero-size dimension"
            )


def _ordered(input, name):
    if input.dtype.category == _dt.COMPLEX:
        raise NotImplementedError(
            f"{name}(): not implemented for "
            f"'{_dt.SCALAR_TYPE_NAMES[input.dtype.name]}': complex numbers are not ordered; "
            "reduce .abs() or .real instead"
        )


@differentiable(first=True)
def amax(input, dim=(), keepdim=False, *, out=None):
    if out is not None:
        return out_call("amax", amax, (input, dim, keepdim), {}, out, "same")
    return _amax_amin(input, dim, keepdim, "amax")


@differentiable(first=True)
def amin(input, dim=(), keepdim=False, *, out=None):
    if out is not None:
        return out_call("amin", amin, (input, dim, keepdim), {}, out, "same")
    return _amax_amin(input, dim, keepdim, "amin")


def _amax_amin(input, dim, keepdim, name):
    """amax / amin: numpy's max / min over `dim` (every dim for ()), in input's dtype."""
    _ordered(input, name)
    axes = _axes(input, dim)
    _empty_check(input, axes, name, RuntimeError)
    fn = getattr(get_backend(input.device).xp, name[1:])
    return _out(input, _reduce(input, fn, _values(input), axes, keepdim), input.dtype)


def _arg(input, dim, keepdim, name):
    xp = get_backend(input.device).xp
    vals = _values(input)
    if input.dtype.category == _dt.COMPLEX:
        raise RuntimeError(f"{name}(): does not support complex input")
    if input.dtype is _dt.bool and name in ("argmax", "argmin"):
        raise RuntimeError(f"{name}(): does not support bool input; convert it with .int()")
    fn = xp.argmax if name in ("argmax", "max") else xp.argmin
    if dim is None:
        _empty_check(input, None, name)
        r = fn(vals.reshape(-1))
        if keepdim:
            r = xp.asarray(r).reshape((1,) * vals.ndim)
        return _out(input, r, _dt.int64)
    d = _wrap_dim(dim, vals.ndim)
    _empty_check(input, (d,) if vals.ndim else None, name)
    if vals.ndim == 0:
        return _out(input, xp.zeros((), np.int64), _dt.int64)

    def run(a, out=None):
        if out is not None:  # (numpy's argmax has `keepdims` since 1.22)
            return fn(a, axis=d, out=out, keepdims=keepdim)
        r = fn(a, axis=d)
        return xp.expand_dims(r, d) if keepdim else r

    # numpy's arg-reductions give a C-contiguous intp (int64) result
    r = get_backend(input.device).compute_into(
        run, (vals,), lambda: (_reduced_shape(vals.shape, (d,), keepdim), _INDEX, True)
    )
    return _out(input, r, _dt.int64)


def argmax(input, dim=None, keepdim=False, *, out=None):
    if out is not None:
        return out_call("argmax", argmax, (input, dim, keepdim), {}, out, "same")
    return _arg(input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False, *, out=None):
    if out is not None:
        return out_call("argmin", argmin, (input, dim, keepdim), {}, out, "same")
    return _arg(input, dim, keepdim, "argmin")


def _extreme(name, input, dim, keepdim):
    """max/min: the 0-dim extreme, (values, indices) along `dim`, or the elementwise
    maximum/minimum when `dim` is a Tensor (torch's three overloads)."""
    if isinstance(dim, Tensor):
        from . import elementwise  # read at call time: autograd may have wrapped it

        return getattr(elementwise, name + "imum")(input, dim)
    reduce = amax if name == "max" else amin
    if dim is None:
        return reduce(input)
    if input.dtype.category == _dt.COMPLEX:
        raise RuntimeError(f"{name}(): does not support complex input")
    result = MaxResult if name == "max" else MinResult
    return result(reduce(input, dim, keepdim), _arg(input, dim, keepdim, name))


@differentiable
def max(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """max(t) -> 0-dim max; max(t, dim) -> (values, indices); max(t, other) -> maximum."""
    if out is not None:
        return out_call("max", max, (input, dim, keepdim), {}, out, "same")
    return _extreme("max", input, dim, keepdim)


@differentiable
def min(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """min(t) -> 0-dim min; min(t, dim) -> (values, indices); min(t, other) -> minimum."""
    if out is not None:
        return out_call("min", min, (input, dim, keepdim), {}, out, "same")
    return _extreme("min", input, dim, keepdim)


@differentiable(first=True)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over `dim`; `correction` (default 1, Bessel) or torch's legacy `unbiased`."""
    return _var_or_std(input, dim, unbiased, keepdim, correction, out, root=False)


def _var_or_std(input, dim, unbiased, keepdim, correction, out, root):
    """var's body, and std's (`root`: the square root of the variance)."""
    name, fn = ("std", std) if root else ("var", var)
    if out is not None:
        args = (input, dim, unbiased, keepdim)
        return out_call(name, fn, args, {"correction": correction}, out)
    if input.dtype.category < _dt.FLOAT:
        raise RuntimeError(
            f"{name}(): expected a floating point or complex input, got {input.dtype.name}"
        )
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    xp = get_backend(input.device).xp
    scale = input.dtype in (_dt.float64, _dt.complex128)
    with np.errstate(all="ignore"):
        r = _along(
            input,
            _values(input, _wide(input.dtype)),
            _axes(input, dim),
            keepdim,
            np.float64,
            lambda v, axes, keep: _scaled_var(xp, v, axes, correction, keep, root, scale),
        )
    return _out(input, r, input.dtype.to_real())


_REAL = {
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64),
}


def _along(input, v, axes, keepdim, np_dtype, fn):
    """`fn(v, axes, keepdim)`, a reduction of `v` over `axes` (None: all) whose keepdim
    result is `np_dtype`, computed over pieces of the other dims where the backend fills
    pieces (emulated cuda), so its temporaries (x - mean, squares, exponentials) stay
    piece-sized; numpy's and cupy's own call elsewhere."""
    if axes is None or v.size <= PIECE:  # (small: whole on every backend)
        return fn(v, axes, keepdim)
    kept = tuple(1 if i in axes else n for i, n in enumerate(v.shape))
    r = get_backend(input.device).by_pieces(
        lambda part: fn(part, axes, True), (v,), kept, np.dtype(np_dtype), whole=axes
    )
    return r if keepdim else r.reshape([n for i, n in enumerate(v.shape) if i not in axes])


def _wide(dt):
    """The accumulation dtype of var/std and cumsum/cumprod: float64 (complex128) for every
    floating type, as torch's cpu kernels accumulate (a float32 running sum of 10**6 values
    of 0.1 drifts by 1%; float64 keeps it exact to float32's precision)."""
    return np.complex128 if dt.category == _dt.COMPLEX else np.float64


def _scaled_var(xp, v, axes, correction, keepdim, root=False, scale=True):
    """Two-pass variance of float64/complex128 `v`, scaled by the largest magnitude along the
    reduced dims so squares cannot overflow (float32 inputs never do in float64; float64
    inputs beyond 1e154 would). `root`: the standard deviation, sqrt(var / m**2) * m, so it
    stays finite whenever it is representable, before rounding to the input's dtype."""
    # float32 and half data cannot overflow in float64: only 64-bit inputs are scaled
    m = xp.max(xp.abs(v), axis=axes, keepdims=True) if v.size and scale else None
    if m is not None:
        m = xp.where(xp.isfinite(m) & (m > 0), m, 1.0)
        v = v / m
    r = xp.var(v, axis=axes, ddof=correction, keepdims=True)
    if root:
        r = xp.sqrt(r)
    if m is not None:
        r = r * m if root else r * (m * m)
    if not keepdim:
        r = r.reshape(()) if axes is None else xp.squeeze(r, axis=axes)
    return r


@differentiable(first=True)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    return _var_or_std(input, dim, unbiased, keepdim, correction, out, root=True)


def var_mean(input, dim=None, *, correction=None, keepdim=False):
    return var(input, dim, correction=correction, keepdim=keepdim), mean(input, dim, keepdim)


def std_mean(input, dim=None, *, correction=None, keepdim=False):
    return std(input, dim, correction=correction, keepdim=keepdim), mean(input, dim, keepdim)


def _bool_out(input):
    # torch keeps uint8 for all/any of a uint8 tensor (backward compatibility); bool otherwise
    return _dt.uint8 if input.dtype is _dt.uint8 else _dt.bool


def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    return _all_or_any("all", all, input, dim, keepdim, out)


def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    return _all_or_any("any", any, input, dim, keepdim, out)


def _all_or_any(name, fn, input, dim, keepdim, out):
    """all's and any's body: the array reduction of the same name over `input != 0`."""
    if out is not None:
        return out_call(name, fn, (input, dim, keepdim), {}, out)
    xp = get_backend(input.device).xp
    v = _values(input) != 0 if input.dtype is not _dt.bool else input._data
    reduced = _reduce(input, getattr(xp, name), v, _axes(input, dim), keepdim)
    return _out(input, reduced, _bool_out(input))


@host_memory
def count_nonzero(input, dim=None):
    xp = get_backend(input.device).xp
    return _out(input, xp.count_nonzero(_values(input), axis=_axes(input, dim)), _dt.int64)


@differentiable(first=True)
@host_memory
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over `dim` (all elements by default); 'fro' is the 2-norm."""
    if input.dtype.category < _dt.FLOAT:
        raise RuntimeError(
            f"norm(): input dtype should be floating point or complex, got {input.dtype.name}"
        )
    if p == "nuc":
        raise RuntimeError("norm(p='nuc') is not supported; use a matrix norm library")
    dt = input.dtype.to_real() if dtype is None else _dt.to_dtype(dtype)
    xp = get_backend(input.device).xp
    v = _values(input)

    def p_norm(x, axes, keep):
        a = xp.abs(x)
        if p in ("fro", 2, 2.0, None):
            return xp.sqrt(xp.sum(a * a, axis=axes, keepdims=keep))
        if p == float("inf"):
            return xp.max(a, axis=axes, keepdims=keep)
        if p == float("-inf"):
            return xp.min(a, axis=axes, keepdims=keep)
        if p == 0:
            return xp.sum((a != 0).astype(a.dtype), axis=axes, keepdims=keep)
        if p == 1:
            return xp.sum(a, axis=axes, keepdims=keep)
        return xp.sum(a**p, axis=axes, keepdims=keep) ** (1.0 / p)

    with np.errstate(all="ignore"):
        r = _along(input, v, _axes(input, dim), keepdim, _REAL.get(v.dtype, v.dtype), p_norm)
    return _out(input, r, dt)


def _cum(input, dim, dtype, fn):
    dt = _acc_dtype(input, dtype)
    d = _wrap_dim(dim, input._data.ndim)
    xp = get_backend(input.device).xp
    comp = _wide(dt) if dt.category >= _dt.FLOAT else dt.np  # see _wide: float64 running sums
    vals = _values(input, comp)
    with np.errstate(all="ignore"):
        if vals.ndim:
            r = get_backend(input.device).compute_into(
                lambda a, out=None: getattr(xp, fn)(a, axis=d, out=out),
                (vals,),
                lambda: (vals.shape, _result_dtype(getattr(xp, fn), vals.dtype), False),
            )
        else:
            r = vals.copy()
    return _out(input, r, dt)


@differentiable(first=True)
def cumsum(input, dim, *, dtype=None, out=None):
    if out is not None:
        return out_call("cumsum", cumsum, (input, dim), {"dtype": dtype}, out, "acc")
    return _cum(input, dim, dtype, "cumsum")


@differentiable(first=True)
def cumprod(input, dim, *, dtype=None, out=None):
    if out is not None:
        return out_call("cumprod", cumprod, (input, dim), {"dtype": dtype}, out, "acc")
    return _cum(input, dim, dtype, "cumprod")


@differentiable(first=True)
@host_memory
def logsumexp(input, dim, keepdim=False, *, out=None):
    if out is not None:
        return out_call("logsumexp", logsumexp, (input, dim, keepdim), {}, out)
    dt = input.dtype if input.dtype.category >= _dt.FLOAT else _dt.get_default_dtype()
    xp = get_backend(input.device).xp
    comp = np.float32 if dt in _HALF else dt.np
    v = _values(input, comp)

    def lse(x, axes, keep):
        m = xp.max(x, axis=axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)
        r = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
        if keep:
            return r
        return r.reshape(()) if axes is None else xp.squeeze(r, axis=axes)

    with np.errstate(all="ignore"):
        r = _along(input, v, _axes(input, dim), keepdim, v.dtype, lse)
    return _out(input, r, dt)
