"""Reverse-mode automatic differentiation with PyTorch's surface: `requires_grad`,
`grad_fn`, `backward`, `gt.autograd.grad`, `no_grad`, custom `Function`s, `gradcheck`.

Every differentiable op decides at call time whether to record a node (gpu_tensor/_grad.py);
`record.py` holds the formula registry and the recorder, `formulas_*.py` the formulas (with
torch's node names), `engine.py` the backward pass.
"""

from .engine import backward, grad
from .function import Function, Node
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck

__all__ = ["backward", "grad", "Function", "Node", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "gradcheck", "GradcheckError"]
