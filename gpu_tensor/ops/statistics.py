"""Reductions and statistics written on the existing ops (so they carry autograd):
nansum/nanmean, aminmax, logcumsumexp, cov/corrcoef, renorm.
"""

from __future__ import annotations

from .. import dtype as _dt
from .. import return_types
from .elementwise import where

__all__ = ["nansum", "nanmean", "aminmax", "logcumsumexp", "cov", "corrcoef", "renorm"]

AminmaxResult = return_types.aminmax


def _zero_nan(input):
    return where(input.isnan(), 0, input) if input.dtype.category >= _dt.FLOAT else input


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    x = _zero_nan(input)
    return x.sum(dtype=dtype) if dim is None else x.sum(dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    if input.dtype.category < _dt.FLOAT:
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex "
            f"dtype but got {_dt.SCALAR_TYPE_NAMES[input.dtype.name]}"
        )
    count = (~input.isnan()).sum() if dim is None else (~input.isnan()).sum(dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def aminmax(input, *, dim=None, keepdim=False):
    if dim is None:
        return AminmaxResult(input.amin(), input.amax())
    return AminmaxResult(input.amin(dim, keepdim), input.amax(dim, keepdim))


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) shifted by the max for stability."""
    x = input if input.dtype.category >= _dt.FLOAT else input.to(_dt.get_default_dtype())
    m = x.detach().amax(dim, keepdim=True) if x.numel() else x.detach().sum(dim, True)
    m = where(m.isfinite(), m, 0.0)
    return (x - m).exp().cumsum(dim).log() + m


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations)."""
    if input.ndim > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got an "
            f"input with {input.ndim} dimensions"
        )
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
        norm = wsum - correction * (
            (w * aweights.to(x.dtype)).sum() / wsum if aweights is not None else 1
        )
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
    dims = tuple(d for d in range(input.ndim) if d != dim % input.ndim)
    norms = input.norm(p, dims, keepdim=True)
    scale = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * scale
