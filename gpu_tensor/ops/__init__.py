"""Tensor operations: elementwise, reductions, linear algebra, indexing, joining, shapes.

Each submodule defines `__all__`; `gpu_tensor/__init__.py` re-exports them as `gt.<name>`.
"""

# Load order: the Tensor class first. Its module attaches the ops as methods once every
# ops module below is complete, so importing any `gpu_tensor.ops.<x>` first works too.
from ..tensor import Tensor as _Tensor  # noqa: F401  (a from-import: never shadowed)
