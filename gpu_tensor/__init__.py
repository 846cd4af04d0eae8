"""gpu_tensor: a GPU-first tensor runtime on CuPy with PyTorch's tensor contract.

This module only gathers the public surface; every name lives in a submodule.
Importing it never imports cupy (a subprocess test checks that).
"""

from . import _env  # noqa: F401  (first: the environment is read in one place)
