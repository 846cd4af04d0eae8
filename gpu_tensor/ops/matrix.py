"""Matrix functions beyond the products of ops/linalg.py: det, inverse, solve, qr, svd,
cholesky, slogdet, pinverse, eigh, and the composites torch offers on Tensor
(addmm/baddbmm/addmv/addr, addcmul/addcdiv, tril/triu, diag/diag_embed/diagflat, trace,
cross, kron, inner, vdot, matrix_power, dist).

Decompositions run in the array module's `linalg` (numpy.linalg on cpu and emulated cuda,
cupy.linalg on cuda) in float32/float64/complex; like torch, half types are refused.
Composites are written with differentiable ops; det/inverse/solve/slogdet have formulas in
autograd/formulas_more.py, and qr/svd/cholesky/eigh/pinverse in autograd/formulas_decomp.py.
"""

from __future__ import annotations

import numpy as np

from .. import _modes, return_types
from .. import dtype as _dt
from .._grad import differentiable
from .._host_memory import host_memory
from .._tensor import Tensor
from ..backends import get_backend
from ._result import array_result

# input plus a product (beta * input + alpha * (...)): each also has torch's in-place form
ACCUMULATING = ("addmm", "addbmm", "baddbmm", "addmv", "addr", "addcmul", "addcdiv")
__all__ = [
    "det",
    "inverse",
    "solve",
    "qr",
    "svd",
    "cholesky",
    "slogdet",
    "logdet",
    "pinverse",
    "eigh",
    "matrix_power",
    "trace",
    "tril",
    "triu",
    "diag",
    "diag_embed",
    "diagflat",
    *ACCUMULATING,
    "cross",
    "kron",
    "inner",
    "vdot",
    "ger",
    "dist",
    "cholesky_solve",
    "cholesky_inverse",
    "matrix_exp",
    "triangular_solve",
]

TriangularSolve = return_types.triangular_solve  # torch.return_types.*
QR, SVD, Slogdet = return_types.qr, return_types.svd, return_types.slogdet
Eigh = return_types.linalg_eigh


def _square(name, a):
    if not isinstance(a, Tensor):
        raise TypeError(f"{name}(): expected a Tensor, got {type(a).__name__}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(
            f"linalg.{name}: A must be batches of square matrices, but they "
            f"are {a.shape[-2] if a.ndim > 1 else ''} by {a.shape[-1] if a.ndim else ''}"
            " matrices"
        )
    return _arr(name, a)


def _arr(name, a):
    if a.dtype.category < _dt.FLOAT or a.dtype in (_dt.float16, _dt.bfloat16):
        raise RuntimeError(
            f"linalg.{name}: Expected a floating point or complex tensor as "
            f"input. Got {_dt.SCALAR_TYPE_NAMES[a.dtype.name]}"
        )
    return a._data


def _out(a, r, dtype=None):
    return array_result(get_backend(a.device), r, a.device, dtype or a.dtype, contiguous=True)


def _out_columns(a, r, dtype=None):
    """_out with each matrix laid out column by column, as LAPACK (and so torch) returns
    svd's U, qr's Q and R and eigh's eigenvectors: strides (..., 1, rows)."""
    t = _out(a, get_backend(a.device).xp.swapaxes(r, -1, -2), dtype)
    return t.transpose(-2, -1)


def _linalg(name, fn, *arrays):
    try:
        return fn(*arrays)
    except Exception as exc:
        if type(exc).__name__ == "LinAlgError":  # numpy's/cupy's: torch raises its own
            raise RuntimeError(
                f"linalg.{name}: {exc} (the input is singular or not positive-definite)"
            ) from None
        if not isinstance(exc, ValueError):
            raise
        shapes = " and ".join(str(list(a.shape)) for a in arrays)  # numpy's gufunc errors
        raise RuntimeError(f"linalg.{name}: incompatible shapes {shapes} ({exc})") from None


@differentiable
@host_memory
def det(input):
    xp = get_backend(input.device).xp
    return _out(input, xp.linalg.det(_square("det", input)))


@differentiable
@host_memory
def inverse(input):
    xp = get_backend(input.device).xp
    return _out(input, _linalg("inv", xp.linalg.inv, _square("inv", input)))


@differentiable
@host_memory
def solve(A, B, *, left=True):
    """X with A @ X = B (torch.linalg.solve); B may be a vector."""
    xp = get_backend(A.device).xp
    a = _square("solve", A)
    if not left:
        return solve(A.mT, B.mT).mT
    b = _arr("solve", B)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if vector:
        b = b[..., None]
    r = _linalg("solve", xp.linalg.solve, a, b)
    return _out(A, r[..., 0] if vector else r)


@differentiable
@host_memory
def slogdet(input):
    xp = get_backend(input.device).xp
    s, logabs = xp.linalg.slogdet(_square("slogdet", input))
    return Slogdet(_out(input, s), _out(input, logabs, input.dtype.to_real()))


