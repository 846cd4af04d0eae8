"""torch.special's Bessel functions beside i0: the modified ones of the first kind (i0e, i1,
i1e; modified_bessel_i0/i1), of the second kind (modified_bessel_k0/k1 and their scaled
forms), Bessel's J and Y of orders 0 and 1, and spherical_bessel_j0.

Each is a row of the op table (fusion/optable.py, key "special_<name>"), so on cuda each is
one generated kernel and each works inside `@gt.fuse`; cpu and emulated cuda run the numpy
references of fusion/npspecial.py. torch has them in torch.special only (gpu_tensor/special.py),
with no Tensor method. The gradients of i0e, i1 and i1e are in autograd/formulas_more.py.
"""

from __future__ import annotations

from .._grad import STATE
from ._dispatch import make_unary

__all__ = [
    "i0e",
    "i1",
    "i1e",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "spherical_bessel_j0",
]


# torch has derivatives for i0e, i1 and i1e only: the others' results never require grad
# (no error, as in torch), so they run with recording off
_NOT_DIFFERENTIABLE = {name for name in __all__ if name not in ("i0e", "i1", "i1e")}


def _without_grad(row):
    def fn(input, out=None):
        if not STATE.enabled or not getattr(input, "_requires_grad", False):
            return row(input, out)
        STATE.enabled = False
        try:
            return row(input, out)
        finally:
            STATE.enabled = True

    return fn


def _row(name):
    fn = make_unary("special_" + name)
    if name in _NOT_DIFFERENTIABLE:
        fn = _without_grad(fn)
    fn.__name__ = fn.__qualname__ = name  # torch.special's name, in Python's own errors
    fn.__doc__ = f"torch.special.{name}: elementwise."
    return fn


ROWS = {"special_" + name: _row(name) for name in __all__}
(
    i0e,
    i1,
    i1e,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    spherical_bessel_j0,
) = (ROWS["special_" + name] for name in __all__)
