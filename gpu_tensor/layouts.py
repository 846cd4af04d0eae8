"""Tensor layouts (torch.layout): `strided` for dense tensors, `sparse_coo` for the COO
tensors of gpu_tensor.sparse. The others exist so code naming them reads, and compares,
as in torch; no tensor has them."""

from __future__ import annotations

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


class layout:  # noqa: N801  (torch's class name)
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"gpu_tensor.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return globals()[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
