"""Neural-network building blocks: `gt.nn.functional`, `gt.nn.init`, modules."""

from . import functional, init

__all__ = ["functional", "init"]
