"""torch's legacy constructors, which older code still uses: `gt.FloatTensor(2, 3)`
(uninitialised, by sizes), `gt.FloatTensor([1, 2])` (from data), `isinstance(t,
gt.FloatTensor)` (a float32 cpu tensor), `gt.cuda.FloatTensor` (the same on cuda), and
`gt.autograd.Variable(t, requires_grad=True)` (today just the tensor itself).
"""

from __future__ import annotations

from . import creation
from . import device as _device
from . import dtype as _dt
from ._tensor import Size, Tensor

__all__ = [
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
]


class _LegacyType(type):
    """isinstance(x, FloatTensor) asks: is x a Tensor of this dtype on this device kind."""

    def __instancecheck__(cls, obj) -> bool:
        return (
            isinstance(obj, Tensor)
            and obj.dtype is cls.dtype
            and obj.device.type == cls.device_type
        )

    def __call__(cls, *args, device=None):
        dev = cls.device_type if device is None else device
        if len(args) == 1 and not isinstance(args[0], int):
            data = args[0]
            if isinstance(data, Tensor):
                return data.to(device=dev, dtype=cls.dtype)
            return creation.tensor(data, dtype=cls.dtype, device=dev)
        return creation.empty(*args, dtype=cls.dtype, device=dev)

    def __repr__(cls) -> str:
        prefix = "gpu_tensor.cuda." if cls.device_type == "cuda" else "gpu_tensor."
        return f"<class '{prefix}{cls.__name__}'>"


def tensor_new(args: tuple, device=None) -> Tensor:
    """`gt.Tensor(*args, device=None)` as torch's legacy constructor: no argument, an empty
    float32 tensor; ints or a gt.Size, an uninitialised float32 tensor of those sizes; a
    tensor, a new Tensor viewing it (its own dtype); other data (a list, a tuple, an
    array), a float32 tensor of its values."""
    if not args:
        return creation.empty(0, device=device)
    if len(args) == 1 and not isinstance(args[0], int):
        data = args[0]
        if isinstance(data, Size):
            return creation.empty(data, device=device)
        if isinstance(data, Tensor):
            if device is not None and data.device != _device.resolve(device):
                raise RuntimeError(
                    f"Tensor(): the tensor is on {data.device}, not on the device asked for "
                    f"({device}); move it first with .to()"
                )
            return data._view_of(data._data)
        if isinstance(data, (float, complex, bool, str)) or data is None:
            raise TypeError(
                f"new(): data must be a sequence (got {type(data).__name__}); "
                "use gt.tensor(x) for a 0-dim tensor"
            )
        return creation.tensor(data, dtype=_dt.float32, device=device)
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(
                f"new(): the sizes must be ints, not {type(a).__name__} (to make a tensor "
                "of values, pass them as one list: gt.Tensor([1, 2]))"
            )
    return creation.empty(*args, device=device)


def _make(name, dtype, device_type):
    return _LegacyType(
        name, (), {"dtype": dtype, "device_type": device_type, "__module__": "gpu_tensor"}
    )


_TYPES = {
    "FloatTensor": _dt.float32,
    "DoubleTensor": _dt.float64,
    "HalfTensor": _dt.float16,
    "BFloat16Tensor": _dt.bfloat16,
    "ByteTensor": _dt.uint8,
    "CharTensor": _dt.int8,
    "ShortTensor": _dt.int16,
    "IntTensor": _dt.int32,
    "LongTensor": _dt.int64,
    "BoolTensor": _dt.bool,
}

FloatTensor = _make("FloatTensor", _dt.float32, "cpu")
DoubleTensor = _make("DoubleTensor", _dt.float64, "cpu")
HalfTensor = _make("HalfTensor", _dt.float16, "cpu")
BFloat16Tensor = _make("BFloat16Tensor", _dt.bfloat16, "cpu")
ByteTensor = _make("ByteTensor", _dt.uint8, "cpu")
CharTensor = _make("CharTensor", _dt.int8, "cpu")
ShortTensor = _make("ShortTensor", _dt.int16, "cpu")
IntTensor = _make("IntTensor", _dt.int32, "cpu")
LongTensor = _make("LongTensor", _dt.int64, "cpu")
BoolTensor = _make("BoolTensor", _dt.bool, "cpu")

CUDA_TYPES = {name: _make(name, dt, "cuda") for name, dt in _TYPES.items()}


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)  # torch: every tensor is a Variable


class Variable(metaclass=_VariableMeta):
    """Legacy autograd.Variable: since torch 0.4 a Variable is the tensor itself. A class
    (as torch's), so isinstance(t, Variable) holds for every tensor; calling it returns
    `data`, made to require grad when asked."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            data.requires_grad_(True)
        return data


def tensor_type(self, dtype=None, non_blocking=False):
    """t.type(): the legacy type name ('torch.FloatTensor'), or t converted to a type."""
    if dtype is None:
        names = {dt: n for n, dt in _TYPES.items()}
        prefix = "torch.cuda." if self.device.type == "cuda" else "torch."
        return prefix + names[self.dtype]
    if isinstance(dtype, _LegacyType):
        return self.to(device=dtype.device_type, dtype=dtype.dtype, non_blocking=non_blocking)
    if isinstance(dtype, str):
        kind, _, name = dtype.rpartition(".")
        cls = CUDA_TYPES[name] if kind.endswith("cuda") else globals()[name]
        return tensor_type(self, cls, non_blocking)
    return self.to(dtype, non_blocking=non_blocking)
