"""`gt.backends.mps`: torch.backends.mps's queries, for the device-selection line most
tutorials open with. gpu_tensor has no Metal backend: both are False."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
