"""Sequential, ModuleList and ModuleDict."""

from __future__ import annotations

from collections import OrderedDict

from ..module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict"]


def _index(i, n, kind):
    if not isinstance(i, int):
        raise TypeError(f"{kind} indices must be integers or slices, not {type(i).__name__}")
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range")
    return i % n


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: their modules in order, named 0, 1, ..."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class Sequential(_ModuleSequence):
    """Sequential(*modules) or Sequential(OrderedDict): forward runs them in order."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_index(idx, len(mods), "Sequential")][1]


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters the parent sees."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods), "ModuleList")]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "ModuleList")]
        self.add_module(key, module)

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __repr__(self) -> str:
        """torch's: runs of identical entries collapse to `(0-5): 6 x Layer(...)`."""
        runs = []  # [first index, last index, repr]
        for i, m in enumerate(self):
            r = repr(m)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        if not runs:
            return f"{self._get_name()}()"
        lines = [
            (f"({a}): " if a == b else f"({a}-{b}): {b - a + 1} x ") + r.replace("\n", "\n  ")
            for a, b, r in runs
        ]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class _NamedEntries:
    """The dict methods ModuleDict and ParameterDict share, over `_keys`: a dict whose keys
    are the entries' names in insertion order (ModuleDict's is its `_modules`)."""

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()


class ModuleDict(_NamedEntries, Module):
    """A dict of modules whose parameters the parent sees (insertion order kept)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    @property
    def _keys(self):
        return self._modules

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        return self._modules.pop(key)

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m
