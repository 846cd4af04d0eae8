"""SparseTensor: torch's COO layout (`layout=gt.sparse_coo`). `indices` is an int64 tensor
of shape (sparse_dim, nnz), `values` a tensor of shape (nnz, *dense_shape); duplicates are
allowed until `coalesce()` sums them and sorts the indices.

Everything is written with dense gpu_tensor ops on the (small) indices/values tensors, so
it runs on every device through that device's backend (numpy on cpu, cupy on cuda) and
carries autograd: the values are an ordinary tensor, and `to_dense`, `coalesce` and
`mm` are index_add/index_select compositions, differentiable in values and in the dense
operand. A leaf's `.grad` is returned as a SparseTensor over the same indices.
"""

from __future__ import annotations

import re

from .. import dtype as _dt
from .. import layouts
from .._tensor import Size, Tensor

__all__ = ["SparseTensor", "sparse_coo_tensor"]


class SparseTensor(Tensor):
    """A COO sparse tensor (see the module docstring). A Tensor subclass, so isinstance(s,
    gt.Tensor) holds as in torch; it keeps its data in indices/values (no dense `_data`), and
    dense-only Tensor methods it does not override do not apply to it."""

    is_sparse = True
    is_sparse_csr = False
    layout = layouts.sparse_coo

    def __init__(self, indices, values, size, coalesced=False):
        self._i = indices
        self._v = values
        self._size = Size(size)
        self._coalesced = coalesced

    # -- metadata ---------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return self._size

    def size(self, dim=None):
        return self._size if dim is None else self._size[dim]

    def dim(self) -> int:
        return len(self._size)

    ndim = property(dim)

    @property
    def dtype(self):
        return self._v.dtype

    @property
    def device(self):
        return self._v.device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def sparse_dim(self) -> int:
        return self._i.shape[0]

    def dense_dim(self) -> int:
        return self._v.ndim - 1

    def _nnz(self) -> int:
        return self._i.shape[1]

    def numel(self) -> int:
        return self._size.numel()

    def is_coalesced(self) -> bool:
        return self._coalesced

    @property
    def requires_grad(self) -> bool:
        return self._v.requires_grad

    def requires_grad_(self, requires_grad=True):
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._v.grad_fn

    @property
    def grad(self):
        g = self._v.grad
        return None if g is None else SparseTensor(self._i, g, self._size, self._coalesced)

    def _indices(self) -> Tensor:
        return self._i

    def _values(self) -> Tensor:
        return self._v

    def indices(self) -> Tensor:
        self._need_coalesced("indices")
        return self._i

    def values(self) -> Tensor:
        self._need_coalesced("values")
        return self._v

    def _need_coalesced(self, name):
        if not self._coalesced:
            raise RuntimeError(
                f"Cannot get {name} on an uncoalesced tensor, please call .coalesce() first"
            )

    # -- conversions ---------------------------------------------------------------------
    def _linear(self) -> Tensor:
        """Each nonzero's row-major position over the sparse dims."""
        lin = None
        for d in range(self.sparse_dim()):
            row = self._i[d]
            lin = row if lin is None else lin * self._size[d] + row
        return lin

    def coalesce(self) -> SparseTensor:
        """Duplicates summed, indices sorted (lexicographically); already coalesced: self."""
        if self._coalesced:
            return self
        from ..ops.sort import unique

        if self._nnz() == 0:
            return SparseTensor(self._i, self._v, self._size, True)
        lin = self._linear()
        uniq, inverse = unique(lin, return_inverse=True)
        from ..creation import zeros

        values = zeros(
            uniq.shape[0], *self._v.shape[1:], dtype=self.dtype, device=self.device
        ).index_add(0, inverse, self._v)
        return SparseTensor(
            _unravel(uniq, self._size[: self.sparse_dim()]), values, self._size, True
        )

    def to_dense(self) -> Tensor:
        from ..creation import zeros

        sparse_shape = Size(self._size[: self.sparse_dim()])
        dense = zeros(
            sparse_shape.numel(), *self._v.shape[1:], dtype=self.dtype, device=self.device
        )
        if self._nnz():
            dense = dense.index_add(0, self._linear(), self._v)
        return dense.reshape(*self._size)

    def to_sparse(self, sparse_dim=None, *, layout=None):
        return self

    to_sparse_coo = to_sparse

    def to(self, *args, **kwargs):
        return SparseTensor(
            self._i.to(*args, **{k: v for k, v in kwargs.items() if k != "dtype"})
            if not _is_dtype_only(args, kwargs)
            else self._i,
            self._v.to(*args, **kwargs),
            self._size,
            self._coalesced,
        )

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    def detach(self):
        return SparseTensor(self._i, self._v.detach(), self._size, self._coalesced)

    def clone(self):
        return SparseTensor(self._i.clone(), self._v.clone(), self._size, self._coalesced)

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError("t() expects a 2-D sparse tensor with no dense dims")
        return SparseTensor(self._i.flip([0]), self._v, (self._size[1], self._size[0]))

    # -- arithmetic -------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, SparseTensor):
            _same_size("add", self, other)
            from ..ops.join import cat

            return SparseTensor(
                cat([self._i, other._i], 1), cat([self._v, other._v], 0), self._size
            ).coalesce()
        if isinstance(other, Tensor):
            return self.to_dense() + other
        raise TypeError(
            f"add(sparse, {type(other).__name__}) is not supported; add a sparse or a dense tensor"
        )

    def __radd__(self, other):
        return self.__add__(other)

    def add(self, other, *, alpha=1):
        return self + (other if alpha == 1 else other * alpha)

    def __sub__(self, other):
        return self + (-other)

    def __neg__(self):
        return SparseTensor(self._i, -self._v, self._size, self._coalesced)

    def __mul__(self, other):
        if isinstance(other, (int, float, bool)) or (isinstance(other, Tensor) and other.ndim == 0):
            return SparseTensor(self._i, self._v * other, self._size, self._coalesced)
        raise TypeError(
            "sparse * tensor: only multiplication by a scalar is supported; "
            "use .to_dense() for elementwise products"
        )

    __rmul__ = mul = __mul__

    def __truediv__(self, other):
        return self * (1 / other)

    def __matmul__(self, other):
        from .ops import mm

        return mm(self, other)

    matmul = mm = __matmul__

    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return self._v.sum(dtype=dtype) if dtype is not None else self._v.sum()
        return self.to_dense().sum(dim, keepdim)

    def __repr__(self) -> str:
        pad = " " * len("tensor(")
        inner = " " * len("tensor(indices=")
        vinner = " " * len("       values=")
        extras = [f"size={tuple(self._size)}", f"nnz={self._nnz()}"]
        if self.device.type != "cpu":
            extras.insert(0, f"device='{self.device}'")
        if self.dtype is not _dt.get_default_dtype():
            extras.append(f"dtype={self.dtype!r}")
        extras.append(f"layout={self.layout!r}")
        tail = ""
        if self._v.grad_fn is not None:
            tail = f",\n{pad}grad_fn=<{type(self._v.grad_fn).__name__}>"
        elif self.requires_grad:
            tail = f",\n{pad}requires_grad=True"
        return (
            f"tensor(indices={_bare(self._i, inner)},\n{pad}values="
            f"{_bare(self._v, vinner)},\n{pad}" + ", ".join(extras) + tail + ")"
        )

    __str__ = __repr__


