"""Old name of autograd/record.py, kept so existing `from .install import formula` lines
keep working. Nothing is installed any more: ops decide at call time (gpu_tensor/_grad.py)."""

from .record import activate, first, formula, inplace, positional  # noqa: F401
