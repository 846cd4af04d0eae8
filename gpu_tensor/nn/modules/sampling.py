"""Upsample (and the UpsamplingNearest2d/UpsamplingBilinear2d shorthands), PixelShuffle and
PixelUnshuffle."""

from __future__ import annotations

from ..functional.sampling import interpolate, pixel_shuffle, pixel_unshuffle
from ..module import Module
from .functional_module import FunctionalModule

__all__ = [
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "PixelShuffle",
    "PixelUnshuffle",
]


def _as_float(v):
    if v is None:
        return None
    return tuple(float(f) for f in v) if isinstance(v, tuple) else float(v)


class Upsample(Module):
    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size, self.scale_factor = size, _as_float(scale_factor)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        info = (
            f"scale_factor={self.scale_factor!r}"
            if self.scale_factor is not None
            else f"size={self.size!r}"
        )
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(FunctionalModule):
    _fn = staticmethod(pixel_shuffle)
    _options = ("upscale_factor",)

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor


class PixelUnshuffle(FunctionalModule):
    _fn = staticmethod(pixel_unshuffle)
    _options = ("downscale_factor",)

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor
