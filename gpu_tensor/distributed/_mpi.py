"""The one door to mpi4py: imported on first use, so `import gpu_tensor.distributed` stays
light and works where MPI is not installed (is_mpi_available() then says False)."""

from __future__ import annotations

__all__ = ["available", "mpi"]

_MPI = None
_ERROR: str | None = None


def _load():
    global _MPI, _ERROR
    if _MPI is None and _ERROR is None:
        try:
            from mpi4py import MPI  # initialises MPI (a singleton of size 1 without mpiexec)

            _MPI = MPI
        except Exception as exc:  # noqa: BLE001 - ImportError, or an MPI library that fails to load
            _ERROR = f"{type(exc).__name__}: {exc}"
    return _MPI


def available() -> bool:
    return _load() is not None


def mpi():
    """The mpi4py.MPI module, or a RuntimeError that says how to install it."""
    m = _load()
    if m is None:
        raise RuntimeError(
            "gpu_tensor.distributed needs MPI (mpi4py and an MPI library) and could not load "
            f"it ({_ERROR}); install it with `pip install 'gpu-tensor[distributed]'` "
            "(mpi4py + the mpich wheel) or point mpi4py at your cluster's MPI"
        )
    return m
