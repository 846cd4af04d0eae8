"""Sparse tensors: torch's COO layout (`gt.sparse_coo_tensor`, `t.to_sparse()`,
`gt.sparse.mm`, `gt.sparse.sum`). See coo.py for how they are stored and computed."""

from .coo import SparseTensor, sparse_coo_tensor
from .ops import addmm, mm, sum, to_sparse

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "addmm", "sum", "to_sparse"]
