"""gt.linalg: torch.linalg's names over ops/matrix.py and the core products.

The differences from the Tensor methods are torch's: linalg.svd returns Vh (not V) and
takes full_matrices; linalg.qr takes mode; linalg.inv is Tensor.inverse.
"""

from __future__ import annotations

from . import return_types
from ._grad import STATE
from .ops import matrix as _la

__all__ = [
    "det",
    "inv",
    "solve",
    "qr",
    "svd",
    "svdvals",
    "cholesky",
    "eigh",
    "eigvalsh",
    "slogdet",
    "pinv",
    "matrix_power",
    "matrix_exp",
    "cross",
    "norm",
    "vector_norm",
    "matrix_norm",
    "multi_dot",
    "vecdot",
    "diagonal",
]

SVD = return_types.linalg_svd

eigh, matrix_power, matrix_exp = _la.eigh, _la.matrix_power, _la.matrix_exp


def det(A):
    return _la.det(A)


def inv(A):
    return _la.inverse(A)


def solve(A, B, *, left=True):
    return _la.solve(A, B, left=left)


def slogdet(A):
    return return_types.linalg_slogdet(*_la.slogdet(A))


def qr(A, mode="reduced"):
    q, r = _la.linalg_qr(A, mode)  # its own entry point: the gradient knows the mode
    return return_types.linalg_qr(q, r)


def svd(A, full_matrices=True):
    u, s, v = _la.svd(A, some=not full_matrices)
    return SVD(u, s, v.mH)


def svdvals(A):
    # torch differentiates svdvals; the singular vectors it needs come with the full svd
    full = STATE.enabled and getattr(A, "requires_grad", False)
    return _la.svd(A, compute_uv=full).S


def cholesky(A, *, upper=False):
    return _la.cholesky(A, upper)


def eigvalsh(A, UPLO="L"):  # noqa: N803  (torch's name)
    return _la.eigh(A, UPLO).eigenvalues


def pinv(A, *, rcond=None, hermitian=False, atol=None, rtol=None):
    return _la.pinverse(A, 1e-15 if rcond is None else rcond)


def cross(input, other, *, dim=-1):
    return _la.cross(input, other, dim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    x = x if dtype is None else x.to(dtype)
    return x.norm(ord, dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    A = A if dtype is None else A.to(dtype)
    if ord == "fro":
        return A.norm("fro", dim, keepdim)
    if ord == "nuc":
        r = svdvals(A).sum(-1)
    elif ord in (2, -2):
        s = svdvals(A)
        r = s.amax(-1) if ord == 2 else s.amin(-1)
    elif ord in (1, -1, float("inf"), float("-inf")):
        axis = dim[0] if ord in (1, -1) else dim[1]
        sums = A.abs().sum(axis, keepdim=True)
        other = dim[1] if ord in (1, -1) else dim[0]
        r = sums.amax(other, keepdim=True) if ord > 0 else sums.amin(other, keepdim=True)
        return r if keepdim else r.squeeze(max(dim) % A.ndim).squeeze(min(dim) % A.ndim)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return r.unsqueeze(-1).unsqueeze(-1) if keepdim else r


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if (
        ord is None
        or (dim is not None and not isinstance(dim, (tuple, list)))
        or (dim is None and A.ndim == 1)
    ):
        return vector_norm(
            A.reshape(-1) if dim is None else A,
            2 if ord is None else ord,
            dim,
            keepdim,
            dtype=dtype,
        )
    return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)


def multi_dot(tensors):
    out = tensors[0]
    for t in tensors[1:]:
        out = out @ t
    return out


def vecdot(x, y, *, dim=-1):
    return (x.conj() * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)
