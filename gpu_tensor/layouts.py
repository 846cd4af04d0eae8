"""Tensor layouts (torch.layout): `strided` for dense tensors, `sparse_coo` for the COO
tensors of gpu_tensor.sparse. The others exist so code naming them reads, and compares,
as in torch; no tensor has them."""

from __future__ import annotations

from ._constant import Constant

__all__ = [
    "layout",
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "jagged",
]


class layout(Constant):  # noqa: N801  (torch's class name)
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
