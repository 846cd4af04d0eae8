"""Tensor: storage + view metadata + device + dtype + autograd slots (torch/_tensor.py).

`t._data` is an array view (numpy for cpu and emulated cuda, cupy for real cuda) with the
tensor's shape and strides; `t._storage` is the UntypedStorage every view shares. Shape,
strides and offset are read off `_data`, so they can never disagree with it.

This file holds the class body: the object, its metadata and host reads. It imports
nothing above it. Every other method (views, layout, interop, repr, ops, moves, autograd)
is bound by the one method table, `_tensor_methods.py`, which `gpu_tensor/__init__.py`
imports; `_tensor.pyi` (generated from both, checked by a test) shows IDEs all of them.
"""

from __future__ import annotations

import numpy as np

from . import dtype as _dt
from ._dims import wrap_dim as _wrap_dim
from ._layout_ids import IDS as _LAYOUT_IDS
from ._layout_ids import new_id as _new_layout_id
from .backends import get_backend
from .device import CPU, Device, resolve
from .device import _make as _make_device
from .dtype import DType
from .layouts import channels_last, contiguous_format, is_contiguous_as, preserve_format

__all__ = ["Tensor", "Size", "contiguous_format", "channels_last", "preserve_format"]


class Size(tuple):
    """torch.Size: a tuple of dimension lengths."""

    __slots__ = ()

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"gpu_tensor.Size({list(self)})"


_new = object.__new__
_FROM_NP = _dt._BY_NP


def _check_grad(t, g) -> None:
    if not isinstance(g, Tensor):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type {type(g).__name__}"
        )
    for what, mine, theirs in (
        ("type", t.dtype, g.dtype),
        ("size", tuple(t.shape), tuple(g.shape)),
        ("device", t.device, g.device),
    ):
        if mine != theirs:
            raise RuntimeError(
                f"assigned grad has data of a different {what} ({theirs} for a "
                f"tensor of {mine}); make it like the tensor, e.g. "
                "torch.zeros_like(t)"
            )


