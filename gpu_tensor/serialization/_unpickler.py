"""The unpickler behind gt.load: torch's globals resolved to gpu_tensor's, and an allow-list.

`weights_only=True` (the default, as in torch >= 2.6): `find_class` is the only way a
pickle reaches code, and it answers only from `_SAFE` (containers, the tensor rebuild
functions, dtypes, devices, sizes) plus what `add_safe_globals` added; any other global is
refused before anything runs, so a hostile file cannot execute code (the same guarantee as
the memory-snapshot loader, cli/snapshot_load.py). Constructors that could be asked for
an arbitrary size (`bytearray(10**12)`) are wrapped to accept only data.

`weights_only=False`: torch's names still map to gpu_tensor's (`torch.X` -> `gpu_tensor.X`
when it exists), other globals load as plain pickle does. Only for trusted files.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import pickle

from .. import dtype as _dt
from .. import layouts as _layouts
from .._tensor import Size, Tensor
from ..backends import get_backend
from ..device import device as _device
from ..nn.parameter import Parameter
from ._pickler import LEGACY_STORAGE

__all__ = [
    "Unpickler",
    "add_safe_globals",
    "get_safe_globals",
    "clear_safe_globals",
    "safe_globals",
    "register_global",
    "LoadedStorage",
]


class LoadedStorage:
    """A storage read from the file: our UntypedStorage and the element type torch's
    storage class named (None for an UntypedStorage; _rebuild_tensor_v3 names it)."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage, self.dtype = storage, dtype


class _StorageType:
    """What `torch.FloatStorage` & co resolve to: the element type of a storage record."""

    __slots__ = ("dtype", "name")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return f"torch.{self.name}"


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
):
    return _rebuild(storage, storage_offset, size, stride, requires_grad, storage.dtype)


def _rebuild_tensor_v3(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None
):
    return _rebuild(storage, storage_offset, size, stride, requires_grad, dtype)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild(storage, storage_offset, size, stride, False, storage.dtype)


def _rebuild(loaded, offset, size, stride, requires_grad, dtype):
    if not isinstance(loaded, LoadedStorage):
        raise pickle.UnpicklingError(
            "a tensor's storage is not a storage record of this "
            "checkpoint (a damaged or hand-made file)"
        )
    dt = _dt.to_dtype(dtype)
    st = loaded.storage
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise pickle.UnpicklingError(f"tensor size {size} and stride {stride} differ in rank")
    if 0 not in size:
        last = int(offset) + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if offset < 0 or min(stride, default=0) < 0 or (last + 1) * dt.itemsize > st.nbytes():
            raise pickle.UnpicklingError(
                f"tensor of size {list(size)}, stride {list(stride)} at offset {offset} lies "
                f"outside its {st.nbytes()}-byte storage (a damaged file)"
            )
        arr = get_backend(st.device).from_storage(st, size, stride, int(offset), dt.np)
    else:
        arr = get_backend(st.device).empty(size, dt.np)[0]
    t = Tensor._make(arr, st.device, dt, st)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = Parameter(data, requires_grad)
    if state:
        for k, v in state.items() if isinstance(state, dict) else ():
            setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    if new_type is Parameter and not isinstance(t, Parameter):
        t = Parameter(t, t.requires_grad)
    return t


def _rebuild_meta(dtype, size, stride, requires_grad):
    from ..creation import empty_strided

    return empty_strided(
        tuple(size), tuple(stride), dtype=dtype, device="meta", requires_grad=requires_grad
    )


def _get_layout(name):
    return getattr(_layouts, name.rpartition(".")[2])


def _bytearray(data=b""):
    if not isinstance(data, (bytes, bytearray)):
        raise pickle.UnpicklingError(
            "bytearray in a weights-only checkpoint must be built from bytes"
        )
    return bytearray(data)


def _encode(text, encoding="latin1"):  # protocol 2 writes bytes as _codecs.encode(str)
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode in a checkpoint must encode text as latin1")
    return codecs.encode(text, encoding)


