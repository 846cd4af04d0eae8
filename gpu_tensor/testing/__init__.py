"""Test helpers: the devices to test on, the real-GPU marker, `assert_close` with one
per-dtype tolerance table (every device result is compared with numpy through it), and
`host_peak` (the host buffers numpy allocated while a call ran), `python_calls` (the
gpu_tensor functions a call entered) and `synced_seconds` (a call's wall time, device work
included)."""

from __future__ import annotations

import os
import sys

import numpy as np

from .. import dtype as _dt
from ..device import cuda_available, cuda_is_emulated, real_cuda_available

__all__ = [
    "devices",
    "requires_real_cuda",
    "requires_gpu_hardware",
    "TOLERANCES",
    "assert_close",
    "to_numpy",
    "cupy_module",
    "host_peak",
    "python_calls",
    "synced_seconds",
]

# (rtol, atol) per dtype: roughly a few ulps of the type, loose enough for float32
# transcendental functions computed by different libraries (numpy vs CUDA's libm).
TOLERANCES = {
    _dt.float16: (1e-3, 1e-5),
    _dt.bfloat16: (1.6e-2, 1e-5),
    _dt.float32: (1.3e-6, 1e-5),
    _dt.float64: (1e-7, 1e-7),
    _dt.complex64: (1.3e-6, 1e-5),
    _dt.complex128: (1e-7, 1e-7),
}


def host_peak(fn):
    """`(fn(), peak)`: the peak bytes of the host buffers numpy allocated while fn ran
    (numpy reports its buffers to tracemalloc; the emulated device's allocator segments
    are mmaps, which it does not)."""
    import tracemalloc

    tracemalloc.start()
    try:
        r = fn()
        return r, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def python_calls(fn) -> int:
    """How many gpu_tensor functions `fn()` entered (sys.setprofile's call events), not
    counting the simulator's own code and the host emulation it runs kernels with (the
    "GPU")."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    gpu = (os.path.join(pkg, "testing"), os.path.join(pkg, "kernel", "emulate.py"))
    calls = 0

    def prof(frame, event, arg):
        nonlocal calls
        if event == "call":
            f = frame.f_code.co_filename
            if f.startswith(pkg) and not f.startswith(gpu):
                calls += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def synced_seconds(fn) -> float:
    """Wall seconds of `fn()`, with every stream synchronized before and after: the time the
    work it queued took, not only the time to queue it."""
    import time

    from ..cuda import streams

    streams.synchronize()
    start = time.perf_counter()
    fn()
    streams.synchronize()
    return time.perf_counter() - start


def devices() -> list[str]:
    """'cpu', plus 'cuda' when it is usable (real, or emulated with GPU_TENSOR_FALLBACK=1)."""
    return ["cpu", "cuda"] if cuda_available() else ["cpu"]


def _marker():
    import pytest

    return pytest.mark.skipif(
        not real_cuda_available(),
        reason="needs a real CUDA GPU (none found"
        + ("; cuda is emulated here)" if cuda_is_emulated() else ")"),
    )


class _LazyMarker:
    """`@requires_real_cuda` without importing pytest when gpu_tensor.testing is imported."""

    def __call__(self, fn):
        import pytest

        return pytest.mark.cuda(_marker()(fn))


requires_real_cuda = _LazyMarker()


class _HardwareMarker:
    """`@requires_gpu_hardware`: a cuda test that needs real GPU timing or hardware, so it
    runs on a GPU and is skipped (with the reason) on the simulator."""

    def __call__(self, fn):
        import pytest

        return pytest.mark.hardware(requires_real_cuda(fn))


requires_gpu_hardware = _HardwareMarker()


def to_numpy(x) -> np.ndarray:
    """Host numpy array of a Tensor (any device), array or number."""
    from .._tensor import Tensor

    if isinstance(x, Tensor):
        return x._host()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def assert_close(
    actual, expected, *, rtol=None, atol=None, check_dtype=True, equal_nan=True
) -> None:
    """Values (and shape, and dtype when `expected` is a Tensor or ndarray) agree within
    the dtype's tolerance from TOLERANCES (exact for bool and integers)."""
    from .._tensor import Tensor

    a = to_numpy(actual)
    e = to_numpy(expected)
    if check_dtype and isinstance(actual, Tensor) and isinstance(expected, (Tensor, np.ndarray)):
        exp_dt = expected.dtype if isinstance(expected, Tensor) else _dt.to_dtype(e.dtype)
        assert actual.dtype is exp_dt, f"dtype mismatch: {actual.dtype} vs {exp_dt}"
    assert a.shape == e.shape, f"shape mismatch: {a.shape} vs {e.shape}"
    dt = actual.dtype if isinstance(actual, Tensor) else _dt.to_dtype(a.dtype)
    r, t = TOLERANCES.get(dt, (0.0, 0.0))
    rtol = r if rtol is None else rtol
    atol = t if atol is None else atol
    if a.dtype.name == "bfloat16" or e.dtype.name == "bfloat16":
        a, e = a.astype(np.float32), e.astype(np.float32)
    if a.dtype.kind in "biu" and e.dtype.kind in "biu" and rtol == 0 and atol == 0:
        np.testing.assert_array_equal(a, e)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)


def cupy_module():
    """The cupy module the CUDA backend uses: real cupy on a GPU, the simulated one under
    GPU_TENSOR_FALLBACK=sim. Tests that call cupy directly take it from here, so the sim
    tier runs them too."""
    from ..backends._cupy import cupy

    return cupy()
