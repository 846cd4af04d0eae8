"""gt.special: torch.special's names. The elementwise functions are rows of the op table
(fusion/optable.py): one generated kernel each on cuda, and each works inside `@gt.fuse`.
Their homes: ops/special.py (erf family, gamma family, ndtr family, entr, sinc, logit),
ops/bessel.py (the Bessel functions) and the core table (expit is sigmoid, exp2, expm1,
log1p, round). softmax, log_softmax, logsumexp and multigammaln are not elementwise.

Not here (tests/test_special_rows.py lists them): airy_ai, the orthogonal polynomials
(chebyshev/hermite/laguerre/legendre), gammainc/gammaincc and zeta."""

from __future__ import annotations

from .ops import bessel as _bessel
from .ops import elementwise as _ew
from .ops import reduction as _reduction
from .ops import softmax as _softmax
from .ops import special as _sp

__all__ = [
    "i0",
    "i0e",
    "i1",
    "i1e",
    "polygamma",
    "digamma",
    "psi",
    "gammaln",
    "multigammaln",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "expm1",
    "exp2",
    "log1p",
    "sinc",
    "logit",
    "expit",
    "xlogy",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "entr",
    "round",
    "softmax",
    "log_softmax",
    "logsumexp",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
    "xlog1py",
]

i0, polygamma, digamma, psi, gammaln = _sp.i0, _sp.polygamma, _sp.digamma, _sp.digamma, _sp.lgamma
erf, erfc, erfinv, expm1, exp2 = _sp.erf, _sp.erfc, _sp.erfinv, _sp.expm1, _sp.exp2
erfcx, ndtr, ndtri, log_ndtr, entr = _sp.erfcx, _sp.ndtr, _sp.ndtri, _sp.log_ndtr, _sp.entr
sinc, logit, xlogy, multigammaln = _sp.sinc, _sp.logit, _sp.xlogy, _sp.mvlgamma
xlog1py = _sp.xlog1py
i0e, i1, i1e = _bessel.i0e, _bessel.i1, _bessel.i1e
bessel_j0, bessel_j1, bessel_y0, bessel_y1 = (
    _bessel.bessel_j0,
    _bessel.bessel_j1,
    _bessel.bessel_y0,
    _bessel.bessel_y1,
)
modified_bessel_i0, modified_bessel_i1 = _bessel.modified_bessel_i0, _bessel.modified_bessel_i1
modified_bessel_k0, modified_bessel_k1 = _bessel.modified_bessel_k0, _bessel.modified_bessel_k1
scaled_modified_bessel_k0 = _bessel.scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _bessel.scaled_modified_bessel_k1
spherical_bessel_j0 = _bessel.spherical_bessel_j0
expit, log1p, round = _ew.sigmoid, _ew.log1p, _ew.round  # noqa: A001  (torch's name)
softmax, log_softmax = _softmax.softmax, _softmax.log_softmax
logsumexp = _reduction.logsumexp
