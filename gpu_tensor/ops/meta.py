"""Tensor methods about the tensor rather than its values: layout and the is_* flags, the
in-place view changes (unsqueeze_, squeeze_, t_, transpose_, swapdims_, as_strided_,
resize_), storage(), the legacy `t.new(...)`, apply_/map_, and the splitting aliases.

The in-place view changes repoint the tensor at a new view of the same memory, as torch
does; on a tensor that requires grad they take the history of the equivalent view op.
"""

from __future__ import annotations

from .. import layouts
from .._grad import STATE as _GRAD
from .._tensor import Tensor
from ..storage import UntypedStorage
from ..typed_storage import TypedStorage

__all__ = [
    "is_tensor",
    "is_storage",
    "is_floating_point",
    "is_complex",
    "is_nonzero",
    "numel",
    "is_same_size",
    "is_signed",
]


def is_tensor(obj) -> bool:
    """True for gpu_tensor tensors (sparse ones included), as torch.is_tensor."""
    from ..sparse import SparseTensor

    return isinstance(obj, (Tensor, SparseTensor))


def is_storage(obj) -> bool:
    return isinstance(obj, (UntypedStorage, TypedStorage))


def is_floating_point(input) -> bool:
    return input.is_floating_point()


def is_complex(input) -> bool:
    return input.is_complex()


def numel(input) -> int:
    return input.numel()


def layout(self) -> layouts.layout:
    return layouts.strided


def _false(self) -> bool:
    return False


def is_signed(self) -> bool:
    return self.dtype.is_signed


def is_nonzero(self) -> bool:
    if self.numel() != 1:
        raise RuntimeError(
            "Boolean value of Tensor with more than one value is ambiguous"
            if self.numel()
            else "Boolean value of Tensor with no values is ambiguous"
        )
    return bool(self.item())


def is_same_size(self, other) -> bool:
    return self.shape == other.shape


def is_set_to(self, tensor) -> bool:
    return (
        self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
        and self.storage_offset() == tensor.storage_offset()
        and self.shape == tensor.shape
        and self.stride() == tensor.stride()
    )


def dim_order(self, *, ambiguity_check=False) -> tuple[int, ...]:
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def storage(self) -> TypedStorage:
    return TypedStorage(self)


def storage_type(self) -> type:
    return TypedStorage


def share_memory_(self):
    """A no-op here: cpu tensors are in process memory (torch moves them to shared memory
    for multiprocessing), cuda tensors are shareable already."""
    return self


def _self(self):
    return self


def _repoint(self, view, name):
    """Make self the tensor `view` (a view of self's memory), history included."""
    if self._requires_grad and self.grad_fn is None and _GRAD.enabled:
        raise RuntimeError(
            f"{name}: a leaf Variable that requires grad is being used in an "
            "in-place operation; do it under `with gt.no_grad():` or use the "
            "out-of-place form"
        )
    self._storage  # noqa: B018  (fix the storage before the array changes)
    self._data = view._data
    self._layout_changed()
    if view._requires_grad:
        self.grad_fn = view.grad_fn
    return self


def _inplace_view(name, oop):
    def method(self, *args, **kwargs):
        return _repoint(self, oop(self, *args, **kwargs), name)

    method.__name__ = method.__qualname__ = name
    return method


unsqueeze_ = _inplace_view("unsqueeze_", lambda t, d: t.unsqueeze(d))
squeeze_ = _inplace_view("squeeze_", lambda t, *d: t.squeeze(*d))
t_ = _inplace_view("t_", lambda t: t.t())
transpose_ = _inplace_view("transpose_", lambda t, a, b: t.transpose(a, b))
swapdims_ = swapaxes_ = _inplace_view("swapdims_", lambda t, a, b: t.transpose(a, b))
as_strided_ = _inplace_view("as_strided_", lambda t, *a, **k: t.as_strided(*a, **k))


def resize_(self, *sizes, memory_format=None):
    """Reshape self in place; keeps the values when the element count is unchanged, else
    reallocates (new elements uninitialised), as torch does."""
    if self._requires_grad and _GRAD.enabled:  # torch's: the history would not fit
        raise RuntimeError("cannot resize variables that require grad")
    from .._dims import shape_args
    from ..creation import empty

    shape = shape_args(sizes)
    n = 1
    for s in shape:
        n *= s
    if n == self.numel() and self.is_contiguous():
        self._data = self._data.reshape(shape)
        self._layout_changed()
        return self
    fresh = empty(shape, dtype=self.dtype, device=self.device)
    keep = min(n, self.numel())
    if keep:
        fresh.reshape(-1)[:keep] = self.reshape(-1)[:keep]
    self._data, self._st, self._base = fresh._data, fresh._st, None
    self._layout_changed()
    return self


def resize_as_(self, tensor, memory_format=None):
    return resize_(self, tuple(tensor.shape))


