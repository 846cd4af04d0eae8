"""The autograd methods of Tensor: backward, retain_grad, retains_grad, register_hook,
output_nr (bound by `_tensor_methods.py`)."""

from __future__ import annotations

import weakref

from .engine import backward as _run
from .function import output_nr, register_hook

__all__ = ["backward", "retain_grad", "retains_grad", "register_hook", "output_nr"]


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's .grad (see gt.autograd.backward)."""
    _run(self, gradient, retain_graph, create_graph, inputs)


def retain_grad(self) -> None:
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    fn = self.grad_fn
    if fn is not None:
        if fn._retained is None:
            fn._retained = {}
        fn._retained[output_nr(self)] = weakref.ref(self)


def retains_grad(self) -> bool:
    fn = self.grad_fn
    ref = fn._retained.get(output_nr(self)) if fn is not None and fn._retained else None
    return ref is not None and ref() is self
