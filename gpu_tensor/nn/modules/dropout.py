"""Dropout: active in train mode, the identity in eval mode."""

from __future__ import annotations

from .. import functional as F
from ..functional import feature_dropout as _FD  # the module, not a function
from ..module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"]


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Zeroes whole channels of (N, C, L) or (C, L) input."""

    def forward(self, input):
        return _FD.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        return _FD.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input."""

    def forward(self, input):
        return _FD.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """Dropout for SELU networks: keeps the activations' mean and variance."""

    def forward(self, input):
        return _FD.alpha_dropout(input, self.p, self.training)