def _bare(t, indent):
    """t's repr with no dtype/device/grad suffix (torch's sparse repr shows them once)."""
    text = repr(t.detach().cpu())
    text = re.sub(r", dtype=[^,)]*", "", text)
    if t.numel() == 0 and t.ndim == 1:
        text = text[:-1] + f", size={tuple(t.shape)})"
    return text.replace("\n", "\n" + indent)


def _is_dtype_only(args, kwargs):
    return "device" not in kwargs and all(isinstance(a, _dt.DType) for a in args)


def _same_size(name, a, b):
    if a.shape != b.shape:
        raise RuntimeError(
            f"{name}: expected sizes to match, got {list(a.shape)} and {list(b.shape)}"
        )


def _unravel(linear, shape):
    """(len(shape), n) indices of row-major positions `linear` over `shape`."""
    from ..ops.join import stack

    rows = []
    rest = linear
    for n in reversed(shape):
        rows.append(rest % n)
        rest = rest // n
    return stack(rows[::-1], 0)


def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    check_invariants=None,
    is_coalesced=None,
):
    """A COO tensor with nonzeros `values` at `indices` (sparse_dim x nnz); `size` defaults
    to the smallest that holds every index."""
    from ..creation import tensor

    i = indices if isinstance(indices, Tensor) else tensor(indices, device=device)
    v = values if isinstance(values, Tensor) else tensor(values, dtype=dtype, device=device)
    if dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    if device is not None:
        i, v = i.to(device), v.to(device)
    if i.dtype is not _dt.int64:
        if i.dtype.category != _dt.INT:
            raise RuntimeError(f"indices must be an int64 tensor, got {i.dtype}")
        i = i.long()
    if i.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(i.shape)}")
    if v.ndim < 1 or v.shape[0] != i.shape[1]:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices:"
            f" {i.shape[1]}, nnz from values: {v.shape[0] if v.ndim else 0}"
        )
    if i.device != v.device:
        raise RuntimeError(
            f"indices and values must be on the same device, got {i.device} and {v.device}"
        )
    if i.shape[1] and int(i.min()) < 0:
        raise RuntimeError("found negative index in indices; COO indices must be >= 0")
    if size is None:
        top = i.amax(1).tolist() if i.shape[1] else [-1] * i.shape[0]
        size = (*[t + 1 for t in top], *v.shape[1:])
    size = tuple(size)
    if len(size) != i.shape[0] + v.ndim - 1:
        raise RuntimeError(
            f"number of dimensions must be sparse_dim ({i.shape[0]}) + "
            f"dense_dim ({v.ndim - 1}), but got {len(size)}"
        )
    if i.shape[1]:
        top = i.amax(1).tolist()
        for d, (t, n) in enumerate(zip(top, size, strict=False)):
            if t >= n:
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {d}, size "
                    f"is {n} but found index {t}"
                )
    if requires_grad:
        v = v.detach().requires_grad_(True)  # a new leaf over the same memory, as torch
    return SparseTensor(i, v, size, bool(is_coalesced) or i.shape[1] <= 1)