class Tensor:
    """A multi-dimensional array on a device with PyTorch's tensor contract."""

    __module__ = "gpu_tensor"  # its public name: type(t) prints <class 'gpu_tensor.Tensor'>
    __slots__ = (
        "_data",
        "_st",
        "device",
        "dtype",
        "_requires_grad",
        "_grad",
        "grad_fn",
        "_base",
        "_key",  # the layout's id (_layout_ids.py) on the warm cuda paths; None: not named yet
        "__weakref__",
    )

    __array_priority__ = 1000  # numpy defers `ndarray op Tensor` to our reflected ops
    __array_ufunc__ = None  # ... and numpy ufuncs refuse Tensors instead of making object arrays

    def __new__(cls, *args, device=None):
        """torch.Tensor(...), the legacy constructor pasted code still uses: `Tensor()`,
        `Tensor(2, 3)` or `Tensor(size)` (uninitialised float32), `Tensor(data)` (float32
        values), `Tensor(tensor)` (an alias of it). gpu_tensor/legacy.py builds it."""
        if cls is not Tensor:  # a subclass makes itself in its own __init__ (SparseTensor)
            return object.__new__(cls)
        from . import legacy  # (the legacy constructors, built on the factories)

        return legacy.tensor_new(args, device)

    def __init__(self, *args, **kwargs):
        if type(self) is not Tensor:  # a subclass with no constructor of its own
            raise TypeError(
                "use gt.tensor(data), gt.empty(shape) or another factory function to make a "
                f"{type(self).__name__}"
            )

    # -- construction ---------------------------------------------------------------
    @staticmethod
    def _make(data, device: Device, dtype: DType, st=None, base=None) -> Tensor:
        """Fast internal constructor: no checks (device concrete, data matching dtype)."""
        t = _new(Tensor)
        t._data = data
        t._st = st
        t.device = device
        t.dtype = dtype
        t._requires_grad = False
        t._grad = None
        t.grad_fn = None
        t._base = base
        t._key = None  # its layout, named when a warm cuda op first needs it
        return t

    def _warm_key(self) -> int:
        """The id of self's layout (_layout_ids.py: dtype, shape, strides, alignment), by
        which the warm cuda paths key their entries: named on first use and kept in `_key`
        (None until then; a result of a warm entry is born with it) until self's array or
        dtype is replaced (`_layout_changed`). A cupy-backed tensor only."""
        x = self._data
        layout = (self.dtype, x.shape, x._c_contiguous or x.strides, x.data.ptr & 15)
        key = _LAYOUT_IDS.get(layout)  # (_layout_ids.layout_id, written out: one call less)
        if key is None:
            key = _new_layout_id(layout)
        self._key = key
        return key

    def _layout_changed(self) -> None:
        """After self's array or dtype is replaced in place (set_, resize_, `x.data = y`, the
        in-place view ops): its layout is named again when next used."""
        self._key = None

    @classmethod
    def _wrap(cls, array, device=None, storage=None, dtype=None) -> Tensor:
        """A tensor over an existing array (no copy). `storage` None: derived from the
        array's buffer when first asked for. `dtype` overrides (bfloat16 bits on cupy)."""
        if device is None:  # a cupy array lives on its own device; anything else on cpu
            gpu = getattr(array, "device", None)
            dev = _make_device("cuda", gpu.id) if hasattr(gpu, "id") else CPU
        else:
            dev = resolve(device)
        dt = _dt.to_dtype(dtype) if dtype is not None else _FROM_NP.get(array.dtype)
        if dt is None:
            dt = _dt.from_numpy_dtype(array.dtype)  # raises a clear TypeError
        return Tensor._make(array, dev, dt, storage)

    @property
    def _backend(self):
        return get_backend(self.device)

    @property
    def _storage(self):
        st = self._st
        if st is None:
            # Derived once, from the root tensor's array (whose buffer every view shares),
            # so all views end up with the same storage object.
            root = self._base
            if root is None:
                st = get_backend(self.device).storage_of(self._data)
            else:
                st = root._storage
            self._st = st
        return st

    def _view_of(self, data) -> Tensor:
        """A tensor viewing `data`, an array view of self._data (shares storage). `_base`
        is the root tensor the storage is derived from when it is made lazily."""
        t = _new(Tensor)
        t._data = data
        t._st = self._st
        t.device = self.device
        t.dtype = self.dtype
        t._requires_grad = False
        t._grad = None
        t.grad_fn = None
        base = self._base
        t._base = self if base is None else base
        t._key = None
        return t

    # -- metadata ---------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None) -> Size | int:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.size) * self.dtype.itemsize

    def stride(self, dim=None) -> tuple[int, ...] | int:
        isz = self._data.itemsize
        st = tuple([s // isz for s in self._data.strides])  # a list comp: ~2x a genexpr
        if dim is None:
            return st
        return st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        b = get_backend(self.device)
        return (b.ptr(self._data) - self._storage._ptr) // self._data.itemsize

    def data_ptr(self) -> int:
        return get_backend(self.device).ptr(self._data)

    def untyped_storage(self):
        return self._storage

    def is_contiguous(self, memory_format=contiguous_format) -> bool:
        if memory_format is not contiguous_format:  # channels_last(_3d); a bad one raises
            r = is_contiguous_as(memory_format, self._data.shape, self.stride())
            if r is not None:
                return r
        data = self._data
        # torch: a tensor with no elements is contiguous whatever its strides (the array
        # library's flag need not agree for a view cut from a non-contiguous one)
        return bool(data.flags.c_contiguous) or data.size == 0

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    def is_floating_point(self) -> bool:
        return self.dtype.category == _dt.FLOAT

    def is_complex(self) -> bool:
        return self.dtype.category == _dt.COMPLEX

    def get_device(self) -> int:
        return -1 if self.device.type == "cpu" else self.device.index

    # -- autograd slots (filled by the autograd package) -----------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        """`t.requires_grad = v` with torch's checks. A property over the
        `_requires_grad` slot, which internal constructors and autograd write directly:
        they stay as cheap as a slot store; ops read the slot when called (_grad.py)."""
        if value.__class__ is not bool:
            raise RuntimeError("requires_grad must be a bool")
        # getattr: a constructor that still writes `requires_grad` before `grad_fn`
        if getattr(self, "grad_fn", None) is not None:
            hint = (
                ""
                if value
                else (
                    " If you want to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach()."
                )
            )
            raise RuntimeError("you can only change requires_grad flags of leaf variables." + hint)
        if value and self.dtype.category < _dt.FLOAT:
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients "
                f"(got {self.dtype})"
            )
        self._requires_grad = value

    @property
    def grad(self) -> Tensor | None:
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        """`t.grad = g` with torch's checks (a Tensor or None, of t's size, dtype and
        device); constructors write the `_grad` slot directly, at a slot store's cost."""
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """In-place version counter, shared by every view of the same storage."""
        return self._storage._version

    def _bump_version(self) -> None:
        self._storage._version += 1

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad.__class__ is not bool:
            raise TypeError(
                f"requires_grad_(): argument 'requires_grad' must be bool, not "
                f"{type(requires_grad).__name__}"
            )
        if requires_grad and self.grad_fn is not None:
            return self  # a non-leaf already requires grad (torch: a no-op)
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """A new tensor sharing storage, cut from autograd history."""
        return self._view_of(self._data)

    def detach_(self) -> Tensor:
        if self._base is not None and (self._requires_grad or self.grad_fn is not None):
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead (it returns "
                "a new tensor sharing the memory)"
            )
        self.grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        return self.detach()

    @data.setter
    def data(self, new: Tensor) -> None:
        """torch's `x.data = y`: x takes y's memory, shape, strides and dtype and keeps its own
        autograd identity (requires_grad, grad_fn, .grad, version counter, view base). Views
        made of x before keep the old memory."""
        if not isinstance(new, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(new).__name__}")
        if new.device.type != self.device.type:
            raise RuntimeError(
                "Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` "
                "have incompatible tensor type."
            )
        if self.requires_grad and not (new.dtype.is_floating_point or new.dtype.is_complex):
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or "
                "complex dtype"
            )
        new._storage  # noqa: B018  (one storage object for both, as set_ makes it)
        self._data, self._st, self.dtype, self.device = new._data, new._st, new.dtype, new.device
        self._layout_changed()

    # -- host values ------------------------------------------------------------------
    def _host(self) -> np.ndarray:
        """The values as a numpy array (a copy for cuda; a view for cpu). The one place
        host code reads a tensor's values (numpy, item, tolist, __array__, repr, pickling,
        tensor(t)): a cpu tensor that a non_blocking device->host copy is still filling is
        waited for here (`transfer.wait_ready`). Ops on such a tensor are not: as in torch,
        synchronise the stream before computing on a non_blocking copy's result."""
        if self.device.type == "cpu":
            _wait_ready(self)
            return self._data
        arr = get_backend(self.device).to_host(self._data)
        if arr.dtype != self.dtype.np:  # bfloat16 bits on real cuda
            arr = arr.view(self.dtype.np)
        return arr

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The cpu tensor's values as a numpy array sharing its memory (no copy). Waits for
        a non_blocking device->host copy still landing in this tensor."""
        if self.device.type != "cpu":
            if force:
                return self._host()
            raise TypeError(
                f"can't convert {self.device} tensor to numpy; copy it to host memory first "
                "with .cpu() (e.g. t.cpu().numpy())"
            )
        if self.requires_grad and not force:
            raise RuntimeError(
                "can't call numpy() on a Tensor that requires grad; use t.detach().numpy()"
            )
        return self._host()

    def item(self) -> bool | int | float | complex:
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to a Python "
                "scalar; item() needs exactly one element"
            )
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        v = self._host().reshape(()).item()
        if self.dtype is _dt.bfloat16 or self.dtype is _dt.float16:
            v = float(v)
        return v

    def tolist(self) -> list | bool | int | float | complex:
        h = self._host()
        if self.dtype is _dt.bfloat16:
            h = h.astype(np.float32)
        return h.tolist()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        if self._data.size != 1:  # torch: ValueError here (item() raises RuntimeError)
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.category != _dt.INT or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __contains__(self, element) -> bool:
        return bool((self == element).any())

    def __format__(self, spec: str) -> str:
        # torch: a 0-dim Tensor formats its value, also with no spec (f"loss: {loss}")
        if self._data.ndim == 0 and (spec or type(self) is Tensor):
            return format(self.item(), spec)
        return format(repr(self), spec)


def _wait_ready(t) -> None:
    """`transfer.wait_ready(t)`: blocks only while an async copy is landing in pinned `t`.
    The class's one upward edge, imported at call time (transfer loads streams and the
    pinned pool, which importing the class does not); the module is kept after the first
    call."""
    mod = _TRANSFER or _load_transfer()
    mod.wait_ready(t)


_TRANSFER = None


def _load_transfer():
    global _TRANSFER
    from . import transfer  # upward, at call time: see _wait_ready

    _TRANSFER = transfer
    return transfer
