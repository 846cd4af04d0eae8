"""gt.special: torch.special's names over the elementwise special functions (ops/special.py,
ops/bessel.py and the core table). i0e, i1 and i1e live only here, as in torch."""

from __future__ import annotations

from .ops import bessel as _bessel
from .ops import special as _sp

__all__ = ["i0", "i0e", "i1", "i1e", "polygamma", "digamma", "psi", "gammaln",
           "multigammaln", "erf", "erfc", "erfinv", "expm1", "exp2", "log1p", "sinc", "logit",
           "expit", "xlogy"]

i0, polygamma, digamma, psi, gammaln = _sp.i0, _sp.polygamma, _sp.digamma, _sp.digamma, _sp.lgamma
erf, erfc, erfinv, expm1, exp2 = _sp.erf, _sp.erfc, _sp.erfinv, _sp.expm1, _sp.exp2
sinc, logit, xlogy, multigammaln = _sp.sinc, _sp.logit, _sp.xlogy, _sp.mvlgamma
i0e, i1, i1e = _bessel.i0e, _bessel.i1, _bessel.i1e


def log1p(input):
    return input.log1p()


def expit(input):
    return input.sigmoid()
