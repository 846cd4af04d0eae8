"""The pickler behind gt.save: tensors, dtypes, devices and sizes under torch's names.

torch.load must read what gt.save writes, without gpu_tensor installed, so a tensor is
written exactly as torch writes one: `torch._utils._rebuild_tensor_v2(<storage>, offset,
size, stride, requires_grad, OrderedDict())`, its storage a persistent id
`('storage', torch.FloatStorage, key, location, numel)` whose bytes go to `data/<key>`.
Views of one storage name the same key, so torch (and gt.load) rebuild them sharing it.

pickle writes a global by importing its module and checking the name resolves, which
cannot work for torch's names without torch; `TorchName` stands for such a global and
`_Pickler.save` writes its GLOBAL opcode itself. That is why this is the pure-Python
pickler (`pickle._Pickler`): the C one has no hook at that level. data.pkl holds only
metadata, so its speed does not matter; the storages are written outside it.

New tensor kinds (a quantized tensor, a subclass) plug in with `register_reducer`.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict

from .._tensor import Size, Tensor
from ..device import Device
from ..dtype import DType
from ..nn.parameter import Parameter

__all__ = ["TorchName", "StorageRef", "register_reducer", "dumps", "LEGACY_STORAGE"]

# torch's legacy per-dtype storage classes (torch.storage._dtype_to_storage_type_map);
# dtypes missing here are written as an UntypedStorage plus the dtype (_rebuild_tensor_v3)
LEGACY_STORAGE = {
    "float64": "DoubleStorage",
    "float32": "FloatStorage",
    "float16": "HalfStorage",
    "int64": "LongStorage",
    "int32": "IntStorage",
    "int16": "ShortStorage",
    "int8": "CharStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
    "bfloat16": "BFloat16Storage",
    "complex128": "ComplexDoubleStorage",
    "complex64": "ComplexFloatStorage",
}


class TorchName:
    """A global written by name (`module.name`), e.g. torch._utils._rebuild_tensor_v2."""

    __slots__ = ("module", "name", "__name__")
    _interned: dict = {}

    def __new__(cls, module: str, name: str):
        key = (module, name)
        obj = cls._interned.get(key)
        if obj is None:  # one object per name, so pickle's memo writes each global once
            obj = super().__new__(cls)
            obj.module, obj.name, obj.__name__ = module, name, name
            cls._interned[key] = obj
        return obj

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args):  # pickle asks that a reduce function be callable
        raise TypeError(f"{self!r} is a name written into a checkpoint, not a function")


class StorageRef:
    """A tensor's storage as the pickle names it: written as a persistent id, its bytes as
    a data record. `dtype` picks torch's storage class (the storage's element type)."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype: DType):
        self.storage, self.dtype = storage, dtype


_REBUILD_V2 = TorchName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_V3 = TorchName("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = TorchName("torch._utils", "_rebuild_parameter")
_REBUILD_META = TorchName("torch._utils", "_rebuild_meta_tensor_no_storage")

_REDUCERS: dict[type, object] = {}


def register_reducer(cls: type, reduce) -> None:
    """Make gt.save write instances of `cls` (a Tensor subclass or another kind) with
    `reduce(obj) -> (callable or TorchName, args)`. Inside `args`, a `StorageRef` becomes a
    data record, and tensors, dtypes and devices are written as torch writes them."""
    _REDUCERS[cls] = reduce


def tensor_reduce(t: Tensor):
    """torch's reduction of a plain strided tensor (Tensor._reduce_ex_internal)."""
    hooks = OrderedDict()  # torch writes the backward hooks; it saves none
    if t.device.type == "meta":
        return _REBUILD_META, (t.dtype, tuple(t.shape), t.stride(), t.requires_grad)
    ref = StorageRef(t._storage, t.dtype)
    args = (ref, t.storage_offset(), tuple(t.shape), t.stride(), t.requires_grad, hooks)
    if t.dtype.name in LEGACY_STORAGE:
        return _REBUILD_V2, args
    return _REBUILD_V3, (*args, t.dtype)


def _parameter_reduce(p):
    return _REBUILD_PARAMETER, (p.detach(), p.requires_grad, OrderedDict())


def _reducer(obj):
    for cls in type(obj).__mro__:
        fn = _REDUCERS.get(cls)
        if fn is not None:
            return fn
    return None


class _Pickler(pickle._Pickler):
    """Protocol-2 pickler (what torch writes) that names torch's globals itself."""

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self._storages = storages  # id(storage) -> (key, StorageRef), in write order

    def persistent_id(self, obj):
        if type(obj) is not StorageRef:
            return None
        st = obj.storage
        entry = self._storages.get(id(st))
        if entry is None:
            entry = self._storages[id(st)] = (str(len(self._storages)), obj)
        elif entry[1].dtype is not obj.dtype:
            raise RuntimeError(
                "Cannot save multiple tensors or storages that view the same "
                "data as different types"
            )
        key = entry[0]
        name = LEGACY_STORAGE.get(obj.dtype.name)
        if name is None:
            return (
                "storage",
                TorchName("torch.storage", "UntypedStorage"),
                key,
                str(st.device),
                st.nbytes(),
            )
        return (
            "storage",
            TorchName("torch", name),
            key,
            str(st.device),
            st.nbytes() // obj.dtype.itemsize,
        )

    def save(self, obj, save_persistent_id=True):
        kind = type(obj)
        if kind is TorchName or kind is DType:
            self._save_torch_global(obj)
            return
        if kind is Device:
            self._save_once(
                obj,
                TorchName("torch", "device"),
                (obj.type,) if obj.index is None else (obj.type, obj.index),
            )
            return
        if kind is Size:
            self._save_once(obj, TorchName("torch", "Size"), (tuple(obj),))
            return
        reduce = _reducer(obj) if kind is not StorageRef else None
        if reduce is not None:
            if self._from_memo(obj):
                return
            fn, args = reduce(obj)
            self.save_reduce(fn, args, obj=obj)
            return
        super().save(obj, save_persistent_id)

    def _from_memo(self, obj) -> bool:
        x = self.memo.get(id(obj))
        if x is None:
            return False
        self.write(self.get(x[0]))
        return True

    def _save_once(self, obj, fn, args) -> None:
        if not self._from_memo(obj):
            self.save_reduce(fn, args, obj=obj)

    def _save_torch_global(self, obj) -> None:
        if self._from_memo(obj):
            return
        module, name = ("torch", obj.name) if type(obj) is DType else (obj.module, obj.name)
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)


def dumps(obj, file) -> dict:
    """Pickle `obj` into `file`; returns {id(storage): (key, StorageRef)} to write."""
    storages: dict = {}
    _Pickler(file, storages).dump(obj)
    return storages


register_reducer(Tensor, tensor_reduce)
register_reducer(Parameter, _parameter_reduce)
