"""Neural-network building blocks with torch.nn's surface: `Module` and its layers,
`Parameter`, `gt.nn.functional` and `gt.nn.init`."""

from . import functional, init, utils
from .module import Module
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parameter import Parameter

__all__ = ["functional", "init", "utils", "Module", "Parameter", *_modules_all]