def _torch_names() -> dict:
    names = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "builtins.set": set,
        "builtins.frozenset": frozenset,
        "builtins.complex": complex,
        "builtins.bytearray": _bytearray,
        "_codecs.encode": _encode,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.serialization._get_layout": _get_layout,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Tensor": Tensor,
        "torch.Size": Size,
        "torch.device": _device,
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage", None),
    }
    for d in _dt.ALL:
        names[f"torch.{d.name}"] = d
    for dtype_name, storage_name in LEGACY_STORAGE.items():
        names[f"torch.{storage_name}"] = _StorageType(storage_name, _dt.to_dtype(dtype_name))
    return names


_SAFE = _torch_names()
_USER_SAFE: dict = {}


def _full_name(obj) -> str:
    if isinstance(obj, tuple):
        return obj[1]
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals) -> None:
    """Allow these globals in weights_only loads (torch.serialization.add_safe_globals):
    each an object, or (object, "module.name") for one pickled under another name."""
    for g in safe_globals:
        _USER_SAFE[_full_name(g)] = g[0] if isinstance(g, tuple) else g


def get_safe_globals() -> list:
    return list(_USER_SAFE.values())


def clear_safe_globals() -> None:
    _USER_SAFE.clear()


class safe_globals:
    """`with gt.serialization.safe_globals([Cls]):` allow them for the block only."""

    def __init__(self, safe_globals):
        self._globals = list(safe_globals)

    def __enter__(self):
        self._saved = dict(_USER_SAFE)
        add_safe_globals(self._globals)

    def __exit__(self, *exc):
        _USER_SAFE.clear()
        _USER_SAFE.update(self._saved)
        return False


def register_global(full_name: str, obj, *, safe: bool = True) -> None:
    """Resolve the pickled global `full_name` to `obj` when loading (a new tensor kind's
    rebuild function); `safe`: allowed in weights_only loads too."""
    (_SAFE if safe else _UNSAFE_MAP)[full_name] = obj


_UNSAFE_MAP: dict = {}


def _refusal(full: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. \n\t(1) "
        "Re-running `gt.load` with `weights_only` set to `False` will likely succeed, but "
        "it can result in arbitrary code execution. Do it only if you got the file from a "
        "trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check "
        "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`gt.serialization.add_safe_globals([{full.rpartition('.')[2]}])` or the "
        f"`gt.serialization.safe_globals([{full.rpartition('.')[2]}])` context manager to "
        "allowlist this global if you trust this class/function."
    )


class Unpickler(pickle.Unpickler):
    """Reads data.pkl; `load_storage(storage_type, key, location, numel)` supplies storages."""

    def __init__(self, file, load_storage, weights_only: bool):
        super().__init__(file, encoding="utf-8")
        self._load_storage = load_storage
        self._weights_only = weights_only
        self._loaded: dict = {}

    def find_class(self, module: str, name: str):
        # protocol 2 names builtins by their Python 2 names (__builtin__.set)
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        full = f"{module}.{name}"
        obj = _SAFE.get(full)
        if obj is None:
            obj = _USER_SAFE.get(full)
        if obj is not None:
            return obj
        if self._weights_only:
            raise _refusal(full)
        obj = _UNSAFE_MAP.get(full)
        if obj is not None:
            return obj
        if module == "torch" or module.startswith("torch."):
            return super().find_class("gpu_tensor" + module[5:], name)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (
            isinstance(pid, tuple)
            and len(pid) == 5
            and pid[0] == "storage"
            and isinstance(pid[1], _StorageType)
            and isinstance(pid[2], str)
        ):
            raise pickle.UnpicklingError(
                f"unknown persistent id {pid!r:.80} in a checkpoint "
                "(only ('storage', type, key, location, numel))"
            )
        _, storage_type, key, location, _numel = pid
        loaded = self._loaded.get(key)
        if loaded is None:
            st = self._load_storage(key, str(location))
            loaded = self._loaded[key] = LoadedStorage(st, storage_type.dtype)
        elif loaded.dtype is not storage_type.dtype and storage_type.dtype is not None:
            loaded = LoadedStorage(loaded.storage, storage_type.dtype)
        return loaded
