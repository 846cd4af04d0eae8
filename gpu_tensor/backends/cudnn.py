"""`gt.backends.cudnn`: torch.backends.cudnn's flags, for programs that set them. gpu_tensor
runs no cuDNN kernels (its convolutions are im2col + matmul), so is_available() is False and
version() None, as on a torch build without cuDNN; the flags are plain settable module
attributes with torch's defaults, read by nothing here."""

from __future__ import annotations

import contextlib

__all__ = [
    "is_available",
    "version",
    "flags",
    "enabled",
    "benchmark",
    "deterministic",
    "allow_tf32",
    "benchmark_limit",
]

enabled = True  # torch's defaults
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    return False


def version():
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a `with` block, restoring them after (torch's signature)."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    g = globals()
    saved = {n: g[n] for n in names}
    g.update(
        zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32), strict=True)
    )
    try:
        yield
    finally:
        g.update(saved)
