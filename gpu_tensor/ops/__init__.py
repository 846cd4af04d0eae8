"""Tensor operations: elementwise, reductions, linear algebra, indexing, joining, shapes.

Each submodule defines `__all__`; `gpu_tensor/__init__.py` re-exports them as `gt.<name>`.
"""
