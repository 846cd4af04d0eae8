"""The autograd methods of Tensor: backward, retain_grad, retains_grad, register_hook,
and a requires_grad_ that switches autograd on (see install.py for why it is lazy)."""

from __future__ import annotations

import weakref

from . import install
from .function import register_hook

__all__ = ["attach"]


def attach(cls) -> None:
    """Tensor.backward, retain_grad, retains_grad, register_hook, and a requires_grad_
    that activates autograd."""
    plain_rg = cls.__dict__["requires_grad_"]
    if getattr(plain_rg, "_autograd", False):
        return

    def requires_grad_(self, requires_grad: bool = True):
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach().")
        plain_rg(self, requires_grad)
        if requires_grad and not install.ACTIVE:
            install.activate()
        return self

    requires_grad_._autograd = True
    requires_grad_.__doc__ = plain_rg.__doc__
    cls.requires_grad_ = requires_grad_
    cls.backward = _backward
    cls.retain_grad = _retain_grad
    cls.retains_grad = property(_retains_grad)
    cls.register_hook = register_hook


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into every leaf's .grad (see gt.autograd.backward)."""
    from .engine import backward

    backward(self, gradient, retain_graph, create_graph, inputs)


def _retain_grad(self):
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is not None:
        self.grad_fn._retained = weakref.ref(self)


def _retains_grad(self):
    fn = self.grad_fn
    ref = fn._retained if fn is not None else None
    return ref is not None and ref() is self
