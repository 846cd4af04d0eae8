"""LazyLinear and UninitializedParameter: in_features taken from the first input, after
which the module is an ordinary Linear (its class changes, as torch's does)."""

from __future__ import annotations

import gpu_tensor as gt

from ..parameter import Parameter
from .linear import Linear

__all__ = ["LazyLinear", "UninitializedParameter"]


class UninitializedParameter(Parameter):
    """A parameter with no shape yet; `materialize(shape)` gives it one (uninitialised
    values: the owning module's reset_parameters fills them)."""

    __slots__ = ()

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        self = super().__new__(cls, gt.empty(0, device=device, dtype=dtype), requires_grad)
        return self

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None) -> Parameter:
        return Parameter(
            gt.empty(tuple(shape), device=device or self.device, dtype=dtype or self.dtype),
            self.requires_grad,
        )

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    __str__ = __repr__


class LazyLinear(Linear):
    """Linear(in_features inferred, out_features): weight and bias are materialised and
    initialised (torch's Linear init) on the first forward."""

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super(Linear, self).__init__()
        self.in_features, self.out_features = 0, out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.bias = UninitializedParameter(device=device, dtype=dtype) if bias else None

    def reset_parameters(self) -> None:
        if not isinstance(self.weight, UninitializedParameter):
            super().reset_parameters()

    def forward(self, input):
        if isinstance(self.weight, UninitializedParameter):
            self.in_features = input.shape[-1]
            self.weight = self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias = self.bias.materialize((self.out_features,))
            self.reset_parameters()
            self.__class__ = Linear
        return Linear.forward(self, input)
