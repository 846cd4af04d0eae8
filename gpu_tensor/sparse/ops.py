"""gt.sparse's functions: mm (sparse @ dense), addmm, sum, and Tensor.to_sparse.

`mm` gathers the dense rows each nonzero needs, scales them by the nonzero's value and
adds them into the output rows (index_select, mul, index_add): O(nnz * n) work, and
differentiable in both the sparse values and the dense operand.
"""

from __future__ import annotations

from .. import dtype as _dt
from .._tensor import Tensor
from .coo import SparseTensor

__all__ = ["mm", "addmm", "sum", "to_sparse"]


def mm(mat1, mat2):
    """sparse (m, k) @ dense (k, n) -> dense (m, n); dense @ sparse too."""
    if isinstance(mat1, SparseTensor) and isinstance(mat2, Tensor):
        return _sparse_dense(mat1, mat2)
    if isinstance(mat1, Tensor) and isinstance(mat2, SparseTensor):
        return _sparse_dense(mat2.t(), mat1.t()).t()
    if isinstance(mat1, SparseTensor) and isinstance(mat2, SparseTensor):
        return _sparse_dense(mat1, mat2.to_dense()).to_sparse()
    raise TypeError("sparse.mm expects a sparse and a dense matrix")


def _sparse_dense(s, d):
    if s.sparse_dim() != 2 or s.dense_dim():
        raise RuntimeError("sparse.mm: expected a 2-D sparse matrix")
    vector = d.ndim == 1
    dense = d.unsqueeze(1) if vector else d
    if dense.ndim != 2 or s.shape[1] != dense.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({s.shape[0]}x"
            f"{s.shape[1]} and {'x'.join(map(str, d.shape))})"
        )
    if s.dtype is not dense.dtype:
        raise RuntimeError(
            f"expected mat1 and mat2 to have the same dtype, but got: {s.dtype} != {dense.dtype}"
        )
    from ..creation import zeros

    rows, cols = s._i[0], s._i[1]
    out = zeros(s.shape[0], dense.shape[1], dtype=dense.dtype, device=dense.device)
    if s._nnz():
        out = out.index_add(0, rows, dense.index_select(0, cols) * s._v.unsqueeze(1))
    return out.squeeze(1) if vector else out


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    prod = mm(mat1, mat2)
    prod = prod if alpha == 1 else prod * alpha
    dense = input.to_dense() if isinstance(input, SparseTensor) else input
    return prod if beta == 0 else dense * beta + prod


def sum(input, dim=None, dtype=None):  # noqa: A001
    """All nonzeros summed (a dense 0-d tensor), or summed over `dim` (dense)."""
    if not isinstance(input, SparseTensor):
        return input.sum(dim) if dim is not None else input.sum()
    return input.sum(dim, dtype=dtype)


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The dense tensor's nonzeros as a coalesced COO tensor (over its first `sparse_dim`
    dims; the rest stay dense in the values)."""
    from .coo import sparse_coo_tensor

    if layout is not None and layout is not SparseTensor.layout:
        raise NotImplementedError(
            f"to_sparse: only layout=gt.sparse_coo is supported, got {layout}"
        )
    k = self.ndim if sparse_dim is None else sparse_dim
    lead = self.reshape(*self.shape[:k], -1) if k < self.ndim else self.unsqueeze(-1)
    nz = (lead != 0).any(-1) if lead.dtype is not _dt.bool else lead.any(-1)
    idx = nz.nonzero().t()
    values = lead[tuple(idx)] if k else lead.reshape(1, -1)
    values = values.reshape(idx.shape[1], *self.shape[k:])
    return sparse_coo_tensor(idx.contiguous(), values, tuple(self.shape), is_coalesced=True)