def logdet(input):
    s, logabs = slogdet(input)
    from .elementwise import where

    return where(s < 0, float("nan"), logabs)  # torch: nan for det < 0


@differentiable(first=True)
@host_memory
def qr(input, some=True):
    xp = get_backend(input.device).xp
    q, r = xp.linalg.qr(_arr("qr", input), mode="reduced" if some else "complete")
    return QR(_out_columns(input, q), _out_columns(input, r))


@differentiable(first=True)
def linalg_qr(A, mode="reduced"):
    """torch.linalg.qr: `mode` 'reduced', 'complete' or 'r' (Q not computed: empty). Its
    own entry point so the gradient formula knows the mode (torch refuses some)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of "
            "'reduced' (default), 'r', or 'complete'"
        )
    q, r = qr(A, some=mode != "complete")
    return QR(q.new_zeros(0) if mode == "r" else q, r)


@differentiable(first=True)
@host_memory
def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V (not V^H); `some`: the reduced factors."""
    xp = get_backend(input.device).xp
    a = _arr("svd", input)
    if not compute_uv:
        s = _linalg("svd", lambda m: xp.linalg.svd(m, compute_uv=False), a)
        real = input.dtype.to_real()
        m, n = input.shape[-2:]
        zeros_u = xp.zeros((*input.shape[:-2], m, m if not some else min(m, n)), a.dtype)
        zeros_v = xp.zeros((*input.shape[:-2], n, n if not some else min(m, n)), a.dtype)
        return SVD(_out(input, zeros_u), _out(input, s, real), _out(input, zeros_v))
    u, s, vh = _linalg("svd", lambda m: xp.linalg.svd(m, full_matrices=not some), a)
    v = xp.conj(xp.swapaxes(vh, -1, -2))
    return SVD(_out_columns(input, u), _out(input, s, input.dtype.to_real()), _out(input, v))


@differentiable(first=True)
@host_memory
def cholesky(input, upper=False):
    xp = get_backend(input.device).xp
    lower = _linalg("cholesky", xp.linalg.cholesky, _square("cholesky", input))
    if upper:
        lower = xp.conj(xp.swapaxes(lower, -1, -2))
    return _out(input, lower)


@host_memory
def cholesky_solve(B, L, upper=False):
    """X with (L L^H) X = B, L the Cholesky factor."""
    low = L.mH if upper else L
    return solve(low.mH, solve(low, B))


@host_memory
def cholesky_inverse(L, upper=False):
    from ..creation import eye

    n = L.shape[-1]
    return cholesky_solve(eye(n, dtype=L.dtype, device=L.device), L, upper)


@differentiable(first=True)
@host_memory
def eigh(input, UPLO="L"):  # noqa: N803  (torch's name)
    xp = get_backend(input.device).xp
    w, v = xp.linalg.eigh(_square("eigh", input), UPLO=UPLO)
    return Eigh(_out(input, w, input.dtype.to_real()), _out_columns(input, v))


@differentiable(first=True)
@host_memory
def pinverse(input, rcond=1e-15):
    xp = get_backend(input.device).xp
    return _out(input, xp.linalg.pinv(_arr("pinverse", input), rcond=rcond))


@host_memory
def matrix_power(input, n):
    from ..creation import eye

    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(
            "matrix_power: expected a square matrix (or a batch of them), "
            f"got shape {list(input.shape)}"
        )
    if n < 0:
        return matrix_power(inverse(input), -n)
    result = None
    base = input
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    if result is None:
        k = input.shape[-1]
        return eye(k, dtype=input.dtype, device=input.device).expand(*input.shape).clone()
    return result


@host_memory
def matrix_exp(input):
    """Scaling and squaring with a degree-12 Taylor series (differentiable composite)."""
    from ..creation import eye

    _square("matrix_exp", input)
    norm = float(input.abs().sum(-1).max()) if input.numel() else 0.0
    s = max(0, int(np.ceil(np.log2(norm))) + 1) if norm > 0.5 else 0
    a = input / (2**s)
    ident = eye(input.shape[-1], dtype=input.dtype, device=input.device)
    term, total = ident, ident
    for k in range(1, 13):
        term = term @ a / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


def trace(input):
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()


def _tri_mask(t, diagonal, lower):
    xp = get_backend(t.device).xp
    rows, cols = t.shape[-2], t.shape[-1]
    m = (
        xp.tri(rows, cols, diagonal, dtype=bool)
        if lower
        else ~xp.tri(rows, cols, diagonal - 1, dtype=bool)
    )
    return Tensor._make(m, t.device, _dt.bool)


def _tri(name, input, diagonal, lower):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    from .elementwise import where

    return where(_tri_mask(input, diagonal, lower), input, 0).to(input.dtype)


