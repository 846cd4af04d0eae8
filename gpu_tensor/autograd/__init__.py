"""Reverse-mode automatic differentiation with PyTorch's surface: `requires_grad`,
`grad_fn`, `backward`, `gt.autograd.grad`, `no_grad`, custom `Function`s, `gradcheck`.

Every differentiable op decides at call time whether to record a node (gpu_tensor/_grad.py);
`record.py` holds the formula registry and the recorder, `formulas_*.py` the formulas (with
torch's node names), `engine.py` the backward pass.
"""

from .engine import backward, grad
from .function import Function, Node
from .grad_mode import *  # noqa: F403
from .grad_mode import __all__ as _grad_mode_all
from .gradcheck import GradcheckError, gradcheck

__all__ = [
    "backward",
    "grad",
    "Function",
    "Node",
    *_grad_mode_all,
    "gradcheck",
    "GradcheckError",
    "Variable",  # noqa: F405 - both come from __getattr__ below, on first use
    "functional",  # noqa: F405
]


def __getattr__(name):
    """gt.autograd.Variable (legacy.py) and gt.autograd.functional, loaded on first use:
    both import the ops, which import this package."""
    if name == "Variable":
        from ..legacy import Variable

        return Variable
    if name == "functional":
        import importlib

        return importlib.import_module(__name__ + ".functional")
    raise AttributeError(f"module 'gpu_tensor.autograd' has no attribute '{name}'")
