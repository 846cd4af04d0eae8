"""The autograd methods of Tensor: backward, retain_grad, retains_grad, register_hook,
output_nr."""

from __future__ import annotations

import weakref

from .function import output_nr, register_hook

__all__ = ["attach"]


def attach(cls) -> None:
    """Tensor.backward, retain_grad, retains_grad, register_hook, output_nr."""
    cls.backward = _backward
    cls.retain_grad = _retain_grad
    cls.retains_grad = property(_retains_grad)
    cls.register_hook = register_hook
    cls.output_nr = property(output_nr, None, None, "Which output of grad_fn this tensor is.")


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into every leaf's .grad (see gt.autograd.backward)."""
    from .engine import backward

    backward(self, gradient, retain_graph, create_graph, inputs)


def _retain_grad(self):
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    fn = self.grad_fn
    if fn is not None:
        if fn._retained is None:
            fn._retained = {}
        fn._retained[output_nr(self)] = weakref.ref(self)


def _retains_grad(self):
    fn = self.grad_fn
    ref = fn._retained.get(output_nr(self)) if fn is not None and fn._retained else None
    return ref is not None and ref() is self
