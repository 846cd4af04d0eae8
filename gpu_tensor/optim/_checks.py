"""Argument checks shared by the optimizers (torch's messages, ValueError)."""

from __future__ import annotations

from gpu_tensor._tensor import Tensor

__all__ = ["check_non_negative", "check_beta", "value"]


def value(x):
    """A hyperparameter as a Python number (a 0-d tensor lr is accepted, as in torch)."""
    return x.item() if isinstance(x, Tensor) else x


def check_non_negative(label: str, x) -> None:
    if not 0.0 <= value(x):
        raise ValueError(f"Invalid {label}: {x}")


def check_beta(index: int, beta) -> None:
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
