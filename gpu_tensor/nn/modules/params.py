"""ParameterList and ParameterDict: containers whose entries the parent module sees as its
parameters (named "0", "1", ... or by key). A plain Tensor put in is wrapped as a Parameter,
as torch does."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

import gpu_tensor as gt

from ..module import Module
from ..parameter import Parameter
from .container import _NamedEntries

__all__ = ["ParameterList", "ParameterDict"]


def _as_param(value):
    if isinstance(value, gt.Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(p, typename):
    size = "x".join(str(s) for s in p.shape)
    device = f" ({p.device})" if p.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"{kind} containing: [{typename(p)} of size {size}{device}]"


class ParameterList(Module):
    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _key(self, idx: int) -> str:
        if not isinstance(idx, int):
            raise TypeError(
                f"ParameterList indices must be integers or slices, not {type(idx).__name__}"
            )
        if not -self._size <= idx < self._size:
            raise IndexError(f"index {idx} is out of range")
        return str(idx % self._size)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._key(idx))

    def __setitem__(self, idx, value):
        setattr(self, self._key(idx), _as_param(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(self._size))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self._size += 1
        setattr(self, str(self._size - 1), _as_param(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        lines = []
        for k, p in enumerate(self):
            body = (
                _describe(p, lambda t: str(t.dtype))
                if isinstance(p, gt.Tensor)
                else type(p).__name__
            )
            lines.append(f"  ({k}): {body}")
        return "\n".join(lines)


class ParameterDict(_NamedEntries, Module):
    def __init__(self, parameters=None):
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def update(self, parameters):
        """torch's order: an OrderedDict or ParameterDict as given, any other mapping by sorted
        key, a sequence of (key, value) pairs as given."""
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(parameters).__name__}"
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = list(parameters)
            for j, pair in enumerate(items):
                if not isinstance(pair, Iterable):
                    raise TypeError(
                        f"ParameterDict update sequence element #{j} should be Iterable; is"
                        f"{type(pair).__name__}"
                    )
                if len(pair) != 2:
                    raise ValueError(
                        f"ParameterDict update sequence element #{j} has length {len(pair)}; "
                        "2 is required"
                    )
        for k, v in items:
            self[k] = v

    def extra_repr(self) -> str:
        lines = []
        for k, p in self.items():
            body = (
                _describe(p, lambda t: t.type()) if isinstance(p, gt.Tensor) else type(p).__name__
            )
            lines.append(f"  ({k}): {body}")
        return "\n".join(lines)
