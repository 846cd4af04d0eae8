"""Reverse-mode automatic differentiation with PyTorch's surface: `requires_grad`,
`grad_fn`, `backward`, `gt.autograd.grad`, `no_grad`, custom `Function`s, `gradcheck`.

Every differentiable op decides at call time whether to record a node (gpu_tensor/_grad.py);
`record.py` holds the formula registry and the recorder, `formulas_*.py` the formulas (with
torch's node names), `engine.py` the backward pass.
"""

from .engine import backward, grad
from .function import Function, Node
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck

__all__ = [
    "backward",
    "grad",
    "Function",
    "Node",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
    "gradcheck",
    "GradcheckError",
    "Variable",
    "functional",
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
