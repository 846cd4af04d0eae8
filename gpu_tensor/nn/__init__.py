"""Neural-network helpers. For now: `gt.nn.init` (parameter initialisation, torch's formulas)."""

from . import init

__all__ = ["init"]
