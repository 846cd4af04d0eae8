"""The one door to cupy: imported lazily, the first time a CUDA path needs it.

`import gpu_tensor` must work (and stay light) where cupy is missing, so no
module imports cupy at module level; they call `cupy()` inside functions.
"""

from __future__ import annotations

import importlib
import importlib.util

from .. import _env

_module = None


def cupy_installed() -> bool:
    """True when cupy can be imported; does not import it."""
    return _module is not None or _env.simulated() or importlib.util.find_spec("cupy") is not None


def cupy():
    """Return the cupy module, importing it on first use."""
    global _module
    if _module is None and _env.simulated():
        # GPU_TENSOR_FALLBACK=sim: the simulated CuPy stands in for cupy, chosen here once.
        # It is a test tool and lives with them; imported by name, only on this request.
        _module = importlib.import_module("gpu_tensor.testing.sim").module()
    if _module is None:
        try:
            _module = importlib.import_module("cupy")
        except ImportError as exc:
            raise RuntimeError(
                "cupy is not installed, so CUDA devices are unavailable. Install the extra that "
                "matches your CUDA toolkit: pip install 'gpu-tensor[cuda12]' (or [cuda13]); "
                "or set GPU_TENSOR_FALLBACK=1 to run cuda code on the emulated host device."
            ) from exc
    return _module