def new(self, *args, **kwargs):
    """Legacy `t.new(...)`: sizes give an uninitialised tensor, a sequence gives its data;
    both in t's dtype and on t's device."""
    from .. import creation

    dtype, device = kwargs.pop("dtype", self.dtype), kwargs.pop("device", self.device)
    if len(args) == 1 and not isinstance(args[0], int):
        return creation.tensor(args[0], dtype=dtype, device=device)
    return creation.empty(*args, dtype=dtype, device=device)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    from .. import creation

    return creation.empty_strided(
        size,
        stride,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def apply_(self, callable):  # noqa: A002
    """Replace each element by callable(element) (cpu only, slow: one Python call each)."""
    _no_python_writes("apply_", self)
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = [callable(v) for v in self.reshape(-1).tolist()]
    from .. import creation

    return self.copy_(creation.tensor(vals, dtype=self.dtype).reshape(*self.shape))


def _no_python_writes(name, self):
    if self._requires_grad and _GRAD.enabled:  # torch's: no gradient through Python code
        raise RuntimeError(
            f"Can't call {name}() on Variable that requires grad. Use "
            f"var.detach().{name}() instead."
        )


def map_(self, tensor, callable):  # noqa: A002
    _no_python_writes("map_", self)
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other = tensor.expand(*self.shape)
    vals = [
        callable(a, b)
        for a, b in zip(self.reshape(-1).tolist(), other.reshape(-1).tolist(), strict=True)
    ]
    from .. import creation

    return self.copy_(creation.tensor(vals, dtype=self.dtype).reshape(*self.shape))


def split_with_sizes(self, split_sizes, dim=0) -> tuple[Tensor, ...]:
    if sum(split_sizes) != self.shape[dim]:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to "
            f"{self.shape[dim]} (input tensor's size at dimension {dim}), "
            f"but got split_sizes={list(split_sizes)}"
        )
    return self.split(list(split_sizes), dim)


def narrow_copy(self, dim, start, length):
    return self.narrow(dim, start, length).clone()


def sum_to_size(self, *size):
    """Sum the broadcast dimensions away so the result has `size` (expand's reverse)."""
    from .._dims import shape_args

    shape = shape_args(size)
    lead = self.ndim - len(shape)
    if lead < 0:
        raise RuntimeError(f"size {list(shape)} is not expandable to size {list(self.shape)}")
    out = self.sum(tuple(range(lead))) if lead else self
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and out.shape[i] != 1)
    for i, s in enumerate(shape):
        if s not in (1, out.shape[i]):
            raise RuntimeError(f"size {list(shape)} is not expandable to size {list(self.shape)}")
    return out.sum(dims, keepdim=True) if dims else out


def chalf(self, memory_format=None):
    raise TypeError(
        "chalf(): complex32 is not a gpu_tensor dtype; use .cfloat() (complex64) instead"
    )


def dense_refuses(name):
    """A sparse-only method on a dense tensor: torch's error."""

    def method(self, *args, **kwargs):
        raise RuntimeError(
            f"{name}(): expected a sparse tensor (layout gt.sparse_coo), got "
            "a strided one; convert it with .to_sparse() first"
        )

    method.__name__ = name
    return method


def _split_at(name, dim, min_ndim):
    def method(self, indices_or_sections) -> tuple[Tensor, ...]:
        if self.ndim < min_ndim:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {min_ndim} "
                f"dimension, but got a tensor with {self.ndim} dimensions!"
            )
        d = 0 if name == "hsplit" and self.ndim == 1 else dim
        return self.tensor_split(indices_or_sections, d)

    method.__name__ = name
    return method


hsplit = _split_at("hsplit", 1, 1)
vsplit = _split_at("vsplit", 0, 2)
dsplit = _split_at("dsplit", 2, 3)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self a view of `source` (a tensor; None: an empty tensor), as torch's set_."""
    from .. import creation

    if source is None:
        source = creation.empty(0, dtype=self.dtype, device=self.device)
    if not isinstance(source, Tensor):
        raise TypeError("set_(): only a source tensor is supported (not a storage)")
    if size is not None:
        source = source.as_strided(size, stride or _contiguous_strides(size), storage_offset)
    source._storage  # noqa: B018  (share one storage object)
    self._data, self._st = source._data, source._st
    self._base = source if source._base is None else source._base
    self.dtype = source.dtype
    self._layout_changed()
    return self


def _contiguous_strides(size):
    strides, acc = [], 1
    for n in reversed(tuple(size)):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


# -- Tensor-only methods that restate another (rows of _tensor_methods.py) --------------------
def unsafe_chunk(self, *args, **kwargs) -> tuple[Tensor, ...]:
    return self.chunk(*args, **kwargs)


def unsafe_split(self, *args, **kwargs) -> tuple[Tensor, ...]:
    return self.split(*args, **kwargs)


def const_data_ptr(self) -> int:
    return self.data_ptr()


def sparse_dim(self) -> int:
    return 0  # a dense tensor: every dimension is dense


def dense_dim(self) -> int:
    return self.ndim


def ravel(self) -> Tensor:
    return self.reshape(-1)


def adjoint(self) -> Tensor:
    return self.mH