@host_memory
def tril(input, diagonal=0):
    return _tri("tril", input, diagonal, True)


@host_memory
def triu(input, diagonal=0):
    return _tri("triu", input, diagonal, False)


@host_memory
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices whose `offset` diagonal (over the new last two dims) is input's last dim."""
    from ..creation import arange, zeros

    k = input.shape[-1]
    n = k + abs(offset)
    pos = arange(k, device=input.device)
    lin = (pos + max(-offset, 0)) * n + pos + max(offset, 0)  # row-major place in n x n
    flat = zeros(*input.shape[:-1], n * n, dtype=input.dtype, device=input.device)
    out = flat.index_copy(-1, lin, input).reshape(*input.shape[:-1], n, n)
    if (dim1 % out.ndim, dim2 % out.ndim) != (out.ndim - 2, out.ndim - 1):
        out = out.movedim((-2, -1), (dim1, dim2))
    return out


@host_memory
def diag(input, diagonal=0):
    """A 1-D input becomes the `diagonal` of a square matrix; a 2-D input gives its diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return input.diagonal(diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diagflat(input, offset=0):
    return diag_embed(input.reshape(-1), offset)


def _scaled(x, s):
    return x if s == 1 else x * s


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); beta=0 ignores input (nan included)."""
    prod = _scaled(mat1.mm(mat2), alpha)
    return prod if beta == 0 else _scaled(input, beta) + prod


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    prod = _scaled(batch1.bmm(batch2).sum(0), alpha)
    return prod if beta == 0 else _scaled(input, beta) + prod


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    prod = _scaled(batch1.bmm(batch2), alpha)
    return prod if beta == 0 else _scaled(input, beta) + prod


def addmv(input, mat, vec, *, beta=1, alpha=1):
    prod = _scaled(mat.mv(vec), alpha)
    return prod if beta == 0 else _scaled(input, beta) + prod


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    prod = _scaled(vec1.outer(vec2), alpha)
    return prod if beta == 0 else _scaled(input, beta) + prod


def addcmul(input, tensor1, tensor2, *, value=1):
    return input + _scaled(tensor1 * tensor2, value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    if tensor1.dtype.category < _dt.FLOAT and tensor2.dtype.category < _dt.FLOAT:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported; cast "
            "tensor1 or tensor2 to a floating dtype"
        )
    return input + _scaled(tensor1 / tensor2, value)


def cross(input, other, dim=None):
    """The 3-vector cross product along dim (None: the first dim of size 3, as torch.cross)."""
    from ..creation import tensor

    if dim is None:
        sizes = [i for i, n in enumerate(input.shape) if n == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[dim]} and {other.shape[dim]}"
        )
    i1 = tensor([1, 2, 0], device=input.device)
    i2 = tensor([2, 0, 1], device=input.device)
    return input.index_select(dim, i1) * other.index_select(dim, i2) - input.index_select(
        dim, i2
    ) * other.index_select(dim, i1)


@host_memory
def kron(input, other):
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(
            f"kron(): expected two Tensors, got {type(input).__name__} and {type(other).__name__}"
        )
    n = max(input.ndim, other.ndim)
    a = input.reshape(*([1] * (n - input.ndim)), *input.shape)
    b = other.reshape(*([1] * (n - other.ndim)), *other.shape)
    # interleave: a's dims at even places, b's at odd, then merge each pair
    ax = a.reshape(*[s for d in a.shape for s in (d, 1)])
    bx = b.reshape(*[s for d in b.shape for s in (1, d)])
    return (ax * bx).reshape(*[x * y for x, y in zip(a.shape, b.shape, strict=True)])


def inner(input, other):
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    flat = other.movedim(-1, 0).reshape(other.shape[-1], -1)  # (k, rest of other)
    return input.matmul(flat).reshape(*input.shape[:-1], *other.shape[:-1])


def vdot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return input.conj().dot(other)


def ger(input, vec2):
    return input.outer(vec2)


def dist(input, other, p=2):
    return (input - other).norm(p)


@host_memory
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """X with op(T) X = b, T the upper (lower) triangle of A; returns (X, T)."""
    from ..creation import eye

    t = triu(A) if upper else tril(A)
    if unitriangular:
        n = A.shape[-1]
        mask = eye(n, dtype=_dt.bool, device=A.device)
        from .elementwise import where

        t = where(mask, 1, t).to(A.dtype)
    return TriangularSolve(solve(t.mT if transpose else t, b), t)


# Composites torch dispatches as one op: autocast's policies and the profiler's rows see
# them under their own names (gpu_tensor/_modes.py; the ops inside run with the bit masked)
addmm, addbmm, baddbmm, addmv, addr = (
    _modes.entry(f.__name__, f) for f in (addmm, addbmm, baddbmm, addmv, addr)
)
