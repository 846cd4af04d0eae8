"""The modified Bessel functions of the first kind torch.special offers beside i0: i0e,
i1 and i1e (exponentially scaled: e^-|x| I_nu(x), finite where I_nu overflows).

They are rows of the op table (fusion/optable.py: special_i0e, special_i1, special_i1e),
so on cuda each is one generated kernel and each works inside `@gt.fuse`; cpu and emulated
cuda run the numpy references of fusion/npspecial.py. Their gradients are in
autograd/formulas_more.py.
"""

from __future__ import annotations

from ._dispatch import make_unary

__all__ = ["i0e", "i1", "i1e"]

ROWS = {key: make_unary(key) for key in ("special_i0e", "special_i1", "special_i1e")}
i0e, i1, i1e = ROWS["special_i0e"], ROWS["special_i1"], ROWS["special_i1e"]
for _name, _fn in (("i0e", i0e), ("i1", i1), ("i1e", i1e)):
    _fn.__name__ = _fn.__qualname__ = _name  # torch.special's name, in Python's own errors
