"""Reductions and statistics written on the existing ops (so they carry autograd):
nansum/nanmean, aminmax, logcumsumexp, cov/corrcoef, renorm; plus the integer helpers
(bit shifts, frexp).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .. import return_types
from .._grad import differentiable
from .._tensor import Tensor
from ..backends import get_backend

__all__ = ["nansum", "nanmean", "aminmax", "logcumsumexp", "cov", "corrcoef", "renorm",
           "bitwise_left_shift", "bitwise_right_shift", "frexp", "hardshrink", "prelu"]

AminmaxResult, FrexpResult = return_types.aminmax, return_types.frexp


def _zero_nan(input):
    from .elementwise import where

    return where(input.isnan(), 0, input) if input.dtype.category >= _dt.FLOAT else input


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    x = _zero_nan(input)
    return x.sum(dtype=dtype) if dim is None else x.sum(dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    if input.dtype.category < _dt.FLOAT:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {_dt.SCALAR_TYPE_NAMES[input.dtype.name]}")
    count = (~input.isnan()).sum() if dim is None else (~input.isnan()).sum(dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def aminmax(input, *, dim=None, keepdim=False):
    if dim is None:
        return AminmaxResult(input.amin(), input.amax())
    return AminmaxResult(input.amin(dim, keepdim), input.amax(dim, keepdim))


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) shifted by the max for stability."""
    from .elementwise import where

    x = input if input.dtype.category >= _dt.FLOAT else input.to(_dt.get_default_dtype())
    m = x.detach().amax(dim, keepdim=True) if x.numel() else x.detach().sum(dim, True)
    m = where(m.isfinite(), m, 0.0)
    return (x - m).exp().cumsum(dim).log() + m


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if x.dtype.category < _dt.FLOAT:
        x = x.to(_dt.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        mean = x.mean(1, keepdim=True)
        xc = x - mean
        c = xc.matmul(xc.conj().t()) / max(n - correction, 0)
    else:
        wsum = w.sum()
        mean = (x * w).sum(1, keepdim=True) / wsum
        xc = x - mean
        norm = wsum - correction * ((w * aweights.to(x.dtype)).sum() / wsum
                                    if aweights is not None else 1)
        c = (xc * w).matmul(xc.conj().t()) / norm
    return c.squeeze() if input.ndim < 2 else c


def corrcoef(input):
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    r = c / d.unsqueeze(1) / d.unsqueeze(0)
    return r.clamp(-1, 1) if r.dtype.category == _dt.FLOAT else r


def renorm(input, p, dim, maxnorm):
    """Each slice along dim rescaled so its p-norm is at most maxnorm."""
    from .elementwise import where

    dims = tuple(d for d in range(input.ndim) if d != dim % input.ndim)
    norms = input.norm(p, dims, keepdim=True)
    scale = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * scale


def hardshrink(input, lambd=0.5):
    from .elementwise import where

    return where(input.abs() > lambd, input, 0).to(input.dtype)


def prelu(input, weight):
    """x where x >= 0, weight * x elsewhere; a weight per channel (dim 1) or one for all."""
    from .elementwise import where

    w = weight
    if weight.numel() > 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(f"prelu: the weight has {weight.numel()} elements but the "
                               f"input has {input.shape[1] if input.ndim > 1 else 1} channels")
        w = weight.reshape(-1, *([1] * (input.ndim - 2)))
    return where(input >= 0, input, w * input)


def _shift(name, ufunc):
    def op(input, other):
        bk = get_backend(input.device)
        o = other._data if isinstance(other, Tensor) else other
        if input.dtype.category > _dt.INT:
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{_dt.SCALAR_TYPE_NAMES[input.dtype.name]}'")
        r = bk.elementwise(None, getattr(bk.xp, ufunc), (input._data, o), None)
        arr, st = bk.adopt(r if r.dtype == input.dtype.np else bk.astype(r, input.dtype.np))
        return Tensor._make(arr, input.device, input.dtype, st)

    op.__name__ = op.__qualname__ = name
    return op


bitwise_left_shift = _shift("bitwise_left_shift", "left_shift")
bitwise_right_shift = _shift("bitwise_right_shift", "right_shift")


@differentiable  # formula: autograd/formulas_more.py (the mantissa's)
def frexp(input):
    if input.dtype.category != _dt.FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    bk = get_backend(input.device)
    m, e = bk.xp.frexp(input._data.astype(np.float32) if input.dtype is _dt.bfloat16
                       else input._data)
    ma, st = bk.adopt(m.astype(input.dtype.np))
    ea, st2 = bk.adopt(e.astype(np.int32))
    return FrexpResult(Tensor._make(ma, input.device, input.dtype, st),
                       Tensor._make(ea, input.device, _dt.int32, st2))
