"""Activation modules over functional/activation_more.py (and CELU, Softmax2d), with
torch's reprs; PReLU's weight is initialised to 0.25 as torch's."""

from __future__ import annotations

import gpu_tensor as gt

from .. import functional as F
from ..functional import activation_more as A
from ..module import Module
from ..parameter import Parameter
from .activation import _Alpha, _Dim, _Inplace, _inplace_repr, _Plain
from .functional_module import FunctionalModule

__all__ = [
    "CELU",
    "SELU",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "LogSigmoid",
    "Mish",
    "PReLU",
    "RReLU",
    "Softmin",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
    "Softmax2d",
]


class SELU(_Inplace):
    _fn = staticmethod(A.selu)


class Hardsigmoid(_Inplace):
    _fn = staticmethod(A.hardsigmoid)


class Hardswish(_Inplace):
    _fn = staticmethod(A.hardswish)


class Mish(_Inplace):
    _fn = staticmethod(A.mish)


class LogSigmoid(_Plain):
    _fn = staticmethod(A.logsigmoid)


class Softsign(_Plain):
    _fn = staticmethod(A.softsign)


class Tanhshrink(_Plain):
    _fn = staticmethod(A.tanhshrink)


class CELU(_Alpha):
    _fn = staticmethod(F.celu)


class GLU(_Dim):
    _fn = staticmethod(A.glu)

    def __init__(self, dim: int = -1):
        super().__init__(dim)


class Hardshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return A.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input):
        return A.softshrink(input, self.lambd)


class PReLU(Module):
    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(gt.full((num_parameters,), init, device=device, dtype=dtype))

    def reset_parameters(self) -> None:
        with gt.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + _inplace_repr(self)


class Softmin(_Dim):
    _fn = staticmethod(A.softmin)


class Threshold(FunctionalModule):
    _fn = staticmethod(A.threshold)
    _options = ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)
