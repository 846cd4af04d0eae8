"""The base of the modules that hold their functional's options and call it: LeakyReLU,
ELU, Softmax, GLU, PixelShuffle, AdaptiveAvgPool2d and the like."""

from __future__ import annotations

from ..module import Module

__all__: list[str] = []  # a base class only; gt.nn exports the modules built on it


class FunctionalModule(Module):
    """`forward(input)` is `_fn(input, *options)`: the attributes named in `_options`, in
    the functional's order, passed positionally as torch's modules pass them. The repr
    shows each as `name=value`, and `inplace` only when it is True, as torch's do. Each
    subclass keeps torch's own constructor, which sets those attributes."""

    _options: tuple[str, ...] = ()

    def forward(self, input):
        return self._fn(input, *[getattr(self, name) for name in self._options])

    def extra_repr(self) -> str:
        shown = [f"{name}={getattr(self, name)}" for name in self._options if name != "inplace"]
        if "inplace" in self._options and self.inplace:
            shown.append("inplace=True")
        return ", ".join(shown)
