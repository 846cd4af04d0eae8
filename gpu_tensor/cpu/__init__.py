"""`gt.cpu`: torch.cpu's names that code reaches for (`gt.cpu.amp`, is_available,
synchronize). The host device is always there and runs ops synchronously."""

from __future__ import annotations

from . import amp

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: cpu ops finish before they return."""
