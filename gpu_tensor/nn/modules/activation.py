"""Activation modules: each holds its functional's options and calls it."""

from __future__ import annotations

from .. import functional as F
from ..module import Module
from .functional_module import FunctionalModule

__all__ = [
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "GELU",
    "SiLU",
    "Sigmoid",
    "Tanh",
    "Softplus",
    "Hardtanh",
    "Softmax",
    "LogSoftmax",
]


def _inplace_repr(module) -> str:
    return ", inplace=True" if module.inplace else ""


class _Inplace(Module):
    """An activation whose one option is torch's `inplace`; `_fn` is its functional."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    """An activation without options; `_fn` is its functional."""

    def forward(self, input):
        return self._fn(input)


class _Alpha(FunctionalModule):
    """ELU and CELU: torch's (alpha=1.0, inplace=False)."""

    _options = ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace


class _Dim(FunctionalModule):
    """Softmax, LogSoftmax, Softmin and GLU: torch's (dim=None; GLU's default is -1)."""

    _options = ("dim",)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim


class ReLU(_Inplace):
    _fn = staticmethod(F.relu)


class ReLU6(_Inplace):
    _fn = staticmethod(F.relu6)


class SiLU(_Inplace):
    _fn = staticmethod(F.silu)


class LeakyReLU(FunctionalModule):
    _fn = staticmethod(F.leaky_relu)
    _options = ("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace


class ELU(_Alpha):
    _fn = staticmethod(F.elu)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(_Plain):
    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    _fn = staticmethod(F.tanh)


class Softplus(FunctionalModule):
    _fn = staticmethod(F.softplus)
    _options = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold


class Hardtanh(FunctionalModule):
    _fn = staticmethod(F.hardtanh)
    _options = ("min_val", "max_val", "inplace")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace


class Softmax(_Dim):
    _fn = staticmethod(F.softmax)


class LogSoftmax(_Dim):
    _fn = staticmethod(F.log_softmax)
